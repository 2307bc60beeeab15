//! The fault matrix (RELIABILITY.md "Faults"): for each stage of a run (discovery, LIST, dry run,
//! apply, status, prune, lease, ApplySet parent) and each fault (500, 429 with Retry-After, a
//! slow response, a dropped connection; once, and persistently), injected at the stage's
//! first request and at a random one (seeded; the seed is printed, `TEND_FAULT_SEED=<n>`
//! replays it):
//!
//! - the run succeeds through retries or exits 2 with a clear message (never a panic);
//! - nothing outside the desired set is deleted (unrelated objects are seeded and checked);
//! - the ApplySet parent covers every live member at every point we can observe;
//! - a following fault-free run reaches exactly the state of a cluster that never saw a fault
//!   (normalized objects compared), and a `diff` after it is clean.
//!
//! Which requests belong to which stage is read from the request log of a fault-free probe
//! run of the same transition, so the matrix follows the engine as it changes. Each row is
//! printed (`cargo test --test cli faults -- --nocapture`); RELIABILITY.md records them.

use crate::common::*;
use crate::kinds::cluster_with_crds;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tend_testserver::{Fault, RequestRecord, TestCluster, Verb};

const PART_OF: &str = "applyset.kubernetes.io/part-of";
const GROUP_KINDS: &str = "applyset.kubernetes.io/contains-group-kinds";
const NAMESPACES: &str = "applyset.kubernetes.io/additional-namespaces";

// ---------------------------------------------------------------------------------------
// The site: version 1, then version 2 (an update, a create, two prunes, a copy that
// follows its source, the Deployment re-rolled by its config hash).

fn cm(name: &str, ns: &str, data: &str, labels: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n{labels}data:\n  key: \"{data}\"\n")
}

const SHARE: &str = "  labels:\n    share: \"yes\"\n";

const NAMESPACES_YAML: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n";

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  namespace: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: nginx}
  template:
    metadata:
      labels: {app: nginx}
    spec:
      containers:
        - name: nginx
          image: nginx:1.27
          volumeMounts:
            - name: config
              mountPath: /etc/nginx
      volumes:
        - name: config
          configMap:
            name: a
";

const SECRET: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: web\nstringData:\n  password: not-a-canary\n";

const COPY_RULE: &str = "apiVersion: tend.dev/v1alpha1
kind: CopyRule
metadata:
  name: share
spec:
  kind: ConfigMap
  sourceNamespace: web
  selector:
    matchLabels:
      share: \"yes\"
  targetNamespaces: [team-a]
";

const GOLD: &str = "  labels:\n    gold: \"yes\"\n";

fn gold_rule() -> String {
    COPY_RULE
        .replace("name: share", "name: gold")
        .replace("share: \"yes\"", "gold: \"yes\"")
}

/// Version 1: `a` is copied by rule `share`, `b` by rule `gold`.
fn v1() -> Vec<(&'static str, String)> {
    vec![
        ("namespaces.yaml", NAMESPACES_YAML.to_string()),
        ("a.yaml", cm("a", "web", "one", SHARE)),
        ("b.yaml", cm("b", "web", "one", GOLD)),
        ("d.yaml", cm("d", "web", "one", "")),
        ("e.yaml", cm("e", "web", "one", "")),
        ("secret.yaml", SECRET.to_string()),
        ("deploy.yaml", DEPLOYMENT.to_string()),
        ("rule.yaml", COPY_RULE.to_string()),
        ("gold.yaml", gold_rule()),
    ]
}

/// Version 2: `a` changes (so do its copy and the Deployment's hash), `c` and `f` are new
/// and shared by one rule each (two more copies, both rules' statuses change), `d` and `e`
/// are gone (pruned).
fn v2() -> Vec<(&'static str, String)> {
    vec![
        ("namespaces.yaml", NAMESPACES_YAML.to_string()),
        ("a.yaml", cm("a", "web", "two", SHARE)),
        ("b.yaml", cm("b", "web", "one", GOLD)),
        ("c.yaml", cm("c", "web", "one", SHARE)),
        ("f.yaml", cm("f", "web", "one", GOLD)),
        ("secret.yaml", SECRET.to_string()),
        ("deploy.yaml", DEPLOYMENT.to_string()),
        ("rule.yaml", COPY_RULE.to_string()),
        ("gold.yaml", gold_rule()),
    ]
}

