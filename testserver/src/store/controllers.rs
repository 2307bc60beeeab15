//! What kube-controller-manager and two admission plugins do around namespaces, which tend
//! meets on every real cluster: the `default` ServiceAccount and `kube-root-ca.crt`
//! ConfigMap appear in each new namespace a moment after it is created; the
//! ServiceAccount admission plugin refuses Pods until their ServiceAccount exists;
//! NamespaceLifecycle refuses creates in a Terminating namespace; the namespace controller
//! empties a deleted namespace before it goes.

use super::*;
use std::time::{Duration, Instant};

/// How the simulated controllers behave (see `TestClusterOptions`).
#[derive(Debug, Clone, Copy)]
pub struct Controllers {
    pub enabled: bool,
    /// Delay before a new namespace gets its ServiceAccount and CA ConfigMap; zero: in the
    /// namespace's own create.
    pub setup_delay: Duration,
    /// Delay between namespace controller passes over a Terminating namespace; zero: the
    /// DELETE removes the namespace and its contents at once.
    pub cleanup_delay: Duration,
}

/// Queued controller work.
#[derive(Debug, Clone)]
pub(super) enum Work {
    /// Create the default ServiceAccount and CA ConfigMap in the namespace with this uid.
    Setup { namespace: String, uid: String },
    /// Delete a Terminating namespace's contents, then the namespace once it is empty.
    Cleanup { namespace: String },
}

const CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

fn terminating(ns: &Value) -> bool {
    ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
        || meta(ns).is_some_and(|m| m.contains_key("deletionTimestamp"))
}

impl State {
    /// Whether a deleted namespace stays Terminating until the namespace controller has
    /// emptied it (else the DELETE removes it and its contents at once).
    pub(super) fn namespaces_terminate(&self) -> bool {
        self.controllers.enabled && !self.controllers.cleanup_delay.is_zero()
    }

    /// When the next queued controller work is due.
    pub fn next_controller_due(&self) -> Option<Instant> {
        self.pending.iter().map(|(at, _)| *at).min()
    }

    /// Runs the controller work due at `now`.
    pub fn run_controllers(&mut self, now: Instant) {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.pending = later;
        for (_, work) in due {
            match work {
                Work::Setup { namespace, uid } => self.setup_namespace(&namespace, &uid),
                Work::Cleanup { namespace } => self.cleanup_namespace(&namespace),
            }
        }
    }

    fn namespace_object(&self, ns: &str) -> Option<&Value> {
        let nsdef = &self.defs[0];
        self.get_obj(nsdef, "", ns)
    }

    /// A namespace was stored: queue (or, without a delay, do) the ServiceAccount and
    /// root-CA controllers' work.
    pub(super) fn namespace_created(&mut self, namespace: &str, uid: &str) {
        if !self.controllers.enabled {
            return;
        }
        if self.controllers.setup_delay.is_zero() {
            self.setup_namespace(namespace, uid);
        } else {
            let at = Instant::now() + self.controllers.setup_delay;
            self.pending.push((
                at,
                Work::Setup {
                    namespace: namespace.to_string(),
                    uid: uid.to_string(),
                },
            ));
        }
    }

