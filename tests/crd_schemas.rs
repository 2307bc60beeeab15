//! The CRDs of tend's kinds (`tend::kinds::crds()`): they survive serialization, are
//! structural, and their OpenAPI schemas accept and reject the same objects tend does.
//!
//! Schemas are checked with the `jsonschema` crate (draft 4, the closest to OpenAPI 3.0's
//! schema dialect); `nullable`, `x-kubernetes-*` and formats such as `int32` are unknown to
//! it and ignored, which matches how they affect validation of the objects used here.
//!
//! Unknown fields. A structural CRD schema may not say `additionalProperties: false` next to
//! `properties` (kube-derive strips the one serde's `deny_unknown_fields` would produce).
//! Instead the apiserver *prunes* unknown fields, and with server-side field validation
//! (`fieldValidation=Strict`, the default of `kubectl apply --validate=strict`; the
//! apiserver's own default is `Warn`) it rejects the request, naming them. So we assert both
//! behaviours: the schema as written accepts an unknown field (it would be pruned), and the
//! schema as `Strict` field validation applies it — every object node closed to properties
//! it doesn't list, except under `x-kubernetes-preserve-unknown-fields` — rejects it, as
//! tend's serde types do.

use jsonschema::{Draft, Validator};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{json, Value};
use tend::{crds, root_field_problems, TendKind, TendObject};

fn crd(kind: TendKind) -> CustomResourceDefinition {
    crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind.kind())
        .unwrap_or_else(|| panic!("no CRD for {kind}"))
}

fn schema(kind: TendKind) -> Value {
    let crd = crd(kind);
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("CRD has an openAPIV3Schema");
    serde_json::to_value(schema).expect("schema serializes")
}

fn validator(schema: &Value) -> Validator {
    jsonschema::options()
        .with_draft(Draft::Draft4)
        .should_validate_formats(true)
        .should_ignore_unknown_formats(true)
        .build(schema)
        .expect("schema compiles")
}

/// The schema as the apiserver applies it, in JSON Schema terms: `x-kubernetes-list-type:
/// set` becomes `uniqueItems`; with `strict` (`fieldValidation=Strict`), the implicit root
/// fields are added and every object node with `properties` is closed.
fn as_apiserver(schema: &Value, strict: bool) -> Value {
    fn visit(node: &mut Value, strict: bool) {
        let Some(map) = node.as_object_mut() else {
            return;
        };
        if map.get("x-kubernetes-list-type") == Some(&json!("set")) {
            map.insert("uniqueItems".into(), json!(true));
        }
        let preserve = map.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
        if strict && map.contains_key("properties") && !preserve {
            map.insert("additionalProperties".into(), json!(false));
        }
        for (key, child) in map.iter_mut() {
            match key.as_str() {
                "properties" => child
                    .as_object_mut()
                    .into_iter()
                    .flat_map(|m| m.values_mut())
                    .for_each(|c| visit(c, strict)),
                "items" | "additionalProperties" => visit(child, strict),
                _ => {}
            }
        }
    }
    let mut s = schema.clone();
    if strict {
        if let Some(props) = s.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert("apiVersion".into(), json!({"type": "string"}));
            props.insert("kind".into(), json!({"type": "string"}));
            props.insert("metadata".into(), json!({"type": "object"}));
        }
    }
    visit(&mut s, strict);
    s
}

/// Whether tend accepts the document: serde (unknown fields, types, enums, required fields),
/// then root-level keys and `validate()`.
fn tend_accepts(kind: TendKind, doc: &Value) -> Result<(), String> {
    let parsed: Result<TendObject, serde_json::Error> = kind.parse(doc);
    let object = parsed.map_err(|e| e.to_string())?;
    let mut problems = root_field_problems(doc);
    problems.extend(object.validate());
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{problems:?}"))
    }
}