/// Version 3 adds a namespace (so the parent must be widened before anything is applied)
/// and drops `b` and `d` (so there is something to prune).
fn v3() -> Vec<(&'static str, String)> {
    let mut files = v2();
    files.push((
        "api.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: api\n---\n".to_string()
            + &cm("settings", "api", "one", ""),
    ));
    files
}

fn write(dir: &std::path::Path, files: &[(&'static str, String)]) {
    let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    write_site(dir, &files);
}

/// Objects tend never manages, which must survive every run, faulted or not. One of them
/// carries the part-of label of another ApplySet.
fn seed_bystanders(cluster: &TestCluster) {
    for object in [
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"other"}}),
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"unrelated","namespace":"other"},"data":{"k":"v"}}),
        json!({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"web"}}),
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bystander","namespace":"web"},"data":{"k":"v"}}),
        json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"foreign","namespace":"web",
            "labels":{PART_OF:"applyset-someone-else-v1"}},"data":{"k":"v"}}),
        json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"tend-other","namespace":"default"},"stringData":{"k":"v"}}),
    ] {
        cluster.seed(object).unwrap();
    }
}

const BYSTANDERS: &[(&str, &str, &str, &str)] = &[
    ("", "namespaces", "", "other"),
    ("", "configmaps", "other", "unrelated"),
    ("", "configmaps", "web", "bystander"),
    ("", "configmaps", "web", "foreign"),
    ("", "secrets", "default", "tend-other"),
];

fn missing_bystanders(cluster: &TestCluster) -> Vec<String> {
    BYSTANDERS
        .iter()
        .filter(|(g, r, ns, name)| cluster.object(g, r, ns, name).is_none())
        .map(|(_, r, ns, name)| format!("{r} {ns}/{name}"))
        .collect()
}

/// A cluster with tend's CRDs, the bystanders, and `files` applied without faults.
fn prepared_cluster(dir: &std::path::Path, files: &[(&'static str, String)]) -> TestCluster {
    let cluster = cluster_with_crds();
    seed_bystanders(&cluster);
    write(dir, files);
    let (code, stdout, stderr) = tend_on(&cluster, dir, &["apply"]);
    assert_eq!(code, 0, "initial apply failed:\n{stdout}\n{stderr}");
    cluster
}

// ---------------------------------------------------------------------------------------
// Observing the cluster.

/// Every object of the kinds the site uses, normalized for comparison between clusters:
/// server bookkeeping (uid, resourceVersion, timestamps) and the run record (time, counts)
/// dropped. Leases are left out (their times differ); `lease_released` checks them.
fn snapshot(cluster: &TestCluster) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (group, resource) in [
        ("", "namespaces"),
        ("", "configmaps"),
        ("", "secrets"),
        ("", "serviceaccounts"),
        ("apps", "deployments"),
        ("tend.dev", "copyrules"),
    ] {
        for mut object in cluster.objects(group, resource) {
            let key = format!(
                "{resource} {}/{}",
                object["metadata"]["namespace"].as_str().unwrap_or(""),
                object["metadata"]["name"].as_str().unwrap_or("")
            );
            normalize(&mut object);
            out.insert(key, object);
        }
    }
    out
}

fn normalize(object: &mut Value) {
    let meta = object["metadata"].as_object_mut().unwrap();
    for field in ["uid", "resourceVersion", "creationTimestamp"] {
        meta.remove(field);
    }
    if let Some(fields) = meta.get_mut("managedFields").and_then(Value::as_array_mut) {
        for entry in fields {
            entry.as_object_mut().unwrap().remove("time");
        }
    }
    if let Some(owners) = meta
        .get_mut("ownerReferences")
        .and_then(Value::as_array_mut)
    {
        for owner in owners {
            owner.as_object_mut().unwrap().remove("uid");
        }
    }
    if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.remove("tend.dev/last-run");
        annotations.remove("tend.dev/last-summary");
        annotations.remove("tend.dev/last-result");
    }
    if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
        for time in ["lastRun", "lastSyncTime", "observedAt", "lastUpdated"] {
            status.remove(time);
        }
        // The Ready condition of tend's kinds is stamped with the second it changed.
        if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
            for condition in conditions.iter_mut().filter_map(Value::as_object_mut) {
                condition.remove("lastTransitionTime");
            }
        }
    }
}

