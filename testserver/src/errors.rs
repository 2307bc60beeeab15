//! `metav1.Status` failures with the messages, reasons and details kube-apiserver uses.

use serde_json::{json, Map, Value};

#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
    /// Extra response headers (Retry-After for injected 429s).
    pub headers: Vec<(String, String)>,
    /// The Status's ListMeta (a fresh `continue` token with 410 Expired), else `{}`.
    pub metadata: Option<Value>,
}

/// `configmaps` or `deployments.apps`, as Kubernetes prints a group-qualified resource.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

fn details(group: &str, kind: &str, name: &str) -> Value {
    let mut d = Map::new();
    if !name.is_empty() {
        d.insert("name".into(), name.into());
    }
    if !group.is_empty() {
        d.insert("group".into(), group.into());
    }
    d.insert("kind".into(), kind.into());
    Value::Object(d)
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            headers: Vec::new(),
            metadata: None,
        }
    }

    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        ApiError {
            details: Some(details(group, resource, name)),
            ..Self::new(
                404,
                "NotFound",
                format!("{} {name:?} not found", qualified(group, resource)),
            )
        }
    }

    pub fn no_route() -> Self {
        ApiError {
            details: Some(json!({})),
            ..Self::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        }
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        ApiError {
            details: Some(details(group, resource, name)),
            ..Self::new(
                409,
                "AlreadyExists",
                format!("{} {name:?} already exists", qualified(group, resource)),
            )
        }
    }

    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        ApiError {
            details: Some(details(group, resource, name)),
            ..Self::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} {name:?}: {why}",
                    qualified(group, resource)
                ),
            )
        }
    }

    pub fn stale(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 403 as admission plugins refuse a request (`pods "x" is forbidden: why`).
    pub fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let what = qualified(group, resource);
        let message = if name.is_empty() {
            format!("{what} is forbidden: {why}")
        } else {
            format!("{what} {name:?} is forbidden: {why}")
        };
        ApiError {
            details: Some(details(group, resource, name)),
            ..Self::new(403, "Forbidden", message)
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 422 Invalid with one cause per (field, cause reason, message).
    pub fn invalid(group: &str, kind: &str, name: &str, causes: &[(&str, &str, String)]) -> Self {
        let errs: Vec<String> = causes
            .iter()
            .map(|(field, _, msg)| format!("{field}: {msg}"))
            .collect();
        let agg = if errs.len() == 1 {
            errs[0].clone()
        } else {
            format!("[{}]", errs.join(", "))
        };
        let mut d = details(group, kind, name);
        d["causes"] = causes
            .iter()
            .map(|(field, reason, msg)| json!({"reason": reason, "message": msg, "field": field}))
            .collect();
        ApiError {
            details: Some(d),
            ..Self::new(
                422,
                "Invalid",
                format!("{} {name:?} is invalid: {agg}", qualified(group, kind)),
            )
        }
    }

    pub fn method_not_allowed() -> Self {
        ApiError {
            details: Some(json!({})),
            ..Self::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        }
    }

    pub fn unsupported_media_type(accepted: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unknown format - accepted media types include: {accepted}"),
        )
    }

    /// A status chosen by an injected fault, with the reason Kubernetes uses for that code.
    pub fn from_code(code: u16, message: Option<String>) -> Self {
        let (reason, default_msg): (&'static str, &str) = match code {
            400 => ("BadRequest", "bad request"),
            401 => ("Unauthorized", "Unauthorized"),
            403 => ("Forbidden", "forbidden"),
            404 => (
                "NotFound",
                "the server could not find the requested resource",
            ),
            409 => ("Conflict", "conflict"),
            410 => ("Expired", "the resource version is too old"),
            422 => ("Invalid", "invalid"),
            429 => (
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
            ),
            500 => ("InternalError", "Internal error occurred: injected fault"),
            503 => (
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            ),
            504 => (
                "Timeout",
                "the server was unable to return a response in the time allotted",
            ),
            _ => ("", "injected fault"),
        };
        Self::new(
            code,
            reason,
            message.unwrap_or_else(|| default_msg.to_string()),
        )
    }

    pub fn to_json(&self) -> Value {
        let mut s = Map::new();
        s.insert("kind".into(), "Status".into());
        s.insert("apiVersion".into(), "v1".into());
        s.insert(
            "metadata".into(),
            self.metadata.clone().unwrap_or_else(|| json!({})),
        );
        s.insert("status".into(), "Failure".into());
        s.insert("message".into(), self.message.clone().into());
        if !self.reason.is_empty() {
            s.insert("reason".into(), self.reason.into());
        }
        if let Some(d) = &self.details {
            s.insert("details".into(), d.clone());
        }
        s.insert("code".into(), self.code.into());
        Value::Object(s)
    }
}
