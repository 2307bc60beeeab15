//! Structural checks every document must pass before anything is rendered: it is a mapping,
//! has apiVersion, kind and metadata.name of the right shape, and its kind is plausible.

use super::builtin;
use crate::object::{names, split_api_version};
use crate::problem::Problem;
use crate::yaml::{dotted, one_line, Document, Step};
use serde_json::Value;
use std::path::Path;

/// Check one parsed document. Returns every problem found (empty = structurally valid).
pub fn check_document(file: &Path, doc: &Document) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut problem = |path: &[&str], message: String| {
        let owned: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        problems.push(Problem::new(file, doc.line_of(&owned), one_line(&message)));
    };
    let Some(map) = doc.value.as_object() else {
        problem(
            &[],
            format!(
                "document is {}, not a mapping; every document must be a Kubernetes object with apiVersion, kind and metadata",
                describe(&doc.value)
            ),
        );
        return problems;
    };

    let api_version = match map.get("apiVersion") {
        None => {
            problem(&[], "missing apiVersion (e.g. `apiVersion: v1`)".into());
            None
        }
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.as_str()),
        Some(Value::String(_)) => {
            problem(
                &["apiVersion"],
                "apiVersion is empty (e.g. `apiVersion: v1`)".into(),
            );
            None
        }
        Some(other) => {
            problem(
                &["apiVersion"],
                format!(
                    "apiVersion must be a non-empty string, found {}",
                    describe(other)
                ),
            );
            None
        }
    };
    let kind = match map.get("kind") {
        None => {
            problem(&[], "missing kind (e.g. `kind: ConfigMap`)".into());
            None
        }
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.as_str()),
        Some(Value::String(_)) => {
            problem(&["kind"], "kind is empty (e.g. `kind: ConfigMap`)".into());
            None
        }
        Some(other) => {
            problem(
                &["kind"],
                format!("kind must be a non-empty string, found {}", describe(other)),
            );
            None
        }
    };

    let metadata = match map.get("metadata") {
        None => {
            problem(
                &[],
                "missing metadata.name; every object needs a name".into(),
            );
            None
        }
        Some(Value::Object(m)) => Some(m),
        Some(other) => {
            problem(
                &["metadata"],
                format!("metadata must be a mapping, found {}", describe(other)),
            );
            None
        }
    };
    let group = api_version.map(|v| split_api_version(v).0).unwrap_or("");

    if let Some(meta) = metadata {
        match meta.get("name") {
            None => problem(
                &["metadata"],
                if meta.contains_key("generateName") {
                    "missing metadata.name: generateName is not supported, tend needs a stable name to diff and prune".into()
                } else {
                    "missing metadata.name; every object needs a name".into()
                },
            ),
            Some(Value::String(name)) => {
                if let Some(why) = name_problem(group, kind.unwrap_or(""), name) {
                    problem(&["metadata", "name"], why);
                }
            }
            Some(other) => problem(
                &["metadata", "name"],
                format!(
                    "metadata.name must be a string, found {}; quote it",
                    describe(other)
                ),
            ),
        }
        match meta.get("namespace") {
            None => {}
            Some(Value::String(ns)) if names::dns1123_label(ns).is_err() => problem(
                &["metadata", "namespace"],
                format!("metadata.namespace {ns:?} is not a valid namespace name (lowercase letters, digits and '-', at most 63 characters)"),
            ),
            Some(Value::String(_)) => {}
            Some(other) => problem(
                &["metadata", "namespace"],
                format!(
                    "metadata.namespace must be a string, found {}",
                    describe(other)
                ),
            ),
        }
        for field in ["labels", "annotations"] {
            match meta.get(field) {
                None | Some(Value::Null) => {}
                Some(Value::Object(entries)) => {
                    // A map of thousands of bad entries is reported by its first few, so a
                    // generated file cannot make the report (and the search for lines) huge.
                    let mut reported = 0;
                    let mut total_bytes = 0;
                    for (key, value) in entries {
                        if reported == MAX_PROBLEMS_PER_MAP {
                            problem(
                                &["metadata", field],
                                format!("metadata.{field}: more problems not shown"),
                            );
                            break;
                        }
                        total_bytes += key.len() + value.as_str().map_or(0, str::len);
                        if let Some(why) = names::qualified_name(key).err() {
                            reported += 1;
                            problem(
                                &["metadata", field, key],
                                format!("metadata.{field} key {key:?} is not valid: {why}"),
                            );
                        } else if !value.is_string() {
                            reported += 1;
                            problem(
                                &["metadata", field, key],
                                format!(
                                    "metadata.{field}.{key} must be a string, found {}; quote the value (e.g. \"true\")",
                                    describe(value)
                                ),
                            );
                        } else if let Some(why) = (field == "annotations")
                            .then(|| super::policy::value_problem(key, value.as_str()?))
                            .flatten()
                        {
                            reported += 1;
                            problem(&["metadata", field, key], why);
                        } else if field == "labels" {
                            let text = value.as_str().unwrap_or_default();
                            if names::label_value(text).is_err() {
                                reported += 1;
                                problem(
                                    &["metadata", field, key],
                                    format!("metadata.labels.{key} value {text:?} is not a valid label value: at most 63 characters, letters, digits, '-', '_' and '.', starting and ending with a letter or digit"),
                                );
                            }
                        }
                    }
                    // A typo (`skipp`) would silently wait on an object meant to be left out.
                    // (A value that is not a string is reported above already.)
                    let wait = entries.get(crate::kstatus::WAIT_ANNOTATION);
                    if let (true, Some(Err(why))) = (
                        field == "annotations",
                        wait.filter(|v| v.is_string())
                            .map(|_| crate::kstatus::check_wait_annotation(&doc.value)),
                    ) {
                        problem(&["metadata", field, crate::kstatus::WAIT_ANNOTATION], why);
                    }
                    if field == "annotations" {
                        for (key, why) in super::waves::problems(&doc.value) {
                            problem(&["metadata", field, key], why);
                        }
                    }
                    if field == "annotations" && total_bytes > MAX_ANNOTATION_BYTES {
                        problem(
                            &["metadata", field],
                            format!(
                                "metadata.annotations are {total_bytes} bytes; Kubernetes allows at most {MAX_ANNOTATION_BYTES} (256 KiB) in total"
                            ),
                        );
                    }
                }
                Some(other) => problem(
                    &["metadata", field],
                    format!(
                        "metadata.{field} must be a mapping of strings, found {}",
                        describe(other)
                    ),
                ),
            }
        }
    }

    if let (Some(api_version), Some(kind)) = (api_version, kind) {
        let (group, version) = split_api_version(api_version);
        if group == crate::GROUP {
            if version != crate::VERSION {
                problem(
                    &["apiVersion"],
                    format!(
                        "unknown apiVersion {api_version}; tend's kinds are served as {}",
                        crate::API_VERSION
                    ),
                );
            } else if crate::kinds::TendKind::from_kind(kind).is_none() {
                problem(
                    &["kind"],
                    format!(
                        "unknown kind {kind} in {api_version}; tend's kinds are {}",
                        crate::kinds::TendKind::names()
                    ),
                );
            }
        } else if builtin::is_builtin_group(group) {
            match builtin::builtin_scope(group, version, kind) {
                Some(namespaced) => {
                    let has_ns = metadata.and_then(|m| m.get("namespace")).is_some();
                    if !namespaced && has_ns {
                        problem(
                            &["metadata", "namespace"],
                            format!("{kind} is cluster-scoped and cannot have metadata.namespace; remove it"),
                        );
                    }
                }
                // A kind far from every known one is left to the cluster's discovery.
                None if builtin::builtin_versions(group, kind).is_empty()
                    && !builtin::looks_misspelt(group, kind) => {}
                None => {
                    let versions = builtin::builtin_versions(group, kind);
                    let hint = if versions.is_empty() {
                        "check the spelling of kind (kinds are CamelCase, e.g. Deployment)"
                            .to_string()
                    } else {
                        let group_prefix = if group.is_empty() {
                            String::new()
                        } else {
                            format!("{group}/")
                        };
                        format!(
                            "use apiVersion {}",
                            versions
                                .iter()
                                .map(|v| format!("{group_prefix}{v}"))
                                .collect::<Vec<_>>()
                                .join(" or ")
                        )
                    };
                    problem(
                        &["kind"],
                        format!("unknown kind {kind} in {api_version}; {hint}"),
                    );
                }
            }
        } else if !version.starts_with('v')
            || names::dns1123_label(version).is_err()
            || !group.is_empty() && names::dns1123_subdomain(group).is_err()
        {
            problem(&["apiVersion"], format!("apiVersion {api_version:?} is not of the form <group>/<version> (e.g. apps/v1)"));
        } else if !is_kind_name(kind) {
            problem(
                &["kind"],
                format!("kind {kind:?} is not a valid kind: letters and digits, starting with a letter (e.g. ConfigMap)"),
            );
        }
    }
    // Field types of well-known kinds, only for documents whose shape is otherwise fine (one
    // clear message rather than a cascade).
    if problems.is_empty() {
        if let (Some(api_version), Some(kind)) = (api_version, kind) {
            let (group, version) = split_api_version(api_version);
            if let Some((path, message)) = typed::check(group, version, kind, &doc.value) {
                problems.push(Problem::new(file, doc.line_at(&path), one_line(&message)));
            }
        }
    }
    problems
}