/// The ApplySet parent must name the group-kind and namespace of every live member.
fn inventory_gaps(cluster: &TestCluster) -> Vec<String> {
    let parent = cluster.object("", "secrets", "tend-system", "tend");
    let annotation = |key: &str| -> BTreeSet<String> {
        parent
            .as_ref()
            .and_then(|p| p["metadata"]["annotations"][key].as_str())
            .unwrap_or("")
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let (kinds, namespaces) = (annotation(GROUP_KINDS), annotation(NAMESPACES));
    let id = parent
        .as_ref()
        .and_then(|p| p["metadata"]["labels"]["applyset.kubernetes.io/id"].as_str())
        .unwrap_or("applyset-tend-none")
        .to_string();
    let mut gaps = Vec::new();
    for (group, resource, kind) in [
        ("", "namespaces", "Namespace"),
        ("", "configmaps", "ConfigMap"),
        ("", "secrets", "Secret"),
        ("apps", "deployments", "Deployment.apps"),
        ("tend.dev", "copyrules", "CopyRule.tend.dev"),
    ] {
        for object in cluster.objects(group, resource) {
            let label = object["metadata"]["labels"][PART_OF].as_str();
            if label != Some(id.as_str())
                && !(parent.is_none()
                    && label.is_some_and(|l| {
                        l.starts_with("applyset-") && l != "applyset-someone-else-v1"
                    }))
            {
                continue;
            }
            let ns = object["metadata"]["namespace"].as_str().unwrap_or("");
            let name = object["metadata"]["name"].as_str().unwrap_or("");
            if parent.is_none() {
                gaps.push(format!(
                    "member {kind} {ns}/{name} exists but the parent does not"
                ));
                continue;
            }
            if !kinds.contains(kind) {
                gaps.push(format!(
                    "member {kind} {ns}/{name}: {kind} not in {GROUP_KINDS} {kinds:?}"
                ));
            }
            if !ns.is_empty() && !namespaces.contains(ns) {
                gaps.push(format!(
                    "member {kind} {ns}/{name}: {ns} not in {NAMESPACES} {namespaces:?}"
                ));
            }
        }
    }
    gaps
}

fn lease_released(cluster: &TestCluster) -> bool {
    cluster
        .object("coordination.k8s.io", "leases", "tend-system", "tend-lock")
        .is_none_or(|l| {
            l["spec"]["holderIdentity"]
                .as_str()
                .unwrap_or("")
                .is_empty()
        })
}

/// Objects deleted by a run: keys in `before` and not in `after`.
fn deleted(before: &BTreeMap<String, Value>, after: &BTreeMap<String, Value>) -> BTreeSet<String> {
    before
        .keys()
        .filter(|k| !after.contains_key(*k))
        .cloned()
        .collect()
}

// ---------------------------------------------------------------------------------------
// Stages, read from the request log of a fault-free probe run.

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Discovery,
    List,
    DryRun,
    Apply,
    Status,
    Prune,
    Lease,
    Parent,
}

fn stage_of(r: &RequestRecord) -> Option<Stage> {
    if r.verb == Verb::Discovery {
        return Some(Stage::Discovery);
    }
    if r.resource == "leases" {
        return Some(Stage::Lease);
    }
    if r.resource == "secrets"
        && r.namespace.as_deref() == Some("tend-system")
        && r.name.as_deref() == Some("tend")
    {
        return Some(Stage::Parent);
    }
    if r.subresource.as_deref() == Some("status") {
        return Some(Stage::Status);
    }
    match r.verb {
        Verb::List => Some(Stage::List),
        Verb::Apply if r.dry_run => Some(Stage::DryRun),
        Verb::Apply | Verb::Create | Verb::Update | Verb::Patch => Some(Stage::Apply),
        Verb::Delete => Some(Stage::Prune),
        _ => None,
    }
}

