//! Reading the fields the status rules look at, from an object as the API server returns it.
//!
//! Counters the rules depend on are read strictly: a field that is present with the wrong type
//! is an error (the object's status becomes [`Unknown`](super::Status::Unknown)), because
//! judging a rollout from a guessed number would be worse than not judging it. Condition
//! entries are read leniently: an entry that is not a mapping with a string `type` cannot be
//! about anything the rules look at, so it is skipped and the other entries still count.

use serde_json::Value;

/// Why a field could not be read: the message names the field, e.g.
/// `status.replicas is "3", not an integer`.
pub(super) type Malformed = String;

/// `pointer` (`/status/replicas`) written the way people read it (`status.replicas`).
fn dotted(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

/// A short description of a value of the wrong type, for error messages.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
        other => other.to_string(),
    }
}

/// An integer field; `None` when absent or null (the API server omits zero counters).
pub(super) fn int(object: &Value, pointer: &str) -> Result<Option<i64>, Malformed> {
    match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| format!("{} is {}, not an integer", dotted(pointer), shown(v))),
    }
}

/// An integer field, `default` when absent.
pub(super) fn int_or(object: &Value, pointer: &str, default: i64) -> Result<i64, Malformed> {
    Ok(int(object, pointer)?.unwrap_or(default))
}

/// A string field; `None` when absent or null.
pub(super) fn string<'a>(object: &'a Value, pointer: &str) -> Result<Option<&'a str>, Malformed> {
    match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(format!("{} is {}, not a string", dotted(pointer), shown(v))),
    }
}

/// A boolean field, `false` when absent.
pub(super) fn flag(object: &Value, pointer: &str) -> Result<bool, Malformed> {
    match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(format!(
            "{} is {}, not true/false",
            dotted(pointer),
            shown(v)
        )),
    }
}

/// A list field, empty when absent.
pub(super) fn list<'a>(object: &'a Value, pointer: &str) -> Result<&'a [Value], Malformed> {
    match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(v) => Err(format!("{} is {}, not a list", dotted(pointer), shown(v))),
    }
}

/// Collapse whitespace runs (condition messages often span lines) so a reason fits one
/// report line.
pub(super) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One entry of `status.conditions`, in the shape shared by `metav1.Condition` and the older
/// per-kind condition types (`DeploymentCondition`, `JobCondition`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Condition<'a> {
    pub kind: &'a str,
    /// `True`, `False` or `Unknown`.
    pub status: &'a str,
    pub reason: &'a str,
    pub message: &'a str,
    /// The `metadata.generation` this condition was computed for (`metav1.Condition` only).
    pub observed_generation: Option<i64>,
}

impl Condition<'_> {
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }

    pub fn is_false(&self) -> bool {
        self.status == "False"
    }

    /// `Reason: message`, or whichever of the two is set, or `Type is Status`.
    pub fn describe(&self) -> String {
        let reason = one_line(self.reason);
        let message = one_line(self.message);
        match (reason.as_str(), message.as_str()) {
            ("", "") => format!("{} is {}", one_line(self.kind), one_line(self.status)),
            (reason, "") => reason.to_string(),
            ("", message) => message.to_string(),
            (reason, message) => format!("{reason}: {message}"),
        }
    }

    /// Why this condition is out of date, when it was computed for an older generation.
    pub fn stale(&self, generation: Option<i64>) -> Option<String> {
        match (self.observed_generation, generation) {
            (Some(seen), Some(generation)) if seen < generation => Some(format!(
                "the {} condition is for generation {seen}; waiting for the controller to observe generation {generation}",
                self.kind
            )),
            _ => None,
        }
    }
}

/// The object's `status.conditions`, malformed entries skipped (see the module docs).
pub(super) fn conditions(object: &Value) -> Result<Vec<Condition<'_>>, Malformed> {
    Ok(list(object, "/status/conditions")?
        .iter()
        .filter_map(|entry| {
            let field = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("");
            let kind = entry.get("type")?.as_str()?;
            Some(Condition {
                kind,
                status: field("status"),
                reason: field("reason"),
                message: field("message"),
                observed_generation: entry.get("observedGeneration").and_then(Value::as_i64),
            })
        })
        .collect())
}

/// The first condition of type `kind`.
pub(super) fn find<'c, 'a>(
    conditions: &'c [Condition<'a>],
    kind: &str,
) -> Option<&'c Condition<'a>> {
    conditions.iter().find(|c| c.kind == kind)
}

/// The first condition of type `kind` whose status is `True`.
pub(super) fn find_true<'c, 'a>(
    conditions: &'c [Condition<'a>],
    kind: &str,
) -> Option<&'c Condition<'a>> {
    conditions.iter().find(|c| c.kind == kind && c.is_true())
}
