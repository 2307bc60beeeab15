//! Validation of names and labels as kube-apiserver does it.

use super::*;

pub(super) fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

pub(super) fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

pub(super) const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
pub(super) const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// Name validation as each kind's ValidateObjectMeta does it.
pub(super) fn validate_name(def: &ResourceDef, name: &str) -> Result<(), ApiError> {
    let problem = match def.plural.as_str() {
        // Services were DNS-1035 labels (no leading digit) until KEP-5311
        // (RelaxedServiceNameValidation, beta and on by default in 1.36) made them RFC 1123
        // labels like namespaces.
        "namespaces" | "services" => (!is_dns_label(name)).then_some(LABEL_MSG),
        // RBAC names are path segments (e.g. "system:controller:foo").
        "roles" | "rolebindings" | "clusterroles" | "clusterrolebindings" => {
            (name.contains('/') || name.contains('%') || name == "." || name == "..")
                .then_some("may not contain '/' or '%'")
        }
        _ => (!is_dns_subdomain(name)).then_some(SUBDOMAIN_MSG),
    };
    match problem {
        None => Ok(()),
        Some(msg) => Err(ApiError::invalid(
            &def.group,
            &def.kind,
            name,
            &[(
                "metadata.name",
                "FieldValueInvalid",
                format!("Invalid value: {name:?}: {msg}"),
            )],
        )),
    }
}

pub(super) fn valid_label_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

pub(super) fn validate_labels(def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
    let Some(labels) = meta(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    else {
        return Ok(());
    };
    for (k, v) in labels {
        let value = v.as_str().unwrap_or("");
        if !valid_label_value(value) {
            let name = meta_str(obj, "name").unwrap_or("");
            return Err(ApiError::invalid(
                &def.group,
                &def.kind,
                name,
                &[(
                    "metadata.labels",
                    "FieldValueInvalid",
                    format!("Invalid value: {value:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
                )],
            ));
        }
        if k.is_empty() || k.len() > 316 {
            return Err(ApiError::bad_request(format!("invalid label key {k:?}")));
        }
    }
    Ok(())
}
