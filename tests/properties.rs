//! Property tests (proptest) of render and plan through the library API, and of
//! idempotence through the binary against the test API server:
//!
//! - render is deterministic and independent of file order and of how documents are split
//!   into files;
//! - normalization never drops a field the desired object sets, and the fast path never calls
//!   an object unchanged when a field it sets differs live;
//! - the config hash changes iff the content of a referenced ConfigMap/Secret changes;
//! - after `tend apply`, `tend diff` finds nothing and a second apply writes no object.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use tend::fast_path;
use tend::normalize;
use tend::SourceFile;
use tend::{render, RenderOptions, Rendered};

// ---------------------------------------------------------------------------------------
// Generators.

fn dns_label() -> impl Strategy<Value = String> {
    "[a-z]([a-z0-9-]{0,10}[a-z0-9])?"
}

fn label_key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9]{0,8}",
        "[a-z]{1,6}\\.example\\.com/[a-z][a-z0-9_.-]{0,6}[a-z0-9]",
        Just("app.kubernetes.io/name".to_string()),
    ]
}

fn label_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[A-Za-z0-9]([A-Za-z0-9_.-]{0,10}[A-Za-z0-9])?",
    ]
}

/// Strings that are hard for YAML: look like other types, carry indicators, quotes,
/// newlines, leading spaces, unicode.
fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ -~]{0,24}",
        "\\PC{0,16}",
        Just("yes".to_string()),
        Just("null".to_string()),
        Just("~".to_string()),
        Just("1.0".to_string()),
        Just("0x1F".to_string()),
        Just("- item".to_string()),
        Just("key: value".to_string()),
        Just("# not a comment".to_string()),
        Just("line one\nline two\n".to_string()),
        Just("  leading spaces".to_string()),
        Just("'quoted' \"both\"".to_string()),
        Just("*alias &anchor !tag".to_string()),
        Just("[1, 2]".to_string()),
        Just("{a: 1}".to_string()),
    ]
}

fn data_key() -> impl Strategy<Value = String> {
    "[A-Za-z0-9._-]{1,12}".prop_filter("not . or ..", |k| k != "." && k != "..")
}

fn string_map<K: Strategy<Value = String>, V: Strategy<Value = String>>(
    keys: K,
    values: V,
    max: usize,
) -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(keys, values, 0..max).prop_map(|m| {
        m.into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect::<Map<String, Value>>()
    })
}

fn metadata(name: String, ns: Option<String>, labels: Map<String, Value>) -> Value {
    let mut meta = json!({"name": name});
    if let Some(ns) = ns {
        meta["namespace"] = json!(ns);
    }
    if !labels.is_empty() {
        meta["labels"] = Value::Object(labels);
    }
    meta
}

/// A small site: namespaces, ConfigMaps, Secrets, Deployments mounting some of them.
#[derive(Debug, Clone)]
struct Site {
    objects: Vec<Value>,
}

