//! What a run's pre-apply hooks need of the objects it creates: the Namespaces they run in,
//! created just before them (as `helm install --create-namespace` does), and the objects
//! their pods refer to, which must come from an earlier wave (README "Waves and hooks").

use super::hooks::Hook;
use super::prepare::Prepared;
use crate::object::ObjectKey;
use crate::plan::planner::Plan;
use crate::plan::Action;
use crate::render::waves::{self, Phase};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The desired Namespaces, by name, that pre-apply hooks run in and that this run creates
/// (the plan says Create: missing from the cluster). Only the site's own Namespaces: tend
/// never makes up one the site does not declare.
pub fn namespaces_to_create<'p>(
    hooks: &[Hook],
    prepared: &'p [Prepared],
    plan: &Plan,
) -> BTreeMap<String, &'p Prepared> {
    let needed: BTreeSet<String> = hooks
        .iter()
        .filter(|h| h.phase == Phase::PreApply)
        .filter_map(|h| h.key().namespace)
        .collect();
    let created: BTreeSet<&ObjectKey> = plan
        .changes
        .iter()
        .filter(|c| c.action == Action::Create && !plan.errors.contains_key(&c.key))
        .map(|c| &c.key)
        .collect();
    prepared
        .iter()
        .filter(|p| p.object.kind() == "Namespace" && p.object.api_version() == "v1")
        .filter(|p| created.contains(&p.key))
        .filter_map(|p| {
            let name = p.key.clone().name;
            needed.contains(&name).then_some((name, p))
        })
        .collect()
}

