//! Watch events: the history a watch can resume from, filters, initial events.

use super::*;

/// A stored change, fanned out to watches.
#[derive(Debug, Clone)]
pub struct Event {
    pub key: (String, String),
    pub namespace: String,
    pub kind: &'static str,
    pub object: Value,
    pub rv: u64,
}

/// How many past events a watch can resume from (older resourceVersions get 410 Gone).
const HISTORY: usize = 10_000;

/// What a new watch gets: its initial events, then the live feed to filter.
pub struct WatchStart {
    pub initial: Vec<Value>,
    pub feed: tokio::sync::broadcast::Receiver<Event>,
    pub filter: WatchFilter,
}

pub struct WatchFilter {
    def: ResourceDef,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl WatchFilter {
    /// The JSON watch event for `e`, if this watch wants it.
    pub fn render(&self, e: &Event) -> Option<Value> {
        if e.key != self.def.store_key()
            || self
                .namespace
                .as_deref()
                .is_some_and(|ns| ns != e.namespace)
            || !self.labels.matches(&e.object)
            || !self.fields.matches(&e.object)
        {
            return None;
        }
        Some(json!({"type": e.kind, "object": State::present(&self.def, &e.object)}))
    }
}

impl State {
    pub(super) fn emit_deleted(&mut self, key: (String, String), mut old: Value) {
        let ns = meta_str(&old, "namespace").unwrap_or("").to_string();
        // A deletion is itself a write with its own resourceVersion.
        meta_mut(&mut old).insert("resourceVersion".into(), self.rv.to_string().into());
        self.emit(key, ns, "DELETED", old);
    }

    pub(super) fn emit(
        &mut self,
        key: (String, String),
        namespace: String,
        kind: &'static str,
        object: Value,
    ) {
        let e = Event {
            key,
            namespace,
            kind,
            object,
            rv: self.rv,
        };
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(e.clone());
        // No receivers is fine: nobody is watching.
        let _ = self.events.send(e);
    }

    /// Starts a watch: ADDED events for current objects (resourceVersion unset or "0", or
    /// sendInitialEvents=true), or a replay of history after the given resourceVersion.
    pub fn watch(&self, c: &Call) -> Result<WatchStart, ApiError> {
        let filter = WatchFilter {
            def: c.def.clone(),
            namespace: c.namespace.clone(),
            labels: LabelSelector::parse(c.query.get("labelSelector").unwrap_or(""))
                .map_err(ApiError::bad_request)?,
            fields: FieldSelector::parse(c.query.get("fieldSelector").unwrap_or(""), &c.def.kind)
                .map_err(ApiError::bad_request)?,
        };
        let feed = self.events.subscribe();
        let rv = c.query.get("resourceVersion").unwrap_or("");
        let initial_events = c.query.get("sendInitialEvents") == Some("true");
        let mut initial = Vec::new();
        if rv.is_empty() || rv == "0" || initial_events {
            if let Some(b) = self.bucket(&c.def) {
                for v in b.values() {
                    let e = Event {
                        key: c.def.store_key(),
                        namespace: meta_str(v, "namespace").unwrap_or("").to_string(),
                        kind: "ADDED",
                        object: v.clone(),
                        rv: self.rv,
                    };
                    initial.extend(filter.render(&e));
                }
            }
            if initial_events {
                initial.push(json!({"type": "BOOKMARK", "object": {
                    "apiVersion": c.def.api_version(), "kind": c.def.kind,
                    "metadata": {"resourceVersion": self.rv.to_string(),
                                 "annotations": {"k8s.io/initial-events-end": "true"}}}}));
            }
        } else {
            let from: u64 = rv
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?;
            let oldest = self.history.front().map(|e| e.rv).unwrap_or(self.rv);
            if from + 1 < oldest {
                return Err(ApiError::new(
                    410,
                    "Expired",
                    format!("too old resource version: {from} ({oldest})"),
                ));
            }
            initial.extend(
                self.history
                    .iter()
                    .filter(|e| e.rv > from)
                    .filter_map(|e| filter.render(e)),
            );
        }
        Ok(WatchStart {
            initial,
            feed,
            filter,
        })
    }
}