fn site(max_configmaps: usize) -> impl Strategy<Value = Site> {
    let namespaces = prop::collection::btree_set(dns_label(), 1..3);
    namespaces.prop_flat_map(move |namespaces| {
        let namespaces: Vec<String> = namespaces.into_iter().collect();
        let ns = prop::sample::select(namespaces.clone());
        let configmap = (
            dns_label(),
            ns.clone(),
            string_map(label_key(), label_value(), 3),
            string_map(data_key(), tricky_string(), 4),
        )
            .prop_map(|(name, ns, labels, data)| {
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": metadata(format!("cm-{name}"), Some(ns), labels), "data": data})
            });
        let secret = (dns_label(), ns.clone(), string_map(data_key(), tricky_string(), 3))
            .prop_map(|(name, ns, data)| {
                json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": metadata(format!("s-{name}"), Some(ns), Map::new()), "stringData": data})
            });
        let deployment = (
            dns_label(),
            ns,
            string_map(label_key(), label_value(), 3),
            1..4i64,
            prop::sample::select(vec!["nginx:1.27", "busybox:1.36", "registry:2"]),
            string_map("[A-Z][A-Z0-9_]{0,6}", tricky_string(), 3),
        )
            .prop_map(|(name, ns, labels, replicas, image, env)| {
                let env: Vec<Value> = env
                    .into_iter()
                    .map(|(k, v)| json!({"name": k, "value": v}))
                    .collect();
                json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": metadata(format!("d-{name}"), Some(ns), labels),
                    "spec": {"replicas": replicas,
                        "selector": {"matchLabels": {"app": format!("d-{name}")}},
                        "template": {"metadata": {"labels": {"app": format!("d-{name}")}},
                            "spec": {"containers": [{"name": "main", "image": image, "env": env}]}}}})
            });
        (
            Just(namespaces),
            prop::collection::vec(configmap, 0..max_configmaps),
            prop::collection::vec(secret, 0..2),
            prop::collection::vec(deployment, 0..3),
            any::<prop::sample::Index>(),
        )
            .prop_map(|(namespaces, cms, secrets, mut deployments, pick)| {
                // Deployments mount a ConfigMap of their namespace, when there is one.
                for d in &mut deployments {
                    let ns = d["metadata"]["namespace"].clone();
                    let candidates: Vec<&Value> =
                        cms.iter().filter(|c| c["metadata"]["namespace"] == ns).collect();
                    if !candidates.is_empty() {
                        let cm = candidates[pick.index(candidates.len())];
                        d["spec"]["template"]["spec"]["volumes"] =
                            json!([{"name": "config", "configMap": {"name": cm["metadata"]["name"]}}]);
                    }
                }
                let mut objects: Vec<Value> = namespaces
                    .iter()
                    .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}))
                    .collect();
                objects.extend(cms);
                objects.extend(secrets);
                objects.extend(deployments);
                dedup(objects)
            })
    })
}

/// Drop later objects with the same kind/namespace/name (duplicates are a render error).
fn dedup(objects: Vec<Value>) -> Site {
    let mut seen = std::collections::BTreeSet::new();
    let objects = objects
        .into_iter()
        .filter(|o| {
            seen.insert((
                o["kind"].to_string(),
                o["metadata"]["namespace"].to_string(),
                o["metadata"]["name"].to_string(),
            ))
        })
        .collect();
    Site { objects }
}

/// Written as tend writes YAML: a string such as `yes` quoted, as kubectl would need it.
fn yaml(value: &Value) -> String {
    tend::to_yaml(value)
}

/// Lay out documents into files: `chunk` documents per file, named in order.
fn files_of(objects: &[Value], chunk: usize) -> Vec<SourceFile> {
    objects
        .chunks(chunk.max(1))
        .enumerate()
        .map(|(i, docs)| SourceFile {
            path: PathBuf::from(format!("f{i:03}.yaml")),
            text: docs.iter().map(yaml).collect::<Vec<_>>().join("---\n"),
            unit: None,
        })
        .collect()
}

fn rendered(files: &[SourceFile]) -> Rendered {
    match render(files, &RenderOptions::default()) {
        Ok(r) => r,
        Err(e) => panic!("render failed: {e}\nfiles: {files:#?}"),
    }
}

fn values(r: &Rendered) -> Vec<Value> {
    r.objects.iter().map(|o| o.value.clone()).collect()
}

// ---------------------------------------------------------------------------------------
// Render.

