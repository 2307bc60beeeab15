//! What a chart learns from the cluster when tend is connected: `.Capabilities` (the
//! server's version and what it serves) and the answers of `lookup`. Pure: the caller reads
//! the cluster and hands the answers in; a render asks for what it missed
//! ([`take_missed`]), and the caller reads those and renders again.

use super::template::builtins::exact;
use super::template::{CallError, Engine, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// One `lookup apiVersion kind namespace name` call (an empty name lists).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LookupKey {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for LookupKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match (self.namespace.as_str(), self.name.as_str()) {
            ("", "") => "(all)".to_string(),
            (ns, "") => format!("{ns}/(all)"),
            ("", name) => name.to_string(),
            (ns, name) => format!("{ns}/{name}"),
        };
        write!(f, "{} {} {what}", self.api_version, self.kind)
    }
}

/// The answer the cluster gave to one lookup.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The object, or a list (`{"apiVersion", "kind": "<Kind>List", "items": [...]}`), or
    /// an empty map when nothing is there: what Helm's lookup returns.
    Found(serde_json::Value),
    /// Helm's lookup fails the render with this (a group/version the cluster does not
    /// serve, no right to read): the message, without any value.
    Failed(String),
}

/// The cluster as a chart sees it when tend is connected.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClusterFacts {
    /// The server's version (`v1.36.0`): `.Capabilities.KubeVersion`.
    pub kube_version: String,
    /// What the server serves, as Helm lists it: `group/version` and
    /// `group/version/Kind` (`v1`, `v1/Pod`, `apps/v1/Deployment`).
    pub api_versions: Vec<String>,
    /// The lookups read so far.
    pub lookups: BTreeMap<LookupKey, Answer>,
}

thread_local! {
    /// The facts of the render running on this thread (functions are plain `fn`s).
    static FACTS: RefCell<Option<Arc<ClusterFacts>>> = const { RefCell::new(None) };
    /// Lookups the render on this thread made that [`FACTS`] did not answer.
    static MISSED: RefCell<BTreeSet<LookupKey>> = const { RefCell::new(BTreeSet::new()) };
    /// Whether the render on this thread read the cluster with a lookup.
    static USED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the renders on this thread since [`register`] looked the cluster up (their
/// output depends on what it holds).
pub fn used() -> bool {
    USED.with(std::cell::Cell::get)
}

/// Register `lookup` on `engine`, answering from `facts` for the renders that follow on
/// this thread. Without facts (offline, as `helm template`) it finds nothing: an empty map.
pub fn register(engine: &mut Engine, facts: Option<Arc<ClusterFacts>>) {
    FACTS.with(|f| *f.borrow_mut() = facts);
    MISSED.with(|m| m.borrow_mut().clear());
    USED.with(|u| u.set(false));
    engine.register("lookup", |_, args| {
        let [api_version, kind, namespace, name] = exact::<4>(args, "lookup")?;
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let key = LookupKey {
            api_version: text(&api_version),
            kind: text(&kind),
            namespace: text(&namespace),
            name: text(&name),
        };
        let answer = FACTS.with(|f| {
            f.borrow()
                .as_ref()
                .map(|facts| facts.lookups.get(&key).cloned())
        });
        if answer.is_some() {
            USED.with(|u| u.set(true));
        }
        match answer {
            None => Ok(Value::empty_map()),
            Some(Some(Answer::Found(json))) => Ok(Value::from_json_values(&json)),
            Some(Some(Answer::Failed(message))) => Err(CallError::from(message)),
            Some(None) => {
                // Rendered again once the cluster answered: found nothing until then.
                MISSED.with(|m| m.borrow_mut().insert(key));
                Ok(Value::empty_map())
            }
        }
    });
}

/// The lookups the renders on this thread made since [`register`] that its facts did not
/// answer yet.
pub fn take_missed() -> BTreeSet<LookupKey> {
    MISSED.with(|m| std::mem::take(&mut *m.borrow_mut()))
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

    fn render(text: &str, facts: Option<Arc<ClusterFacts>>) -> Result<String, String> {
        let mut engine = Engine::new();
        crate::helm::funcs::register(&mut engine);
        register(&mut engine, facts);
        engine.add("t", text).map_err(|e| e.to_string())?;
        engine
            .execute("t", Value::empty_map())
            .map_err(|e| e.to_string())
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
        assert_eq!(render(TEMPLATE, None).unwrap(), "none");
        assert!(take_missed().is_empty());
    }

    #[test]
    fn a_lookup_not_read_yet_finds_nothing_and_is_asked_for() {
        let facts = Arc::new(ClusterFacts::default());
        assert_eq!(render(TEMPLATE, Some(facts)).unwrap(), "none");
        assert_eq!(take_missed(), BTreeSet::from([key("settings")]));
        assert!(take_missed().is_empty(), "taken once");
    }

    #[test]
    fn a_read_lookup_answers_with_the_object_or_fails_the_render() {
        let mut facts = ClusterFacts::default();
        facts.lookups.insert(
            key("settings"),
            Answer::Found(json!({"kind": "ConfigMap", "data": {"mode": "fast"}})),
        );
        assert_eq!(
            render(TEMPLATE, Some(Arc::new(facts.clone()))).unwrap(),
            "fast"
        );
        assert!(take_missed().is_empty());
        facts
            .lookups
            .insert(key("settings"), Answer::Found(json!({})));
        assert_eq!(
            render(TEMPLATE, Some(Arc::new(facts.clone()))).unwrap(),
            "none"
        );
        facts.lookups.insert(
            key("settings"),
            Answer::Failed("configmaps is forbidden".into()),
        );
        let err = render(TEMPLATE, Some(Arc::new(facts))).unwrap_err();
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
