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
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

mod controllers;
mod crd;
mod create;
mod delete;
mod read;
mod update;
mod update_rules;
mod validation;
mod watch;

pub use controllers::Controllers;
use controllers::Work;
use crd::crd_status;
use update::scope_of;
use validation::{validate_labels, validate_name};
pub use watch::{Event, WatchStart};

type ObjKey = (String, String);

/// Decoded query parameters.
#[derive(Debug, Default, Clone)]
pub struct Query {
    pub pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses a query string as Go's `url.ParseQuery` does for kube-apiserver: a pair whose
    /// key or value has a malformed %-escape, or whose key contains `;`, is dropped (the
    /// request goes on without it), so `?continue=%%%garbage` lists everything.
    pub fn parse(raw: &str) -> Query {
        let decode = |s: &str| -> Option<String> {
            let bytes = s.as_bytes();
            let hex = |b: u8| (b as char).to_digit(16);
            let mut out = Vec::with_capacity(bytes.len());
            let mut i = 0;
            while i < bytes.len() {
                match bytes[i] {
                    b'+' => out.push(b' '),
                    b'%' => {
                        let h = bytes.get(i + 1).and_then(|b| hex(*b))?;
                        let l = bytes.get(i + 2).and_then(|b| hex(*b))?;
                        out.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    b => out.push(b),
                }
                i += 1;
            }
            Some(String::from_utf8_lossy(&out).into_owned())
        };
        let pairs = raw
            .split('&')
            .filter(|p| !p.is_empty())
            .filter_map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                if k.contains(';') {
                    return None;
                }
                Some((decode(k)?, decode(v)?))
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
    /// The answer goes out as the full JSON document (not `as=PartialObjectMetadata`), so a
    /// LIST may be written straight from the store ([`Reply::written`]).
    pub full_json: bool,
}

pub struct Reply {
    pub code: u16,
    pub body: Value,
    /// The body already written as JSON (a LIST written straight from the store, without
    /// copying its objects); `body` is then empty.
    pub written: Option<Vec<u8>>,
}

type Res = Result<Reply, ApiError>;

pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn ok(code: u16, body: Value) -> Res {
    Ok(Reply {
        code,
        body,
        written: None,
    })
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

pub struct State {
    pub defs: Vec<ResourceDef>,
    objects: BTreeMap<(String, String), BTreeMap<ObjKey, Value>>,
    rv: u64,
    next_ip: u32,
    next_node_port: u32,
    controllers: Controllers,
    /// Controller work waiting for its time, in no particular order.
    pending: Vec<(std::time::Instant, Work)>,
    events: tokio::sync::broadcast::Sender<Event>,
    history: std::collections::VecDeque<Event>,
}

impl State {
    pub fn new(controllers: Controllers) -> State {
        let mut s = State {
            defs: discovery::builtin_resources(),
            objects: BTreeMap::new(),
            rv: 100,
            next_ip: 2,
            next_node_port: 30000,
            // The built-in namespaces are set up already when a cluster is handed out.
            controllers: Controllers {
                setup_delay: std::time::Duration::ZERO,
                ..controllers
            },
            pending: Vec::new(),
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
        // The one bootstrap ClusterRole tenants' bindings commonly name (RBAC's bootstrap
        // policy); the aggregated `admin`, `edit` and `view` are not modelled.
        let cluster_admin = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "cluster-admin",
                         "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
                         "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                      {"nonResourceURLs": ["*"], "verbs": ["*"]}]
        });
        let _ = s.seed(cluster_admin, "kube-apiserver");
        s.controllers = controllers;
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
        let prev = self
            .objects
            .entry(def.store_key())
            .or_default()
            .insert((ns.clone(), name), v.clone());
        let kind = if prev.is_some() { "MODIFIED" } else { "ADDED" };
        self.emit(def.store_key(), ns, kind, v, prev);
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
}
