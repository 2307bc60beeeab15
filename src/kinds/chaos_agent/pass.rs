//! The decisions of one chaos pass (README "ChaosAgent"), without I/O: given a
//! [`ChaosAgentSpec`], the pods, Deployments and ConfigMaps of the cluster and a seed, which
//! objects to hit and how. `tend chaos` (in `ops::chaos`) lists the objects, calls
//! [`choose_actions`], and prints or carries out the result.
//!
//! A pass is a pure function of its inputs: candidates are sorted (mode tantrum, cancer,
//! ipsum; then namespace/name), shuffled with a seeded [`Rng`], and each is hit with
//! probability `eagerness/100` until `maxActions` actions are chosen. The same seed and
//! cluster contents always give the same actions, so any pass can be repeated or explained
//! after the fact.

use super::lorem::ipsum_data;
use super::rng::Rng;
use super::{ChaosAgentSpec, ALWAYS_EXCLUDED, MAX_CANCER_REPLICAS};
use crate::text::count;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::fmt;

/// The three things a chaos agent does, in the order candidates are listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChaosMode {
    /// Delete pods.
    Tantrum,
    /// Double a Deployment's replicas.
    Cancer,
    /// Overwrite a ConfigMap's values with lorem ipsum.
    Ipsum,
}

impl ChaosMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ChaosMode::Tantrum => "tantrum",
            ChaosMode::Cancer => "cancer",
            ChaosMode::Ipsum => "ipsum",
        }
    }
}

impl fmt::Display for ChaosMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an action does to its object.
#[derive(Debug, Clone, PartialEq)]
pub enum Mischief {
    /// DELETE the pod.
    Delete,
    /// Set `spec.replicas` from `from` to `to`.
    Scale { from: i64, to: i64 },
    /// Replace the values of `data` (same keys) with these.
    WriteData { data: Map<String, Value> },
}

/// One planned action of a pass.
#[derive(Debug, Clone, PartialEq)]
pub struct ChaosAction {
    pub mode: ChaosMode,
    /// `Pod`, `Deployment` or `ConfigMap`.
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    /// For people: e.g. `replicas 3 → 6`, `2 keys: a, b`; empty for pods.
    pub detail: String,
    pub mischief: Mischief,
}

impl ChaosAction {
    /// The verb, as in the JSON report: `delete`, `scale` or `write`.
    pub fn action(&self) -> &'static str {
        match self.mischief {
            Mischief::Delete => "delete",
            Mischief::Scale { .. } => "scale",
            Mischief::WriteData { .. } => "write",
        }
    }

    /// `pod web/nginx-abc`.
    pub fn target(&self) -> String {
        format!(
            "{} {}/{}",
            self.kind.to_ascii_lowercase(),
            self.namespace,
            self.name
        )
    }

    /// A report line: `would delete pod web/nginx-abc (tantrum)` (`Planned`), `deleted ...`
    /// (`Done`) or `failed to delete ...: <error>` (`Failed`).
    pub fn line(&self, outcome: ActionState<'_>) -> String {
        let (future, past, infinitive) = match self.mischief {
            Mischief::Delete => ("would delete", "deleted", "delete"),
            Mischief::Scale { .. } => ("would scale", "scaled", "scale"),
            Mischief::WriteData { .. } => (
                "would write lorem ipsum into",
                "wrote lorem ipsum into",
                "write lorem ipsum into",
            ),
        };
        let detail = if self.detail.is_empty() {
            String::new()
        } else {
            format!(": {}", self.detail)
        };
        let head = format!("{}{detail} ({})", self.target(), self.mode);
        match outcome {
            ActionState::Planned => format!("{future} {head}"),
            ActionState::Done => format!("{past} {head}"),
            ActionState::Failed(err) => format!("failed to {infinitive} {head}: {err}"),
        }
    }

    /// The JSON merge patch that carries out a scale or write (`None` for a delete).
    pub fn patch(&self) -> Option<Value> {
        match &self.mischief {
            Mischief::Delete => None,
            Mischief::Scale { to, .. } => Some(serde_json::json!({"spec": {"replicas": to}})),
            Mischief::WriteData { data } => Some(serde_json::json!({"data": data})),
        }
    }
}

