//! Object storage and the REST semantics of each verb: bookkeeping (uid, resourceVersion,
//! generation, managedFields), defaults, validation, dry-run, status subresource, CRD
//! registration, namespace cascade and finalizers.

use crate::defaults;
use crate::discovery::{self, ResourceDef};
use crate::errors::ApiError;
use crate::faults::Verb;
use crate::patch;
use crate::schema;
use crate::selectors::{FieldSelector, LabelSelector};
use crate::ssa::{self, Ctx, Manager, Scope, SsaError};
use base64::Engine;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

type ObjKey = (String, String);

/// Decoded query parameters.
#[derive(Debug, Default, Clone)]
pub struct Query {
    pub pairs: Vec<(String, String)>,
}

impl Query {
    pub fn parse(raw: &str) -> Query {
        let decode = |s: &str| -> String {
            let bytes = s.as_bytes();
            let hex = |b: u8| (b as char).to_digit(16);
            let mut out = Vec::with_capacity(bytes.len());
            let mut i = 0;
            while i < bytes.len() {
                match bytes[i] {
                    b'+' => out.push(b' '),
                    b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                        (Some(h), Some(l)) => {
                            out.push((h * 16 + l) as u8);
                            i += 2;
                        }
                        _ => out.push(b'%'),
                    },
                    b => out.push(b),
                }
                i += 1;
            }
            String::from_utf8_lossy(&out).into_owned()
        };
        let pairs = raw
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| match p.split_once('=') {
                Some((k, v)) => (decode(k), decode(v)),
                None => (decode(p), String::new()),
            })
            .collect();
        Query { pairs }
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, k: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// One resource request, already routed.
pub struct Call<'a> {
    pub def: ResourceDef,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub subresource: Option<String>,
    pub query: &'a Query,
    pub body: &'a [u8],
    pub content_type: &'a str,
    pub user_agent: &'a str,
}

pub struct Reply {
    pub code: u16,
    pub body: Value,
}

type Res = Result<Reply, ApiError>;

pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn ok(code: u16, body: Value) -> Res {
    Ok(Reply { code, body })
}

/// Parses a request body as JSON, or YAML when the content type says so (or for apply).
fn parse_body(body: &[u8], yaml: bool) -> Result<Value, ApiError> {
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) if !yaml => {
            return Err(ApiError::bad_request(format!(
                "error decoding request body: {e}"
            )))
        }
        Err(_) => serde_yaml::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON/YAML object",
        ));
    }
    Ok(v)
}

fn meta(v: &Value) -> Option<&Map<String, Value>> {
    v.get("metadata").and_then(Value::as_object)
}

fn meta_str<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    meta(v).and_then(|m| m.get(k)).and_then(Value::as_str)
}

fn meta_mut(v: &mut Value) -> &mut Map<String, Value> {
    if !v.get("metadata").is_some_and(Value::is_object) {
        v["metadata"] = json!({});
    }
    match v.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        _ => unreachable!("metadata was just set to an object"),
    }
}

fn without_managed_fields(v: &Value) -> Value {
    let mut c = v.clone();
    if let Some(Value::Object(m)) = c.get_mut("metadata") {
        m.shift_remove("managedFields");
    }
    c
}

const META_ORDER: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Orders keys as kube-apiserver serializes them (apiVersion, kind, metadata ... status).
fn normalize(v: Value) -> Value {
    let Value::Object(mut m) = v else { return v };
    let mut out = Map::new();
    for k in ["apiVersion", "kind"] {
        if let Some(x) = m.shift_remove(k) {
            out.insert(k.into(), x);
        }
    }
    if let Some(Value::Object(mut md)) = m.shift_remove("metadata") {
        let mut nm = Map::new();
        for k in META_ORDER {
            if let Some(x) = md.shift_remove(*k) {
                nm.insert((*k).into(), x);
            }
        }
        nm.extend(md);
        out.insert("metadata".into(), Value::Object(nm));
    }
    let status = m.shift_remove("status");
    out.extend(m);
    if let Some(s) = status {
        out.insert("status".into(), s);
    }
    Value::Object(out)
}

