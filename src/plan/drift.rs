//! Drift: which field managers other than tend last wrote the fields an update changes, read
//! from the live object's `metadata.managedFields` (README "What `diff` and `apply` print": `replicas: 5 → 2 (set by
//! kubectl-patch at 21:40)`). Pure: values in, [`Drift`] entries out.
//!
//! A changed leaf is owned by a manager when its `fieldsV1` set reaches that path: map keys are
//! `f:<name>`; list items `k:{...}` (the item's merge key, matched as a subset of the live
//! item), `v:<json>` (set items, matched by value) or `i:<n>` (atomic lists, by index).

use super::diff::{is_secret, mask_pair};
use serde_json::Value;

/// One changed field that another field manager last wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Drift {
    /// Dotted path, list items by index: `spec.template.spec.containers[0].image`.
    pub path: String,
    /// The live value, as compact JSON (None when the field is only in the planned object).
    pub before: Option<String>,
    /// The planned value (None when the apply removes the field).
    pub after: Option<String>,
    /// The manager whose managedFields entry owns the path.
    pub manager: String,
    /// When that manager last wrote (the entry's `time`), if recorded.
    pub time: Option<String>,
}

impl std::fmt::Display for Drift {
    /// `spec.replicas: 5 → 2 (set by kubectl-patch at 2026-11-23T21:40:00Z)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".into());
        write!(
            f,
            "{}: {} → {} (set by {}",
            self.path,
            show(&self.before),
            show(&self.after),
            self.manager
        )?;
        if let Some(time) = &self.time {
            write!(f, " at {time}")?;
        }
        f.write_str(")")
    }
}

/// Longest value printed in a drift line; longer ones are elided (the diff has them whole).
const MAX_VALUE: usize = 60;

