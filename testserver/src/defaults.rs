//! A representative set of kube-apiserver defaulting (SetDefaults_* functions), so clients
//! see and diff against the same server-filled fields as on a real cluster.

use crate::discovery::ResourceDef;
use crate::schema;
use base64::Engine;
use serde_json::{json, Map, Value};

fn obj(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.as_object_mut()
}

/// Sets `key` to `value` when absent.
fn set_default(m: &mut Map<String, Value>, key: &str, value: Value) {
    if !m.contains_key(key) || m[key].is_null() {
        m.insert(key.to_string(), value);
    }
}

fn child<'a>(m: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// Applies defaults for built-in kinds (custom resources use their schema defaults).
pub fn apply(def: &ResourceDef, v: &mut Value) {
    if def.crd.is_some() {
        schema::default_and_prune(v, &def.ty);
        return;
    }
    schema::fill_value_structs(v, &def.ty);
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(o) = obj(v) else { return };
    match def.kind.as_str() {
        "Secret" => {
            set_default(o, "type", json!("Opaque"));
            // stringData is write-only: merged into data (base64) and dropped.
            if let Some(Value::Object(sd)) = o.shift_remove("stringData") {
                let data = o.entry("data").or_insert_with(|| json!({}));
                if let Some(d) = data.as_object_mut() {
                    for (k, v) in sd {
                        let raw = v.as_str().unwrap_or("").as_bytes().to_vec();
                        d.insert(
                            k,
                            base64::engine::general_purpose::STANDARD.encode(raw).into(),
                        );
                    }
                }
            }
        }
        "Namespace" => {
            if let Some(md) = child(o, "metadata") {
                let labels = md.entry("labels").or_insert_with(|| json!({}));
                if let Some(l) = labels.as_object_mut() {
                    // Always re-set: the label cannot be changed or removed.
                    l.insert("kubernetes.io/metadata.name".into(), json!(name));
                }
            }
            if let Some(spec) = child(o, "spec") {
                set_default(spec, "finalizers", json!(["kubernetes"]));
            }
            if let Some(status) = child(o, "status") {
                set_default(status, "phase", json!("Active"));
            }
        }
        "Service" => {
            if let Some(spec) = child(o, "spec") {
                service_spec(spec);
            }
        }
        "Pod" => {
            if let Some(spec) = child(o, "spec") {
                pod_spec(spec);
                set_default(spec, "enableServiceLinks", json!(true));
                set_default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
                set_default(spec, "priority", json!(0));
                set_default(spec, "serviceAccountName", json!("default"));
                set_default(spec, "serviceAccount", json!("default"));
            }
            if let Some(status) = child(o, "status") {
                set_default(status, "phase", json!("Pending"));
                set_default(status, "qosClass", json!("BestEffort"));
            }
        }
        "Deployment" => {
            if let Some(spec) = child(o, "spec") {
                set_default(spec, "replicas", json!(1));
                set_default(spec, "revisionHistoryLimit", json!(10));
                set_default(spec, "progressDeadlineSeconds", json!(600));
                if let Some(st) = child(spec, "strategy") {
                    set_default(st, "type", json!("RollingUpdate"));
                    if st.get("type") == Some(&json!("RollingUpdate")) {
                        let ru = st.entry("rollingUpdate").or_insert_with(|| json!({}));
                        if let Some(ru) = ru.as_object_mut() {
                            set_default(ru, "maxUnavailable", json!("25%"));
                            set_default(ru, "maxSurge", json!("25%"));
                        }
                    }
                }
                template(spec);
            }
        }
        "StatefulSet" => {
            if let Some(spec) = child(o, "spec") {
                set_default(spec, "replicas", json!(1));
                set_default(spec, "podManagementPolicy", json!("OrderedReady"));
                set_default(spec, "revisionHistoryLimit", json!(10));
                set_default(
                    spec,
                    "persistentVolumeClaimRetentionPolicy",
                    json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
                );
                if let Some(us) = child(spec, "updateStrategy") {
                    set_default(us, "type", json!("RollingUpdate"));
                    if us.get("type") == Some(&json!("RollingUpdate")) {
                        let ru = us.entry("rollingUpdate").or_insert_with(|| json!({}));
                        if let Some(ru) = ru.as_object_mut() {
                            set_default(ru, "partition", json!(0));
                        }
                    }
                }
                if let Some(Value::Array(vcts)) = spec.get_mut("volumeClaimTemplates") {
                    for vct in vcts.iter_mut().filter_map(Value::as_object_mut) {
                        set_default(vct, "apiVersion", json!("v1"));
                        set_default(vct, "kind", json!("PersistentVolumeClaim"));
                        if let Some(s) = child(vct, "spec") {
                            set_default(s, "volumeMode", json!("Filesystem"));
                        }
                        set_default(vct, "status", json!({"phase": "Pending"}));
                    }
                }
                template(spec);
            }
        }
        "DaemonSet" => {
            if let Some(spec) = child(o, "spec") {
                set_default(spec, "revisionHistoryLimit", json!(10));
                if let Some(us) = child(spec, "updateStrategy") {
                    set_default(us, "type", json!("RollingUpdate"));
                    if us.get("type") == Some(&json!("RollingUpdate")) {
                        let ru = us.entry("rollingUpdate").or_insert_with(|| json!({}));
                        if let Some(ru) = ru.as_object_mut() {
                            set_default(ru, "maxUnavailable", json!(1));
                            set_default(ru, "maxSurge", json!(0));
                        }
                    }
                }
                template(spec);
            }
        }
        "ReplicaSet" => {
            if let Some(spec) = child(o, "spec") {
                set_default(spec, "replicas", json!(1));
                template(spec);
            }
        }
        "Job" => {
            if let Some(spec) = child(o, "spec") {
                job_spec(spec);
            }
        }
        "CronJob" => {
            if let Some(spec) = child(o, "spec") {
                set_default(spec, "concurrencyPolicy", json!("Allow"));
                set_default(spec, "suspend", json!(false));
                set_default(spec, "successfulJobsHistoryLimit", json!(3));
                set_default(spec, "failedJobsHistoryLimit", json!(1));
                if let Some(jt) = child(spec, "jobTemplate") {
                    if let Some(js) = child(jt, "spec") {
                        job_spec(js);
                    }
                }
            }
        }
        "PersistentVolumeClaim" => {
            if let Some(spec) = child(o, "spec") {
                set_default(spec, "volumeMode", json!("Filesystem"));
            }
            if let Some(status) = child(o, "status") {
                set_default(status, "phase", json!("Pending"));
            }
        }
        "RoleBinding" | "ClusterRoleBinding" => {
            if let Some(Value::Array(subjects)) = o.get_mut("subjects") {
                for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
                    let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
                    if matches!(kind, "User" | "Group") {
                        set_default(s, "apiGroup", json!("rbac.authorization.k8s.io"));
                    }
                }
            }
        }
        "CustomResourceDefinition" => {
            if let Some(spec) = child(o, "spec") {
                set_default(spec, "conversion", json!({"strategy": "None"}));
                if let Some(names) = child(spec, "names") {
                    let kind = names
                        .get("kind")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    set_default(names, "singular", json!(kind.to_lowercase()));
                    set_default(names, "listKind", json!(format!("{kind}List")));
                }
            }
        }
        _ => {}
    }
}