    fn setup_namespace(&mut self, namespace: &str, uid: &str) {
        // The namespace may have gone (or been recreated) in the meantime.
        match self.namespace_object(namespace) {
            Some(ns) if meta_str(ns, "uid") == Some(uid) && !terminating(ns) => {}
            _ => return,
        }
        // Either may exist already (someone applied a ServiceAccount named default): then
        // the controller has nothing to do.
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                        "metadata": {"name": "default", "namespace": namespace}});
        let _ = self.seed(sa, "kube-controller-manager");
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kube-root-ca.crt", "namespace": namespace,
                         "annotations": {"kubernetes.io/description": CA_DESCRIPTION}},
            "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\ntend-testserver\n-----END CERTIFICATE-----\n"}});
        let _ = self.seed(cm, "kube-controller-manager");
    }

    /// Admission on every create, dry-run included (seeding skips it): NamespaceLifecycle
    /// refuses new objects in a Terminating namespace, and the ServiceAccount plugin
    /// refuses a Pod whose ServiceAccount does not exist (yet).
    pub(super) fn admit_create(
        &self,
        def: &ResourceDef,
        ns: Option<&str>,
        name: &str,
        body: &Value,
    ) -> Result<(), ApiError> {
        let Some(ns) = ns.filter(|_| def.namespaced) else {
            return Ok(());
        };
        if self.namespace_object(ns).is_some_and(terminating) {
            let mut err = ApiError::forbidden(
                &def.group,
                &def.plural,
                name,
                &format!(
                    "unable to create new content in namespace {ns} because it is being terminated"
                ),
            );
            if let Some(d) = err.details.as_mut() {
                d["causes"] = json!([{"reason": "NamespaceTerminating",
                    "message": format!("namespace {ns} is being terminated"),
                    "field": "metadata.namespace"}]);
            }
            return Err(err);
        }
        if !self.controllers.enabled || def.crd.is_some() || def.plural != "pods" {
            return Ok(());
        }
        let named = |p: &str| {
            body.pointer(p)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let sa = named("/spec/serviceAccountName")
            .or_else(|| named("/spec/serviceAccount"))
            .unwrap_or("default");
        let sadef = self
            .defs
            .iter()
            .find(|d| d.crd.is_none() && d.plural == "serviceaccounts");
        if sadef.is_some_and(|d| self.get_obj(d, ns, sa).is_none()) {
            return Err(ApiError::forbidden(
                &def.group,
                &def.plural,
                name,
                &format!(
                    "error looking up service account {ns}/{sa}: serviceaccount {sa:?} not found"
                ),
            ));
        }
        Ok(())
    }

    /// DELETE of a namespace while the namespace controller runs with a delay: the
    /// namespace turns Terminating (deletionTimestamp, `status.phase`) and stays until the
    /// controller has emptied it.
    pub(super) fn terminate_namespace(
        &mut self,
        def: &ResourceDef,
        existing: Value,
        dry: bool,
    ) -> (u16, Value) {
        if terminating(&existing) {
            return (200, Self::present(def, &existing));
        }
        let mut obj = existing;
        meta_mut(&mut obj).insert("deletionTimestamp".into(), now().into());
        obj["status"]["phase"] = "Terminating".into();
        if !dry {
            let rv = self.bump();
            meta_mut(&mut obj).insert("resourceVersion".into(), rv.into());
            self.put_obj(def, obj.clone());
            let name = meta_str(&obj, "name").unwrap_or("").to_string();
            self.pending.push((
                Instant::now() + self.controllers.cleanup_delay,
                Work::Cleanup { namespace: name },
            ));
        }
        (200, Self::present(def, &obj))
    }

    /// One namespace controller pass: delete everything in the namespace (objects with
    /// finalizers are marked and waited for); once it is empty, the namespace goes.
    fn cleanup_namespace(&mut self, namespace: &str) {
        if !self.namespace_object(namespace).is_some_and(terminating) {
            return;
        }
        let mut keys: Vec<(String, String)> = Vec::new();
        let mut defs: Vec<ResourceDef> = Vec::new();
        for d in self.defs.iter().filter(|d| d.namespaced) {
            if !keys.contains(&d.store_key()) {
                keys.push(d.store_key());
                defs.push(d.clone());
            }
        }
        let mut remaining = 0;
        for def in &defs {
            let inside: Vec<Value> = self
                .bucket(def)
                .map(|b| {
                    b.iter()
                        .filter(|((ns, _), _)| ns == namespace)
                        .map(|(_, v)| v.clone())
                        .collect()
                })
                .unwrap_or_default();
            for obj in inside {
                let held = meta(&obj)
                    .and_then(|m| m.get("finalizers"))
                    .and_then(Value::as_array)
                    .is_some_and(|f| !f.is_empty());
                remaining += usize::from(held);
                if !(held && meta(&obj).is_some_and(|m| m.contains_key("deletionTimestamp"))) {
                    self.delete_one(def, obj, false);
                }
            }
        }
        let finalizers = self
            .namespace_object(namespace)
            .and_then(|n| {
                meta(n)?
                    .get("finalizers")?
                    .as_array()
                    .map(|f| !f.is_empty())
            })
            .unwrap_or(false);
        if remaining > 0 || finalizers {
            self.pending.push((
                Instant::now() + self.controllers.cleanup_delay,
                Work::Cleanup {
                    namespace: namespace.to_string(),
                },
            ));
            return;
        }
        let nsdef = self.defs[0].clone();
        self.bump();
        self.remove_obj(&nsdef, "", namespace);
    }
}
