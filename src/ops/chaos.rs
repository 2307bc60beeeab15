//! `tend chaos --agent NAME`: one pass of a ChaosAgent (SPEC 3.5). Reads the agent and the
//! cluster's pods, Deployments and ConfigMaps, lets [`crate::chaos::plan_pass`] decide, and
//! prints the plan (dry run, the default: nothing is written at all) or carries it out
//! (`--execute`: DELETE pods, merge-patch Deployments and ConfigMaps with the field manager
//! `tend-chaos`, then record the pass in the agent's status).

use crate::apply::engine::{EngineError, Session};
use crate::chaos::{self, Change, ChaosAction, Outcome, Pass};
use crate::cli::{GlobalArgs, OutputFormat};
use crate::cluster::{self, Access, ClusterError, Resource};
use crate::commands::chaos::ChaosArgs;
use crate::kinds::{ChaosAgentSpec, ChaosAgentStatus};
use crate::Error;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{json, Value};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

/// Field manager of everything `tend chaos` writes, distinct from `tend`'s own, so the next
/// `tend apply` takes the fields back (it forces conflicts) and restores git's values.
pub const CHAOS_FIELD_MANAGER: &str = "tend-chaos";

/// What a pass did (or would do).
struct Report {
    agent: String,
    seed: u64,
    execute: bool,
    excluded: Vec<String>,
    spec: ChaosAgentSpec,
    pass: Pass,
    /// Per action, with `--execute`: Ok or the error message. Empty for a dry run.
    results: Vec<Result<(), String>>,
    warnings: Vec<String>,
}

impl Report {
    fn failed(&self) -> usize {
        self.results.iter().filter(|r| r.is_err()).count()
    }

    fn done(&self) -> usize {
        self.results.iter().filter(|r| r.is_ok()).count()
    }

    fn outcome(&self, index: usize) -> Outcome<'_> {
        match self.results.get(index) {
            None => Outcome::Planned,
            Some(Ok(())) => Outcome::Done,
            Some(Err(e)) => Outcome::Failed(e),
        }
    }
}

pub fn run(global: &GlobalArgs, args: &ChaosArgs) -> Result<ExitCode, Error> {
    let json_output = match global.output {
        None | Some(OutputFormat::Text) => false,
        Some(OutputFormat::Json) => true,
        Some(_) => return Err(Error::Usage("tend chaos prints text or json".to_string())),
    };
    let seed = match args.seed {
        Some(seed) => seed,
        None => {
            let seed = time_seed();
            if json_output {
                tracing::info!("seed {seed}; rerun with --seed {seed} to repeat");
            }
            seed
        }
    };
    let access = Access {
        kubeconfig: global.kubeconfig.clone(),
        context: global.context.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Output)?;
    let (report, stats) = runtime.block_on(pass(&access, args, seed))?;

    let text = if json_output {
        json_report(&report)
    } else {
        text_report(&report)
    };
    crate::commands::print(&text)?;
    for warning in &report.warnings {
        tracing::warn!("{warning}");
    }
    let failed = report.failed();
    if failed > 0 {
        tracing::error!(
            "{failed} of {} chaos actions failed ({stats})",
            report.results.len()
        );
        return Ok(ExitCode::from(crate::cli::EXIT_ERROR));
    }
    tracing::debug!("chaos: {stats}");
    Ok(ExitCode::SUCCESS)
}

/// A seed for a pass without `--seed`: the clock, mixed, below 2^53 so that it survives
/// JSON readers that hold numbers as doubles.
fn time_seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    chaos::Rng::new(nanos).next_u64() >> 11
}

fn cluster_error(err: ClusterError) -> Error {
    Error::Engine(EngineError::Cluster(err))
}

fn served(session: &Session, group: &str, kind: &str) -> Result<Resource, Error> {
    session
        .resources
        .get(group, "v1", kind)
        .cloned()
        .ok_or_else(|| {
            let api_version = if group.is_empty() {
                "v1".to_string()
            } else {
                format!("{group}/v1")
            };
            cluster_error(ClusterError::Config(format!(
                "the cluster does not serve {api_version} {kind}"
            )))
        })
}