/// A request a fault can be aimed at: its method and exact path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Target {
    method: String,
    path: String,
}

impl Target {
    fn of(r: &RequestRecord) -> Target {
        Target {
            method: r.method.clone(),
            path: r.path.clone(),
        }
    }
}

/// What a fault-free run of each transition looks like: the requests of each stage (in
/// order, distinct) and the final state.
struct Probe {
    targets: BTreeMap<Stage, Vec<Target>>,
    state: BTreeMap<String, Value>,
    /// Objects the transition deletes (prunes and copies that lost their source).
    deleted: BTreeSet<String>,
}

fn probe_of(command: &str, to: fn() -> Vec<(&'static str, String)>) -> Probe {
    let dir = tempfile::tempdir().unwrap();
    let cluster = prepared_cluster(dir.path(), &v1());
    let before = snapshot(&cluster);
    write(dir.path(), &to());
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[command]);
    assert!(
        code == 0 || command == "diff" && code == 1,
        "probe {command}: {code}\n{stdout}\n{stderr}"
    );
    let mut targets: BTreeMap<Stage, Vec<Target>> = BTreeMap::new();
    for r in cluster.requests() {
        if let Some(stage) = stage_of(&r) {
            let list = targets.entry(stage).or_default();
            let t = Target::of(&r);
            if !list.contains(&t) {
                list.push(t);
            }
        }
    }
    let state = snapshot(&cluster);
    if command == "apply" {
        let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
        assert_eq!(code, 0, "one fault-free run must converge:\n{stdout}");
    }
    Probe {
        targets,
        deleted: deleted(&before, &state),
        state,
    }
}

fn probe(command: &'static str) -> &'static Probe {
    static APPLY: OnceLock<Probe> = OnceLock::new();
    static DIFF: OnceLock<Probe> = OnceLock::new();
    match command {
        "apply" => APPLY.get_or_init(|| probe_of("apply", v2)),
        _ => DIFF.get_or_init(|| probe_of("diff", v2)),
    }
}

/// The matrix's random choices: SplitMix64, seeded from `TEND_FAULT_SEED` or the clock.
fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        let seed = std::env::var("TEND_FAULT_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        println!("fault matrix seed: {seed} (replay with TEND_FAULT_SEED={seed})");
        eprintln!("fault matrix seed: {seed} (replay with TEND_FAULT_SEED={seed})");
        seed
    })
}

fn pick(stage: Stage, fault: &str, n: usize) -> usize {
    // One independent draw per (stage, fault), so rows do not depend on test order.
    let mut x = seed()
        ^ ((stage as u64) << 32)
        ^ fault
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z % n as u64) as usize
}

// ---------------------------------------------------------------------------------------
// Faults and the matrix.

#[derive(Debug, Clone, Copy)]
enum FaultKind {
    Status500,
    TooMany429,
    Slow,
    Drop,
    Status500Always,
    DropAlways,
}

impl FaultKind {
    fn name(self) -> &'static str {
        match self {
            FaultKind::Status500 => "500 once",
            FaultKind::TooMany429 => "429 + Retry-After: 1, twice",
            FaultKind::Slow => "1.5 s delay (slow response)",
            FaultKind::Drop => "dropped connection once",
            FaultKind::Status500Always => "500 always",
            FaultKind::DropAlways => "dropped connection always",
        }
    }

    fn transient(self) -> bool {
        !matches!(self, FaultKind::Status500Always | FaultKind::DropAlways)
    }

    fn fault(self, t: &Target) -> Fault {
        let base = match self {
            FaultKind::Status500 => Fault::status(500).times(1),
            FaultKind::TooMany429 => Fault::status(429).retry_after(1).times(2),
            FaultKind::Slow => Fault::delay(Duration::from_millis(1500)).times(1),
            FaultKind::Drop => Fault::drop_connection().times(1),
            FaultKind::Status500Always => Fault::status(500).always(),
            FaultKind::DropAlways => Fault::drop_connection().always(),
        };
        base.method(&t.method).path_glob(&t.path)
    }
}

const TRANSIENT: &[FaultKind] = &[
    FaultKind::Status500,
    FaultKind::TooMany429,
    FaultKind::Slow,
    FaultKind::Drop,
];
const PERSISTENT: &[FaultKind] = &[FaultKind::Status500Always, FaultKind::DropAlways];

