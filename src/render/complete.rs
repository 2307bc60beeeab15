//! Completing a rendered set with the cluster's view: what rendering offline cannot know.
//! Pure, like the rest of render; nothing is parsed again.

use super::{config_hash, duplicates, sort_for_apply, RenderError, Rendered};
use crate::kinds::copy_rule::copies::expand_rule;
use crate::kinds::view::ClusterView;
use crate::kinds::{owner_reference, TendObject};
use crate::object::{Object, ObjectKey};
use crate::problem::Problems;
use serde_json::json;
use std::collections::BTreeSet;

/// `rendered` (offline) completed with `view`:
/// - CopyRule copies are added (and duplicates checked again, since two rules may copy to
///   the same place), with each rule's outcome for its status;
/// - generated objects whose owner exists in the cluster get their ownerReference now, so
///   they have it from their first creation;
/// - config hashes are computed again where a reference was missing offline or points at a
///   copy, now that live config and copies are known.
///
/// Notes are those of the completed set: the offline ones that no longer hold (copies not
/// computed, config not read) are gone.
pub fn complete(rendered: Rendered, view: &ClusterView) -> Result<Rendered, RenderError> {
    let Rendered {
        mut objects,
        files,
        documents,
        skipped_by_targeting,
        tend,
        missing_config,
        random_charts,
        releases,
        helm_template,
        ..
    } = rendered;

    // Copies depend on the whole desired set: sources and namespaces in git, objects git
    // already defines where a copy would go.
    let mut copies = Vec::new();
    let mut copy_outcomes = Vec::new();
    for (object, origin) in &tend {
        if let TendObject::CopyRule(rule) = object {
            let (rule_copies, outcome) =
                expand_rule(rule, origin, &objects, &view.copies, &view.applyset_id);
            copies.extend(rule_copies);
            copy_outcomes.push(outcome);
        }
    }
    let mut changed_config: BTreeSet<ObjectKey> = missing_config;
    changed_config.extend(copies.iter().map(Object::key));
    // The render checked and sorted the rest (`finish`); only copies can add a duplicate or
    // an object out of order. Skipped otherwise: a fleet completes one render per cluster.
    let copied = !copies.is_empty();
    objects.extend(copies);
    let mut problems = if copied {
        duplicates(&objects)
    } else {
        Vec::new()
    };
    if !problems.is_empty() {
        problems.sort();
        problems.dedup();
        return Err(RenderError::Invalid(Problems(problems)));
    }

    for object in &mut objects {
        let (Some(owner), Some(meta)) = (
            &object.origin.generated_by,
            object
                .value
                .get_mut("metadata")
                .and_then(|m| m.as_object_mut()),
        ) else {
            continue;
        };
        if let Some(uid) = view.uids.get(owner) {
            meta.insert(
                "ownerReferences".into(),
                json!([owner_reference(owner, uid)]),
            );
        }
    }

    let (notes, missing_config) =
        config_hash::reannotate(&mut objects, &view.live_config, &changed_config);
    if copied {
        sort_for_apply(&mut objects);
    }
    Ok(Rendered {
        objects,
        notes,
        files,
        documents,
        skipped_by_targeting,
        tend,
        copy_outcomes,
        missing_config,
        random_charts,
        releases,
        helm_template,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{render, RenderOptions};
    use crate::source::SourceFile;
    use serde_json::Value;

    fn rendered(text: &str) -> Rendered {
        let files = [SourceFile {
            path: "site.yaml".into(),
            text: text.to_string(),
            unit: None,
        }];
        match render(&files, &RenderOptions::default()) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        }
    }

    const SITE: &str = "
apiVersion: tend.dev/v1alpha1
kind: CopyRule
metadata: {name: ca}
spec:
  kind: ConfigMap
  sourceNamespace: shared
  selector: {matchLabels: {copy: 'yes'}}
---
apiVersion: tend.dev/v1alpha1
kind: ImmortalContainer
metadata: {name: ic, namespace: web}
spec: {image: nginx}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: web}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers: [{name: c, image: x}]
      volumes: [{name: a, configMap: {name: ca}}, {name: b, secret: {secretName: live}}]
";

    fn view() -> ClusterView {
        let mut view = ClusterView::new("set-1", "tend-system");
        view.copies.namespaces = vec![
            json!({"metadata": {"name": "shared"}}),
            json!({"metadata": {"name": "web"}}),
        ];
        view.copies.sources.insert(
            "ca".into(),
            vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "ca", "namespace": "shared", "labels": {"copy": "yes"}},
                "data": {"ca.crt": "PEM"}})],
        );
        view.uids.insert(
            ObjectKey::new(crate::GROUP, "ImmortalContainer", Some("web"), "ic"),
            "u-ic".into(),
        );
        view.live_config.insert(
            ObjectKey::new("", "Secret", Some("web"), "live"),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "live", "namespace": "web"},
                "data": {"k": "dg=="}}),
        );
        view
    }

    fn find<'a>(r: &'a Rendered, key: &str) -> &'a Object {
        r.objects
            .iter()
            .find(|o| o.key().to_string() == key)
            .unwrap_or_else(|| panic!("no {key}"))
    }

    fn hash(r: &Rendered) -> Value {
        find(r, "apps/Deployment web/app").value["spec"]["template"]["metadata"]["annotations"]
            ["tend.dev/config-hash"]
            .clone()
    }

    #[test]
    fn copies_owners_and_hashes_are_completed() {
        let offline = rendered(SITE);
        assert_eq!(offline.notes.len(), 3, "{:?}", offline.notes);
        let offline_hash = hash(&offline);
        let online = match complete(offline, &view()) {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        assert!(online.notes.is_empty(), "{:?}", online.notes);
        assert!(online.missing_config.is_empty());
        let copy = find(&online, "ConfigMap web/ca");
        assert_eq!(copy.value["data"]["ca.crt"], "PEM");
        assert_eq!(online.copy_outcomes[0].copies, 1);
        assert_ne!(
            hash(&online),
            offline_hash,
            "the copy and the live secret count"
        );
        let pod = find(&online, "Pod web/ic-immortalpod");
        assert_eq!(
            pod.value["metadata"]["ownerReferences"][0]["uid"], "u-ic",
            "owned from its first creation"
        );
        assert!(copy.value["metadata"].get("ownerReferences").is_none());
        let keys: Vec<_> = online.objects.iter().map(Object::key).collect();
        let mut sorted = online.objects.clone();
        sort_for_apply(&mut sorted);
        assert_eq!(keys, sorted.iter().map(Object::key).collect::<Vec<_>>());
    }

    #[test]
    fn copies_onto_each_other_are_duplicates() {
        let twice = format!(
            "{SITE}---\n{}",
            SITE.split("---")
                .next()
                .unwrap_or_default()
                .replace("name: ca}", "name: ca2}")
        );
        let mut view = view();
        let sources = view.copies.sources["ca"].clone();
        view.copies.sources.insert("ca2".into(), sources);
        let err = complete(rendered(&twice), &view).expect_err("duplicate copies");
        assert!(
            err.to_string()
                .contains("duplicate object ConfigMap web/ca (generated by CopyRule ca2)"),
            "{err}"
        );
    }
}