fn job_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "backoffLimit", json!(6));
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    set_default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    if !spec.contains_key("completions") && !spec.contains_key("parallelism") {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    set_default(spec, "parallelism", json!(1));
    if let Some(t) = child(spec, "template") {
        if let Some(ps) = child(t, "spec") {
            pod_spec(ps);
        }
    }
}

fn template(spec: &mut Map<String, Value>) {
    if let Some(t) = child(spec, "template") {
        if let Some(ps) = child(t, "spec") {
            pod_spec(ps);
        }
    }
}

fn service_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if ty != "ExternalName" {
        set_default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "NodePort" || ty == "LoadBalancer" {
        set_default(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        set_default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(p, "protocol", json!("TCP"));
            if let Some(port) = p.get("port").cloned() {
                set_default(p, "targetPort", port);
            }
        }
    }
}

pub fn pod_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    for key in ["containers", "initContainers"] {
        if let Some(Value::Array(cs)) = spec.get_mut(key) {
            for c in cs.iter_mut().filter_map(Value::as_object_mut) {
                container(c);
            }
        }
    }
    if let Some(Value::Array(vols)) = spec.get_mut("volumes") {
        for v in vols.iter_mut().filter_map(Value::as_object_mut) {
            for src in ["configMap", "secret"] {
                if let Some(s) = child(v, src) {
                    set_default(s, "defaultMode", json!(420));
                }
            }
        }
    }
}

fn probe(p: &mut Map<String, Value>) {
    set_default(p, "timeoutSeconds", json!(1));
    set_default(p, "periodSeconds", json!(10));
    set_default(p, "successThreshold", json!(1));
    set_default(p, "failureThreshold", json!(3));
    if let Some(h) = child(p, "httpGet") {
        set_default(h, "path", json!("/"));
        set_default(h, "scheme", json!("HTTP"));
    }
}

fn container(c: &mut Map<String, Value>) {
    let image = c
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    // The tag is what follows the last ':' after the last '/', unless pinned by digest.
    let last = image.rsplit('/').next().unwrap_or("");
    let tag = last.split_once(':').map(|(_, t)| t);
    let policy = if image.contains('@') {
        "IfNotPresent"
    } else if tag.is_none() || tag == Some("latest") {
        "Always"
    } else {
        "IfNotPresent"
    };
    set_default(c, "imagePullPolicy", json!(policy));
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    set_default(c, "resources", json!({}));
    if let Some(Value::Array(ports)) = c.get_mut("ports") {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(p, "protocol", json!("TCP"));
        }
    }
    for pk in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = child(c, pk) {
            probe(p);
        }
    }
    if let Some(Value::Array(env)) = c.get_mut("env") {
        for e in env.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(vf) = child(e, "valueFrom") {
                if let Some(fr) = child(vf, "fieldRef") {
                    set_default(fr, "apiVersion", json!("v1"));
                }
            }
        }
    }
}
