//! `tend chaos --agent NAME`: one pass of a ChaosAgent (README "ChaosAgent"). Reads the agent and the
//! cluster's pods, Deployments and ConfigMaps, lets [`pass::choose_actions`] decide, and
//! prints the plan (dry run, the default: nothing is written at all) or carries it out
//! (`--execute`: DELETE pods, merge-patch Deployments and ConfigMaps with the field manager
//! `tend-chaos`, then record the pass in the agent's status).

use crate::cluster::{self, Access, ClusterError, Resource, Session};
use crate::kinds::chaos_agent::pass::{self, ActionState, ChaosAction, ChaosMode, Mischief};
use crate::kinds::chaos_agent::rng::Rng;
use crate::kinds::{ChaosAgentSpec, ChaosAgentStatus};
use crate::report::chaos::ChaosReport;
use crate::Error;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{json, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// Field manager of everything `tend chaos` writes, distinct from `tend`'s own, so the next
/// `tend apply` takes the fields back (it forces conflicts) and restores git's values.
pub const CHAOS_FIELD_MANAGER: &str = "tend-chaos";

/// Everything one pass needs, built once by `tend chaos`.
#[derive(Debug, Clone)]
pub struct ChaosOptions {
    pub access: Access,
    /// Name of the ChaosAgent.
    pub agent: String,
    /// Really act; otherwise only report what would be done.
    pub execute: bool,
    /// Seed of the random choices; `None` draws one from the clock (and the report says which).
    pub seed: Option<u64>,
    /// tend's own namespace, always excluded.
    pub state_namespace: String,
}

/// One pass: read the agent and the cluster, choose, and (with `execute`) act.
pub fn run(opts: &ChaosOptions) -> Result<ChaosReport, Error> {
    let seed = opts.seed.unwrap_or_else(time_seed);
    crate::run::block_on(pass(opts, seed))?
}

/// A seed for a pass without `--seed`: the clock, mixed, below 2^53 so that it survives
/// JSON readers that hold numbers as doubles.
fn time_seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    Rng::new(nanos).next_u64() >> 11
}

fn cluster_error(err: ClusterError) -> Error {
    Error::Cluster(err)
}

fn served(session: &Session, group: &str, kind: &str) -> Result<Resource, Error> {
    session.served(group, "v1", kind).map_err(cluster_error)
}

async fn pass(args: &ChaosOptions, seed: u64) -> Result<ChaosReport, Error> {
    let session = Session::connect(&args.access)
        .await
        .map_err(cluster_error)?;
    let client = &session.client;
    let name = args.agent.as_str();
    let (agent_resource, spec) = read_agent(&session, name).await?;
    // List only what the enabled modes need, cluster-wide; exclusions are applied by the plan.
    let resources = [
        served(&session, "", "Pod")?,
        served(&session, "apps", "Deployment")?,
        served(&session, "", "ConfigMap")?,
    ];
    let [pods_resource, deployments_resource, configmaps_resource] = &resources;
    let pods = list_if(spec.tantrum_mode, client, pods_resource).await?;
    let deployments = list_if(spec.cancer_mode, client, deployments_resource).await?;
    let configmaps = list_if(spec.ipsum_mode, client, configmaps_resource).await?;
    let own = args.state_namespace.as_str();
    let plan = pass::choose_actions(&spec, own, &pods, &deployments, &configmaps, seed);
    let mut results = Vec::new();
    let mut warnings = Vec::new();
    if args.execute {
        results = carry_out(client, &resources, &plan.actions).await;
        let done = results.iter().filter(|r| r.is_ok()).count();
        if let Err(e) = record(client, &agent_resource, name, done, seed).await {
            warnings.push(format!(
                "the pass is not recorded in the status of ChaosAgent {name}: {e}"
            ));
        }
    }
    Ok(ChaosReport {
        agent: name.to_string(),
        seed,
        execute: args.execute,
        excluded: pass::excluded_namespaces(&spec, own),
        spec,
        pass: plan,
        results,
        warnings,
        requests: session.stats.to_string(),
    })
}

/// The ChaosAgent `name` and its spec, checked.
async fn read_agent(session: &Session, name: &str) -> Result<(Resource, ChaosAgentSpec), Error> {
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
    let agent = cluster::get(&session.client, &agent_resource, None, name)
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
    Ok((agent_resource, spec))
}

/// Each action, one after the other; `resources` are those of pods, Deployments and
/// ConfigMaps.
async fn carry_out(
    client: &kube::Client,
    resources: &[Resource; 3],
    actions: &[ChaosAction],
) -> Vec<Result<(), String>> {
    let mut results = Vec::new();
    for action in actions {
        let resource = match action.mode {
            ChaosMode::Tantrum => &resources[0],
            ChaosMode::Cancer => &resources[1],
            ChaosMode::Ipsum => &resources[2],
        };
        let result = execute(client, resource, action).await;
        match &result {
            Ok(()) => tracing::debug!("{}", action.line(ActionState::Done)),
            Err(e) => tracing::debug!("{}", action.line(ActionState::Failed(e))),
        }
        results.push(result);
    }
    results
}

/// Record the pass in the agent's status.
async fn record(
    client: &kube::Client,
    agent_resource: &Resource,
    name: &str,
    done: usize,
    seed: u64,
) -> Result<(), ClusterError> {
    let status = ChaosAgentStatus {
        last_run: Some(Time(Timestamp::now())),
        last_actions: done as i32,
        last_dry_run: false,
        last_seed: i64::try_from(seed).ok(),
    };
    let body = json!({
        "apiVersion": crate::API_VERSION,
        "kind": "ChaosAgent",
        "metadata": {"name": name},
        "status": status,
    });
    cluster::apply_status(client, agent_resource, &body, CHAOS_FIELD_MANAGER)
        .await
        .map(|_| ())
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
    let result = match &action.mischief {
        Mischief::Delete => cluster::delete(client, resource, namespace, &action.name, false).await,
        Mischief::Scale { .. } | Mischief::WriteData { .. } => {
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
