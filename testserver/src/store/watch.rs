//! Watch events: the history a watch can resume from, filters, initial events.

use super::*;

/// A stored change, fanned out to watches.
#[derive(Debug, Clone)]
pub struct Event {
    pub key: (String, String),
    pub namespace: String,
    pub kind: &'static str,
    pub object: Value,
    /// The object before this change (None for creations): a watch whose selectors matched
    /// it but not the new object sees a DELETED event, as from kube-apiserver's watch cache.
    pub prev: Option<Value>,
    pub rv: u64,
}

/// How many past events a watch can resume from (older resourceVersions get 410 Gone).
const HISTORY: usize = 10_000;

/// What a new watch gets: its initial events, then the live feed to filter.
pub struct WatchStart {
    pub initial: Vec<Value>,
    pub feed: tokio::sync::broadcast::Receiver<Event>,
    pub filter: WatchFilter,
    /// The cluster's resourceVersion when the watch started (for bookmarks).
    pub rv: u64,
}

pub struct WatchFilter {
    def: ResourceDef,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl WatchFilter {
    fn selects(&self, obj: &Value) -> bool {
        self.labels.matches(obj) && self.fields.matches(obj)
    }

    /// The JSON watch event for `e`, if this watch wants it. As in the watch cache
    /// (cacher's convertToWatchEvent), an object that starts matching the selectors is
    /// ADDED and one that stops matching is DELETED (with its previous content).
    pub fn render(&self, e: &Event) -> Option<Value> {
        if e.key != self.def.store_key()
            || self
                .namespace
                .as_deref()
                .is_some_and(|ns| ns != e.namespace)
        {
            return None;
        }
        let now = e.kind != "DELETED" && self.selects(&e.object);
        let before = e.prev.as_ref().is_some_and(|p| self.selects(p));
        let (kind, object) = match (now, before) {
            (true, false) => ("ADDED", e.object.clone()),
            (true, true) => ("MODIFIED", e.object.clone()),
            (false, true) => {
                let mut old = e.prev.clone().unwrap_or(Value::Null);
                meta_mut(&mut old).insert("resourceVersion".into(), e.rv.to_string().into());
                ("DELETED", old)
            }
            (false, false) => return None,
        };
        Some(json!({"type": kind, "object": State::present(&self.def, &object)}))
    }

    /// A BOOKMARK event: the resource's kind with only a resourceVersion, which tells the
    /// client where to resume.
    pub fn bookmark(&self, rv: u64) -> Value {
        json!({"type": "BOOKMARK", "object": {
            "kind": self.def.kind, "apiVersion": self.def.api_version(),
            "metadata": {"resourceVersion": rv.to_string()}}})
    }
}

impl State {
    pub(super) fn emit_deleted(&mut self, key: (String, String), old: Value) {
        let ns = meta_str(&old, "namespace").unwrap_or("").to_string();
        // A deletion is itself a write with its own resourceVersion.
        let mut gone = old.clone();
        meta_mut(&mut gone).insert("resourceVersion".into(), self.rv.to_string().into());
        self.emit(key, ns, "DELETED", gone, Some(old));
    }

    pub(super) fn emit(
        &mut self,
        key: (String, String),
        namespace: String,
        kind: &'static str,
        object: Value,
        prev: Option<Value>,
    ) {
        let e = Event {
            key,
            namespace,
            kind,
            object,
            prev,
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
            fields: FieldSelector::parse(c.query.get("fieldSelector").unwrap_or(""), &c.def)
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
                        prev: None,
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
            rv: self.rv,
        })
    }
}
