//! CustomResourceDefinitions: validation, registration of served versions, status.

use super::*;

impl State {
    pub(super) fn validate_crd(&self, body: &Value, name: &str) -> Result<(), ApiError> {
        let s = |p: &str| body.pointer(p).and_then(Value::as_str).unwrap_or("");
        let group = s("/spec/group");
        let plural = s("/spec/names/plural");
        let mut causes: Vec<(&str, &str, String)> = Vec::new();
        if group.is_empty() {
            causes.push(("spec.group", "FieldValueRequired", "Required value".into()));
        }
        if plural.is_empty() {
            causes.push((
                "spec.names.plural",
                "FieldValueRequired",
                "Required value".into(),
            ));
        }
        if s("/spec/names/kind").is_empty() {
            causes.push((
                "spec.names.kind",
                "FieldValueRequired",
                "Required value".into(),
            ));
        }
        if !matches!(s("/spec/scope"), "Namespaced" | "Cluster") {
            causes.push((
                "spec.scope",
                "FieldValueNotSupported",
                format!(
                    "Unsupported value: {:?}: supported values: \"Cluster\", \"Namespaced\"",
                    s("/spec/scope")
                ),
            ));
        }
        let versions = body.pointer("/spec/versions").and_then(Value::as_array);
        let storage = versions
            .map(|vs| {
                vs.iter()
                    .filter(|v| v.get("storage") == Some(&json!(true)))
                    .count()
            })
            .unwrap_or(0);
        if versions.is_none_or(|v| v.is_empty()) {
            causes.push((
                "spec.versions",
                "FieldValueInvalid",
                "Invalid value: null: must have exactly one version marked as storage version"
                    .into(),
            ));
        } else if storage != 1 {
            causes.push((
                "spec.versions",
                "FieldValueInvalid",
                "Invalid value: must have exactly one version marked as storage version".into(),
            ));
        }
        if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
            causes.push((
                "metadata.name",
                "FieldValueInvalid",
                format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
            ));
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                name,
                &causes,
            ))
        }
    }

    pub(super) fn register_crd(&mut self, crd: &Value) {
        let name = meta_str(crd, "name").unwrap_or("").to_string();
        self.defs
            .retain(|d| d.crd.as_deref() != Some(name.as_str()));
        let s = |p: &str| {
            crd.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let strs = |p: &str| -> Vec<String> {
            crd.pointer(p)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let group = s("/spec/group");
        let kind = s("/spec/names/kind");
        let plural = s("/spec/names/plural");
        // Built-in resources win over a CRD claiming the same names.
        if self
            .defs
            .iter()
            .any(|d| d.group == group && d.plural == plural)
        {
            return;
        }
        let mut singular = s("/spec/names/singular");
        if singular.is_empty() {
            singular = kind.to_lowercase();
        }
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for v in versions {
            if v.get("served") != Some(&json!(true)) {
                continue;
            }
            self.defs.push(ResourceDef {
                group: group.clone(),
                version: v
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                kind: kind.clone(),
                plural: plural.clone(),
                singular: singular.clone(),
                namespaced: s("/spec/scope") == "Namespaced",
                short_names: strs("/spec/names/shortNames"),
                categories: strs("/spec/names/categories"),
                verbs: [
                    "delete",
                    "deletecollection",
                    "get",
                    "list",
                    "patch",
                    "create",
                    "update",
                    "watch",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect(),
                status: v.pointer("/subresources/status").is_some(),
                generation: true,
                crd: Some(name.clone()),
                ty: schema::from_crd_schema(v.pointer("/schema/openAPIV3Schema")),
            });
        }
    }

    pub(super) fn unregister_crd(&mut self, name: &str) {
        let keys: Vec<(String, String)> = self
            .defs
            .iter()
            .filter(|d| d.crd.as_deref() == Some(name))
            .map(ResourceDef::store_key)
            .collect();
        for k in keys {
            let gone = self.objects.remove(&k).unwrap_or_default();
            for (_, old) in gone {
                self.emit_deleted(k.clone(), old);
            }
        }
        self.defs.retain(|d| d.crd.as_deref() != Some(name));
    }
}

/// Server-set CRD status: names accepted, established, stored versions.
pub(super) fn crd_status(body: &mut Value) {
    let t = now();
    let mut names = body.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if names.get("singular").is_none() {
        names["singular"] = kind.to_lowercase().into();
    }
    if names.get("listKind").is_none() {
        names["listKind"] = format!("{kind}List").into();
    }
    let storage: Vec<Value> = body
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage") == Some(&json!(true)))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let mut stored: Vec<Value> = body
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for s in storage {
        if !stored.contains(&s) {
            stored.push(s);
        }
    }
    let conditions = match body.pointer("/status/conditions") {
        Some(c @ Value::Array(_)) => c.clone(),
        _ => json!([
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": t, "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": t, "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
        ]),
    };
    body["status"] =
        json!({"conditions": conditions, "acceptedNames": names, "storedVersions": stored});
}