/// How an action turned out, for [`ChaosAction::line`].
#[derive(Debug, Clone, Copy)]
pub enum ActionState<'a> {
    Planned,
    Done,
    Failed(&'a str),
}

/// Number of candidates of each mode (after exclusions and per-mode rules).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Candidates {
    pub pods: usize,
    pub deployments: usize,
    pub configmaps: usize,
}

impl Candidates {
    #[cfg(test)]
    pub fn total(&self) -> usize {
        self.pods + self.deployments + self.configmaps
    }
}

/// The result of [`choose_actions`].
#[derive(Debug, Clone, PartialEq)]
pub struct Pass {
    /// Chosen actions, sorted by mode, namespace, name. At most `maxActions`.
    pub actions: Vec<ChaosAction>,
    pub candidates: Candidates,
    /// Why a mode did nothing, for the report (e.g. the pod tolerance was not reached).
    pub notes: Vec<String>,
}

/// The namespaces this agent never touches, sorted: `excludedNamespaces`, kube-system,
/// kube-public, kube-node-lease and tend's own.
pub fn excluded_namespaces(spec: &ChaosAgentSpec, own_namespace: &str) -> Vec<String> {
    let mut set: BTreeSet<String> = ALWAYS_EXCLUDED.iter().map(|s| s.to_string()).collect();
    if !own_namespace.is_empty() {
        set.insert(own_namespace.to_string());
    }
    set.extend(spec.excluded_namespaces.iter().cloned());
    set.into_iter().collect()
}

