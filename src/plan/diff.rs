//! Unified diffs of objects as YAML, with Secret values masked.
//!
//! Diffs carry no `---`/`+++` file headers: every report prints its own per-object header, and
//! without them every line starting with `+`/`-` is a changed line (which the coloured text
//! report relies on). Hunks have 3 lines of context.

use super::normalize::{sort_keys, LAST_APPLIED};
use crate::yaml::to_yaml;
use serde_json::{Map, Value};
use similar::TextDiff;

/// Placeholder printed instead of a Secret value.
pub use crate::text::MASK;

/// Whether an object is a Secret, whose values must never be printed.
pub fn is_secret(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("Secret")
        && value
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v == "v1")
}

/// A copy of `value` with every Secret value replaced by [`MASK`]: `data`, `stringData`, and
/// the `last-applied-configuration` annotation kubectl leaves behind (it embeds the data).
pub fn mask_secret(value: &Value) -> Value {
    let mut out = value.clone();
    if !is_secret(value) {
        return out;
    }
    for field in ["data", "stringData"] {
        if let Some(map) = out.get_mut(field).and_then(Value::as_object_mut) {
            for v in map.values_mut() {
                *v = Value::String(MASK.into());
            }
        }
    }
    if let Some(annotations) = out
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        if let Some(v) = annotations.get_mut("kubectl.kubernetes.io/last-applied-configuration") {
            *v = Value::String(MASK.into());
        }
    }
    out
}

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// Unified diff of `before` (live) → `after` (planned) as YAML with sorted keys. `None` before
/// is a creation (every line `+`), `None` after a deletion (every line `-`). Empty when the two
/// render the same. Secret values never appear: see [`mask_secret_pair`].
#[cfg(test)]
pub fn unified(before: Option<&Value>, after: Option<&Value>) -> String {
    unified_sealed(before, after, &[])
}

/// [`unified`], also masking the fields at `sealed` (JSON pointers of values that were
/// SOPS-encrypted in git), whatever the kind: see [`mask_pair`].
pub fn unified_sealed(before: Option<&Value>, after: Option<&Value>, sealed: &[String]) -> String {
    let (before, after) = mask_pair(before, after, sealed);
    let old = before.as_ref().map(render).unwrap_or_default();
    let new = after.as_ref().map(render).unwrap_or_default();
    if old == new {
        return String::new();
    }
    TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(CONTEXT)
        .to_string()
}

/// YAML with keys sorted, except that the top level reads like a manifest: `apiVersion`,
/// `kind`, `metadata` first.
fn render(value: &Value) -> String {
    let sorted = sort_keys(value);
    let Value::Object(mut map) = sorted else {
        return to_yaml(&sorted);
    };
    let mut out = Map::with_capacity(map.len());
    for first in ["apiVersion", "kind", "metadata"] {
        if let Some(v) = map.shift_remove(first) {
            out.insert(first.to_string(), v);
        }
    }
    out.extend(map);
    to_yaml(&Value::Object(out))
}

/// Copies of both sides with every Secret value replaced, when either side is a `v1 Secret`:
/// each key of `data`/`stringData` (and the last-applied annotation, which embeds them) becomes
/// `***` when equal on both sides, `***` before and `*** (changed)` after when it differs,
/// `*** (added)` / `*** (removed)` when on one side only. A changed value thus still shows as
/// a changed line, and no value (base64 or decoded) is ever printed.
pub fn mask_secret_pair(
    before: Option<&Value>,
    after: Option<&Value>,
) -> (Option<Value>, Option<Value>) {
    let mut before = before.cloned();
    let mut after = after.cloned();
    if !before.as_ref().is_some_and(is_secret) && !after.as_ref().is_some_and(is_secret) {
        return (before, after);
    }
    for field in ["data", "stringData"] {
        mask_map_values(&mut before, &mut after, |v| v.get_mut(field), None);
    }
    // Of the annotations, only kubectl's last-applied copy embeds the values.
    mask_map_values(
        &mut before,
        &mut after,
        |v| v.pointer_mut("/metadata/annotations"),
        Some(LAST_APPLIED),
    );
    (before, after)
}