/// One problem per pre-apply hook whose pod refers to objects of this run (its
/// ServiceAccount, ConfigMaps, Secrets, claims) that the run creates only after the hook:
/// in its wave or a later one. Its pod could not start until --timeout; the problem names
/// them and the way out. Objects already on the cluster, and optional references, are fine.
pub fn unmet_needs(hooks: &[Hook], prepared: &[Prepared], plan: &Plan) -> Vec<String> {
    let created: BTreeSet<&ObjectKey> = plan
        .changes
        .iter()
        .filter(|c| c.action == Action::Create)
        .map(|c| &c.key)
        .collect();
    let waves: BTreeMap<ObjectKey, i64> = prepared
        .iter()
        .filter(|p| created.contains(&p.key))
        .map(|p| (p.key.clone(), waves::wave_of(&p.object.value)))
        .collect();
    let mut out = Vec::new();
    for hook in hooks.iter().filter(|h| h.phase == Phase::PreApply) {
        let Some(namespace) = hook.key().namespace else {
            continue;
        };
        let late: BTreeSet<String> = pod_refs(&hook.prepared.object.value)
            .into_iter()
            .filter_map(|(kind, name)| {
                let key = ObjectKey {
                    group: String::new(),
                    kind: kind.into(),
                    namespace: Some(namespace.clone()),
                    name,
                };
                let wave = *waves.get(&key)?;
                (wave >= hook.wave).then(|| format!("{} (wave {wave})", key.kind_and_name()))
            })
            .collect();
        if !late.is_empty() {
            out.push(format!(
                "pre-apply hook {} (wave {}) needs {}, which this run creates only after the hook runs; put them in an earlier wave than the hook (tend.dev/wave), so they exist when it starts",
                hook.key().kind_and_name(),
                hook.wave,
                late.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    out
}

/// The objects of its namespace a Job's or Pod's pod needs to start, as (kind, name):
/// its ServiceAccount, image pull Secrets, the ConfigMaps and Secrets of its environment
/// and volumes (unless optional), and its claims.
fn pod_refs(object: &Value) -> Vec<(&'static str, String)> {
    let spec = object
        .pointer("/spec/template/spec")
        .or_else(|| object.pointer("/spec"));
    let Some(spec) = spec else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut add = |kind: &'static str, item: Option<&Value>, field: &str| {
        let Some(item) = item else {
            return;
        };
        let optional = item.get("optional").and_then(Value::as_bool) == Some(true);
        if let Some(name) = item
            .get(field)
            .and_then(Value::as_str)
            .filter(|_| !optional)
        {
            out.push((kind, name.to_string()));
        }
    };
    for field in ["serviceAccountName", "serviceAccount"] {
        add("ServiceAccount", Some(spec), field);
    }
    let list = |v: &Value, key: &str| -> Vec<Value> {
        v.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for secret in list(spec, "imagePullSecrets") {
        add("Secret", Some(&secret), "name");
    }
    let containers = [list(spec, "containers"), list(spec, "initContainers")].concat();
    for container in &containers {
        for from in list(container, "envFrom") {
            add("ConfigMap", from.get("configMapRef"), "name");
            add("Secret", from.get("secretRef"), "name");
        }
        for env in list(container, "env") {
            let from = env.get("valueFrom");
            add(
                "ConfigMap",
                from.and_then(|f| f.get("configMapKeyRef")),
                "name",
            );
            add("Secret", from.and_then(|f| f.get("secretKeyRef")), "name");
        }
    }
    for volume in list(spec, "volumes") {
        add("ConfigMap", volume.get("configMap"), "name");
        add("Secret", volume.get("secret"), "secretName");
        let claim = volume.get("persistentVolumeClaim");
        add("PersistentVolumeClaim", claim, "claimName");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Object;
    use serde_json::json;

    fn prepared(value: Value) -> Prepared {
        let origin = crate::object::Origin {
            file: "site.yaml".into(),
            line: 1,
            generated_by: None,
            sealed: Vec::new(),
        };
        Prepared::new(Object::new(value, origin), None)
    }

    fn namespace(name: &str) -> Prepared {
        prepared(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
    }

    fn hook(ns: &str, phase: Phase) -> Hook {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "migrate", "namespace": ns}});
        Hook {
            prepared: prepared(job),
            phase,
            wave: 0,
        }
    }

    fn change(ns: &Prepared, action: Action) -> crate::plan::Change {
        crate::plan::Change {
            key: ns.key.clone(),
            api_version: "v1".into(),
            action,
            origin: None,
            before: None,
            after: None,
            reason: None,
            drift: Vec::new(),
        }
    }

    #[test]
    fn only_missing_namespaces_of_the_site_that_pre_apply_hooks_run_in_are_created_first() {
        let site = vec![
            namespace("shop"),
            namespace("other"),
            namespace("kept"),
            namespace("late"),
        ];
        let hooks = [
            hook("shop", Phase::PreApply),
            hook("kept", Phase::PreApply),
            hook("made-up", Phase::PreApply),
            hook("late", Phase::PostApply),
        ];
        let mut plan = Plan {
            changes: vec![
                change(&site[0], Action::Create),
                change(&site[1], Action::Create),
                change(&site[2], Action::Unchanged),
                change(&site[3], Action::Create),
            ],
            ..Plan::default()
        };
        let created = namespaces_to_create(&hooks, &site, &plan);
        assert_eq!(created.keys().collect::<Vec<_>>(), ["shop"]);
        // A Namespace the plan could not dry-run is not created early either.
        plan.errors.insert(site[0].object.key(), "refused".into());
        assert!(namespaces_to_create(&hooks, &site, &plan).is_empty());
    }

    #[test]
    fn objects_a_hook_needs_must_come_from_an_earlier_wave() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "migrate", "namespace": "shop"},
            "spec": {"template": {"spec": {
                "serviceAccountName": "migrator",
                "containers": [{"name": "m", "envFrom": [{"configMapRef": {"name": "config"}}],
                    "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "p"}}}]}],
                "volumes": [{"name": "v", "secret": {"secretName": "maybe", "optional": true}}]}}}});
        let hooks = [Hook {
            prepared: prepared(job),
            phase: Phase::PreApply,
            wave: 0,
        }];
        let object = |kind: &str, name: &str, wave: &str| {
            prepared(
                json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name,
                "namespace": "shop", "annotations": {"tend.dev/wave": wave}}}),
            )
        };
        let site = vec![
            object("ServiceAccount", "migrator", "-1"),
            object("ConfigMap", "config", "0"),
            object("Secret", "db", "1"),
            object("Secret", "maybe", "0"),
        ];
        let mut plan = Plan {
            changes: site.iter().map(|p| change(p, Action::Create)).collect(),
            ..Plan::default()
        };
        let problems = unmet_needs(&hooks, &site, &plan);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("pre-apply hook Job shop/migrate (wave 0) needs ConfigMap shop/config (wave 0), Secret shop/db (wave 1), which this run creates only after the hook runs"),
            "{problems:?}"
        );
        // Objects already on the cluster are fine whatever their wave.
        plan.changes = site.iter().map(|p| change(p, Action::Update)).collect();
        assert!(unmet_needs(&hooks, &site, &plan).is_empty());
    }
}
