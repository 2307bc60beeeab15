//! Waves and hooks (README "Waves and hooks"): the annotations that order an apply and mark Jobs and Pods that
//! run around it. Checked here, while rendering, so a bad value stops the run before any
//! write; read by the engine. Argo CD's annotations are read when tend's are absent, so a
//! repository moving from Argo CD keeps its order and its migrations.

use serde_json::Value;

/// `tend.dev/wave: "<integer>"`: the wave an object is applied in (default 0).
pub const WAVE_ANNOTATION: &str = "tend.dev/wave";
/// Argo CD's sync wave, read when [`WAVE_ANNOTATION`] is absent.
pub const ARGO_WAVE_ANNOTATION: &str = "argocd.argoproj.io/sync-wave";
/// `tend.dev/hook: pre-apply | post-apply` on a Job or Pod.
pub const HOOK_ANNOTATION: &str = "tend.dev/hook";
/// Argo CD's hook (`PreSync`, `PostSync`), read when [`HOOK_ANNOTATION`] is absent.
pub const ARGO_HOOK_ANNOTATION: &str = "argocd.argoproj.io/hook";
/// `tend.dev/hook-delete-policy: on-success`: delete the hook once it succeeded.
pub const HOOK_DELETE_ANNOTATION: &str = "tend.dev/hook-delete-policy";
pub const ON_SUCCESS: &str = "on-success";
/// Argo CD's delete policy; its `HookSucceeded` means [`ON_SUCCESS`]. Its other values
/// (`BeforeHookCreation`, what tend always does; `HookFailed`) change nothing here.
pub const ARGO_HOOK_DELETE_ANNOTATION: &str = "argocd.argoproj.io/hook-delete-policy";

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Before the first change of a run that changes something.
    PreApply,
    /// After every wave is ready.
    PostApply,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::PreApply => "pre-apply",
            Phase::PostApply => "post-apply",
        }
    }
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object
        .get("metadata")?
        .get("annotations")?
        .get(key)?
        .as_str()
}

/// The annotation that sets the object's wave, if any: tend's, else Argo CD's.
fn wave_annotation(object: &Value) -> Option<(&'static str, &str)> {
    [WAVE_ANNOTATION, ARGO_WAVE_ANNOTATION]
        .into_iter()
        .find_map(|key| Some((key, annotation(object, key)?)))
}

fn parse_wave(text: &str) -> Option<i64> {
    text.trim().parse().ok()
}

/// The object's wave: 0 unless annotated (a value [`problems`] refuses counts as 0; rendering
/// stops before anything reads it).
pub fn wave_of(object: &Value) -> i64 {
    wave_annotation(object)
        .and_then(|(_, text)| parse_wave(text))
        .unwrap_or(0)
}

/// The wave of the unit whose file (or chart output of one) `file` is, if it has one.
pub fn unit_wave(units: &[(std::path::PathBuf, i64)], file: &std::path::Path) -> Option<i64> {
    let text = file.to_string_lossy();
    units.iter().rev().find_map(|(own, wave)| {
        let own = own.to_string_lossy();
        (text == own || text.starts_with(&format!("{own} (chart "))).then_some(*wave)
    })
}

/// How far apart the waves of units one `dependsOn` step apart are: a unit's own waves (its
/// annotations, its Helm hooks) stay in order inside the range.
pub const UNIT_WAVE_STEP: i64 = 100;

/// `object` moved by its unit's depth in the `dependsOn` graph: its own wave plus
/// [`UNIT_WAVE_STEP`] per step.
pub fn set_unit_wave(object: &mut Value, depth: i64) {
    let wave = wave_of(object) + depth * UNIT_WAVE_STEP;
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(map) = annotations.as_object_mut() {
        map.insert(WAVE_ANNOTATION.into(), Value::String(wave.to_string()));
    }
}