async fn pass(
    access: &Access,
    args: &ChaosArgs,
    seed: u64,
) -> Result<(Report, std::sync::Arc<cluster::RequestStats>), Error> {
    let session = Session::connect(access).await.map_err(cluster_error)?;
    let client = &session.client;
    let name = args.agent.as_str();
    let agent_resource = session
        .resources
        .get(crate::GROUP, crate::VERSION, "ChaosAgent")
        .cloned()
        .ok_or_else(|| {
            Error::Usage(format!(
                "the cluster does not serve {} ChaosAgent: tend's CRDs are not installed; install them with `tend crds | kubectl apply -f -`",
                crate::API_VERSION
            ))
        })?;
    let agent = cluster::get(client, &agent_resource, None, name)
        .await
        .map_err(cluster_error)?
        .ok_or_else(|| {
            Error::Usage(format!(
                "ChaosAgent {name} not found; apply it with tend apply first"
            ))
        })?;
    let spec: ChaosAgentSpec =
        serde_json::from_value(agent.get("spec").cloned().unwrap_or(Value::Null))
            .map_err(|e| Error::Usage(format!("ChaosAgent {name} has an invalid spec: {e}")))?;
    let mut problems = Vec::new();
    spec.validate(&mut problems);
    if !problems.is_empty() {
        let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
        return Err(Error::Usage(format!(
            "ChaosAgent {name} has an invalid spec: {}",
            list.join("; ")
        )));
    }

    // List only what the enabled modes need, cluster-wide; exclusions are applied by the plan.
    let pods_resource = served(&session, "", "Pod")?;
    let deployments_resource = served(&session, "apps", "Deployment")?;
    let configmaps_resource = served(&session, "", "ConfigMap")?;
    let pods = list_if(spec.tantrum_mode, client, &pods_resource).await?;
    let deployments = list_if(spec.cancer_mode, client, &deployments_resource).await?;
    let configmaps = list_if(spec.ipsum_mode, client, &configmaps_resource).await?;
    let own = args.state_namespace.as_str();
    let plan = chaos::plan_pass(&spec, own, &pods, &deployments, &configmaps, seed);

    let mut results = Vec::new();
    let mut warnings = Vec::new();
    if args.execute {
        for action in &plan.actions {
            let resource = match action.mode {
                chaos::Mode::Tantrum => &pods_resource,
                chaos::Mode::Cancer => &deployments_resource,
                chaos::Mode::Ipsum => &configmaps_resource,
            };
            let result = execute(client, resource, action).await;
            match &result {
                Ok(()) => tracing::debug!("{}", action.line(Outcome::Done)),
                Err(e) => tracing::debug!("{}", action.line(Outcome::Failed(e))),
            }
            results.push(result);
        }
        let status = ChaosAgentStatus {
            last_run: Some(Time(Timestamp::now())),
            last_actions: results.iter().filter(|r| r.is_ok()).count() as i32,
            last_dry_run: false,
            last_seed: i64::try_from(seed).ok(),
        };
        let body = json!({
            "apiVersion": crate::API_VERSION,
            "kind": "ChaosAgent",
            "metadata": {"name": name},
            "status": status,
        });
        if let Err(e) =
            cluster::apply_status(client, &agent_resource, &body, CHAOS_FIELD_MANAGER).await
        {
            warnings.push(format!(
                "the pass is not recorded in the status of ChaosAgent {name}: {e}"
            ));
        }
    }
    let report = Report {
        agent: name.to_string(),
        seed,
        execute: args.execute,
        excluded: chaos::excluded_namespaces(&spec, own),
        spec,
        pass: plan,
        results,
        warnings,
    };
    Ok((report, session.stats.clone()))
}