/// One chaos pass, decided. `pods`, `deployments` and `configmaps` are the cluster's objects
/// (any namespace, any order, as listed); `own_namespace` is tend's state namespace.
///
/// Rules: nothing in an excluded namespace (see [`excluded_namespaces`]) and nothing already
/// being deleted is a candidate. Tantrum: every pod, but only when the candidate pods number
/// at least `podTolerance` (no tolerance set: no pod). Cancer: Deployments with 1 to 127
/// replicas (unset counts as 1), doubled up to [`MAX_CANCER_REPLICAS`]. Ipsum: ConfigMaps
/// that are not `immutable: true` and have `data`; every value is replaced by lorem ipsum of
/// about the same length, keys unchanged (`binaryData` untouched).
pub fn choose_actions(
    spec: &ChaosAgentSpec,
    own_namespace: &str,
    pods: &[Value],
    deployments: &[Value],
    configmaps: &[Value],
    seed: u64,
) -> Pass {
    let mut notes = Vec::new();
    let mut candidates = Candidates::default();
    let usable = |obj: &&Value| {
        let ns = namespace_of(obj);
        !ns.is_empty()
            && !name_of(obj).is_empty()
            && !spec.excludes(ns, own_namespace)
            && obj.pointer("/metadata/deletionTimestamp").is_none()
    };

    // (mode, namespace, name, object): sorted, so the order of the input does not matter.
    let mut pool: Vec<(ChaosMode, String, String, &Value)> = Vec::new();
    if spec.tantrum_mode {
        let mut found: Vec<_> = pods.iter().filter(usable).collect();
        sort_by_id(&mut found);
        match spec.pod_tolerance {
            None => notes.push(
                "tantrum: spec.podTolerance is not set, so no pod is deleted".to_string(),
            ),
            Some(tolerance) if (found.len() as i64) < i64::from(tolerance) => notes.push(format!(
                "tantrum: {} in non-excluded namespaces, fewer than podTolerance {tolerance}, so no pod is deleted",
                count(found.len(), "pod")
            )),
            Some(_) => {
                candidates.pods = found.len();
                pool.extend(found.into_iter().map(|o| entry(ChaosMode::Tantrum, o)));
            }
        }
    }
    if spec.cancer_mode {
        let mut found: Vec<_> = deployments
            .iter()
            .filter(usable)
            .filter(|d| {
                let r = replicas(d);
                r >= 1 && r < i64::from(MAX_CANCER_REPLICAS)
            })
            .collect();
        sort_by_id(&mut found);
        candidates.deployments = found.len();
        pool.extend(found.into_iter().map(|o| entry(ChaosMode::Cancer, o)));
    }
    if spec.ipsum_mode {
        let mut found: Vec<_> = configmaps
            .iter()
            .filter(usable)
            .filter(|c| c.get("immutable").and_then(Value::as_bool) != Some(true))
            .filter(|c| {
                c.get("data")
                    .and_then(Value::as_object)
                    .is_some_and(|d| !d.is_empty())
            })
            .collect();
        sort_by_id(&mut found);
        candidates.configmaps = found.len();
        pool.extend(found.into_iter().map(|o| entry(ChaosMode::Ipsum, o)));
    }

    let mut rng = Rng::new(seed);
    rng.shuffle(&mut pool);
    let limit = usize::try_from(spec.max_actions).unwrap_or(0);
    let eagerness = i64::from(spec.eagerness);
    let mut actions = Vec::new();
    for (mode, namespace, name, obj) in pool {
        if actions.len() >= limit {
            break;
        }
        if !rng.chance(eagerness) {
            continue;
        }
        let (kind, detail, mischief) = match mode {
            ChaosMode::Tantrum => ("Pod", String::new(), Mischief::Delete),
            ChaosMode::Cancer => {
                let from = replicas(obj);
                let to = (from * 2).min(i64::from(MAX_CANCER_REPLICAS));
                (
                    "Deployment",
                    format!("replicas {from} → {to}"),
                    Mischief::Scale { from, to },
                )
            }
            ChaosMode::Ipsum => {
                let old = obj
                    .get("data")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                let data = ipsum_data(&old, &mut rng);
                let keys: Vec<&str> = old.keys().map(String::as_str).collect();
                (
                    "ConfigMap",
                    format!("{}: {}", count(keys.len(), "key"), keys.join(", ")),
                    Mischief::WriteData { data },
                )
            }
        };
        actions.push(ChaosAction {
            mode,
            kind,
            namespace,
            name,
            detail,
            mischief,
        });
    }
    actions.sort_by(|a, b| (a.mode, &a.namespace, &a.name).cmp(&(b.mode, &b.namespace, &b.name)));
    Pass {
        actions,
        candidates,
        notes,
    }
}

fn entry(mode: ChaosMode, obj: &Value) -> (ChaosMode, String, String, &Value) {
    (
        mode,
        namespace_of(obj).to_string(),
        name_of(obj).to_string(),
        obj,
    )
}

fn sort_by_id(objects: &mut [&Value]) {
    objects.sort_by(|a, b| (namespace_of(a), name_of(a)).cmp(&(namespace_of(b), name_of(b))));
}