/// Changed leaves that someone other than `own_manager` last wrote. `live` is the live object
/// *with* managedFields; `before`/`after` are what the diff compares (normalized). Secret
/// values and SOPS-sealed fields (`sealed`) are masked as in diffs.
pub fn drift(
    live: &Value,
    before: &Value,
    after: &Value,
    own_manager: &str,
    sealed: &[String],
) -> Vec<Drift> {
    let Some(entries) =
        crate::object::at(live, &["metadata", "managedFields"]).and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let (own, others): (Vec<&Value>, Vec<&Value>) = entries
        .iter()
        .partition(|e| e.get("manager").and_then(Value::as_str) == Some(own_manager));
    if others.is_empty() {
        return Vec::new();
    }
    let (before, after) = if is_secret(before) || is_secret(after) || !sealed.is_empty() {
        let (b, a) = mask_pair(Some(before), Some(after), sealed);
        (b.unwrap_or_default(), a.unwrap_or_default())
    } else {
        (before.clone(), after.clone())
    };
    let mut changed = Vec::new();
    changed_leaves(Some(&before), Some(&after), &mut Vec::new(), &mut changed);
    let mut out = Vec::new();
    let owned = |e: &&Value, path: &[Step]| e.get("fieldsV1").is_some_and(|f| owns(f, path, live));
    for leaf in changed {
        // A field tend still owns holds what tend last applied (a writer that changed it would
        // have taken it over): a change there comes from git, not drift, even when shared.
        if own.iter().any(|e| owned(e, &leaf.path)) {
            continue;
        }
        // The most recent writer wins when several entries reach the path.
        let owner = others
            .iter()
            .filter(|e| owned(e, &leaf.path))
            .max_by_key(|e| e.get("time").and_then(Value::as_str).unwrap_or(""));
        if let Some(entry) = owner {
            out.push(Drift {
                path: dotted(&leaf.path),
                before: leaf.before.map(short),
                after: leaf.after.map(short),
                manager: entry["manager"].as_str().unwrap_or("").to_string(),
                time: entry
                    .get("time")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            });
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

struct Leaf {
    path: Vec<Step>,
    before: Option<Value>,
    after: Option<Value>,
}

/// Every path where `before` and `after` differ, down to scalars; lists of different length
/// (and values of different types) count as one changed leaf.
fn changed_leaves(
    before: Option<&Value>,
    after: Option<&Value>,
    path: &mut Vec<Step>,
    out: &mut Vec<Leaf>,
) {
    if before == after {
        return;
    }
    match (before, after) {
        (Some(Value::Object(b)), Some(Value::Object(a))) => {
            let keys = b.keys().chain(a.keys().filter(|k| !b.contains_key(*k)));
            for key in keys {
                path.push(Step::Key(key.clone()));
                changed_leaves(b.get(key), a.get(key), path, out);
                path.pop();
            }
        }
        (Some(Value::Array(b)), Some(Value::Array(a))) if a.len() == b.len() => {
            for (i, (bi, ai)) in b.iter().zip(a).enumerate() {
                path.push(Step::Index(i));
                changed_leaves(Some(bi), Some(ai), path, out);
                path.pop();
            }
        }
        _ => out.push(Leaf {
            path: path.clone(),
            before: before.cloned(),
            after: after.cloned(),
        }),
    }
}

/// Whether a `fieldsV1` set reaches `path`; `live` resolves list items to their `k:`/`v:` keys.
fn owns(fields: &Value, path: &[Step], live: &Value) -> bool {
    let mut node = fields;
    let mut value = live;
    for step in path {
        let Some(set) = node.as_object() else {
            return false;
        };
        match step {
            Step::Key(k) => {
                let Some(next) = set.get(&format!("f:{k}")) else {
                    return false;
                };
                node = next;
                value = value.get(k).unwrap_or(&Value::Null);
            }
            Step::Index(i) => {
                let item = value.get(*i).unwrap_or(&Value::Null);
                let Some(next) = set
                    .iter()
                    .find(|(name, _)| item_matches(name, *i, item))
                    .map(|(_, v)| v)
                else {
                    return false;
                };
                node = next;
                value = item;
            }
        }
    }
    true
}

/// Whether a list-item key of fieldsV1 names `item` (at `index`).
fn item_matches(name: &str, index: usize, item: &Value) -> bool {
    if let Some(keys) = name.strip_prefix("k:") {
        let Ok(Value::Object(keys)) = serde_json::from_str::<Value>(keys) else {
            return false;
        };
        keys.iter().all(|(k, v)| item.get(k) == Some(v))
    } else if let Some(v) = name.strip_prefix("v:") {
        serde_json::from_str::<Value>(v).is_ok_and(|v| &v == item)
    } else if let Some(i) = name.strip_prefix("i:") {
        i.parse::<usize>() == Ok(index)
    } else {
        false
    }
}

fn dotted(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Compact JSON, strings unquoted, elided past [`MAX_VALUE`] characters.
fn short(v: Value) -> String {
    let text = match v {
        Value::String(s) => s,
        other => other.to_string(),
    };
    match text.char_indices().nth(MAX_VALUE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                   {"name": "app", "image": image}]}}}})
    }

    fn with_managers(mut v: Value, entries: Value) -> Value {
        v["metadata"]["managedFields"] = entries;
        v
    }

    fn entry(manager: &str, time: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": "Update", "apiVersion": "apps/v1",
               "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    #[test]
    fn names_the_manager_of_a_drifted_field() {
        let live = with_managers(
            deployment(5, "app:1"),
            json!([
                entry(
                    "tend",
                    "2026-11-23T20:00:00Z",
                    json!({"f:spec": {"f:template": {}}})
                ),
                entry(
                    "kubectl-patch",
                    "2026-11-23T21:40:00Z",
                    json!({"f:spec": {"f:replicas": {}}})
                ),
            ]),
        );
        let d = drift(
            &live,
            &deployment(5, "app:1"),
            &deployment(2, "app:1"),
            "tend",
            &[],
        );
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].to_string(),
            "spec.replicas: 5 → 2 (set by kubectl-patch at 2026-11-23T21:40:00Z)"
        );
    }

    #[test]
    fn fields_tend_owns_are_not_drift() {
        let live = with_managers(
            deployment(5, "app:1"),
            json!([entry("tend", "t", json!({"f:spec": {"f:replicas": {}}}))]),
        );
        assert!(drift(
            &live,
            &deployment(5, "app:1"),
            &deployment(2, "app:1"),
            "tend",
            &[]
        )
        .is_empty());
        // No managedFields at all: nothing to say.
        let bare = deployment(5, "app:1");
        assert!(drift(&bare, &bare, &deployment(2, "app:1"), "tend", &[]).is_empty());
    }

    #[test]
    fn shared_fields_are_not_drift() {
        // Another manager co-owns replicas with tend (same value): git changes it, not drift.
        let f = json!({"f:spec": {"f:replicas": {}}});
        let live = with_managers(
            deployment(5, "a"),
            json!([
                entry("tend", "t1", f.clone()),
                entry("kubectl-client-side-apply", "t2", f)
            ]),
        );
        assert!(drift(&live, &deployment(5, "a"), &deployment(2, "a"), "tend", &[]).is_empty());
    }

    #[test]
    fn list_items_by_merge_key() {
        let fields = json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}}}}});
        let live = with_managers(
            deployment(2, "app:hotfix"),
            json!([entry("kubectl-set", "2026-01-01T00:00:00Z", fields)]),
        );
        let d = drift(
            &live,
            &deployment(2, "app:hotfix"),
            &deployment(2, "app:1"),
            "tend",
            &[],
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].path, "spec.template.spec.containers[0].image");
        assert_eq!(d[0].before.as_deref(), Some("app:hotfix"));
        assert_eq!(d[0].manager, "kubectl-set");
        // An entry for another container does not own this one.
        let other = json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"sidecar\"}": {"f:image": {}}}}}}});
        let live = with_managers(deployment(2, "app:hotfix"), json!([entry("x", "t", other)]));
        assert!(drift(
            &live,
            &deployment(2, "app:hotfix"),
            &deployment(2, "app:1"),
            "tend",
            &[]
        )
        .is_empty());
    }

    #[test]
    fn set_and_index_items() {
        assert!(item_matches("v:\"a\"", 3, &json!("a")));
        assert!(!item_matches("v:\"a\"", 3, &json!("b")));
        assert!(item_matches("i:2", 2, &json!({})));
        assert!(!item_matches("k:not json", 0, &json!({})));
    }

    #[test]
    fn most_recent_writer_wins_and_values_are_short() {
        let f = json!({"f:spec": {"f:replicas": {}}});
        let live = with_managers(
            deployment(5, "a"),
            json!([
                entry("old", "2026-01-01T00:00:00Z", f.clone()),
                entry("new", "2026-02-01T00:00:00Z", f)
            ]),
        );
        let d = drift(&live, &deployment(5, "a"), &deployment(2, "a"), "tend", &[]);
        assert_eq!(d[0].manager, "new");
        assert_eq!(short(json!("x".repeat(100))).chars().count(), MAX_VALUE + 1);
    }

    #[test]
    fn secret_values_are_masked() {
        let secret = |v: &str| {
            json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "db", "namespace": "web"}, "data": {"pw": v}})
        };
        let live = with_managers(
            secret("aHVudGVyMg=="),
            json!([entry("someone", "t", json!({"f:data": {"f:pw": {}}}))]),
        );
        let d = drift(
            &live,
            &secret("aHVudGVyMg=="),
            &secret("c3dvcmQ="),
            "tend",
            &[],
        );
        assert_eq!(d.len(), 1);
        let line = d[0].to_string();
        assert!(
            !line.contains("aHVudGVy") && !line.contains("c3dvcmQ"),
            "{line}"
        );
        assert!(line.contains("***"), "{line}");
    }
}