/// The annotation that makes the object a hook, if any: tend's, else Argo CD's.
fn hook_annotation(object: &Value) -> Option<(&'static str, &str)> {
    [HOOK_ANNOTATION, ARGO_HOOK_ANNOTATION]
        .into_iter()
        .find_map(|key| Some((key, annotation(object, key)?)))
}

fn parse_phase(key: &str, value: &str) -> Option<Phase> {
    match (key, value) {
        // Argo CD's Sync hooks run in their wave's sync phase, once the waves before are
        // healthy, and the next wave waits for them: tend runs them as its wave's pre-apply
        // hooks, so they complete before (rather than beside) the wave's other objects.
        (HOOK_ANNOTATION, "pre-apply") | (ARGO_HOOK_ANNOTATION, "PreSync" | "Sync") => {
            Some(Phase::PreApply)
        }
        (HOOK_ANNOTATION, "post-apply") | (ARGO_HOOK_ANNOTATION, "PostSync") => {
            Some(Phase::PostApply)
        }
        _ => None,
    }
}

/// When the object runs as a hook, if it is one.
pub fn hook_of(object: &Value) -> Option<Phase> {
    hook_annotation(object).and_then(|(key, value)| parse_phase(key, value))
}

/// A hook named by `metadata.generateName` (Argo CD's and Helm's usual way: a new Job each
/// sync) gets a stable name: the prefix and five characters of a digest of the object, as
/// the API server would append five random ones. tend deletes the last run's copy and
/// creates the hook anew on every run, so the name need not change to run it again; unlike
/// Argo CD, the copies of past runs do not pile up. Other objects keep their generateName,
/// which the name check refuses.
pub fn name_generated_hook(object: &mut Value) {
    let is_hook = hook_annotation(object).is_some() || annotation(object, "helm.sh/hook").is_some();
    let Some(meta) = object.get("metadata").and_then(Value::as_object) else {
        return;
    };
    let Some(prefix) = meta.get("generateName").and_then(Value::as_str) else {
        return;
    };
    if !is_hook || meta.contains_key("name") {
        return;
    }
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(object.to_string().as_bytes());
    // The API server's alphabet for generated names (no vowels, no look-alikes).
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let suffix: String = digest
        .iter()
        .take(5)
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect();
    let name = format!("{prefix}{suffix}");
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("generateName");
        meta.insert("name".into(), Value::String(name));
    }
}

/// Helm's `helm.sh/hook-weight`, which the objects of charts tend renders keep: hooks of one
/// phase and wave run in ascending weight (0 when absent or not an integer, as Helm reads it).
pub fn hook_weight(object: &Value) -> i64 {
    annotation(object, "helm.sh/hook-weight")
        .and_then(parse_wave)
        .unwrap_or(0)
}

/// Whether a hook is deleted once it succeeded.
pub fn delete_on_success(object: &Value) -> bool {
    annotation(object, HOOK_DELETE_ANNOTATION) == Some(ON_SUCCESS)
        || annotation(object, ARGO_HOOK_DELETE_ANNOTATION)
            .is_some_and(|v| v.split(',').any(|p| p.trim() == "HookSucceeded"))
}

/// Whether the object is a Job or a Pod, the kinds that run to completion.
fn runs_to_completion(object: &Value) -> bool {
    let api = object.get("apiVersion").and_then(Value::as_str);
    match object.get("kind").and_then(Value::as_str) {
        Some("Job") => api.is_some_and(|v| v.starts_with("batch/")),
        Some("Pod") => api == Some("v1"),
        _ => false,
    }
}