/// [`mask_secret_pair`], then the fields at `sealed` on both sides the same way (`***`,
/// `*** (changed)`, `*** (added)`, `*** (removed)`), and kubectl's last-applied annotation,
/// which embeds them.
pub fn mask_pair(
    before: Option<&Value>,
    after: Option<&Value>,
    sealed: &[String],
) -> (Option<Value>, Option<Value>) {
    let (mut before, mut after) = mask_secret_pair(before, after);
    if sealed.is_empty() {
        return (before, after);
    }
    for pointer in sealed {
        let old = before.as_ref().and_then(|v| v.pointer(pointer)).cloned();
        let new = after.as_ref().and_then(|v| v.pointer(pointer)).cloned();
        let same = old == new;
        if let Some(target) = before.as_mut().and_then(|v| v.pointer_mut(pointer)) {
            *target = Value::String(mask_for(same, new.is_some(), Side::Before));
        }
        if let Some(target) = after.as_mut().and_then(|v| v.pointer_mut(pointer)) {
            *target = Value::String(mask_for(same, old.is_some(), Side::After));
        }
    }
    mask_map_values(
        &mut before,
        &mut after,
        |v| v.pointer_mut("/metadata/annotations"),
        Some(LAST_APPLIED),
    );
    (before, after)
}

/// A copy of `value` with the fields at `sealed` masked (see [`mask_pair`]) and Secret data
/// masked ([`mask_secret`]): what `tend render` prints.
pub fn mask_object(value: &Value, sealed: &[String]) -> Value {
    let mut out = mask_secret(value);
    for pointer in sealed {
        if let Some(target) = out.pointer_mut(pointer) {
            *target = Value::String(MASK.into());
        }
    }
    if !sealed.is_empty() {
        if let Some(v) = out
            .pointer_mut("/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration")
        {
            *v = Value::String(MASK.into());
        }
    }
    out
}

/// `message` (the server's answer to a write of `value`) with every secret value of the
/// object masked (see [`crate::object::secret_values`]): servers echo values they refuse
/// (a CRD schema's `Invalid value: "..."`, a webhook's text).
pub fn scrub_message(message: &str, value: &Value, sealed: &[String]) -> String {
    crate::text::scrub(message, &crate::object::secret_values(value, sealed))
}