fn random_suffix(n: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    uuid::Uuid::new_v4()
        .as_bytes()
        .iter()
        .take(n)
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// Name validation as each kind's ValidateObjectMeta does it.
fn validate_name(def: &ResourceDef, name: &str) -> Result<(), ApiError> {
    let problem = match def.plural.as_str() {
        "namespaces" => (!is_dns_label(name)).then_some(LABEL_MSG),
        "services" => (!(is_dns_label(name) && name.as_bytes()[0].is_ascii_lowercase()))
            .then_some(DNS1035_MSG),
        // RBAC names are path segments (e.g. "system:controller:foo").
        "roles" | "rolebindings" | "clusterroles" | "clusterrolebindings" => {
            (name.contains('/') || name.contains('%') || name == "." || name == "..")
                .then_some("may not contain '/' or '%'")
        }
        _ => (!is_dns_subdomain(name)).then_some(SUBDOMAIN_MSG),
    };
    match problem {
        None => Ok(()),
        Some(msg) => Err(ApiError::invalid(
            &def.group,
            &def.kind,
            name,
            &[(
                "metadata.name",
                "FieldValueInvalid",
                format!("Invalid value: {name:?}: {msg}"),
            )],
        )),
    }
}

fn valid_label_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

fn validate_labels(def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
    let Some(labels) = meta(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    else {
        return Ok(());
    };
    for (k, v) in labels {
        let value = v.as_str().unwrap_or("");
        if !valid_label_value(value) {
            let name = meta_str(obj, "name").unwrap_or("");
            return Err(ApiError::invalid(
                &def.group,
                &def.kind,
                name,
                &[(
                    "metadata.labels",
                    "FieldValueInvalid",
                    format!("Invalid value: {value:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
                )],
            ));
        }
        if k.is_empty() || k.len() > 316 {
            return Err(ApiError::bad_request(format!("invalid label key {k:?}")));
        }
    }
    Ok(())
}

fn scope_of(def: &ResourceDef, sub: Option<&str>) -> Scope {
    match sub {
        Some("status") => Scope::Status,
        _ => Scope::Main {
            status_reset: def.status,
        },
    }
}

fn ssa_error(e: SsaError) -> ApiError {
    match e {
        SsaError::Conflicts(c) => {
            let causes: Vec<Value> = c
                .iter()
                .map(|(m, p)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {m}"), "field": p}))
                .collect();
            ApiError {
                details: Some(json!({"causes": causes})),
                ..ApiError::new(409, "Conflict", SsaError::Conflicts(c).message())
            }
        }
        SsaError::Invalid(m) => ApiError::new(
            422,
            "Invalid",
            format!("failed to create typed patch object: {m}"),
        ),
    }
}

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

pub struct State {
    pub defs: Vec<ResourceDef>,
    objects: BTreeMap<(String, String), BTreeMap<ObjKey, Value>>,
    rv: u64,
    next_ip: u32,
    next_node_port: u32,
    simulate_controllers: bool,
    events: tokio::sync::broadcast::Sender<Event>,
    history: std::collections::VecDeque<Event>,
}

impl State {
    pub fn new(simulate_controllers: bool) -> State {
        let mut s = State {
            defs: discovery::builtin_resources(),
            objects: BTreeMap::new(),
            rv: 100,
            next_ip: 2,
            next_node_port: 30000,
            simulate_controllers,
            events: tokio::sync::broadcast::channel(4096).0,
            history: Default::default(),
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            let _ = s.seed(body, "kube-apiserver");
        }
        let svc = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 6443}], "clusterIP": "10.96.0.1"}
        });
        let _ = s.seed(svc, "kube-apiserver");
        s
    }

    pub fn find_def(&self, group: &str, version: &str, plural: &str) -> Option<ResourceDef> {
        self.defs
            .iter()
            .find(|d| d.group == group && d.version == version && d.plural == plural)
            .cloned()
    }

    fn def_for(&self, api_version: &str, kind: &str) -> Option<ResourceDef> {
        self.defs
            .iter()
            .find(|d| d.api_version() == api_version && d.kind == kind)
            .cloned()
    }

    fn bump(&mut self) -> String {
        self.rv += 1;
        self.rv.to_string()
    }

    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    fn bucket(&self, def: &ResourceDef) -> Option<&BTreeMap<ObjKey, Value>> {
        self.objects.get(&def.store_key())
    }

    fn get_obj(&self, def: &ResourceDef, ns: &str, name: &str) -> Option<&Value> {
        self.bucket(def)?.get(&(ns.to_string(), name.to_string()))
    }

    fn put_obj(&mut self, def: &ResourceDef, v: Value) {
        let ns = meta_str(&v, "namespace").unwrap_or("").to_string();
        let name = meta_str(&v, "name").unwrap_or("").to_string();
        let existed = self
            .objects
            .entry(def.store_key())
            .or_default()
            .insert((ns.clone(), name), v.clone())
            .is_some();
        self.emit(
            def.store_key(),
            ns,
            if existed { "MODIFIED" } else { "ADDED" },
            v,
        );
    }

    fn remove_obj(&mut self, def: &ResourceDef, ns: &str, name: &str) {
        let removed = self
            .objects
            .get_mut(&def.store_key())
            .and_then(|b| b.remove(&(ns.to_string(), name.to_string())));
        if let Some(old) = removed {
            self.emit_deleted(def.store_key(), old);
        }
    }

    fn emit_deleted(&mut self, key: (String, String), mut old: Value) {
        let ns = meta_str(&old, "namespace").unwrap_or("").to_string();
        // A deletion is itself a write with its own resourceVersion.
        meta_mut(&mut old).insert("resourceVersion".into(), self.rv.to_string().into());
        self.emit(key, ns, "DELETED", old);
    }

    fn emit(
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

    /// The object as served for `def`'s version.
    fn present(def: &ResourceDef, v: &Value) -> Value {
        let mut c = v.clone();
        c["apiVersion"] = def.api_version().into();
        c["kind"] = def.kind.clone().into();
        normalize(c)
    }

    /// Creates an object directly (seeding), bypassing HTTP. Returns the stored object.
    pub fn seed(&mut self, body: Value, manager: &str) -> Result<Value, ApiError> {
        let api_version = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
        let def = self.def_for(api_version, kind).ok_or_else(|| {
            ApiError::bad_request(format!("no resource for {api_version} {kind}"))
        })?;
        let ns = meta_str(&body, "namespace").map(str::to_string);
        let name = meta_str(&body, "name").unwrap_or("").to_string();
        validate_name(&def, &name)?;
        let ns = if def.namespaced {
            Some(ns.unwrap_or_else(|| "default".into()))
        } else {
            None
        };
        self.ensure_namespace(&def, ns.as_deref())?;
        if self
            .get_obj(&def, ns.as_deref().unwrap_or(""), &name)
            .is_some()
        {
            return Err(ApiError::already_exists(&def.group, &def.plural, &name));
        }
        self.create_object(&def, ns, name, body, manager, false)
            .map(|r| r.body)
    }

    /// All stored objects of a resource (any namespace), as served.
    pub fn objects_of(&self, group: &str, plural: &str) -> Vec<Value> {
        let Some(def) = self
            .defs
            .iter()
            .find(|d| d.group == group && d.plural == plural)
        else {
            return vec![];
        };
        self.bucket(def)
            .map(|b| b.values().map(|v| Self::present(def, v)).collect())
            .unwrap_or_default()
    }

    pub fn object(&self, group: &str, plural: &str, ns: &str, name: &str) -> Option<Value> {
        let def = self
            .defs
            .iter()
            .find(|d| d.group == group && d.plural == plural)?;
        self.get_obj(def, ns, name).map(|v| Self::present(def, v))
    }

    fn ensure_namespace(&self, def: &ResourceDef, ns: Option<&str>) -> Result<(), ApiError> {
        if let (true, Some(ns)) = (def.namespaced, ns) {
            let nsdef = &self.defs[0];
            if self.get_obj(nsdef, "", ns).is_none() {
                return Err(ApiError::not_found("", "namespaces", ns));
            }
        }
        Ok(())
    }

    pub fn handle(&mut self, c: &Call, verb: Verb) -> Res {
        // DELETE carries its options (dryRun included) in a DeleteOptions body.
        let body_dry = matches!(verb, Verb::Delete | Verb::DeleteCollection)
            && serde_json::from_slice::<Value>(c.body)
                .ok()
                .and_then(|o| o.get("dryRun").cloned())
                .is_some_and(|d| d == json!(["All"]));
        let dry = body_dry
            || match c.query.all("dryRun").as_slice() {
                [] => false,
                vals if vals.iter().all(|v| *v == "All") => true,
                vals => {
                    return Err(ApiError::invalid(
                        "meta.k8s.io",
                        "CreateOptions",
                        "",
                        &[(
                            "dryRun",
                            "FieldValueNotSupported",
                            format!(
                                "Unsupported value: {:?}: supported values: \"All\"",
                                vals[0]
                            ),
                        )],
                    ))
                }
            };
        if c.subresource
            .as_deref()
            .is_some_and(|s| s != "status" || !c.def.status)
        {
            return Err(ApiError::no_route());
        }
        match verb {
            Verb::Get => self.get(c),
            Verb::List => self.list(c),
            Verb::Create => self.create(c, dry),
            Verb::Update => self.update(c, dry),
            Verb::Patch | Verb::Apply => self.patch(c, dry),
            Verb::Delete => self.delete(c, dry),
            Verb::DeleteCollection => self.delete_collection(c, dry),
            _ => Err(ApiError::method_not_allowed()),
        }
    }

    fn field_manager(c: &Call) -> String {
        match c.query.get("fieldManager").filter(|m| !m.is_empty()) {
            Some(m) => m.to_string(),
            None => {
                // kube-apiserver uses the user agent up to the first '/'.
                let ua: String = c
                    .user_agent
                    .split('/')
                    .next()
                    .unwrap_or("")
                    .chars()
                    .filter(|ch| !ch.is_control())
                    .take(128)
                    .collect();
                ua
            }
        }
    }

    fn get(&self, c: &Call) -> Res {
        let name = c.name.as_deref().unwrap_or("");
        let ns = c.namespace.as_deref().unwrap_or("");
        match self.get_obj(&c.def, ns, name) {
            Some(v) => ok(200, Self::present(&c.def, v)),
            None => Err(ApiError::not_found(&c.def.group, &c.def.plural, name)),
        }
    }

    fn list(&self, c: &Call) -> Res {
        let labels = LabelSelector::parse(c.query.get("labelSelector").unwrap_or(""))
            .map_err(ApiError::bad_request)?;
        let fields = FieldSelector::parse(c.query.get("fieldSelector").unwrap_or(""), &c.def.kind)
            .map_err(ApiError::bad_request)?;
        let limit: usize = match c.query.get("limit").filter(|l| !l.is_empty()) {
            Some(l) => l
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
            None => 0,
        };
        let start_after: Option<ObjKey> = match c.query.get("continue").filter(|s| !s.is_empty()) {
            Some(tok) => Some(decode_continue(tok).ok_or_else(|| {
                ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
            })?),
            None => None,
        };
        let mut items = Vec::new();
        let mut last_key = None;
        let mut remaining = 0usize;
        if let Some(bucket) = self.bucket(&c.def) {
            for (key, v) in bucket {
                if c.namespace.as_deref().is_some_and(|ns| ns != key.0) {
                    continue;
                }
                if start_after.as_ref().is_some_and(|s| key <= s) {
                    continue;
                }
                if !labels.matches(v) || !fields.matches(v) {
                    continue;
                }
                if limit > 0 && items.len() == limit {
                    remaining += 1;
                    continue;
                }
                let mut item = Self::present(&c.def, v);
                // Typed (built-in) lists omit apiVersion/kind on items; unstructured keep them.
                if c.def.crd.is_none() {
                    if let Some(m) = item.as_object_mut() {
                        m.shift_remove("apiVersion");
                        m.shift_remove("kind");
                    }
                }
                items.push(item);
                last_key = Some(key.clone());
            }
        }
        let mut md = Map::new();
        md.insert("resourceVersion".into(), self.rv.to_string().into());
        if remaining > 0 {
            if let Some(k) = last_key {
                md.insert("continue".into(), encode_continue(self.rv, &k).into());
                if labels.is_empty() && fields.is_empty() {
                    md.insert("remainingItemCount".into(), remaining.into());
                }
            }
        }
        ok(
            200,
            json!({"kind": c.def.list_kind(), "apiVersion": c.def.api_version(), "metadata": md, "items": items}),
        )
    }

    /// Checks apiVersion/kind of a body against the resource.
    fn check_type_meta(def: &ResourceDef, body: &Value) -> Result<(), ApiError> {
        let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
        let av = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if kind.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Object 'Kind' is missing in '{body}'"
            )));
        }
        if av.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Object 'apiVersion' is missing in '{body}'"
            )));
        }
        let group = av.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        if group != def.group || (def.crd.is_none() && av != def.api_version()) {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({})",
                def.api_version()
            )));
        }
        if kind != def.kind {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                def.kind
            )));
        }
        Ok(())
    }

    /// Reconciles the body's namespace with the URL's.
    fn resolve_namespace(c: &Call, body: &mut Value) -> Result<Option<String>, ApiError> {
        let md = meta_mut(body);
        if !c.def.namespaced {
            md.shift_remove("namespace");
            return Ok(None);
        }
        let ns = c.namespace.clone().ok_or_else(ApiError::no_route)?;
        match md.get("namespace").and_then(Value::as_str) {
            Some(b) if !b.is_empty() && b != ns => Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            )),
            _ => {
                md.insert("namespace".into(), ns.clone().into());
                Ok(Some(ns))
            }
        }
    }

    fn check_name(body: &Value, url_name: &str) -> Result<(), ApiError> {
        let name = meta_str(body, "name").unwrap_or("");
        if name != url_name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name}) does not match the name on the URL ({url_name})"
            )));
        }
        Ok(())
    }

    fn ctx<'a>(def: &'a ResourceDef, scope: Scope, api_version: &'a str) -> Ctx<'a> {
        Ctx {
            ty: &def.ty,
            scope,
            api_version,
        }
    }

    /// The empty object a write is compared against on create: Go value structs exist.
    fn skeleton(def: &ResourceDef, ns: Option<&str>, name: &str) -> Value {
        let mut md = Map::new();
        md.insert("name".into(), name.into());
        if let Some(ns) = ns {
            md.insert("namespace".into(), ns.into());
        }
        let mut v = json!({"apiVersion": def.api_version(), "kind": def.kind, "metadata": md});
        if def.crd.is_none() {
            schema::fill_value_structs(&mut v, &def.ty);
        }
        v
    }

    fn create(&mut self, c: &Call, dry: bool) -> Res {
        if c.subresource.is_some() || c.name.is_some() {
            return Err(ApiError::method_not_allowed());
        }
        let mut body = parse_body(c.body, c.content_type.contains("yaml"))?;
        Self::check_type_meta(&c.def, &body)?;
        let ns = Self::resolve_namespace(c, &mut body)?;
        let md = meta_mut(&mut body);
        let name = match md
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        {
            Some(n) => n.to_string(),
            None => match md.get("generateName").and_then(Value::as_str) {
                Some(g) if !g.is_empty() => format!("{g}{}", random_suffix(5)),
                _ => {
                    return Err(ApiError::invalid(
                        &c.def.group,
                        &c.def.kind,
                        "",
                        &[(
                            "metadata.name",
                            "FieldValueRequired",
                            "Required value: name or generateName is required".into(),
                        )],
                    ))
                }
            },
        };
        validate_name(&c.def, &name)?;
        self.ensure_namespace(&c.def, ns.as_deref())?;
        if self
            .get_obj(&c.def, ns.as_deref().unwrap_or(""), &name)
            .is_some()
        {
            return Err(ApiError::already_exists(&c.def.group, &c.def.plural, &name));
        }
        let manager = Self::field_manager(c);
        self.create_object(&c.def, ns, name, body, &manager, dry)
    }

    fn create_object(
        &mut self,
        def: &ResourceDef,
        ns: Option<String>,
        name: String,
        mut body: Value,
        manager: &str,
        dry: bool,
    ) -> Res {
        let md = meta_mut(&mut body);
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
            "managedFields",
        ] {
            md.shift_remove(k);
        }
        md.insert("name".into(), name.clone().into());
        if let Some(ns) = &ns {
            md.insert("namespace".into(), ns.clone().into());
        }
        body["apiVersion"] = def.api_version().into();
        if def.status {
            // Status is ignored on create when it is a subresource.
            if let Some(m) = body.as_object_mut() {
                m.shift_remove("status");
            }
        }
        defaults::apply(def, &mut body);
        validate_labels(def, &body)?;
        if def.plural == "customresourcedefinitions" {
            self.validate_crd(&body, &name)?;
        }
        let skeleton = Self::skeleton(def, ns.as_deref(), &name);
        let av = def.api_version();
        let managers = ssa::update(
            &skeleton,
            &body,
            &[],
            manager,
            &Self::ctx(def, scope_of(def, None), &av),
            &now(),
        );
        self.finish_create(def, body, managers, dry)
    }

    fn finish_create(
        &mut self,
        def: &ResourceDef,
        mut body: Value,
        managers: Vec<Manager>,
        dry: bool,
    ) -> Res {
        let uid = uuid::Uuid::new_v4().to_string();
        let md = meta_mut(&mut body);
        md.insert("uid".into(), uid.clone().into());
        md.insert("creationTimestamp".into(), now().into());
        if def.generation || def.crd.is_some() {
            md.insert("generation".into(), 1.into());
        }
        if !managers.is_empty() {
            md.insert("managedFields".into(), ssa::encode_managers(&managers));
        }
        self.after_create_hooks(def, &mut body, &uid, dry);
        if !dry {
            let rv = self.bump();
            meta_mut(&mut body).insert("resourceVersion".into(), rv.into());
            self.put_obj(def, body.clone());
            self.after_store_hooks(def, &body);
        }
        ok(201, Self::present(def, &body))
    }

    /// REST-layer work after field tracking: allocations and generated fields.
    fn after_create_hooks(&mut self, def: &ResourceDef, body: &mut Value, uid: &str, dry: bool) {
        let name = meta_str(body, "name").unwrap_or("").to_string();
        match (def.crd.is_some(), def.plural.as_str()) {
            (false, "services") => {
                if let Some(spec) = body.get_mut("spec").and_then(Value::as_object_mut) {
                    let ty = spec
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("ClusterIP")
                        .to_string();
                    if ty != "ExternalName" {
                        let ip = match spec.get("clusterIP").and_then(Value::as_str) {
                            Some(ip) if !ip.is_empty() => ip.to_string(),
                            _ => {
                                let n = self.next_ip;
                                if !dry {
                                    self.next_ip += 1;
                                }
                                format!("10.96.{}.{}", n / 250, n % 250 + 2)
                            }
                        };
                        spec.insert("clusterIP".into(), ip.clone().into());
                        if !spec.contains_key("clusterIPs") {
                            spec.insert("clusterIPs".into(), json!([ip]));
                        }
                        if !spec.contains_key("ipFamilies") {
                            spec.insert("ipFamilies".into(), json!(["IPv4"]));
                        }
                        if !spec.contains_key("ipFamilyPolicy") {
                            spec.insert("ipFamilyPolicy".into(), json!("SingleStack"));
                        }
                    }
                    if ty == "NodePort" || ty == "LoadBalancer" {
                        if let Some(Value::Array(ports)) = spec.get_mut("ports") {
                            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                                if !p.contains_key("nodePort") {
                                    p.insert("nodePort".into(), self.next_node_port.into());
                                    if !dry {
                                        self.next_node_port += 1;
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (false, "jobs") => job_selector(body, uid, &name),
            (false, "cronjobs") => {}
            (false, "customresourcedefinitions") => crd_status(body),
            _ => {}
        }
    }

    /// Side effects of a stored create: CRD registration, namespace controllers.
    fn after_store_hooks(&mut self, def: &ResourceDef, body: &Value) {
        if def.crd.is_some() {
            return;
        }
        match def.plural.as_str() {
            "customresourcedefinitions" => self.register_crd(body),
            "namespaces" if self.simulate_controllers => {
                let ns = meta_str(body, "name").unwrap_or("").to_string();
                let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                                "metadata": {"name": "default", "namespace": ns}});
                let _ = self.seed(sa, "kube-controller-manager");
                let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "kube-root-ca.crt", "namespace": ns,
                                 "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
                    "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\ntend-testserver\n-----END CERTIFICATE-----\n"}});
                let _ = self.seed(cm, "kube-controller-manager");
            }
            _ => {}
        }
    }

    fn update(&mut self, c: &Call, dry: bool) -> Res {
        let name = c.name.clone().ok_or_else(ApiError::method_not_allowed)?;
        let mut body = parse_body(c.body, c.content_type.contains("yaml"))?;
        Self::check_type_meta(&c.def, &body)?;
        let ns = Self::resolve_namespace(c, &mut body)?;
        Self::check_name(&body, &name)?;
        let existing = self
            .get_obj(&c.def, ns.as_deref().unwrap_or(""), &name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&c.def.group, &c.def.plural, &name))?;
        match meta_str(&body, "resourceVersion").filter(|rv| !rv.is_empty()) {
            None if c.def.crd.is_some() => {
                return Err(ApiError::invalid(
                    &c.def.group,
                    &c.def.kind,
                    &name,
                    &[(
                        "metadata.resourceVersion",
                        "FieldValueInvalid",
                        "Invalid value: 0x0: must be specified for an update".into(),
                    )],
                ))
            }
            Some(rv) if Some(rv) != meta_str(&existing, "resourceVersion") => {
                return Err(ApiError::stale(&c.def.group, &c.def.plural, &name))
            }
            _ => {}
        }
        let override_managers = meta(&body)
            .and_then(|m| m.get("managedFields"))
            .filter(|v| !v.is_null())
            .map(|_| ssa::decode_managers(&body));
        let manager = Self::field_manager(c);
        let scope = scope_of(&c.def, c.subresource.as_deref());
        self.write_update(
            &c.def,
            existing,
            body,
            &manager,
            scope,
            override_managers,
            dry,
        )
    }

    /// Copies server-owned metadata from the stored object and applies the scope's resets.
    fn prepare_update(def: &ResourceDef, existing: &Value, new: Value, scope: Scope) -> Value {
        let mut new = match scope {
            Scope::Status => {
                let mut merged = existing.clone();
                match new.get("status") {
                    Some(s) => merged["status"] = s.clone(),
                    None => {
                        if let Some(m) = merged.as_object_mut() {
                            m.shift_remove("status");
                        }
                    }
                }
                merged
            }
            Scope::Main { status_reset } => {
                let mut n = new;
                if status_reset {
                    match existing.get("status") {
                        Some(s) => n["status"] = s.clone(),
                        None => {
                            if let Some(m) = n.as_object_mut() {
                                m.shift_remove("status");
                            }
                        }
                    }
                }
                n
            }
        };
        let md = meta_mut(&mut new);
        md.shift_remove("managedFields");
        for k in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "resourceVersion",
        ] {
            match existing.get("metadata").and_then(|m| m.get(k)) {
                Some(v) => {
                    md.insert(k.into(), v.clone());
                }
                None => {
                    md.shift_remove(k);
                }
            }
        }
        new["apiVersion"] = def.api_version().into();
        new["kind"] = def.kind.clone().into();
        new
    }

    /// Values the REST layer keeps from the stored object when a write omits them.
    fn keep_allocated(def: &ResourceDef, existing: &Value, new: &mut Value) {
        if def.crd.is_some() || def.plural != "services" {
            return;
        }
        let Some(old) = existing.get("spec").and_then(Value::as_object) else {
            return;
        };
        let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        for k in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if let (false, Some(v)) = (spec.contains_key(k), old.get(k)) {
                spec.insert(k.into(), v.clone());
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write_update(
        &mut self,
        def: &ResourceDef,
        existing: Value,
        new: Value,
        manager: &str,
        scope: Scope,
        override_managers: Option<Vec<Manager>>,
        dry: bool,
    ) -> Res {
        let mut new = Self::prepare_update(def, &existing, new, scope);
        defaults::apply(def, &mut new);
        Self::keep_allocated(def, &existing, &mut new);
        validate_labels(def, &new)?;
        if def.crd.is_none() && def.plural == "customresourcedefinitions" {
            let name = meta_str(&existing, "name").unwrap_or("").to_string();
            self.validate_crd(&new, &name)?;
            crd_status(&mut new);
        }
        let live = without_managed_fields(&existing);
        let base = override_managers.unwrap_or_else(|| ssa::decode_managers(&existing));
        let av = def.api_version();
        let managers = ssa::update(
            &live,
            &new,
            &base,
            manager,
            &Self::ctx(def, scope, &av),
            &now(),
        );
        self.finish_update(def, existing, new, managers, dry)
    }

    fn finish_update(
        &mut self,
        def: &ResourceDef,
        existing: Value,
        mut new: Value,
        managers: Vec<Manager>,
        dry: bool,
    ) -> Res {
        if def.generation || def.crd.is_some() {
            let strip = |v: &Value| {
                let mut c = v.clone();
                if let Some(m) = c.as_object_mut() {
                    m.shift_remove("metadata");
                    if def.status || def.crd.is_none() {
                        m.shift_remove("status");
                    }
                }
                if def.crd.is_none() {
                    c.get("spec").cloned().unwrap_or(Value::Null)
                } else {
                    c
                }
            };
            if strip(&existing) != strip(&new) {
                let g = meta(&existing)
                    .and_then(|m| m.get("generation"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                meta_mut(&mut new).insert("generation".into(), (g + 1).into());
            }
        }
        let md = meta_mut(&mut new);
        if managers.is_empty() {
            md.shift_remove("managedFields");
        } else {
            md.insert("managedFields".into(), ssa::encode_managers(&managers));
        }
        if new == existing {
            // No-op writes are not persisted and keep their resourceVersion.
            return ok(200, Self::present(def, &existing));
        }
        let ns = meta_str(&new, "namespace").unwrap_or("").to_string();
        let name = meta_str(&new, "name").unwrap_or("").to_string();
        let finalizers_done = meta(&new)
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_none_or(|f| f.is_empty());
        if !dry {
            let rv = self.bump();
            meta_mut(&mut new).insert("resourceVersion".into(), rv.into());
            if meta(&new).is_some_and(|m| m.contains_key("deletionTimestamp")) && finalizers_done {
                // The last finalizer is gone: the pending deletion completes.
                self.remove_with_cascade(def, &ns, &name);
            } else {
                self.put_obj(def, new.clone());
                if def.crd.is_none() && def.plural == "customresourcedefinitions" {
                    self.register_crd(&new);
                }
            }
        }
        ok(200, Self::present(def, &new))
    }

    fn patch(&mut self, c: &Call, dry: bool) -> Res {
        let name = c.name.clone().ok_or_else(ApiError::method_not_allowed)?;
        let ct = c
            .content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let accepted = if c.def.crd.is_some() {
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        } else {
            "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
        };
        if ct == "application/apply-patch+yaml" {
            return self.apply(c, &name, dry);
        }
        let kind = match ct.as_str() {
            "application/merge-patch+json" => 'm',
            "application/json-patch+json" => 'j',
            "application/strategic-merge-patch+json" if c.def.crd.is_none() => 's',
            _ => return Err(ApiError::unsupported_media_type(accepted)),
        };
        if c.query.get("force").is_some() {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                &[(
                    "force",
                    "FieldValueForbidden",
                    "Forbidden: may not be specified for non-apply patch".into(),
                )],
            ));
        }
        let ns = c.namespace.clone().unwrap_or_default();
        let existing = self
            .get_obj(&c.def, &ns, &name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&c.def.group, &c.def.plural, &name))?;
        let doc: Value = serde_json::from_slice(c.body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
        let presented = Self::present(&c.def, &existing);
        let patched = match kind {
            'm' => {
                if !doc.is_object() {
                    return Err(ApiError::bad_request("merge patch must be a JSON object"));
                }
                patch::merge_patch(&presented, &doc)
            }
            'j' => {
                patch::json_patch(&presented, &doc).map_err(|e| ApiError::new(422, "Invalid", e))?
            }
            _ => patch::strategic(&presented, &doc, &c.def.ty),
        };
        if !patched.is_object() {
            return Err(ApiError::bad_request("patched object is not a JSON object"));
        }
        if meta_str(&patched, "name").is_some_and(|n| n != name) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                meta_str(&patched, "name").unwrap_or("")
            )));
        }
        if let Some(rv) = meta_str(&patched, "resourceVersion").filter(|rv| !rv.is_empty()) {
            if Some(rv) != meta_str(&existing, "resourceVersion") {
                return Err(ApiError::stale(&c.def.group, &c.def.plural, &name));
            }
        }
        let mf_before = meta(&existing).and_then(|m| m.get("managedFields"));
        let mf_after = meta(&patched).and_then(|m| m.get("managedFields"));
        let override_managers = (mf_before != mf_after).then(|| ssa::decode_managers(&patched));
        let manager = Self::field_manager(c);
        let scope = scope_of(&c.def, c.subresource.as_deref());
        self.write_update(
            &c.def,
            existing,
            patched,
            &manager,
            scope,
            override_managers,
            dry,
        )
    }

    fn apply(&mut self, c: &Call, name: &str, dry: bool) -> Res {
        let Some(manager) = c.query.get("fieldManager").filter(|m| !m.is_empty()) else {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                &[(
                    "fieldManager",
                    "FieldValueRequired",
                    "Required value: is required for apply patch".into(),
                )],
            ));
        };
        let manager = manager.to_string();
        let force = match c.query.get("force") {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "invalid force value {other:?}"
                )))
            }
        };
        let mut config = parse_body(c.body, true)?;
        Self::check_type_meta(&c.def, &config)?;
        if meta(&config)
            .and_then(|m| m.get("managedFields"))
            .is_some_and(|v| !v.is_null())
        {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        match meta_str(&config, "name") {
            None | Some("") => {
                meta_mut(&mut config).insert("name".into(), name.into());
            }
            Some(_) => Self::check_name(&config, name)?,
        }
        let ns = Self::resolve_namespace(c, &mut config)?;
        let scope = scope_of(&c.def, c.subresource.as_deref());
        let av = c.def.api_version();
        let ctx = Self::ctx(&c.def, scope, &av);
        let def = c.def.clone();
        let existing = self
            .get_obj(&def, ns.as_deref().unwrap_or(""), name)
            .cloned();
        let Some(existing) = existing else {
            if scope == Scope::Status {
                return Err(ApiError::not_found(&def.group, &def.plural, name));
            }
            validate_name(&def, name)?;
            self.ensure_namespace(&def, ns.as_deref())?;
            let live = Self::skeleton(&def, ns.as_deref(), name);
            let (mut obj, mut managers) =
                ssa::apply(&live, &[], &config, &manager, force, &ctx).map_err(ssa_error)?;
            if def.status {
                if let Some(m) = obj.as_object_mut() {
                    m.shift_remove("status");
                }
            }
            defaults::apply(&def, &mut obj);
            validate_labels(&def, &obj)?;
            if def.crd.is_none() && def.plural == "customresourcedefinitions" {
                self.validate_crd(&obj, name)?;
            }
            let t = now();
            for m in &mut managers {
                m.time = Some(t.clone());
            }
            return self.finish_create(&def, obj, managers, dry);
        };
        // A resourceVersion in the applied config is a precondition, as for other writes.
        if let Some(rv) = meta_str(&config, "resourceVersion").filter(|rv| !rv.is_empty()) {
            if Some(rv) != meta_str(&existing, "resourceVersion") {
                return Err(ApiError::stale(&def.group, &def.plural, name));
            }
        }
        let live = without_managed_fields(&existing);
        let managers = ssa::decode_managers(&existing);
        let (merged, mut managers) =
            ssa::apply(&live, &managers, &config, &manager, force, &ctx).map_err(ssa_error)?;
        let mut new = Self::prepare_update(&def, &existing, merged, scope);
        defaults::apply(&def, &mut new);
        Self::keep_allocated(&def, &existing, &mut new);
        validate_labels(&def, &new)?;
        if def.crd.is_none() && def.plural == "customresourcedefinitions" {
            self.validate_crd(&new, name)?;
            crd_status(&mut new);
        }
        let changed = without_managed_fields(&new) != live;
        let sub = if scope == Scope::Status { "status" } else { "" };
        let t = now();
        for m in &mut managers {
            if m.operation == "Apply"
                && m.manager == manager
                && m.subresource == sub
                && (changed || m.time.is_none())
            {
                m.time = Some(t.clone());
            }
        }
        self.finish_update(&def, existing, new, managers, dry)
    }

    fn delete(&mut self, c: &Call, dry: bool) -> Res {
        if c.subresource.is_some() {
            return Err(ApiError::method_not_allowed());
        }
        let name = c.name.clone().unwrap_or_default();
        let ns = c.namespace.clone().unwrap_or_default();
        let existing = self
            .get_obj(&c.def, &ns, &name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&c.def.group, &c.def.plural, &name))?;
        if !c.body.is_empty() {
            let opts: Value = serde_json::from_slice(c.body)
                .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?;
            let pre = |k: &str| {
                opts.pointer(&format!("/preconditions/{k}"))
                    .and_then(Value::as_str)
            };
            if let Some(uid) = pre("uid") {
                let actual = meta_str(&existing, "uid").unwrap_or("");
                if uid != actual {
                    return Err(ApiError::conflict(&c.def.group, &c.def.plural, &name, &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}")));
                }
            }
            if let Some(rv) = pre("resourceVersion") {
                let actual = meta_str(&existing, "resourceVersion").unwrap_or("");
                if rv != actual {
                    return Err(ApiError::conflict(&c.def.group, &c.def.plural, &name, &format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}")));
                }
            }
        }
        let (code, body) = self.delete_one(&c.def, existing, dry);
        ok(code, body)
    }

    /// Deletes (or marks for deletion when finalizers remain) and returns what the API returns.
    fn delete_one(&mut self, def: &ResourceDef, existing: Value, dry: bool) -> (u16, Value) {
        let ns = meta_str(&existing, "namespace").unwrap_or("").to_string();
        let name = meta_str(&existing, "name").unwrap_or("").to_string();
        let has_finalizers = meta(&existing)
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if has_finalizers {
            let mut obj = existing.clone();
            if !meta(&obj).is_some_and(|m| m.contains_key("deletionTimestamp")) {
                let md = meta_mut(&mut obj);
                md.insert("deletionTimestamp".into(), now().into());
                md.insert("deletionGracePeriodSeconds".into(), 0.into());
                if !dry {
                    let rv = self.bump();
                    meta_mut(&mut obj).insert("resourceVersion".into(), rv.into());
                    self.put_obj(def, obj.clone());
                }
            }
            return (200, Self::present(def, &obj));
        }
        let builtin = def.crd.is_none();
        let returns_object = builtin
            && matches!(
                def.plural.as_str(),
                "namespaces"
                    | "pods"
                    | "serviceaccounts"
                    | "services"
                    | "customresourcedefinitions"
            );
        let mut shown = existing.clone();
        if builtin
            && matches!(
                def.plural.as_str(),
                "namespaces" | "customresourcedefinitions"
            )
        {
            // These go through a Terminating phase on a real server; we delete at once but
            // answer with the terminating object, as kube-apiserver does.
            meta_mut(&mut shown).insert("deletionTimestamp".into(), now().into());
            if def.plural == "namespaces" {
                shown["status"] = json!({"phase": "Terminating"});
            }
        }
        if !dry {
            let rv = self.bump();
            if returns_object {
                meta_mut(&mut shown).insert("resourceVersion".into(), rv.into());
            }
            self.remove_with_cascade(def, &ns, &name);
        }
        if returns_object {
            (200, Self::present(def, &shown))
        } else {
            let mut details = Map::new();
            details.insert("name".into(), name.into());
            if !def.group.is_empty() {
                details.insert("group".into(), def.group.clone().into());
            }
            details.insert("kind".into(), def.plural.clone().into());
            if let Some(uid) = meta_str(&existing, "uid") {
                details.insert("uid".into(), uid.into());
            }
            (
                200,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
            )
        }
    }

    fn remove_with_cascade(&mut self, def: &ResourceDef, ns: &str, name: &str) {
        self.remove_obj(def, ns, name);
        if def.crd.is_some() {
            return;
        }
        match def.plural.as_str() {
            "namespaces" => {
                let namespaced: Vec<(String, String)> = self
                    .defs
                    .iter()
                    .filter(|d| d.namespaced)
                    .map(ResourceDef::store_key)
                    .collect();
                for key in namespaced {
                    let mut gone = Vec::new();
                    if let Some(b) = self.objects.get_mut(&key) {
                        let doomed: Vec<ObjKey> =
                            b.keys().filter(|(ons, _)| ons == name).cloned().collect();
                        for k in doomed {
                            gone.extend(b.remove(&k));
                        }
                    }
                    for old in gone {
                        self.emit_deleted(key.clone(), old);
                    }
                }
            }
            "customresourcedefinitions" => self.unregister_crd(name),
            _ => {}
        }
    }

    fn delete_collection(&mut self, c: &Call, dry: bool) -> Res {
        if !c.def.verbs.iter().any(|v| v == "deletecollection") {
            return Err(ApiError::method_not_allowed());
        }
        let listed = self.list(c)?.body;
        let mut deleted = Vec::new();
        let mut items_md = listed["metadata"].clone();
        if let Some(m) = items_md.as_object_mut() {
            m.shift_remove("continue");
            m.shift_remove("remainingItemCount");
        }
        for item in listed["items"].as_array().cloned().unwrap_or_default() {
            let ns = meta_str(&item, "namespace").unwrap_or("").to_string();
            let name = meta_str(&item, "name").unwrap_or("").to_string();
            if let Some(existing) = self.get_obj(&c.def, &ns, &name).cloned() {
                let (_, _) = self.delete_one(&c.def, existing.clone(), dry);
                deleted.push(Self::present(&c.def, &existing));
            }
        }
        items_md["resourceVersion"] = self.rv.to_string().into();
        ok(
            200,
            json!({"kind": c.def.list_kind(), "apiVersion": c.def.api_version(), "metadata": items_md, "items": deleted}),
        )
    }

    fn validate_crd(&self, body: &Value, name: &str) -> Result<(), ApiError> {
        let s = |p: &str| body.pointer(p).and_then(Value::as_str).unwrap_or("");
        let group = s("/spec/group");
        let plural = s("/spec/names/plural");
        let mut causes: Vec<(&str, &str, String)> = Vec::new();
        if group.is_empty() {
            causes.push(("spec.group", "FieldValueRequired", "Required value".into()));
        }
        if plural.is_empty() {
            causes.push((
                "spec.names.plural",
                "FieldValueRequired",
                "Required value".into(),
            ));
        }
        if s("/spec/names/kind").is_empty() {
            causes.push((
                "spec.names.kind",
                "FieldValueRequired",
                "Required value".into(),
            ));
        }
        if !matches!(s("/spec/scope"), "Namespaced" | "Cluster") {
            causes.push((
                "spec.scope",
                "FieldValueNotSupported",
                format!(
                    "Unsupported value: {:?}: supported values: \"Cluster\", \"Namespaced\"",
                    s("/spec/scope")
                ),
            ));
        }
        let versions = body.pointer("/spec/versions").and_then(Value::as_array);
        let storage = versions
            .map(|vs| {
                vs.iter()
                    .filter(|v| v.get("storage") == Some(&json!(true)))
                    .count()
            })
            .unwrap_or(0);
        if versions.is_none_or(|v| v.is_empty()) {
            causes.push((
                "spec.versions",
                "FieldValueInvalid",
                "Invalid value: null: must have exactly one version marked as storage version"
                    .into(),
            ));
        } else if storage != 1 {
            causes.push((
                "spec.versions",
                "FieldValueInvalid",
                "Invalid value: must have exactly one version marked as storage version".into(),
            ));
        }
        if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
            causes.push((
                "metadata.name",
                "FieldValueInvalid",
                format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
            ));
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                name,
                &causes,
            ))
        }
    }

    fn register_crd(&mut self, crd: &Value) {
        let name = meta_str(crd, "name").unwrap_or("").to_string();
        self.defs
            .retain(|d| d.crd.as_deref() != Some(name.as_str()));
        let s = |p: &str| {
            crd.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let strs = |p: &str| -> Vec<String> {
            crd.pointer(p)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let group = s("/spec/group");
        let kind = s("/spec/names/kind");
        let plural = s("/spec/names/plural");
        // Built-in resources win over a CRD claiming the same names.
        if self
            .defs
            .iter()
            .any(|d| d.group == group && d.plural == plural)
        {
            return;
        }
        let mut singular = s("/spec/names/singular");
        if singular.is_empty() {
            singular = kind.to_lowercase();
        }
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for v in versions {
            if v.get("served") != Some(&json!(true)) {
                continue;
            }
            self.defs.push(ResourceDef {
                group: group.clone(),
                version: v
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                kind: kind.clone(),
                plural: plural.clone(),
                singular: singular.clone(),
                namespaced: s("/spec/scope") == "Namespaced",
                short_names: strs("/spec/names/shortNames"),
                categories: strs("/spec/names/categories"),
                verbs: [
                    "delete",
                    "deletecollection",
                    "get",
                    "list",
                    "patch",
                    "create",
                    "update",
                    "watch",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect(),
                status: v.pointer("/subresources/status").is_some(),
                generation: true,
                crd: Some(name.clone()),
                ty: schema::from_crd_schema(v.pointer("/schema/openAPIV3Schema")),
            });
        }
    }

    fn unregister_crd(&mut self, name: &str) {
        let keys: Vec<(String, String)> = self
            .defs
            .iter()
            .filter(|d| d.crd.as_deref() == Some(name))
            .map(ResourceDef::store_key)
            .collect();
        for k in keys {
            let gone = self.objects.remove(&k).unwrap_or_default();
            for (_, old) in gone {
                self.emit_deleted(k.clone(), old);
            }
        }
        self.defs.retain(|d| d.crd.as_deref() != Some(name));
    }
}

/// Server-set CRD status: names accepted, established, stored versions.
fn crd_status(body: &mut Value) {
    let t = now();
    let mut names = body.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if names.get("singular").is_none() {
        names["singular"] = kind.to_lowercase().into();
    }
    if names.get("listKind").is_none() {
        names["listKind"] = format!("{kind}List").into();
    }
    let storage: Vec<Value> = body
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage") == Some(&json!(true)))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let mut stored: Vec<Value> = body
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for s in storage {
        if !stored.contains(&s) {
            stored.push(s);
        }
    }
    let conditions = match body.pointer("/status/conditions") {
        Some(c @ Value::Array(_)) => c.clone(),
        _ => json!([
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": t, "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": t, "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
        ]),
    };
    body["status"] =
        json!({"conditions": conditions, "acceptedNames": names, "storedVersions": stored});
}

/// Job selector generation (manualSelector unset): labels keyed by the controller uid.
fn job_selector(body: &mut Value, uid: &str, name: &str) {
    if body.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return;
    }
    let Some(spec) = body.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if !spec.contains_key("selector") {
        spec.insert(
            "selector".into(),
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
        );
    }
    if let Some(t) = spec.get_mut("template").and_then(Value::as_object_mut) {
        let md = t.entry("metadata").or_insert_with(|| json!({}));
        if let Some(md) = md.as_object_mut() {
            let labels = md.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                for (k, v) in [
                    ("batch.kubernetes.io/controller-uid", uid),
                    ("batch.kubernetes.io/job-name", name),
                    ("controller-uid", uid),
                    ("job-name", name),
                ] {
                    l.entry(k).or_insert_with(|| v.into());
                }
            }
        }
    }
}

fn encode_continue(rv: u64, key: &ObjKey) -> String {
    let start = if key.0.is_empty() {
        format!("{}\u{0}", key.1)
    } else {
        format!("{}/{}\u{0}", key.0, key.1)
    };
    let doc = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start});
    base64::engine::general_purpose::URL_SAFE.encode(doc.to_string())
}

fn decode_continue(tok: &str) -> Option<ObjKey> {
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(tok)
        .or_else(|_| base64::engine::general_purpose::STANDARD.decode(tok))
        .ok()?;
    let doc: Value = serde_json::from_slice(&raw).ok()?;
    let start = doc.get("start")?.as_str()?.trim_end_matches('\u{0}');
    Some(match start.split_once('/') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (String::new(), start.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::qualified;

    #[test]
    fn continue_tokens_roundtrip() {
        let k = ("ns".to_string(), "name".to_string());
        assert_eq!(decode_continue(&encode_continue(5, &k)), Some(k));
        assert_eq!(decode_continue("garbage!"), None);
    }

    #[test]
    fn qualified_names() {
        assert_eq!(qualified("apps", "deployments"), "deployments.apps");
    }
}