fn valid_example(kind: TendKind) -> Value {
    let (metadata, spec) = match kind {
        TendKind::CopyRule => (
            json!({"name": "shared-config"}),
            json!({"kind": "ConfigMap", "sourceNamespace": "shared",
                   "selector": {"matchLabels": {"tend.dev/copy": "true"}},
                   "excludeNamespaces": ["kube-system"]}),
        ),
        TendKind::RegistryMirror => (
            json!({"name": "dockerhub", "namespace": "registries"}),
            json!({"upstream": "https://registry-1.docker.io", "storage": {"size": "10Gi"},
                   "hostPort": 5001, "clusters": ["dc1"],
                   "resources": {"limits": {"memory": "512Mi", "cpu": 1}}}),
        ),
        TendKind::ImmortalContainer => (
            json!({"name": "example", "namespace": "default"}),
            json!({"image": "nginx:1.27", "args": ["-g", "daemon off;"],
                   "env": [{"name": "A", "value": "b"}]}),
        ),
        TendKind::ChaosAgent => (
            json!({"name": "princeedmund"}),
            json!({"tantrumMode": true, "podTolerance": 10, "eagerness": 20,
                   "excludedNamespaces": ["prod"]}),
        ),
        TendKind::HelmChart => (
            json!({"name": "web", "namespace": "apps"}),
            json!({"chart": "../charts/web", "kubeVersion": "v1.33.0",
                   "values": {"replicas": 2, "image": {"tag": "1.0"}, "list": [1, "a"]}}),
        ),
        TendKind::Fleet => (
            json!({"name": "production"}),
            json!({"clusters": [
                {"name": "hub", "context": "hub"},
                {"name": "prod-eu", "labels": {"region": "eu"}, "path": "clusters/prod-eu",
                 "kubeconfigSecretRef": {"namespace": "tend-fleet", "name": "prod-eu", "key": "value"}}]}),
        ),
    };
    json!({"apiVersion": "tend.dev/v1alpha1", "kind": kind.kind(), "metadata": metadata, "spec": spec})
}

/// `valid_example(kind)` with `spec.<field>` replaced (`None` = removed).
fn with_spec(kind: TendKind, path: &str, value: Option<Value>) -> Value {
    let mut doc = valid_example(kind);
    let (parent, field) = match path.rsplit_once('/') {
        Some((p, f)) => (format!("/spec/{p}"), f),
        None => ("/spec".to_string(), path),
    };
    let obj = doc
        .pointer_mut(&parent)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no {parent}"));
    match value {
        Some(v) => obj.insert(field.to_string(), v),
        None => obj.remove(field),
    };
    doc
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Accepted by tend and by the schema.
    Valid,
    /// Rejected by tend and by the schema.
    Invalid,
    /// An unknown field: rejected by tend and by Strict field validation, pruned otherwise.
    Unknown,
    /// Rejected by tend and by the apiserver through a CEL rule, which this validator
    /// can't evaluate: only the rule's presence is checked.
    Cel,
}

