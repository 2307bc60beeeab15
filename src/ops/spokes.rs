//! Hub and spoke in one run: a cluster whose units target other clusters through kubeconfig
//! Secrets (Flux's `spec.kubeConfig.secretRef`, read from that cluster as Flux reads them)
//! is a hub; once it has run, each Secret it names is a cluster of the run (a spoke), run as
//! any cluster of a fleet is (its own lock, ApplySet parent, waves and report section) with
//! only what the units targeting it produce. A spoke's failure is its own.

use crate::cluster::ClusterError;
use crate::report::run::Mode;
use crate::run::{ClusterEnd, ClusterOutcome, ClusterRun, KubeconfigSecret, Run};
use crate::source::units::KubeConfigRef;
use crate::Error;

/// A cluster of the run, by name, with what came of it (`None`: not started, `--fail-fast`).
pub type Ran = (String, Option<Result<ClusterOutcome, Error>>);

/// Run `members`, then the spokes their units target, each right after its hub in the
/// result. A hub whose run failed still leads to its spokes (their units were read), unless
/// `fail_fast`.
pub fn run_with_spokes(
    mode: Mode,
    members: Vec<(String, ClusterRun)>,
    parallel: usize,
    fail_fast: bool,
) -> Vec<Ran> {
    let outcomes = crate::run::execute(&Run {
        mode,
        clusters: members.iter().map(|(_, run)| run.clone()).collect(),
        parallel,
        fail_fast,
    });
    let failed = outcomes
        .iter()
        .any(|o| !matches!(o, Some(ClusterEnd { result: Ok(done), .. }) if succeeded(done)));
    // Per member, its spokes: a run, or why there is none.
    let mut planned: Vec<Vec<(String, Result<ClusterRun, String>)>> = Vec::new();
    for ((name, member), outcome) in members.iter().zip(&outcomes) {
        let targets = match outcome {
            Some(end) => end.spokes.as_slice(),
            None => &[],
        };
        let several = members.len() > 1;
        planned.push(
            targets
                .iter()
                .map(|t| spoke(name, member, t, &members, several))
                .collect(),
        );
    }
    let runs: Vec<ClusterRun> = planned
        .iter()
        .flatten()
        .filter_map(|(_, run)| run.as_ref().ok().cloned())
        .collect();
    let mut spoke_outcomes = match (runs.is_empty(), fail_fast && failed) {
        (true, _) => Vec::new(),
        (false, true) => runs.iter().map(|_| None).collect(),
        (false, false) => crate::run::execute(&Run {
            mode,
            clusters: runs,
            parallel,
            fail_fast,
        }),
    }
    .into_iter()
    .map(|end| end.map(|end| end.result));
    let mut out = Vec::new();
    for (((name, _), outcome), spokes) in members.into_iter().zip(outcomes).zip(planned) {
        out.push((name, outcome.map(|end| end.result)));
        for (spoke_name, run) in spokes {
            let outcome = match run {
                Ok(_) => spoke_outcomes.next().flatten(),
                Err(why) => Some(Err(Error::Cluster(ClusterError::Config(why)))),
            };
            out.push((spoke_name, outcome));
        }
    }
    out
}

fn succeeded(done: &ClusterOutcome) -> bool {
    done.report.failed() + done.report.errors.len() == 0
}

/// The run of the spoke `target` names, from its hub's: the hub's source, expanding only the
/// units that target it, reached through the Secret read from the hub. Refused where the hub
/// is itself reached through a Secret, or where a cluster of the run is reached through the
/// same Secret (two ApplySets of one name in one cluster would prune each other).
fn spoke(
    hub_name: &str,
    hub: &ClusterRun,
    target: &KubeConfigRef,
    members: &[(String, ClusterRun)],
    several: bool,
) -> (String, Result<ClusterRun, String>) {
    let name = match several {
        true => format!("{hub_name}/{target}"),
        false => target.to_string(),
    };
    if hub.kubeconfig_secret.is_some() {
        return (
            name,
            Err(format!(
                "the units of cluster {hub_name} target the cluster of kubeconfig Secret {target}, and {hub_name} is itself reached through a kubeconfig Secret: tend reads a spoke's kubeconfig from a cluster it reaches directly; run tend against {hub_name} with its own --kubeconfig"
            )),
        );
    }
    let same = members.iter().find(|(_, m)| {
        m.kubeconfig_secret
            .as_ref()
            .is_some_and(|s| s.namespace == target.namespace && s.name == target.name)
    });
    if let Some((other, _)) = same {
        return (
            name,
            Err(format!(
                "the units of cluster {hub_name} target the cluster of kubeconfig Secret {target}, which cluster {other} of the run is reached through too: one ApplySet would prune the other's objects; remove {other} from the fleet (its units' run covers it) or point the units elsewhere"
            )),
        );
    }
    let mut run = hub.clone();
    run.source.units_for_kubeconfig_secret = Some((target.namespace.clone(), target.name.clone()));
    run.kubeconfig_secret = Some(KubeconfigSecret {
        hub: hub.target.clone(),
        namespace: target.namespace.clone(),
        name: target.name.clone(),
        keys: target.keys(),
    });
    run.target.context = None;
    run.target.kubeconfig = None;
    run.render.cluster = Some(name.clone());
    run.engine.cluster_name = Some(name.clone());
    run.engine.progress = false;
    (name, Ok(run))
}