proptest! {
    #![proptest_config(Config { cases: 64, failure_persistence: None, ..Config::default() })]

    /// Same input, same output; any order of files, same output (origins included); any
    /// split of the documents into files, same objects.
    #[test]
    fn render_is_deterministic_and_order_independent(
        site in site(6),
        chunk in 1usize..4,
        order in any::<prop::sample::Index>(),
        other_chunk in 1usize..6,
    ) {
        let files = files_of(&site.objects, chunk);
        let first = rendered(&files);
        let again = rendered(&files);
        prop_assert_eq!(&first.objects, &again.objects);

        let mut shuffled = files.clone();
        let n = shuffled.len();
        shuffled.rotate_left(order.index(n.max(1)) % n.max(1));
        shuffled.reverse();
        prop_assert_eq!(&first.objects, &rendered(&shuffled).objects);

        let resplit = files_of(&site.objects, other_chunk);
        prop_assert_eq!(values(&first), values(&rendered(&resplit)));

        // And every object of the site comes out (plus nothing else).
        prop_assert_eq!(first.objects.len(), site.objects.len());
    }

    /// What is written is what is rendered: every string of every ConfigMap survives the YAML
    /// round trip unchanged, however tricky.
    #[test]
    fn render_keeps_every_value(site in site(6)) {
        let r = rendered(&files_of(&site.objects, 2));
        for object in site.objects.iter().filter(|o| o["kind"] == "ConfigMap") {
            let out = r.objects.iter().find(|o| {
                o.value["kind"] == "ConfigMap" && o.value["metadata"] == object["metadata"]
            });
            let out = out.expect("rendered");
            prop_assert_eq!(&out.value["data"], &object["data"]);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Normalization and the fast path.

/// A desired object: only fields a user writes (no server-owned ones: status, uid,
/// resourceVersion, generation, managedFields, creationTimestamp, selfLink, the kubectl
/// last-applied annotation).
fn desired_object() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        tricky_string().prop_map(Value::String),
        any::<i32>().prop_map(|i| json!(i)),
        any::<bool>().prop_map(Value::Bool),
    ];
    let tree = leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z][a-zA-Z]{0,6}", inner, 1..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    (
        dns_label(),
        dns_label(),
        string_map(label_key(), label_value(), 3),
        string_map(label_key(), tricky_string(), 3),
        prop::collection::btree_map("[a-z][a-zA-Z]{0,8}", tree, 0..4),
    )
        .prop_map(|(name, ns, labels, annotations, spec)| {
            let mut meta = metadata(name, Some(ns), labels);
            if !annotations.is_empty() {
                meta["annotations"] = Value::Object(annotations);
            }
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": meta,
                "spec": Value::Object(spec.into_iter().collect())})
        })
}

/// Every leaf of `v` as (JSON pointer, value); empty maps and lists count as leaves.
fn leaves(v: &Value, path: String, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, c) in m {
                leaves(
                    c,
                    format!("{path}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, c) in a.iter().enumerate() {
                leaves(c, format!("{path}/{i}"), out);
            }
        }
        other => out.push((path, other.clone())),
    }
}