fn cases() -> Vec<(&'static str, TendKind, Value, Expect)> {
    use tend::TendKind::*;
    use Expect::*;
    vec![
        ("copyrule valid", CopyRule, valid_example(CopyRule), Valid),
        (
            "copyrule Secret",
            CopyRule,
            with_spec(CopyRule, "kind", Some(json!("Secret"))),
            Valid,
        ),
        (
            "copyrule bad kind",
            CopyRule,
            with_spec(CopyRule, "kind", Some(json!("Deployment"))),
            Invalid,
        ),
        (
            "copyrule no source",
            CopyRule,
            with_spec(CopyRule, "sourceNamespace", None),
            Invalid,
        ),
        (
            "copyrule no selector",
            CopyRule,
            with_spec(CopyRule, "selector", None),
            Invalid,
        ),
        (
            "copyrule empty selector",
            CopyRule,
            with_spec(CopyRule, "selector/matchLabels", Some(json!({}))),
            Invalid,
        ),
        (
            "copyrule bad namespace",
            CopyRule,
            with_spec(CopyRule, "targetNamespaces", Some(json!(["Bad_NS"]))),
            Invalid,
        ),
        (
            "copyrule duplicate namespace",
            CopyRule,
            with_spec(CopyRule, "excludeNamespaces", Some(json!(["a", "a"]))),
            Invalid,
        ),
        (
            "copyrule matchExpressions",
            CopyRule,
            with_spec(CopyRule, "selector/matchExpressions", Some(json!([]))),
            Unknown,
        ),
        (
            "copyrule unknown field",
            CopyRule,
            with_spec(CopyRule, "targetNamespace", Some(json!(["a"]))),
            Unknown,
        ),
        (
            "mirror valid",
            RegistryMirror,
            valid_example(RegistryMirror),
            Valid,
        ),
        (
            "mirror port 70000",
            RegistryMirror,
            with_spec(RegistryMirror, "port", Some(json!(70000))),
            Invalid,
        ),
        (
            "mirror port 0",
            RegistryMirror,
            with_spec(RegistryMirror, "port", Some(json!(0))),
            Invalid,
        ),
        (
            "mirror hostPort 65536",
            RegistryMirror,
            with_spec(RegistryMirror, "hostPort", Some(json!(65536))),
            Invalid,
        ),
        (
            "mirror no hostPort",
            RegistryMirror,
            with_spec(RegistryMirror, "hostPort", None),
            Invalid,
        ),
        (
            "mirror no storage",
            RegistryMirror,
            with_spec(RegistryMirror, "storage", None),
            Invalid,
        ),
        (
            "mirror ftp upstream",
            RegistryMirror,
            with_spec(RegistryMirror, "upstream", Some(json!("ftp://x.io"))),
            Invalid,
        ),
        (
            "mirror no scheme",
            RegistryMirror,
            with_spec(RegistryMirror, "upstream", Some(json!("quay.io"))),
            Invalid,
        ),
        (
            "mirror bad size",
            RegistryMirror,
            with_spec(RegistryMirror, "storage/size", Some(json!("10GB"))),
            Invalid,
        ),
        (
            "mirror port as string",
            RegistryMirror,
            with_spec(RegistryMirror, "port", Some(json!("5000"))),
            Invalid,
        ),
        (
            "mirror unknown storage field",
            RegistryMirror,
            with_spec(RegistryMirror, "storage/class", Some(json!("x"))),
            Unknown,
        ),
        (
            "immortal valid",
            ImmortalContainer,
            valid_example(ImmortalContainer),
            Valid,
        ),
        (
            "immortal no image",
            ImmortalContainer,
            with_spec(ImmortalContainer, "image", None),
            Invalid,
        ),
        (
            "immortal empty image",
            ImmortalContainer,
            with_spec(ImmortalContainer, "image", Some(json!(""))),
            Invalid,
        ),
        (
            "immortal env without name",
            ImmortalContainer,
            with_spec(ImmortalContainer, "env", Some(json!([{"value": "x"}]))),
            Invalid,
        ),
        (
            "immortal unknown field",
            ImmortalContainer,
            with_spec(ImmortalContainer, "restartPolicy", Some(json!("Always"))),
            Unknown,
        ),
        ("chaos valid", ChaosAgent, valid_example(ChaosAgent), Valid),
        (
            "chaos eagerness 100",
            ChaosAgent,
            with_spec(ChaosAgent, "eagerness", Some(json!(100))),
            Valid,
        ),
        (
            "chaos eagerness 200",
            ChaosAgent,
            with_spec(ChaosAgent, "eagerness", Some(json!(200))),
            Invalid,
        ),
        (
            "chaos eagerness 0",
            ChaosAgent,
            with_spec(ChaosAgent, "eagerness", Some(json!(0))),
            Invalid,
        ),
        (
            "chaos no eagerness",
            ChaosAgent,
            with_spec(ChaosAgent, "eagerness", None),
            Invalid,
        ),
        (
            "chaos maxActions 0",
            ChaosAgent,
            with_spec(ChaosAgent, "maxActions", Some(json!(0))),
            Invalid,
        ),
        (
            "chaos negative tolerance",
            ChaosAgent,
            with_spec(ChaosAgent, "podTolerance", Some(json!(-1))),
            Invalid,
        ),
        (
            "chaos mode not bool",
            ChaosAgent,
            with_spec(ChaosAgent, "cancerMode", Some(json!("yes"))),
            Invalid,
        ),
        (
            "chaos unknown field",
            ChaosAgent,
            with_spec(ChaosAgent, "tolerance", Some(json!(3))),
            Unknown,
        ),
        (
            "chaos tantrum without tolerance",
            ChaosAgent,
            with_spec(ChaosAgent, "podTolerance", None),
            Cel,
        ),
        ("fleet valid", Fleet, valid_example(Fleet), Valid),
        (
            "fleet cluster name with a comma",
            Fleet,
            with_spec(Fleet, "clusters", Some(json!([{"name": "a,b"}]))),
            Invalid,
        ),
        (
            "fleet unknown field",
            Fleet,
            with_spec(
                Fleet,
                "clusters",
                Some(json!([{"name": "a", "colour": "blue"}])),
            ),
            Unknown,
        ),
    ]
}

