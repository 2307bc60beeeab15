//! What a chart learns from the cluster when tend is connected: `.Capabilities` (the
//! server's version and what it serves) and the answers of `lookup`. Pure: the caller reads
//! the cluster and hands the answers in; a render says what it missed (its engine's
//! `RenderContext::take_missed`), and the caller reads those and renders again.

use super::template::builtins::exact;
use super::template::{CallError, Engine, Value};
use std::sync::Arc;

pub use super::facts::{Answer, ClusterFacts, LookupKey};

/// Register `lookup` on `engine`, answering from `facts` for the renders that follow (the
/// engine's [`RenderContext`](super::template::RenderContext) keeps them, and what was missed).
/// Without facts (offline, as `helm template`) it finds nothing: an empty map.
pub fn register(engine: &mut Engine, facts: Option<Arc<ClusterFacts>>) {
    engine.context().set_cluster(facts);
    engine.register("lookup", |exec, args| {
        let [api_version, kind, namespace, name] = exact::<4>(args, "lookup")?;
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let key = LookupKey {
            api_version: text(&api_version),
            kind: text(&kind),
            namespace: text(&namespace),
            name: text(&name),
        };
        match exec.context().answer(&key) {
            None => Ok(Value::empty_map()),
            Some(Some(Answer::Found(json))) => Ok(Value::from_json_values(&json)),
            Some(Some(Answer::Failed(message))) => Err(CallError::from(message)),
            // Rendered again once the cluster answered: found nothing until then.
            Some(None) => Ok(Value::empty_map()),
        }
    });
}

/// The strings of the Secrets among the answers (each `data` value as the API holds it,
/// base64, and decoded; each `stringData` value): no chart may show them outside a Secret.
/// Very short ones are left out: they would be found everywhere.
pub fn secret_strings(facts: &ClusterFacts) -> Vec<String> {
    use base64::Engine as _;
    let mut out = Vec::new();
    let mut secret = |object: &serde_json::Value| {
        if object.get("kind").and_then(|k| k.as_str()) != Some("Secret") {
            return;
        }
        for field in ["data", "stringData"] {
            let entries = object.get(field).and_then(|d| d.as_object());
            for value in entries
                .into_iter()
                .flatten()
                .filter_map(|(_, v)| v.as_str())
            {
                out.push(value.to_string());
                if field == "data" {
                    let decoded = base64::engine::general_purpose::STANDARD.decode(value);
                    if let Ok(text) = decoded.map(String::from_utf8) {
                        out.extend(text.ok());
                    }
                }
            }
        }
    };
    for answer in facts.lookups.values() {
        let Answer::Found(value) = answer else {
            continue;
        };
        secret(value);
        for item in value
            .get("items")
            .and_then(|i| i.as_array())
            .into_iter()
            .flatten()
        {
            secret(item);
        }
    }
    out.retain(|s| s.chars().count() >= 4);
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeSet;

    /// The text, and the lookups it missed.
    fn render(
        text: &str,
        facts: Option<Arc<ClusterFacts>>,
    ) -> (Result<String, String>, BTreeSet<LookupKey>) {
        let mut engine = Engine::new();
        crate::helm::funcs::register(&mut engine);
        register(&mut engine, facts);
        let text = engine
            .add("t", text)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                engine
                    .execute("t", Value::empty_map())
                    .map_err(|e| e.to_string())
            });
        (text, engine.context().take_missed())
    }

    fn key(name: &str) -> LookupKey {
        LookupKey {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "apps".into(),
            name: name.into(),
        }
    }

    const TEMPLATE: &str = r#"{{ $cm := lookup "v1" "ConfigMap" "apps" "settings" }}{{ if $cm }}{{ $cm.data.mode }}{{ else }}none{{ end }}"#;

    #[test]
    fn offline_lookup_finds_nothing_and_asks_for_nothing() {
        let (text, missed) = render(TEMPLATE, None);
        assert_eq!(text.unwrap(), "none");
        assert!(missed.is_empty());
    }

    #[test]
    fn a_lookup_not_read_yet_finds_nothing_and_is_asked_for() {
        let facts = Arc::new(ClusterFacts::default());
        let (text, missed) = render(TEMPLATE, Some(facts));
        assert_eq!(text.unwrap(), "none");
        assert_eq!(missed, BTreeSet::from([key("settings")]));
    }

    #[test]
    fn a_read_lookup_answers_with_the_object_or_fails_the_render() {
        let mut facts = ClusterFacts::default();
        facts.lookups.insert(
            key("settings"),
            Answer::Found(json!({"kind": "ConfigMap", "data": {"mode": "fast"}})),
        );
        let (text, missed) = render(TEMPLATE, Some(Arc::new(facts.clone())));
        assert_eq!(text.unwrap(), "fast");
        assert!(missed.is_empty());
        facts
            .lookups
            .insert(key("settings"), Answer::Found(json!({})));
        assert_eq!(
            render(TEMPLATE, Some(Arc::new(facts.clone()))).0.unwrap(),
            "none"
        );
        facts.lookups.insert(
            key("settings"),
            Answer::Failed("configmaps is forbidden".into()),
        );
        let err = render(TEMPLATE, Some(Arc::new(facts))).0.unwrap_err();
        assert!(err.contains("configmaps is forbidden"), "{err}");
    }

    #[test]
    fn secret_strings_are_the_data_encoded_and_decoded_of_secrets_only() {
        let mut facts = ClusterFacts::default();
        facts.lookups.insert(
            key("a"),
            Answer::Found(json!({"kind": "Secret", "data": {"p": "aHVudGVyMg==", "x": "eA=="}})),
        );
        facts.lookups.insert(
            key(""),
            Answer::Found(json!({"kind": "SecretList", "items": [
                {"kind": "Secret", "stringData": {"t": "token-1"}},
            ]})),
        );
        facts.lookups.insert(
            key("c"),
            Answer::Found(json!({"kind": "ConfigMap", "data": {"p": "visible"}})),
        );
        assert_eq!(
            secret_strings(&facts),
            vec!["aHVudGVyMg==", "eA==", "hunter2", "token-1"]
        );
    }
}