/// `desired` as the server would return it: server metadata, status and defaults added.
fn as_live(desired: &Value) -> Value {
    let mut live = desired.clone();
    let meta = live["metadata"].as_object_mut().unwrap();
    meta.insert("uid".into(), json!("6f0e3c1a-0000-4000-8000-000000000001"));
    meta.insert("resourceVersion".into(), json!("12345"));
    meta.insert("generation".into(), json!(3));
    meta.insert("creationTimestamp".into(), json!("2026-01-01T00:00:00Z"));
    meta.insert(
        "managedFields".into(),
        json!([{"manager": "tend", "operation": "Apply", "apiVersion": "example.com/v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]),
    );
    live["status"] =
        json!({"observedGeneration": 3, "conditions": [{"type": "Ready", "status": "True"}]});
    live["spec"]["serverDefault"] = json!("added by the server");
    live
}

proptest! {
    #![proptest_config(Config { cases: 256, failure_persistence: None, ..Config::default() })]

    /// Normalizing never loses a field the desired object sets, whether the object is the
    /// desired one or the live one with the server's additions.
    #[test]
    fn normalization_never_drops_a_desired_field(desired in desired_object()) {
        let mut expected = Vec::new();
        leaves(&desired, String::new(), &mut expected);
        for normalized in [normalize(&desired), normalize(&as_live(&desired))] {
            for (pointer, value) in &expected {
                match value {
                    // An empty map is satisfied by any map (the server may add to it).
                    Value::Object(m) if m.is_empty() => prop_assert!(
                        normalized.pointer(pointer).is_some_and(Value::is_object),
                        "{} lost",
                        pointer
                    ),
                    _ => prop_assert_eq!(normalized.pointer(pointer), Some(value), "{} lost", pointer),
                }
            }
            for server in ["/metadata/uid", "/metadata/resourceVersion", "/metadata/managedFields", "/status"] {
                prop_assert!(normalized.pointer(server).is_none(), "{} kept", server);
            }
        }
    }

    /// The fast path's safety: an object is "unchanged" when live holds every desired field
    /// (plus the server's), and never when one desired leaf differs or is missing live.
    #[test]
    fn fast_path_never_hides_a_difference(
        desired in desired_object(),
        which in any::<prop::sample::Index>(),
        remove in any::<bool>(),
    ) {
        let live = as_live(&desired);
        prop_assert!(fast_path::contains(&desired, &live));
        let mut all = Vec::new();
        leaves(&desired, String::new(), &mut all);
        // An empty desired map asks for nothing; every other leaf is a real requirement.
        all.retain(|(_, v)| !matches!(v, Value::Object(m) if m.is_empty()));
        let (pointer, value) = &all[which.index(all.len())];
        let mut changed = live.clone();
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let key = key.replace("~1", "/").replace("~0", "~");
        let target = changed.pointer_mut(parent).unwrap();
        match target {
            Value::Object(m) if remove => { m.remove(&key); }
            Value::Array(a) if remove => { a.remove(key.parse::<usize>().unwrap()); }
            _ => {
                let slot = target.get_mut(key.as_str()).or(None);
                let slot = match slot {
                    Some(s) => s,
                    None => target.get_mut(key.parse::<usize>().unwrap()).unwrap(),
                };
                *slot = match value {
                    Value::String(s) => json!(format!("{s}-changed")),
                    Value::Bool(b) => json!(!b),
                    Value::Number(n) => json!(n.as_i64().unwrap_or(0).wrapping_add(1)),
                    Value::Object(_) => json!({"other": 1}),
                    Value::Array(_) => json!(["other"]),
                    Value::Null => json!("not null"),
                };
            }
        }
        prop_assert!(
            !fast_path::contains(&desired, &changed),
            "{} changed ({}) yet the fast path says unchanged", pointer, if remove { "removed" } else { "modified" }
        );
        prop_assert!(!fast_path::is_unchanged(&desired, &changed, "tend"));
    }
}

// ---------------------------------------------------------------------------------------
// Config hash.

/// How a pod template references a ConfigMap or Secret.
#[derive(Debug, Clone, Copy)]
enum Via {
    Volume,
    Projected,
    EnvFrom,
    EnvValueFrom,
}

fn via() -> impl Strategy<Value = Via> {
    prop_oneof![
        Just(Via::Volume),
        Just(Via::Projected),
        Just(Via::EnvFrom),
        Just(Via::EnvValueFrom)
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    /// Change a value of a referenced object (by index).
    ReferencedValue(usize),
    /// Add a key to a referenced object.
    ReferencedNewKey(usize),
    /// Change a value of an unreferenced object.
    UnreferencedValue(usize),
    /// Change labels/annotations of a referenced object (not content).
    ReferencedMetadata(usize),
    /// Write a referenced Secret's data as stringData (same content).
    SecretAsStringData,
    /// Reverse the key order of every data map (same content).
    KeyOrder,
    /// Change the Deployment itself (image): its own hash input is unchanged.
    DeploymentImage,
}

impl Mutation {
    fn changes_hash(&self) -> bool {
        matches!(
            self,
            Mutation::ReferencedValue(_) | Mutation::ReferencedNewKey(_)
        )
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0usize..8).prop_map(Mutation::ReferencedValue),
        (0usize..8).prop_map(Mutation::ReferencedNewKey),
        (0usize..8).prop_map(Mutation::UnreferencedValue),
        (0usize..8).prop_map(Mutation::ReferencedMetadata),
        Just(Mutation::SecretAsStringData),
        Just(Mutation::KeyOrder),
        Just(Mutation::DeploymentImage),
    ]
}

/// (objects, indexes of referenced objects, indexes of unreferenced ConfigMaps/Secrets)
fn hash_site(
    configs: &[(bool, Map<String, Value>)],
    refs: &[(usize, Via)],
) -> (Vec<Value>, Vec<usize>, Vec<usize>) {
    let b64 = |s: &str| {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    let mut objects = Vec::new();
    for (i, (is_secret, data)) in configs.iter().enumerate() {
        let name = format!("c{i}");
        objects.push(if *is_secret {
            let data: Map<String, Value> = data
                .iter()
                .map(|(k, v)| (k.clone(), json!(b64(v.as_str().unwrap()))))
                .collect();
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "web"}, "data": data})
        } else {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "web"}, "data": data})
        });
    }
    let mut volumes = Vec::new();
    let mut env_from = Vec::new();
    let mut env = Vec::new();
    let mut referenced = Vec::new();
    for (j, (i, via)) in refs.iter().enumerate() {
        let i = i % configs.len();
        referenced.push(i);
        let (is_secret, data) = &configs[i];
        let name = format!("c{i}");
        let key = data.keys().next().cloned().unwrap_or_else(|| "k".into());
        match (via, is_secret) {
            (Via::Volume, false) => volumes.push(json!({"name": format!("v{j}"), "configMap": {"name": name}})),
            (Via::Volume, true) => volumes.push(json!({"name": format!("v{j}"), "secret": {"secretName": name}})),
            (Via::Projected, false) => volumes.push(json!({"name": format!("v{j}"), "projected": {"sources": [{"configMap": {"name": name}}]}})),
            (Via::Projected, true) => volumes.push(json!({"name": format!("v{j}"), "projected": {"sources": [{"secret": {"name": name}}]}})),
            (Via::EnvFrom, false) => env_from.push(json!({"configMapRef": {"name": name}})),
            (Via::EnvFrom, true) => env_from.push(json!({"secretRef": {"name": name}})),
            (Via::EnvValueFrom, false) => env.push(json!({"name": format!("E{j}"), "valueFrom": {"configMapKeyRef": {"name": name, "key": key}}})),
            (Via::EnvValueFrom, true) => env.push(json!({"name": format!("E{j}"), "valueFrom": {"secretKeyRef": {"name": name, "key": key}}})),
        }
    }
    referenced.sort();
    referenced.dedup();
    let unreferenced = (0..configs.len())
        .filter(|i| !referenced.contains(i))
        .collect();
    let volume_mounts: Vec<Value> = volumes
        .iter()
        .map(|v| json!({"name": v["name"], "mountPath": format!("/etc/{}", v["name"].as_str().unwrap())}))
        .collect();
    objects.push(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app", "namespace": "web"},
        "spec": {"selector": {"matchLabels": {"app": "app"}}, "template": {"metadata": {"labels": {"app": "app"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "envFrom": env_from, "env": env, "volumeMounts": volume_mounts}],
                "volumes": volumes}}}}));
    (objects, referenced, unreferenced)
}