/// Every problem with the object's wave and hook annotations: (annotation, message).
pub fn problems(object: &Value) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some((key, text)) = wave_annotation(object) {
        if parse_wave(text).is_none() {
            out.push((
                key,
                format!(
                    "metadata.annotations.{key}: {text:?} is not an integer; write a whole number such as \"-1\", \"0\" or \"2\" (quoted)"
                ),
            ));
        }
    }
    if let Some((key, value)) = hook_annotation(object) {
        let known = match key {
            HOOK_ANNOTATION => "\"pre-apply\" or \"post-apply\"",
            _ => match value {
                "SyncFail" | "PostDelete" | "Skip" => "\"PreSync\", \"Sync\" or \"PostSync\" (tend has no phase after a failed or deleted run, and applies every object it is given: remove the object, or run it yourself)",
                _ => "\"PreSync\", \"Sync\" or \"PostSync\" (the Argo CD hooks tend runs)",
            },
        };
        if parse_phase(key, value).is_none() {
            out.push((
                key,
                format!("metadata.annotations.{key}: unknown value {value:?}; use {known}"),
            ));
        } else if key == HOOK_ANNOTATION && !runs_to_completion(object) {
            // Argo CD makes a hook of any kind (a PreSync ServiceAccount for a PreSync Job),
            // and tend runs those as Argo CD does; its own hooks stay Jobs and Pods.
            out.push((
                key,
                format!(
                    "metadata.annotations.{key}: only a Job (batch/v1) or a Pod (v1) can be a hook; remove the annotation or make the hook a Job"
                ),
            ));
        }
    }
    if let Some(value) = annotation(object, HOOK_DELETE_ANNOTATION) {
        if value != ON_SUCCESS {
            out.push((
                HOOK_DELETE_ANNOTATION,
                format!(
                    "metadata.annotations.{HOOK_DELETE_ANNOTATION}: unknown value {value:?}; the only value is {ON_SUCCESS:?}"
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(kind: &str, annotations: Value) -> Value {
        let api = match kind {
            "Job" => "batch/v1",
            "Deployment" => "apps/v1",
            _ => "v1",
        };
        json!({"apiVersion": api, "kind": kind,
               "metadata": {"name": "x", "annotations": annotations}})
    }

    #[test]
    fn waves_default_to_zero_and_prefer_tend() {
        assert_eq!(wave_of(&object("ConfigMap", json!({}))), 0);
        assert_eq!(
            wave_of(&object("ConfigMap", json!({WAVE_ANNOTATION: "-2"}))),
            -2
        );
        assert_eq!(
            wave_of(&object("ConfigMap", json!({ARGO_WAVE_ANNOTATION: "3"}))),
            3
        );
        let both = object(
            "ConfigMap",
            json!({WAVE_ANNOTATION: "1", ARGO_WAVE_ANNOTATION: "5"}),
        );
        assert_eq!(wave_of(&both), 1);
    }

    #[test]
    fn hooks_from_tend_or_argo() {
        let pre = object("Job", json!({HOOK_ANNOTATION: "pre-apply"}));
        assert_eq!(hook_of(&pre), Some(Phase::PreApply));
        let post = object("Pod", json!({ARGO_HOOK_ANNOTATION: "PostSync"}));
        assert_eq!(hook_of(&post), Some(Phase::PostApply));
        assert_eq!(hook_of(&object("Job", json!({}))), None);
        assert!(delete_on_success(&object(
            "Job",
            json!({ARGO_HOOK_DELETE_ANNOTATION: "BeforeHookCreation,HookSucceeded"})
        )));
        assert!(!delete_on_success(&pre));
    }

    #[test]
    fn bad_values_are_problems() {
        let p = problems(&object("ConfigMap", json!({WAVE_ANNOTATION: "first"})));
        assert_eq!(p.len(), 1);
        assert!(p[0].1.contains("\"first\" is not an integer"), "{p:?}");
        let p = problems(&object("Job", json!({ARGO_HOOK_ANNOTATION: "SyncFail"})));
        assert!(p[0].1.contains("PreSync"), "{p:?}");
        let p = problems(&object("Deployment", json!({HOOK_ANNOTATION: "pre-apply"})));
        assert!(p[0].1.contains("only a Job"), "{p:?}");
        assert!(problems(&object("Job", json!({HOOK_ANNOTATION: "post-apply"}))).is_empty());
    }
}