#[test]
fn schemas_and_tend_agree() {
    let mut failures = Vec::new();
    for (name, kind, doc, expect) in cases() {
        let schema = schema(kind);
        let pruning = validator(&as_apiserver(&schema, false)).is_valid(&doc);
        let strict = validator(&as_apiserver(&schema, true)).is_valid(&doc);
        let tend = tend_accepts(kind, &doc);
        let (want_pruning, want_strict, want_tend) = match expect {
            Expect::Valid => (true, true, true),
            Expect::Invalid => (false, false, false),
            Expect::Unknown => (true, false, false),
            Expect::Cel => (true, true, false),
        };
        if (pruning, strict, tend.is_ok()) != (want_pruning, want_strict, want_tend) {
            failures.push(format!(
                "{name}: schema {pruning} (want {want_pruning}), strict {strict} (want {want_strict}), tend {tend:?} (want ok={want_tend})"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn schema_errors_name_the_field() {
    let schema = schema(TendKind::ChaosAgent);
    let doc = with_spec(TendKind::ChaosAgent, "eagerness", Some(json!(200)));
    let v = validator(&schema);
    let errors: Vec<String> = v
        .iter_errors(&doc)
        .map(|e| format!("{} {e}", e.instance_path))
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("/spec/eagerness"), "{errors:?}");
    assert!(errors[0].contains("100"), "{errors:?}");
}

#[test]
fn cel_rule_guards_tantrum_without_tolerance() {
    let schema = schema(TendKind::ChaosAgent);
    let rules = &schema["properties"]["spec"]["x-kubernetes-validations"];
    assert_eq!(
        rules[0]["rule"],
        "!self.tantrumMode || has(self.podTolerance)"
    );
}

#[test]
fn crds_round_trip_through_yaml_and_json() {
    for crd in crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let original = serde_json::to_value(&crd).expect("to json");

        let yaml = serde_yaml::to_string(&crd).expect("to yaml");
        let from_yaml: CustomResourceDefinition = serde_yaml::from_str(&yaml).expect("from yaml");
        assert_eq!(
            serde_json::to_value(&from_yaml).expect("to json"),
            original,
            "{name} via YAML"
        );

        let text = serde_json::to_string_pretty(&crd).expect("to json text");
        let from_json: CustomResourceDefinition = serde_json::from_str(&text).expect("from json");
        assert_eq!(
            serde_json::to_value(&from_json).expect("to json"),
            original,
            "{name} via JSON"
        );

        // Also as untyped data (what `kubectl apply -f` sends): nothing dropped or added.
        let untyped: Value = serde_yaml::from_str(&yaml).expect("yaml as value");
        assert_eq!(untyped, original, "{name} as untyped YAML");
    }
}

#[test]
fn crd_metadata_and_columns() {
    let expect = [
        (
            TendKind::CopyRule,
            "Cluster",
            "cpr",
            vec!["KIND", "SOURCE", "COPIES", "CONFLICTS", "AGE"],
        ),
        (
            TendKind::RegistryMirror,
            "Namespaced",
            "rm",
            vec!["UPSTREAM", "ENDPOINT", "READY", "AGE"],
        ),
        (
            TendKind::ImmortalContainer,
            "Namespaced",
            "ic",
            vec!["IMAGE", "CURRENT-POD", "START-TIMES", "AGE"],
        ),
        (
            TendKind::ChaosAgent,
            "Cluster",
            "ca",
            vec![
                "TANTRUM",
                "CANCER",
                "IPSUM",
                "EAGERNESS",
                "TOLERANCE",
                "AGE",
            ],
        ),
    ];
    for (kind, scope, short, columns) in expect {
        let crd = crd(kind);
        assert_eq!(crd.spec.scope, scope, "{kind}");
        assert_eq!(crd.spec.names.short_names, Some(vec![short.to_string()]));
        assert_eq!(crd.spec.names.categories, Some(vec!["tend".to_string()]));
        let version = &crd.spec.versions[0];
        let got: Vec<&str> = version
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(got, columns, "{kind}");
        // Every column's jsonPath points at a field the schema has.
        let schema = schema(kind);
        for col in version.additional_printer_columns.iter().flatten() {
            if col.json_path == ".metadata.creationTimestamp" {
                continue;
            }
            let pointer = col
                .json_path
                .trim_start_matches('.')
                .split('.')
                .fold(String::new(), |acc, seg| acc + "/properties/" + seg);
            assert!(
                schema.pointer(&pointer).is_some(),
                "{kind} column {} -> {} not in schema",
                col.name,
                col.json_path
            );
        }
    }
    let ic = crd(TendKind::ImmortalContainer);
    let cols = ic.spec.versions[0]
        .additional_printer_columns
        .clone()
        .unwrap_or_default();
    let paths: Vec<&str> = cols.iter().map(|c| c.json_path.as_str()).collect();
    assert_eq!(
        paths,
        [
            ".spec.image",
            ".status.currentPod",
            ".status.startTimes",
            ".metadata.creationTimestamp"
        ]
    );
}

/// Kubernetes only accepts structural schemas: every node has a type (or is int-or-string
/// or preserves unknown fields), no `additionalProperties` beside `properties`, no `$ref`;
/// and it rejects CRDs whose `default`s don't validate against their own schema.
#[test]
fn schemas_are_structural_and_defaults_valid() {
    fn walk(node: &Value, path: &str, errors: &mut Vec<String>) {
        let Some(map) = node.as_object() else {
            errors.push(format!("{path}: not an object"));
            return;
        };
        let int_or_string = map.get("x-kubernetes-int-or-string") == Some(&json!(true));
        let preserve = map.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
        if !map.contains_key("type") && !int_or_string && !preserve {
            errors.push(format!("{path}: no type"));
        }
        if map.contains_key("properties") && map.contains_key("additionalProperties") {
            errors.push(format!("{path}: both properties and additionalProperties"));
        }
        for banned in ["$ref", "definitions", "$defs", "oneOf", "allOf", "not"] {
            if map.contains_key(banned) {
                errors.push(format!("{path}: has {banned}"));
            }
        }
        if let Some(default) = map.get("default") {
            let mut sub = node.clone();
            if let Some(obj) = sub.as_object_mut() {
                obj.remove("default");
            }
            if !validator(&sub).is_valid(default) {
                errors.push(format!("{path}: default {default} does not validate"));
            }
        }
        for (key, child) in map {
            match key.as_str() {
                "properties" => {
                    for (name, prop) in child.as_object().into_iter().flatten() {
                        walk(prop, &format!("{path}.{name}"), errors);
                    }
                }
                "items" => walk(child, &format!("{path}[]"), errors),
                "additionalProperties" if child.is_object() => {
                    walk(child, &format!("{path}{{}}"), errors)
                }
                _ => {}
            }
        }
    }
    for kind in TendKind::ALL {
        let mut errors = Vec::new();
        walk(&schema(kind), kind.kind(), &mut errors);
        assert!(errors.is_empty(), "{}", errors.join("\n"));
    }
}

/// The statuses tend writes carry a kstatus `Ready` condition and `observedGeneration`, and
/// the CRDs accept them under `fieldValidation=Strict` (a field the schema lacks would make
/// every status write fail).
#[test]
fn ready_conditions_in_statuses_are_accepted() {
    let ready = json!([{"type": "Ready", "status": "False", "reason": "PodStarting",
                        "message": "pod x was (re)created by this run", "observedGeneration": 3,
                        "lastTransitionTime": "2026-11-23T10:00:00Z"}]);
    for kind in [
        TendKind::RegistryMirror,
        TendKind::ImmortalContainer,
        TendKind::CopyRule,
    ] {
        let strict = validator(&as_apiserver(&schema(kind), true));
        let mut doc = valid_example(kind);
        doc["status"] = json!({"observedGeneration": 3, "conditions": ready});
        if let Err(e) = strict.validate(&doc) {
            panic!("{kind}: {e}");
        }
        // A condition without its required fields is refused, as by the apiserver.
        doc["status"]["conditions"] = json!([{"type": "Ready"}]);
        assert!(strict.validate(&doc).is_err(), "{kind}");
    }
}