fn config_hash(objects: &[Value]) -> String {
    let r = rendered(&files_of(objects, 3));
    let deploy = r
        .objects
        .iter()
        .find(|o| o.value["kind"] == "Deployment")
        .unwrap();
    deploy.value["spec"]["template"]["metadata"]["annotations"]["tend.dev/config-hash"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn apply_mutation(
    objects: &mut [Value],
    m: &Mutation,
    referenced: &[usize],
    unreferenced: &[usize],
) -> bool {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let value_of = |o: &Value, s: &str| -> Value {
        if o["kind"] == "Secret" {
            json!(b64.encode(s))
        } else {
            json!(s)
        }
    };
    match m {
        Mutation::ReferencedValue(i)
        | Mutation::ReferencedNewKey(i)
        | Mutation::ReferencedMetadata(i) => {
            if referenced.is_empty() {
                return false;
            }
            let o = &mut objects[referenced[i % referenced.len()]];
            match m {
                Mutation::ReferencedValue(_) => {
                    let Some(key) = o["data"].as_object().and_then(|d| d.keys().next().cloned())
                    else {
                        return false;
                    };
                    let old = o["data"][&key].clone();
                    let old_text = if o["kind"] == "Secret" {
                        String::from_utf8(b64.decode(old.as_str().unwrap()).unwrap()).unwrap()
                    } else {
                        old.as_str().unwrap().to_string()
                    };
                    o["data"][&key] = value_of(o, &format!("{old_text}x"));
                }
                Mutation::ReferencedNewKey(_) => {
                    let v = value_of(o, "new");
                    if !o["data"].is_object() {
                        o["data"] = json!({});
                    }
                    if o["data"].get("zz-new-key").is_some() {
                        return false;
                    }
                    o["data"]["zz-new-key"] = v;
                }
                _ => {
                    o["metadata"]["labels"] = json!({"touched": "yes"});
                    o["metadata"]["annotations"] = json!({"note": "metadata only"});
                }
            }
        }
        Mutation::UnreferencedValue(i) => {
            if unreferenced.is_empty() {
                return false;
            }
            let o = &mut objects[unreferenced[i % unreferenced.len()]];
            let v = value_of(o, "changed");
            if !o["data"].is_object() {
                o["data"] = json!({});
            }
            o["data"]["zz-new-key"] = v;
        }
        Mutation::SecretAsStringData => {
            let Some(o) = referenced
                .iter()
                .copied()
                .find(|&i| objects[i]["kind"] == "Secret")
            else {
                return false;
            };
            let o = &mut objects[o];
            let data = o
                .as_object_mut()
                .unwrap()
                .remove("data")
                .unwrap_or(json!({}));
            let plain: Map<String, Value> = data
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        json!(String::from_utf8(b64.decode(v.as_str().unwrap()).unwrap()).unwrap()),
                    )
                })
                .collect();
            o["stringData"] = Value::Object(plain);
        }
        Mutation::KeyOrder => {
            for o in objects.iter_mut() {
                if let Some(data) = o.get_mut("data").and_then(Value::as_object_mut) {
                    let reversed: Map<String, Value> =
                        std::mem::take(data).into_iter().rev().collect();
                    *data = reversed;
                }
            }
        }
        Mutation::DeploymentImage => {
            let d = objects.last_mut().unwrap();
            d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28");
        }
    }
    true
}