async fn list_if(
    enabled: bool,
    client: &kube::Client,
    resource: &Resource,
) -> Result<Vec<Value>, Error> {
    if !enabled {
        return Ok(Vec::new());
    }
    cluster::list(client, resource, None, None)
        .await
        .map_err(cluster_error)
}

async fn execute(
    client: &kube::Client,
    resource: &Resource,
    action: &ChaosAction,
) -> Result<(), String> {
    let namespace = Some(action.namespace.as_str());
    let result = match &action.change {
        Change::Delete => cluster::delete(client, resource, namespace, &action.name, false).await,
        Change::Scale { .. } | Change::WriteData { .. } => {
            let patch = action.patch().unwrap_or(Value::Null);
            cluster::merge_patch(
                client,
                resource,
                namespace,
                &action.name,
                &patch,
                CHAOS_FIELD_MANAGER,
            )
            .await
            .map(|_| ())
        }
    };
    result.map_err(|e| e.to_string())
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn text_report(report: &Report) -> String {
    let spec = &report.spec;
    let mut out = format!(
        "ChaosAgent {}: seed {seed}; rerun with --seed {seed} to repeat\n",
        report.agent,
        seed = report.seed
    );
    if !report.execute {
        out.push_str("dry run: nothing is changed; pass --execute to act\n");
    }
    out.push_str(&format!(
        "excluded namespaces: {}\n",
        report.excluded.join(", ")
    ));
    let c = &report.pass.candidates;
    let mut modes = Vec::new();
    if spec.tantrum_mode {
        modes.push(format!("{} (tantrum)", count(c.pods, "pod", "pods")));
    }
    if spec.cancer_mode {
        modes.push(format!(
            "{} (cancer)",
            count(c.deployments, "Deployment", "Deployments")
        ));
    }
    if spec.ipsum_mode {
        modes.push(format!(
            "{} (ipsum)",
            count(c.configmaps, "ConfigMap", "ConfigMaps")
        ));
    }
    if modes.is_empty() {
        out.push_str("no mode is enabled (tantrumMode, cancerMode, ipsumMode): nothing to do\n");
    } else {
        out.push_str(&format!(
            "candidates: {}; eagerness {}%, at most {}\n",
            modes.join(", "),
            spec.eagerness,
            count(spec.max_actions.max(0) as usize, "action", "actions")
        ));
    }
    for note in &report.pass.notes {
        out.push_str(note);
        out.push('\n');
    }
    for (i, action) in report.pass.actions.iter().enumerate() {
        out.push_str(&action.line(report.outcome(i)));
        out.push('\n');
    }
    let n = report.pass.actions.len();
    let summary = if n == 0 {
        "no action: no candidate was hit".to_string()
    } else if !report.execute {
        format!("{} planned", count(n, "action", "actions"))
    } else if report.failed() == 0 {
        format!("{} done", count(n, "action", "actions"))
    } else {
        format!(
            "{}: {} done, {} failed",
            count(n, "action", "actions"),
            report.done(),
            report.failed()
        )
    };
    out.push_str(&summary);
    out.push('\n');
    out
}

fn json_report(report: &Report) -> String {
    let actions: Vec<Value> = report
        .pass
        .actions
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let (done, error) = match report.results.get(i) {
                None => (false, Value::Null),
                Some(Ok(())) => (true, Value::Null),
                Some(Err(e)) => (false, Value::String(e.clone())),
            };
            json!({
                "mode": a.mode.as_str(),
                "action": a.action(),
                "kind": a.kind,
                "namespace": a.namespace,
                "name": a.name,
                "detail": a.detail,
                "done": done,
                "error": error,
            })
        })
        .collect();
    let c = &report.pass.candidates;
    let doc = json!({
        "agent": report.agent,
        "seed": report.seed,
        "execute": report.execute,
        "excludedNamespaces": report.excluded,
        "candidates": {
            "pods": c.pods,
            "deployments": c.deployments,
            "configmaps": c.configmaps,
        },
        "notes": report.pass.notes,
        "actions": actions,
        "warnings": report.warnings,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}