/// Kinds are CamelCase identifiers: `[A-Za-z][A-Za-z0-9]*`.
fn is_kind_name(kind: &str) -> bool {
    kind.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && kind.chars().all(|c| c.is_ascii_alphanumeric())
}

/// Bad entries reported per labels/annotations map.
const MAX_PROBLEMS_PER_MAP: usize = 5;
/// Kubernetes' limit on the total size of an object's annotations.
const MAX_ANNOTATION_BYTES: usize = 256 * 1024;

/// Type checks of well-known built-in kinds against their k8s-openapi types: a string where
/// a number belongs, a list where a map belongs, a missing required field. The document's
/// JSON value is deserialized strictly (as kube-apiserver decodes JSON) while the path is
/// tracked, so the problem names the field and its line.
mod typed {
    use super::{dotted, Step};
    use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
    use serde_json::Value;
    use std::cell::RefCell;

    type Error = serde_json::Error;

    /// `(path, message)` of the first type error in `value`, if its kind is one we know.
    pub fn check(
        group: &str,
        version: &str,
        kind: &str,
        value: &Value,
    ) -> Option<(Vec<Step>, String)> {
        use k8s_openapi::api::*;
        let path = RefCell::new(Vec::new());
        let result = match (group, version, kind) {
            ("", "v1", "ConfigMap") => run::<core::v1::ConfigMap>(value, &path),
            ("", "v1", "Secret") => run::<core::v1::Secret>(value, &path),
            ("", "v1", "Service") => run::<core::v1::Service>(value, &path),
            ("", "v1", "ServiceAccount") => run::<core::v1::ServiceAccount>(value, &path),
            ("", "v1", "Pod") => run::<core::v1::Pod>(value, &path),
            ("", "v1", "Namespace") => run::<core::v1::Namespace>(value, &path),
            ("", "v1", "PersistentVolumeClaim") => {
                run::<core::v1::PersistentVolumeClaim>(value, &path)
            }
            ("", "v1", "LimitRange") => run::<core::v1::LimitRange>(value, &path),
            ("", "v1", "ResourceQuota") => run::<core::v1::ResourceQuota>(value, &path),
            ("apps", "v1", "Deployment") => run::<apps::v1::Deployment>(value, &path),
            ("apps", "v1", "StatefulSet") => run::<apps::v1::StatefulSet>(value, &path),
            ("apps", "v1", "DaemonSet") => run::<apps::v1::DaemonSet>(value, &path),
            ("batch", "v1", "Job") => run::<batch::v1::Job>(value, &path),
            ("batch", "v1", "CronJob") => run::<batch::v1::CronJob>(value, &path),
            ("rbac.authorization.k8s.io", "v1", "Role") => run::<rbac::v1::Role>(value, &path),
            ("rbac.authorization.k8s.io", "v1", "ClusterRole") => {
                run::<rbac::v1::ClusterRole>(value, &path)
            }
            ("rbac.authorization.k8s.io", "v1", "RoleBinding") => {
                run::<rbac::v1::RoleBinding>(value, &path)
            }
            ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding") => {
                run::<rbac::v1::ClusterRoleBinding>(value, &path)
            }
            ("networking.k8s.io", "v1", "Ingress") => run::<networking::v1::Ingress>(value, &path),
            ("networking.k8s.io", "v1", "NetworkPolicy") => {
                run::<networking::v1::NetworkPolicy>(value, &path)
            }
            ("policy", "v1", "PodDisruptionBudget") => {
                run::<policy::v1::PodDisruptionBudget>(value, &path)
            }
            _ => return None,
        };
        let err = result.err()?;
        let path = path.into_inner();
        let place = dotted(&path);
        let mut message = err.to_string();
        let secret_value = group.is_empty()
            && kind == "Secret"
            && matches!(path.first(), Some(Step::Key(k)) if k == "data" || k == "stringData");
        if secret_value {
            // Never echo a Secret value, not even a byte of it.
            message = "invalid value (not shown: Secret values are never printed); data values must be base64-encoded strings, stringData values strings".to_string();
        }
        let message = if place.is_empty() {
            message
        } else {
            format!("{place}: {message}")
        };
        Some((path, message))
    }

    fn run<T: DeserializeOwned>(value: &Value, path: &RefCell<Vec<Step>>) -> Result<(), Error> {
        T::deserialize(Tracked {
            value,
            path,
            top: true,
        })
        .map(|_| ())
    }

    /// A deserializer over a JSON value that records the path of the node being read; on an
    /// error the path is left pointing at the failing node.
    struct Tracked<'a, 'p> {
        value: &'a Value,
        path: &'p RefCell<Vec<Step>>,
        /// The object's top level, where `status` is skipped (the server ignores it).
        top: bool,
    }

    impl<'de, 'p> de::Deserializer<'de> for Tracked<'de, 'p> {
        type Error = Error;

        fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.value {
                Value::Null => visitor.visit_unit(),
                Value::Bool(b) => visitor.visit_bool(*b),
                Value::Number(n) => {
                    if let Some(u) = n.as_u64() {
                        visitor.visit_u64(u)
                    } else if let Some(i) = n.as_i64() {
                        visitor.visit_i64(i)
                    } else {
                        visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                    }
                }
                Value::String(s) => visitor.visit_borrowed_str(s),
                Value::Array(items) => visitor.visit_seq(Seq {
                    items: items.iter().enumerate(),
                    path: self.path,
                }),
                Value::Object(map) => visitor.visit_map(Map {
                    entries: map.iter(),
                    pending: None,
                    path: self.path,
                    top: self.top,
                }),
            }
        }

        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.value {
                Value::Null => visitor.visit_none(),
                _ => visitor.visit_some(self),
            }
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            visitor.visit_newtype_struct(self)
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Error> {
            match self.value {
                Value::String(s) => visitor.visit_enum(s.as_str().into_deserializer()),
                _ => Err(de::Error::custom("expected a string")),
            }
        }

        fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.visit_unit()
        }

        // A number or boolean where a string belongs (`key: 1` in ConfigMap data, `value:
        // 8080` in env) is let through, as YAML tooling often reads it: kube-apiserver
        // rejects it, but the test API server accepts it and callers rely on that today.
        fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.value {
                Value::Number(n) => visitor.visit_string(n.to_string()),
                Value::Bool(b) => visitor.visit_string(b.to_string()),
                // Go's base64 decoder (Secret `data`) skips line breaks, so wrapped base64
                // is valid; only types are checked here, so the value may be changed.
                Value::String(s) if s.contains(['\n', '\r']) => {
                    visitor.visit_string(s.replace(['\n', '\r'], ""))
                }
                _ => self.deserialize_any(visitor),
            }
        }

        fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_str(visitor)
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char
            bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
        }
    }

    struct Seq<'a, 'p> {
        items: std::iter::Enumerate<std::slice::Iter<'a, Value>>,
        path: &'p RefCell<Vec<Step>>,
    }

    impl<'de, 'p> de::SeqAccess<'de> for Seq<'de, 'p> {
        type Error = Error;

        fn next_element_seed<T: de::DeserializeSeed<'de>>(
            &mut self,
            seed: T,
        ) -> Result<Option<T::Value>, Error> {
            let Some((index, value)) = self.items.next() else {
                return Ok(None);
            };
            self.path.borrow_mut().push(Step::Index(index));
            let result = seed.deserialize(Tracked {
                value,
                path: self.path,
                top: false,
            })?;
            self.path.borrow_mut().pop();
            Ok(Some(result))
        }

        fn size_hint(&self) -> Option<usize> {
            Some(self.items.len())
        }
    }

    struct Map<'a, 'p> {
        entries: serde_json::map::Iter<'a>,
        pending: Option<(&'a String, &'a Value)>,
        path: &'p RefCell<Vec<Step>>,
        top: bool,
    }

    impl<'de, 'p> de::MapAccess<'de> for Map<'de, 'p> {
        type Error = Error;

        fn next_key_seed<K: de::DeserializeSeed<'de>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, Error> {
            for (key, value) in self.entries.by_ref() {
                if self.top && key == "status" {
                    continue;
                }
                self.pending = Some((key, value));
                let key: de::value::BorrowedStrDeserializer<'de, Error> =
                    de::value::BorrowedStrDeserializer::new(key);
                return seed.deserialize(key).map(Some);
            }
            Ok(None)
        }

        fn next_value_seed<V: de::DeserializeSeed<'de>>(
            &mut self,
            seed: V,
        ) -> Result<V::Value, Error> {
            let (key, value) = self
                .pending
                .take()
                .ok_or_else(|| <Error as de::Error>::custom("value without a key"))?;
            self.path.borrow_mut().push(Step::Key(key.clone()));
            let result = seed.deserialize(Tracked {
                value,
                path: self.path,
                top: false,
            })?;
            self.path.borrow_mut().pop();
            Ok(result)
        }
    }
}