proptest! {
    #![proptest_config(Config { cases: 256, failure_persistence: None, ..Config::default() })]

    /// The config hash changes exactly when the content of a referenced ConfigMap or Secret
    /// changes: not for unreferenced objects, metadata, key order, or data written as
    /// stringData.
    #[test]
    fn config_hash_changes_iff_referenced_content_changes(
        configs in prop::collection::vec((any::<bool>(), string_map(data_key(), tricky_string(), 3)), 1..5),
        refs in prop::collection::vec((0usize..8, via()), 1..4),
        m in mutation(),
    ) {
        let (mut objects, referenced, unreferenced) = hash_site(&configs, &refs);
        let before = config_hash(&objects);
        prop_assert_eq!(before.len(), 64, "a hash is set");
        if !apply_mutation(&mut objects, &m, &referenced, &unreferenced) {
            return Ok(());
        }
        let after = config_hash(&objects);
        if m.changes_hash() {
            prop_assert_ne!(before, after, "{:?} must change the hash", m);
        } else {
            prop_assert_eq!(before, after, "{:?} must not change the hash", m);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Idempotence against the test API server, through the binary.

fn tend_on(
    cluster: &tend_testserver::TestCluster,
    dir: &std::path::Path,
    args: &[&str],
) -> (i32, String, String) {
    let mut cmd = assert_cmd::Command::cargo_bin("tend").unwrap();
    for (key, _) in std::env::vars() {
        if key.starts_with("TEND_") || key == "KUBECONFIG" {
            cmd.env_remove(key);
        }
    }
    let out = cmd
        .env("TEND_COLOR", "never")
        .args(args)
        .arg("--repo")
        .arg(dir)
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write_site(dir: &std::path::Path, objects: &[Value]) {
    for entry in std::fs::read_dir(dir).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    for file in files_of(objects, 2) {
        std::fs::write(dir.join(&file.path), file.text).unwrap();
    }
}

/// After `tend apply`, the plan is empty: `tend diff` exits 0 and a second apply writes no
/// object — for random sites, and again after a random edit of the site.
#[test]
fn apply_then_diff_is_clean() {
    use tend_testserver::Verb;
    let mut runner = TestRunner::new(Config {
        cases: 12,
        ..Config::default()
    });
    let strategy = (site(5), site(5));
    let result = runner.run(&strategy, |(first, second)| {
        let cluster = tend_testserver::TestCluster::start();
        let dir = tempfile::tempdir().unwrap();
        for (step, site) in [("first", &first), ("edited", &second)] {
            write_site(dir.path(), &site.objects);
            let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply", "--allow-empty"]);
            prop_assert_eq!(code, 0, "{} apply:\n{}\n{}", step, stdout, stderr);
            let (code, stdout, _) = tend_on(&cluster, dir.path(), &["diff"]);
            prop_assert_eq!(code, 0, "{} diff after apply:\n{}", step, stdout);
            cluster.clear_requests();
            let (code, _, stderr) = tend_on(&cluster, dir.path(), &["apply", "--allow-empty"]);
            prop_assert_eq!(code, 0, "{}", stderr);
            let writes: Vec<String> = cluster
                .requests()
                .into_iter()
                .filter(|r| {
                    matches!(
                        r.verb,
                        Verb::Create | Verb::Update | Verb::Patch | Verb::Apply | Verb::Delete
                    )
                })
                .filter(|r| {
                    r.resource != "leases"
                        && r.resource != "selfsubjectaccessreviews"
                        && !(r.resource == "secrets"
                            && r.namespace.as_deref() == Some("tend-system"))
                })
                .map(|r| format!("{} {}", r.method, r.path))
                .collect();
            prop_assert!(
                writes.is_empty(),
                "{} second apply wrote {:?}",
                step,
                writes
            );
            // Every desired object is live with its data.
            for object in site.objects.iter().filter(|o| o["kind"] == "ConfigMap") {
                let live = cluster.object(
                    "",
                    "configmaps",
                    object["metadata"]["namespace"].as_str().unwrap(),
                    object["metadata"]["name"].as_str().unwrap(),
                );
                prop_assert!(live.is_some());
                let live = live.unwrap();
                let want = object.get("data").cloned().unwrap_or(json!({}));
                let got = live.get("data").cloned().unwrap_or(json!({}));
                prop_assert_eq!(want, got);
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Sanity for the generators: they produce what render accepts.
#[test]
fn generated_sites_render() {
    let mut runner = TestRunner::new(Config {
        cases: 32,
        ..Config::default()
    });
    runner
        .run(&site(6), |site| {
            let files = files_of(&site.objects, 3);
            let r = render(&files, &RenderOptions::default());
            prop_assert!(r.is_ok(), "{:?}", r.err().map(|e| e.to_string()));
            Ok(())
        })
        .unwrap();
}