fn namespace_of(obj: &Value) -> &str {
    obj.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `spec.replicas` of a Deployment; unset means 1 (the API default).
fn replicas(deployment: &Value) -> i64 {
    match deployment.pointer("/spec/replicas") {
        None | Some(Value::Null) => 1,
        Some(v) => v.as_i64().unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> ChaosAgentSpec {
        ChaosAgentSpec {
            tantrum_mode: true,
            cancer_mode: true,
            ipsum_mode: true,
            pod_tolerance: Some(0),
            eagerness: 100,
            excluded_namespaces: vec![],
            max_actions: 1000,
        }
    }

    fn pod(ns: &str, name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": ns, "name": name}})
    }

    fn deployment(ns: &str, name: &str, replicas: Option<i64>) -> Value {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"namespace": ns, "name": name}, "spec": {}});
        if let Some(r) = replicas {
            d["spec"]["replicas"] = json!(r);
        }
        d
    }

    fn configmap(ns: &str, name: &str, immutable: Option<bool>) -> Value {
        let mut c = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"namespace": ns, "name": name},
            "data": {"nginx.conf": "server {\n  listen 8080;\n}\n", "mode": "prod"}});
        if let Some(i) = immutable {
            c["immutable"] = json!(i);
        }
        c
    }

    /// Objects in every kind of namespace: ordinary, system, tend's own, user-excluded.
    fn world() -> (Vec<Value>, Vec<Value>, Vec<Value>) {
        let namespaces = [
            "web",
            "api",
            "kube-system",
            "kube-public",
            "kube-node-lease",
            "tend-system",
            "prod",
        ];
        let mut pods = vec![];
        let mut deps = vec![];
        let mut cms = vec![];
        for ns in namespaces {
            for i in 0..3 {
                pods.push(pod(ns, &format!("p{i}")));
            }
            deps.push(deployment(ns, "d", Some(2)));
            cms.push(configmap(ns, "c", None));
        }
        (pods, deps, cms)
    }

    fn ids(pass: &Pass) -> Vec<String> {
        pass.actions
            .iter()
            .map(|a| format!("{} {}/{}", a.mode, a.namespace, a.name))
            .collect()
    }

    #[test]
    fn excluded_system_and_own_namespaces_are_never_chosen() {
        let (pods, deps, cms) = world();
        let mut s = spec();
        s.excluded_namespaces = vec!["prod".into()];
        let excluded = excluded_namespaces(&s, "tend-system");
        assert_eq!(
            excluded,
            [
                "kube-node-lease",
                "kube-public",
                "kube-system",
                "prod",
                "tend-system"
            ]
        );
        for seed in 0..50 {
            let pass = choose_actions(&s, "tend-system", &pods, &deps, &cms, seed);
            // eagerness 100, no limit: every candidate, and only those in web and api.
            assert_eq!(pass.actions.len(), 3 * 2 + 2 + 2, "{:?}", ids(&pass));
            assert!(pass
                .actions
                .iter()
                .all(|a| a.namespace == "web" || a.namespace == "api"));
        }
        // tend's own namespace comes from the argument, whatever its name: with another
        // one, tend-system is fair game.
        let pass = choose_actions(&s, "api", &pods, &deps, &cms, 1);
        assert!(pass.actions.iter().all(|a| a.namespace != "api"));
        assert!(pass.actions.iter().any(|a| a.namespace == "tend-system"));
    }

    #[test]
    fn tantrum_needs_the_pod_tolerance() {
        let pods: Vec<Value> = (0..5).map(|i| pod("web", &format!("p{i}"))).collect();
        // Pods in excluded namespaces do not count towards the tolerance.
        let system: Vec<Value> = (0..10)
            .map(|i| pod("kube-system", &format!("s{i}")))
            .collect();
        let all: Vec<Value> = pods.iter().chain(&system).cloned().collect();
        let mut s = spec();
        s.cancer_mode = false;
        s.ipsum_mode = false;
        for (tolerance, expected) in [(0, 5), (4, 5), (5, 5), (6, 0), (15, 0)] {
            s.pod_tolerance = Some(tolerance);
            let pass = choose_actions(&s, "tend-system", &all, &[], &[], 3);
            assert_eq!(pass.actions.len(), expected, "tolerance {tolerance}");
            assert_eq!(pass.notes.is_empty(), expected > 0, "{:?}", pass.notes);
        }
        s.pod_tolerance = Some(6);
        let pass = choose_actions(&s, "tend-system", &all, &[], &[], 3);
        assert_eq!(
            pass.notes,
            ["tantrum: 5 pods in non-excluded namespaces, fewer than podTolerance 6, so no pod is deleted"]
        );
        s.pod_tolerance = None;
        assert!(choose_actions(&s, "tend-system", &all, &[], &[], 3)
            .actions
            .is_empty());
        // Pods already being deleted are neither counted nor chosen.
        let mut terminating = pods.clone();
        terminating[0]["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        s.pod_tolerance = Some(5);
        assert!(choose_actions(&s, "tend-system", &terminating, &[], &[], 3)
            .actions
            .is_empty());
        s.pod_tolerance = Some(4);
        let pass = choose_actions(&s, "tend-system", &terminating, &[], &[], 3);
        assert_eq!(pass.actions.len(), 4);
        assert!(pass.actions.iter().all(|a| a.name != "p0"));
        assert!(pass
            .actions
            .iter()
            .all(|a| a.mischief == Mischief::Delete && a.kind == "Pod"));
    }

    #[test]
    fn cancer_doubles_up_to_128() {
        let deps = vec![
            deployment("web", "unset", None),
            deployment("web", "three", Some(3)),
            deployment("web", "hundred", Some(100)),
            deployment("web", "max", Some(128)),
            deployment("web", "above", Some(300)),
            deployment("web", "zero", Some(0)),
        ];
        let mut s = spec();
        s.tantrum_mode = false;
        s.ipsum_mode = false;
        let pass = choose_actions(&s, "tend-system", &[], &deps, &[], 9);
        let got: Vec<(String, Mischief, String)> = pass
            .actions
            .iter()
            .map(|a| (a.name.clone(), a.mischief.clone(), a.detail.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "hundred".to_string(),
                    Mischief::Scale { from: 100, to: 128 },
                    "replicas 100 → 128".to_string()
                ),
                (
                    "three".to_string(),
                    Mischief::Scale { from: 3, to: 6 },
                    "replicas 3 → 6".to_string()
                ),
                (
                    "unset".to_string(),
                    Mischief::Scale { from: 1, to: 2 },
                    "replicas 1 → 2".to_string()
                ),
            ]
        );
        assert_eq!(pass.candidates.deployments, 3);
        assert_eq!(
            pass.actions[1].patch(),
            Some(json!({"spec": {"replicas": 6}}))
        );
        assert_eq!(
            pass.actions[1].line(ActionState::Planned),
            "would scale deployment web/three: replicas 3 → 6 (cancer)"
        );
    }

    #[test]
    fn ipsum_skips_immutable_configmaps_and_keeps_keys() {
        let mut empty = configmap("web", "empty", None);
        empty["data"] = json!({});
        let cms = vec![
            configmap("web", "frozen", Some(true)),
            configmap("web", "thawed", Some(false)),
            configmap("web", "plain", None),
            empty,
        ];
        let mut s = spec();
        s.tantrum_mode = false;
        s.cancer_mode = false;
        let pass = choose_actions(&s, "tend-system", &[], &[], &cms, 5);
        assert_eq!(ids(&pass), ["ipsum web/plain", "ipsum web/thawed"]);
        for action in &pass.actions {
            let Mischief::WriteData { data } = &action.mischief else {
                panic!("not a write: {action:?}")
            };
            let keys: Vec<&String> = data.keys().collect();
            assert_eq!(keys, ["nginx.conf", "mode"]);
            let conf = data["nginx.conf"].as_str().unwrap();
            assert!(
                conf.starts_with("Lorem ipsum") && conf.ends_with(".\n"),
                "{conf:?}"
            );
            assert!(conf.contains('\n'));
            let mode = data["mode"].as_str().unwrap();
            assert!(mode.starts_with("Lorem ipsum"), "{mode:?}");
            assert_eq!(action.detail, "2 keys: nginx.conf, mode");
            assert_eq!(action.patch(), Some(json!({"data": data})));
        }
    }

    #[test]
    fn max_actions_bounds_a_pass() {
        let (pods, deps, cms) = world();
        let mut s = spec();
        for max in [1, 2, 5] {
            s.max_actions = max;
            for seed in 0..30 {
                let pass = choose_actions(&s, "tend-system", &pods, &deps, &cms, seed);
                // eagerness 100: exactly maxActions, there are more candidates than that.
                assert_eq!(pass.actions.len(), max as usize, "seed {seed}");
            }
        }
        // Over many seeds, every mode gets its turn with maxActions 1.
        s.max_actions = 1;
        let modes: BTreeSet<ChaosMode> = (0..100)
            .map(|seed| choose_actions(&s, "tend-system", &pods, &deps, &cms, seed).actions[0].mode)
            .collect();
        assert_eq!(modes.len(), 3);
    }

    #[test]
    fn eagerness_100_hits_everything_and_1_hits_little() {
        let (pods, deps, cms) = world();
        let mut s = spec();
        let pass = choose_actions(&s, "tend-system", &pods, &deps, &cms, 77);
        // web, api and prod (not excluded here): 3 pods, a Deployment and a ConfigMap each.
        assert_eq!(pass.candidates.total(), 3 * (3 + 1 + 1));
        assert_eq!(pass.actions.len(), pass.candidates.total());
        s.eagerness = 1;
        let pass = choose_actions(&s, "tend-system", &pods, &deps, &cms, 77);
        assert!(pass.actions.len() <= 1, "{:?}", ids(&pass));
        let hits: usize = (0..100)
            .map(|seed| {
                choose_actions(&s, "tend-system", &pods, &deps, &cms, seed)
                    .actions
                    .len()
            })
            .sum();
        // 100 passes × 15 candidates × 1%: about 15.
        assert!(hits <= 40, "{hits}");
    }

    #[test]
    fn same_seed_same_plan_whatever_the_listing_order() {
        let (pods, deps, cms) = world();
        let mut s = spec();
        s.eagerness = 40;
        s.max_actions = 4;
        let mut rev_pods = pods.clone();
        rev_pods.reverse();
        let mut rev_cms = cms.clone();
        rev_cms.reverse();
        let mut distinct = BTreeSet::new();
        for seed in 0..40 {
            let a = choose_actions(&s, "tend-system", &pods, &deps, &cms, seed);
            let b = choose_actions(&s, "tend-system", &rev_pods, &deps, &rev_cms, seed);
            assert_eq!(a, b, "seed {seed}");
            distinct.insert(ids(&a));
        }
        assert!(distinct.len() > 10, "seeds barely matter: {distinct:?}");
    }

    #[test]
    fn hit_rate_is_about_eagerness() {
        let pods: Vec<Value> = (0..50).map(|i| pod("web", &format!("p{i:02}"))).collect();
        let mut s = spec();
        s.cancer_mode = false;
        s.ipsum_mode = false;
        for eagerness in [10, 30, 50, 90] {
            s.eagerness = eagerness;
            let hits: usize = (0..200)
                .map(|seed| {
                    choose_actions(&s, "tend-system", &pods, &[], &[], seed)
                        .actions
                        .len()
                })
                .sum();
            let rate = hits as f64 / (200.0 * 50.0);
            let expected = f64::from(eagerness) / 100.0;
            assert!(
                (rate - expected).abs() < 0.03,
                "eagerness {eagerness}: rate {rate}"
            );
        }
    }

    #[test]
    fn report_lines() {
        let a = ChaosAction {
            mode: ChaosMode::Tantrum,
            kind: "Pod",
            namespace: "web".into(),
            name: "nginx-abc".into(),
            detail: String::new(),
            mischief: Mischief::Delete,
        };
        assert_eq!(
            a.line(ActionState::Planned),
            "would delete pod web/nginx-abc (tantrum)"
        );
        assert_eq!(
            a.line(ActionState::Done),
            "deleted pod web/nginx-abc (tantrum)"
        );
        assert_eq!(
            a.line(ActionState::Failed("boom")),
            "failed to delete pod web/nginx-abc (tantrum): boom"
        );
        assert_eq!(a.action(), "delete");
        assert_eq!(a.patch(), None);
    }
}