/// Why `name` is not a valid object name for this kind, if it is not.
fn name_problem(group: &str, kind: &str, name: &str) -> Option<String> {
    let why = name_problem_full(group, kind, name)?;
    if name.chars().count() <= 80 {
        return Some(why);
    }
    // A very long name is shown by its start and length.
    let start: String = name.chars().take(40).collect();
    Some(why.replacen(
        &format!("{name:?}"),
        &format!(
            "{:?} ({} characters)",
            format!("{start}..."),
            name.chars().count()
        ),
        1,
    ))
}

fn name_problem_full(group: &str, kind: &str, name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("metadata.name is empty".into());
    }
    // RBAC objects (e.g. `system:controller:foo`) only need to be valid path segments.
    if group == "rbac.authorization.k8s.io" {
        if name == "." || name == ".." || name.contains('/') || name.contains('%') {
            return Some(format!(
                "metadata.name {name:?} may not be '.', '..' or contain '/' or '%'"
            ));
        }
        return None;
    }
    if group.is_empty() && kind == "Service" && names::dns1035_label(name).is_err() {
        return Some(format!(
            "metadata.name {name:?} is not a valid Service name: use lowercase letters, digits and '-', start with a letter, end with a letter or digit, at most 63 characters"
        ));
    }
    if group.is_empty() && kind == "Namespace" && names::dns1123_label(name).is_err() {
        return Some(format!(
            "metadata.name {name:?} is not a valid Namespace name: use lowercase letters, digits and '-', start and end with a letter or digit, at most 63 characters"
        ));
    }
    if names::dns1123_subdomain(name).is_err() {
        return Some(format!(
            "metadata.name {name:?} is not a valid name: use lowercase letters, digits, '-' and '.', start and end with a letter or digit, at most 253 characters"
        ));
    }
    None
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::yaml::parse_file;

    fn problems_of(text: &str) -> Vec<Problem> {
        let (docs, mut problems) = parse_file(Path::new("x.yaml"), text);
        for doc in &docs {
            problems.extend(check_document(Path::new("x.yaml"), doc));
        }
        problems
    }

    #[test]
    fn unknown_wait_annotation_values_are_refused() {
        let doc = |value: &str| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    tend.dev/wait: {value}\n")
        };
        assert!(problems_of(&doc("skip")).is_empty());
        let problems = problems_of(&doc("skipp"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].line, 6);
        assert!(problems[0].message.contains("its only value is \"skip\""));
    }

    #[test]
    fn many_bad_annotations_are_capped() {
        let mut text =
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n".to_string();
        for i in 0..10_000 {
            text.push_str(&format!("    k{i}: {i}\n"));
        }
        let started = std::time::Instant::now();
        let problems = problems_of(&text);
        assert_eq!(problems.len(), MAX_PROBLEMS_PER_MAP + 1, "{problems:?}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn typed_checks_name_field_and_line() {
        let p = problems_of(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  replicas: two\n",
        );
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].line, 6);
        assert_eq!(
            p[0].message,
            "spec.replicas: invalid type: string \"two\", expected i32"
        );
        // What the test server and YAML tools accept is let through; status is ignored.
        let p = problems_of("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  creationTimestamp: null\ndata:\n  n: 1\n  b: true\nstatus:\n  whatever: [1]\n");
        assert!(p.is_empty(), "{p:?}");
        let p = problems_of("apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  ports:\n  - port: 80\n    targetPort: http\n  - port: 443\n    targetPort: 8443\n");
        assert!(p.is_empty(), "{p:?}");
        let p = problems_of("apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers:\n  - name: a\n    resources:\n      limits: {cpu: 1, memory: 1Gi}\n");
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn unknown_policy_values_are_named_at_their_line() {
        let p = problems_of("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  annotations:\n    tend.dev/prune: disabled\n    tend.dev/apply: always\n");
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].line, 7);
        assert!(
            p[0].message
                .contains("tend.dev/apply: unknown value \"always\""),
            "{}",
            p[0]
        );
        let p = problems_of("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  annotations:\n    tend.dev/apply: if-not-present\n    tend.dev/replace: on-immutable\n");
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn wrapped_base64_is_valid_secret_data() {
        let p = problems_of("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  crt: |\n    aGVsbG8g\n    d29ybGQ=\n");
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn secret_values_are_not_echoed_in_type_errors() {
        for body in [
            "data:\n  k: canary-xyz!\n",
            "data:\n  k: [canary-xyz]\n",
            "stringData:\n  k: {canary-xyz: 1}\n",
        ] {
            let p = problems_of(&format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n{body}"
            ));
            assert_eq!(p.len(), 1, "{p:?}");
            assert!(!p[0].message.contains("canary"), "{}", p[0]);
            assert!(p[0].message.contains("not shown"), "{}", p[0]);
        }
    }
}
