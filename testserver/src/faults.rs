//! Fault injection and the request log.

use std::fmt;
use std::time::Duration;

/// The Kubernetes verb of a request (as in audit logs), plus `Discovery` for `/version`,
/// `/api*` discovery documents and `Other` for anything unrouted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Apply,
    Delete,
    DeleteCollection,
    Discovery,
    Other,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Apply => "apply",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Discovery => "discovery",
            Verb::Other => "other",
        }
    }

    /// Whether requests with this verb write (create, update, patch, apply, delete,
    /// deletecollection). A dry-run write stores nothing: see [`RequestRecord::dry_run`].
    pub fn is_mutating(self) -> bool {
        matches!(
            self,
            Verb::Create
                | Verb::Update
                | Verb::Patch
                | Verb::Apply
                | Verb::Delete
                | Verb::DeleteCollection
        )
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One served (or faulted) request.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    /// HTTP method (`GET`, `PATCH`, ...).
    pub method: String,
    pub verb: Verb,
    /// URL path without the query.
    pub path: String,
    /// Raw query string (may be empty).
    pub query: String,
    /// API group of the resource ("" for core); empty for non-resource paths.
    pub group: String,
    /// Resource plural (`configmaps`); empty for non-resource paths.
    pub resource: String,
    pub subresource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub dry_run: bool,
    /// `fieldManager` query parameter, if any.
    pub field_manager: Option<String>,
    pub content_type: Option<String>,
    pub user_agent: Option<String>,
    /// Response status; `None` when the connection was dropped by a fault.
    pub status: Option<u16>,
    /// True when a fault (status or drop) produced the outcome.
    pub faulted: bool,
    /// Bytes of the response body sent (for a watch: so far).
    pub response_bytes: u64,
    /// The user the request impersonated (`Impersonate-User`), if any.
    pub impersonated: Option<String>,
}

#[derive(Debug, Clone)]
pub enum FaultAction {
    /// Answer with this status (a `metav1.Status` body with the matching reason).
    Status {
        code: u16,
        retry_after: Option<u64>,
        message: Option<String>,
    },
    /// Wait, then serve the request normally.
    Delay(Duration),
    /// Close the TCP connection without sending a response.
    Drop,
    /// Refuse as kube-apiserver's API Priority and Fairness (and max-in-flight) filter does:
    /// 429 with `Retry-After: <secs>` and a plain-text body (`http.Error`), not a Status.
    Throttle { retry_after: u64 },
}

#[derive(Debug, Clone)]
enum PathPattern {
    Contains(String),
    Glob(String),
}

/// A rule that fails matching requests. Matching is on the HTTP method (case-insensitive),
/// the Kubernetes verb, and the URL path (without query) by substring or glob, where `*`
/// matches any run of characters including `/` and `?` one character. Unset criteria match
/// everything. A fault fires `times` times (default 1), or forever with [`Fault::always`].
#[derive(Debug, Clone)]
pub struct Fault {
    method: Option<String>,
    verb: Option<Verb>,
    path: Option<PathPattern>,
    remaining: Option<u32>,
    pub(crate) action: FaultAction,
}

impl Fault {
    fn with(action: FaultAction) -> Self {
        Fault {
            method: None,
            verb: None,
            path: None,
            remaining: Some(1),
            action,
        }
    }

    /// Fail with an HTTP status (e.g. 500, 503, 429, 409).
    pub fn status(code: u16) -> Self {
        Self::with(FaultAction::Status {
            code,
            retry_after: None,
            message: None,
        })
    }

    /// Delay the response, then serve normally.
    pub fn delay(d: Duration) -> Self {
        Self::with(FaultAction::Delay(d))
    }

    /// Close the connection without answering.
    pub fn drop_connection() -> Self {
        Self::with(FaultAction::Drop)
    }

    /// A 429 as API Priority and Fairness sends it (see [`FaultAction::Throttle`]).
    pub fn throttle(retry_after: u64) -> Self {
        Self::with(FaultAction::Throttle { retry_after })
    }

    /// Adds a `Retry-After: secs` header (for 429/503 status faults).
    pub fn retry_after(mut self, secs: u64) -> Self {
        if let FaultAction::Status { retry_after, .. } = &mut self.action {
            *retry_after = Some(secs);
        }
        self
    }

    /// Overrides the Status message of a status fault.
    pub fn message(mut self, msg: impl Into<String>) -> Self {
        if let FaultAction::Status { message, .. } = &mut self.action {
            *message = Some(msg.into());
        }
        self
    }

    pub fn method(mut self, m: &str) -> Self {
        self.method = Some(m.to_ascii_uppercase());
        self
    }

    pub fn verb(mut self, v: Verb) -> Self {
        self.verb = Some(v);
        self
    }

    pub fn path_contains(mut self, s: &str) -> Self {
        self.path = Some(PathPattern::Contains(s.to_string()));
        self
    }

    pub fn path_glob(mut self, g: &str) -> Self {
        self.path = Some(PathPattern::Glob(g.to_string()));
        self
    }

    /// Fire for the next `n` matching requests.
    pub fn times(mut self, n: u32) -> Self {
        self.remaining = Some(n);
        self
    }

    /// Fire for every matching request until cleared.
    pub fn always(mut self) -> Self {
        self.remaining = None;
        self
    }

    pub(crate) fn matches(&self, method: &str, verb: Verb, path: &str) -> bool {
        if self.remaining == Some(0) {
            return false;
        }
        if self.method.as_deref().is_some_and(|m| m != method) {
            return false;
        }
        if self.verb.is_some_and(|v| v != verb) {
            return false;
        }
        match &self.path {
            None => true,
            Some(PathPattern::Contains(s)) => path.contains(s.as_str()),
            Some(PathPattern::Glob(g)) => glob(g.as_bytes(), path.as_bytes()),
        }
    }

    /// Consumes one firing.
    pub(crate) fn consume(&mut self) {
        if let Some(n) = &mut self.remaining {
            *n = n.saturating_sub(1);
        }
    }

    pub(crate) fn exhausted(&self) -> bool {
        self.remaining == Some(0)
    }
}

fn glob(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => glob(&p[1..], s) || (!s.is_empty() && glob(p, &s[1..])),
        (Some(b'?'), Some(_)) => glob(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => glob(&p[1..], &s[1..]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches() {
        assert!(glob(
            b"/api/v1/namespaces/*/configmaps/*",
            b"/api/v1/namespaces/a/configmaps/b"
        ));
        assert!(glob(b"*/configmaps*", b"/api/v1/configmaps"));
        assert!(!glob(b"/apis/*", b"/api/v1"));
    }
}