/// Mask the values of the map that `locate` finds in each side (see [`mask_secret_pair`]),
/// or only its key `only`. A field that is present but not a map is masked whole.
fn mask_map_values(
    before: &mut Option<Value>,
    after: &mut Option<Value>,
    locate: impl Fn(&mut Value) -> Option<&mut Value>,
    only: Option<&str>,
) {
    let old = before.as_mut().and_then(&locate).map(|v| v.clone());
    let new = after.as_mut().and_then(&locate).map(|v| v.clone());
    if let Some(target) = before.as_mut().and_then(&locate) {
        mask_side(target, new.as_ref(), Side::Before, only);
    }
    if let Some(target) = after.as_mut().and_then(&locate) {
        mask_side(target, old.as_ref(), Side::After, only);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Before,
    After,
}

/// Mask `target` (one side's map) against `other` (the other side's original map).
fn mask_side(target: &mut Value, other: Option<&Value>, side: Side, only: Option<&str>) {
    let other_map = other.and_then(Value::as_object);
    let Some(map) = target.as_object_mut() else {
        if only.is_none() {
            // Not a map (malformed object): never print it, but still show whether it differs.
            let same = other == Some(&*target);
            *target = Value::String(mask_for(same, other.is_some(), side));
        }
        return;
    };
    for (key, value) in map.iter_mut() {
        if only.is_some_and(|k| k != key) {
            continue;
        }
        let counterpart = other_map.and_then(|m| m.get(key));
        let same = counterpart == Some(&*value);
        *value = Value::String(mask_for(same, counterpart.is_some(), side));
    }
}

fn mask_for(same: bool, on_other_side: bool, side: Side) -> String {
    match (on_other_side, same, side) {
        (true, true, _) | (true, false, Side::Before) => MASK.to_string(),
        (true, false, Side::After) => format!("{MASK} (changed)"),
        (false, _, Side::Before) => format!("{MASK} (removed)"),
        (false, _, Side::After) => format!("{MASK} (added)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "app", "namespace": "web"}, "data": data})
    }

    #[test]
    fn server_messages_lose_the_secret_values_they_echo() {
        let widget = json!({"kind": "Widget", "spec": {"password": "hunter2\"x", "size": 12345, "pin": "123"}});
        let sealed = vec![
            "/spec/password".to_string(),
            "/spec/size".to_string(),
            "/spec/pin".to_string(),
        ];
        let message = r#"Widget.example.com "w" is invalid: spec.password: Invalid value: "hunter2\"x": should match '^[a-z]+$', spec.size: Invalid value: 12345, pin 123"#;
        assert_eq!(
            scrub_message(message, &widget, &sealed),
            r#"Widget.example.com "w" is invalid: spec.password: Invalid value: "***": should match '^[a-z]+$', spec.size: Invalid value: ***, pin 123"#
        );
        let secret = json!({"kind": "Secret", "data": {"token": "c2VjcmV0LXRva2Vu"}, "stringData": {"pw": "open-sesame"}});
        let message = "denied: token c2VjcmV0LXRva2Vu is secret-token, pw open-sesame";
        assert_eq!(
            scrub_message(message, &secret, &[]),
            "denied: token *** is ***, pw ***"
        );
        assert_eq!(scrub_message("nothing here", &secret, &[]), "nothing here");
    }

    #[test]
    fn sealed_fields_are_masked_in_any_kind() {
        let sealed = vec!["/data/token".to_string(), "/data/gone".to_string()];
        let before = cm(json!({"token": "old-plain", "gone": "was-plain", "open": "a"}));
        let after = cm(json!({"token": "new-plain", "open": "b"}));
        let d = unified_sealed(Some(&before), Some(&after), &sealed);
        for plain in ["old-plain", "new-plain", "was-plain"] {
            assert!(!d.contains(plain), "{d}");
        }
        assert!(d.contains("+  token: '*** (changed)'"), "{d}");
        assert!(d.contains("-  gone: '*** (removed)'"), "{d}");
        assert!(d.contains("+  open: b"), "{d}");
        let rendered = mask_object(&after, &sealed);
        assert_eq!(rendered["data"]["token"], MASK);
        assert_eq!(rendered["data"]["open"], "b");
        let same = unified_sealed(Some(&after), Some(&after), &sealed);
        assert!(same.is_empty());
    }

    #[test]
    fn creation_is_all_additions() {
        let d = unified(None, Some(&cm(json!({"a": "1"}))));
        assert!(d.starts_with("@@ -0,0 +1,"), "{d}");
        let body: Vec<&str> = d.lines().skip(1).collect();
        assert!(!body.is_empty());
        assert!(body.iter().all(|l| l.starts_with('+')), "{d}");
        assert!(
            d.contains("+apiVersion: v1\n+kind: ConfigMap\n+metadata:\n"),
            "{d}"
        );
    }

    #[test]
    fn deletion_is_all_removals() {
        let d = unified(Some(&cm(json!({"a": "1"}))), None);
        assert!(d.starts_with("@@ -1,"), "{d}");
        assert!(d.lines().skip(1).all(|l| l.starts_with('-')), "{d}");
    }

    #[test]
    fn equal_objects_have_no_diff() {
        let a = cm(json!({"a": "1", "b": "2"}));
        let b = cm(json!({"b": "2", "a": "1"}));
        assert_eq!(unified(Some(&a), Some(&b)), "");
        assert_eq!(unified(None, None), "");
    }

    #[test]
    fn update_has_context() {
        let keys: Map<String, Value> = (0..20)
            .map(|i| (format!("k{i:02}"), json!(format!("v{i}"))))
            .collect();
        let before = cm(Value::Object(keys.clone()));
        let mut changed = keys;
        changed.insert("k10".into(), json!("new"));
        let after = cm(Value::Object(changed));
        let d = unified(Some(&before), Some(&after));
        assert_eq!(
            d,
            "@@ -14,7 +14,7 @@\n   k07: v7\n   k08: v8\n   k09: v9\n-  k10: v10\n+  k10: new\n   k11: v11\n   k12: v12\n   k13: v13\n"
        );
    }

    const RAW: &str = "hunter2-canary";
    const B64: &str = "aHVudGVyMi1jYW5hcnk="; // base64("hunter2-canary")
    const RAW2: &str = "swordfish-canary";
    const B64_2: &str = "c3dvcmRmaXNoLWNhbmFyeQ==";

    fn secret(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": "db", "namespace": "web",
                            "annotations": {LAST_APPLIED: format!("{{\"data\":{{\"pw\":\"{B64}\"}}}}"),
                                            "team": "db"}},
               "type": "Opaque", "data": data})
    }

    fn assert_no_values(d: &str) {
        for v in [RAW, B64, RAW2, B64_2, "aHVudGVy", "c3dvcmRm"] {
            assert!(!d.contains(v), "secret value {v} leaked:\n{d}");
        }
    }

    #[test]
    fn secret_masking_all_cases() {
        let before = secret(json!({"same": B64_2, "changed": B64, "removed": B64}));
        let mut after = secret(json!({"same": B64_2, "changed": B64_2, "added": B64}));
        after["stringData"] = json!({"plain": RAW});
        after["metadata"]["annotations"][LAST_APPLIED] = json!(format!("{{\"pw\":\"{RAW2}\"}}"));
        let d = unified(Some(&before), Some(&after));
        assert_no_values(&d);
        assert!(d.contains("+  added: '*** (added)'"), "{d}");
        assert!(d.contains("-  changed: '***'\n"), "{d}");
        assert!(d.contains("+  changed: '*** (changed)'\n"), "{d}");
        assert!(d.contains("-  removed: '*** (removed)'"), "{d}");
        assert!(d.contains("   same: '***'"), "{d}");
        assert!(d.contains("+  plain: '*** (added)'"), "{d}");
        assert!(d.contains("*** (changed)"), "annotation change shown: {d}");
        // Other annotations stay readable.
        assert!(d.contains("team: db"), "{d}");
    }

    #[test]
    fn secret_unchanged_values_make_no_diff() {
        let s = secret(json!({"pw": B64}));
        assert_eq!(unified(Some(&s), Some(&s.clone())), "");
    }

    #[test]
    fn secret_creation_and_deletion_are_masked() {
        let s = secret(json!({"pw": B64}));
        let created = unified(None, Some(&s));
        assert_no_values(&created);
        assert!(created.contains("+  pw: '*** (added)'"), "{created}");
        let deleted = unified(Some(&s), None);
        assert_no_values(&deleted);
        assert!(deleted.contains("-  pw: '*** (removed)'"), "{deleted}");
    }

    #[test]
    fn malformed_secret_data_is_masked() {
        let before = secret(json!(B64));
        let after = secret(json!([RAW]));
        let d = unified(Some(&before), Some(&after));
        assert_no_values(&d);
        assert!(d.contains("*** (changed)"), "{d}");
    }

    #[test]
    fn non_secret_is_not_masked() {
        let d = unified(None, Some(&cm(json!({"pw": "visible"}))));
        assert!(d.contains("pw: visible"));
    }
}