struct Row {
    stage: Stage,
    fault: FaultKind,
    position: String,
    target: Target,
    command: &'static str,
}

/// Run one cell of the matrix; `Ok(observed)` or `Err(what went wrong)`.
fn run_row(row: &Row) -> Result<String, String> {
    let probe = probe(row.command);
    let dir = tempfile::tempdir().unwrap();
    let cluster = prepared_cluster(dir.path(), &v1());
    let before = snapshot(&cluster);
    write(dir.path(), &v2());
    cluster.inject(row.fault.fault(&row.target));
    let started = Instant::now();
    // A persistently dropped connection is retried as an outage, under the run's budget.
    let (code, stdout, stderr) = tend_on(
        &cluster,
        dir.path(),
        &[row.command, "--retry-timeout", "3s", "--lock-timeout", "5s"]
            [..if row.command == "apply" { 5 } else { 3 }],
    );
    let elapsed = started.elapsed();
    let hit = cluster
        .requests()
        .iter()
        .filter(|r| r.faulted && r.method == row.target.method && r.path == row.target.path)
        .count();
    let mut problems = Vec::new();
    let ok_codes: &[i32] = match (row.command, row.fault.transient()) {
        ("apply", true) => &[0],
        ("diff", true) => &[1],
        ("apply", false) => &[0, 2],
        _ => &[1, 2],
    };
    if !ok_codes.contains(&code) {
        problems.push(format!("exit {code}, expected one of {ok_codes:?}"));
    }
    if stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
        problems.push("panic".into());
    }
    // Run-level errors are also in the report on stdout; that stderr must carry them too is
    // checked by `a_failed_run_record_is_reported_on_stderr`.
    if code == 2
        && !stderr
            .lines()
            .chain(stdout.lines())
            .any(|l| l.starts_with("error: "))
    {
        problems.push("exit 2 without an `error:` line".into());
    }
    let missing = missing_bystanders(&cluster);
    if !missing.is_empty() {
        problems.push(format!("bystanders deleted: {missing:?}"));
    }
    let after_fault = snapshot(&cluster);
    let gone = deleted(&before, &after_fault);
    let unexpected: Vec<_> = gone.difference(&probe.deleted).collect();
    if !unexpected.is_empty() {
        problems.push(format!("deleted outside the plan: {unexpected:?}"));
    }
    let gaps = inventory_gaps(&cluster);
    if !gaps.is_empty() {
        problems.push(format!("inventory after the faulted run: {gaps:?}"));
    }

    // Recovery: a fault-free run converges to the state of a cluster that never saw faults.
    cluster.clear_faults();
    let (rcode, rout, rerr) = tend_on(&cluster, dir.path(), &["apply"]);
    if rcode != 0 {
        problems.push(format!("recovery apply exited {rcode}:\n{rout}\n{rerr}"));
    }
    let reference = &probe_of_apply().state;
    let state = snapshot(&cluster);
    if &state != reference {
        let mut differences = Vec::new();
        for key in reference
            .keys()
            .chain(state.keys())
            .collect::<BTreeSet<_>>()
        {
            if reference.get(key) != state.get(key) {
                differences.push(format!(
                    "{key}:\n  reference {}\n  recovered {}",
                    reference
                        .get(key)
                        .map(|v| v.to_string())
                        .unwrap_or("-".into()),
                    state.get(key).map(|v| v.to_string()).unwrap_or("-".into())
                ));
            }
        }
        problems.push(format!(
            "state after recovery differs from the reference:\n{}",
            differences.join("\n")
        ));
    }
    if !lease_released(&cluster) {
        problems.push("lock lease still held after recovery".into());
    }
    let (dcode, dout, _) = tend_on(&cluster, dir.path(), &["diff"]);
    if dcode != 0 {
        problems.push(format!("diff after recovery exited {dcode}:\n{dout}"));
    }
    let first_error = stderr
        .lines()
        .chain(stdout.lines())
        .find(|l| l.starts_with("error: "))
        .map(|l| l.chars().take(140).collect::<String>())
        .unwrap_or_default();
    let hit = if matches!(row.fault, FaultKind::Slow) {
        "delayed".to_string()
    } else {
        format!("fault hit {hit}x")
    };
    let observed = format!(
        "exit {code} in {:.1} s, {hit}{}; recovered",
        elapsed.as_secs_f64(),
        if first_error.is_empty() {
            String::new()
        } else {
            format!("; `{first_error}`")
        }
    );
    if problems.is_empty() {
        Ok(observed)
    } else {
        Err(format!(
            "{observed}\n  {}\n  stdout: {stdout}\n  stderr: {stderr}",
            problems.join("\n  ")
        ))
    }
}

fn probe_of_apply() -> &'static Probe {
    probe("apply")
}

/// Every row of the matrix for `stage`, run a few at a time.
fn matrix(stage: Stage) {
    let command = if stage == Stage::DryRun {
        "diff"
    } else {
        "apply"
    };
    let probe = probe(command);
    // Build the reference of the recovery state too, before the rows race for it.
    let _ = probe_of_apply();
    let Some(targets) = probe.targets.get(&stage).filter(|t| !t.is_empty()) else {
        println!("| {stage:?} | - | - | no request of this stage in the run | - |");
        panic!("stage {stage:?} made no request in the probe run; the matrix needs updating");
    };
    let mut rows = Vec::new();
    for &fault in TRANSIENT {
        rows.push(Row {
            stage,
            fault,
            position: "first".into(),
            target: targets[0].clone(),
            command,
        });
        let i = pick(stage, fault.name(), targets.len());
        rows.push(Row {
            stage,
            fault,
            position: format!("random ({} of {})", i + 1, targets.len()),
            target: targets[i].clone(),
            command,
        });
    }
    for &fault in PERSISTENT {
        let i = pick(stage, fault.name(), targets.len());
        rows.push(Row {
            stage,
            fault,
            position: format!("random ({} of {})", i + 1, targets.len()),
            target: targets[i].clone(),
            command,
        });
    }
    let results: Vec<(String, Result<String, String>)> = std::thread::scope(|scope| {
        let workers = 5;
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let rows = &rows;
                scope.spawn(move || {
                    rows.iter()
                        .skip(w)
                        .step_by(workers)
                        .map(|row| {
                            let label = format!(
                                "| {:?} | {} | {}: {} {} | {} |",
                                row.stage,
                                row.fault.name(),
                                row.position,
                                row.target.method,
                                row.target.path,
                                row.command
                            );
                            (label, run_row(row))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let mut failures = Vec::new();
    for (label, result) in results {
        match result {
            Ok(observed) => println!("{label} {observed} |"),
            Err(e) => {
                println!("{label} FAILED |");
                failures.push(format!("{label}\n  {e}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "seed {}:\n{}",
        seed(),
        failures.join("\n\n")
    );
}

#[test]
fn faults_in_discovery() {
    matrix(Stage::Discovery);
}

#[test]
fn faults_in_list() {
    matrix(Stage::List);
}

#[test]
fn faults_in_dry_run() {
    matrix(Stage::DryRun);
}

#[test]
fn faults_in_apply() {
    matrix(Stage::Apply);
}

#[test]
fn faults_in_status_writes() {
    matrix(Stage::Status);
}

#[test]
fn faults_in_prune() {
    matrix(Stage::Prune);
}

#[test]
fn faults_in_lease() {
    matrix(Stage::Lease);
}

#[test]
fn faults_in_applyset_parent() {
    matrix(Stage::Parent);
}

/// One fault-free run converges: removing the source of a CopyRule's copy from git prunes
/// the source and its copies in the same run, so a `diff` right after is clean.
#[test]
fn removing_a_copy_source_converges_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = prepared_cluster(dir.path(), &v1());
    assert!(
        cluster.object("", "configmaps", "team-a", "b").is_some(),
        "copied"
    );
    let files: Vec<_> = v1()
        .into_iter()
        .filter(|(name, _)| *name != "b.yaml")
        .collect();
    write(dir.path(), &files);
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        cluster.object("", "configmaps", "web", "b").is_none(),
        "source pruned"
    );
    assert!(
        cluster.object("", "configmaps", "team-a", "b").is_none(),
        "the copy of a pruned source is pruned in the same run"
    );
    let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "{stdout}");
}

// ---------------------------------------------------------------------------------------
// Crashes and failures between widening the parent and narrowing it.

/// The reference state of the v1 → v3 transition (a new namespace: the parent is widened).
fn v3_reference() -> &'static BTreeMap<String, Value> {
    static V3: OnceLock<Probe> = OnceLock::new();
    &V3.get_or_init(|| probe_of("apply", v3)).state
}

/// The `tend` binary as a child process (for killing it mid-run), with a clean environment.
fn spawn_tend(cluster: &TestCluster, dir: &std::path::Path, args: &[&str]) -> std::process::Child {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("tend"));
    for (key, _) in std::env::vars() {
        if key.starts_with("TEND_") || key == "KUBECONFIG" {
            cmd.env_remove(key);
        }
    }
    cmd.env("TEND_COLOR", "never")
        .args(args)
        .arg("--repo")
        .arg(dir)
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait until `ready` holds (polling), at most 20 s.
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn widened(cluster: &TestCluster) -> bool {
    cluster
        .object("", "secrets", "tend-system", "tend")
        .and_then(|p| {
            p["metadata"]["annotations"][NAMESPACES]
                .as_str()
                .map(str::to_string)
        })
        .is_some_and(|ns| ns.split(',').any(|n| n == "api"))
}

/// Make the lock Lease look abandoned (its holder stopped renewing long ago), as after a crash.
fn expire_lease(cluster: &TestCluster) {
    let mut lease = cluster
        .object("coordination.k8s.io", "leases", "tend-system", "tend-lock")
        .expect("lease");
    lease["spec"]["renewTime"] = json!("2020-01-01T00:00:00.000000Z");
    lease["spec"]["acquireTime"] = json!("2020-01-01T00:00:00.000000Z");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = cluster.client().await;
        let api: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
            kube::Api::namespaced(client, "tend-system");
        let lease: k8s_openapi::api::coordination::v1::Lease =
            serde_json::from_value(lease).unwrap();
        api.replace("tend-lock", &Default::default(), &lease)
            .await
            .unwrap();
    });
}

/// After a recovery run: the state of a cluster that never saw the failure, and a clean diff.
fn assert_recovers_to(
    cluster: &TestCluster,
    dir: &std::path::Path,
    reference: &BTreeMap<String, Value>,
) {
    let (code, stdout, stderr) = tend_on(cluster, dir, &["apply", "--lock-timeout", "5s"]);
    assert_eq!(code, 0, "recovery:\n{stdout}\n{stderr}");
    let state = snapshot(cluster);
    for key in reference
        .keys()
        .chain(state.keys())
        .collect::<BTreeSet<_>>()
    {
        assert_eq!(reference.get(key), state.get(key), "{key} after recovery");
    }
    assert!(lease_released(cluster));
    let (code, stdout, _) = tend_on(cluster, dir, &["diff"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(missing_bystanders(cluster).is_empty());
}

/// tend is killed (SIGKILL) after widening the parent and applying, while its first prune is
/// in flight: every member stays findable, and the next run (taking over the abandoned
/// lock) finishes the job.
#[test]
fn crash_between_widen_and_prune_keeps_every_member_findable() {
    let reference = v3_reference();
    let dir = tempfile::tempdir().unwrap();
    let cluster = prepared_cluster(dir.path(), &v1());
    write(dir.path(), &v3());
    cluster.inject(
        Fault::delay(Duration::from_secs(5))
            .verb(Verb::Delete)
            .always(),
    );
    let mut child = spawn_tend(&cluster, dir.path(), &["apply"]);
    wait_for("the parent to be widened", || widened(&cluster));
    wait_for("the new namespace's objects", || {
        cluster
            .object("", "configmaps", "api", "settings")
            .is_some()
    });
    // Applies are done once the Deployment carries the new config hash; then prunes start.
    wait_for("the applies to finish", || {
        cluster.object("", "configmaps", "team-a", "f").is_some()
    });
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let gaps = inventory_gaps(&cluster);
    assert!(gaps.is_empty(), "after the crash: {gaps:?}");
    assert!(missing_bystanders(&cluster).is_empty());
    assert!(
        !lease_released(&cluster),
        "the crashed run still holds the lock"
    );

    cluster.clear_faults();
    expire_lease(&cluster);
    assert_recovers_to(&cluster, dir.path(), reference);
}

/// Every prune fails: the run exits 2 naming them, and the narrowed parent still lists the
/// members that were not deleted.
#[test]
fn failed_prunes_stay_in_the_inventory() {
    let reference = v3_reference();
    let dir = tempfile::tempdir().unwrap();
    let cluster = prepared_cluster(dir.path(), &v1());
    write(dir.path(), &v3());
    cluster.inject(Fault::status(500).verb(Verb::Delete).always());
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("cannot delete ConfigMap web/d"), "{stderr}");
    assert!(cluster.object("", "configmaps", "web", "d").is_some());
    let gaps = inventory_gaps(&cluster);
    assert!(gaps.is_empty(), "{gaps:?}");
    assert!(widened(&cluster));
    cluster.clear_faults();
    assert_recovers_to(&cluster, dir.path(), reference);
}

/// The parent is widened, then the final write (narrow + record) fails: the parent stays
/// wide, so nothing is lost; the run exits 2.
#[test]
fn failed_narrowing_keeps_the_wide_inventory() {
    let reference = v3_reference();
    let dir = tempfile::tempdir().unwrap();
    let cluster = prepared_cluster(dir.path(), &v1());
    write(dir.path(), &v3());
    cluster.inject(
        Fault::delay(Duration::from_millis(1500))
            .verb(Verb::Delete)
            .times(1),
    );
    let child = spawn_tend(&cluster, dir.path(), &["apply"]);
    wait_for("the parent to be widened", || widened(&cluster));
    cluster.inject(
        Fault::status(500)
            .method("PATCH")
            .path_glob("/api/v1/namespaces/tend-system/secrets/tend")
            .always(),
    );
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("cannot record the run on the ApplySet parent"),
        "{stdout}\n{stderr}"
    );
    assert!(widened(&cluster), "still wide");
    let gaps = inventory_gaps(&cluster);
    assert!(gaps.is_empty(), "{gaps:?}");
    cluster.clear_faults();
    assert_recovers_to(&cluster, dir.path(), reference);
}

/// README "Exit codes": errors go to stderr. A run whose final parent write fails exits 2; the reason must
/// be on stderr (it is in the report on stdout today, and not logged).
#[test]
fn a_failed_run_record_is_reported_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = prepared_cluster(dir.path(), &v1());
    write(dir.path(), &v2());
    // v1 → v2 needs no widening, so the only parent write is the final one.
    cluster.inject(
        Fault::status(500)
            .method("PATCH")
            .path_glob("/api/v1/namespaces/tend-system/secrets/tend")
            .always(),
    );
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("error: cannot record the run on the ApplySet parent"),
        "{stderr}"
    );
}

/// Errors from the API are one clear sentence: the server's message and reason, not a dump
/// of kube's `Status` struct.
#[test]
fn api_errors_are_one_clear_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = cluster_with_crds();
    write(dir.path(), &v1());
    cluster.inject(Fault::status(500).verb(Verb::Discovery).always());
    let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2);
    let first = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or("");
    assert!(
        !first.contains("Status {") && !first.contains("ListMeta"),
        "{first}"
    );
    assert!(first.contains("500"), "{first}");
}

/// A response slower than tend's client read timeout (30 s) is retried like a dropped
/// connection.
#[test]
#[ignore = "takes over 30 s (tend's client read timeout); .ci/run runs it with --ignored"]
fn a_response_slower_than_the_read_timeout_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = prepared_cluster(dir.path(), &v1());
    write(dir.path(), &v2());
    cluster.inject(
        Fault::delay(Duration::from_secs(35))
            .method("DELETE")
            .path_glob("/api/v1/namespaces/web/configmaps/d")
            .times(1),
    );
    let started = Instant::now();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    println!("read timeout: exit {code} after {:?}", started.elapsed());
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(started.elapsed() >= Duration::from_secs(30));
    assert!(cluster.object("", "configmaps", "web", "d").is_none());
}
