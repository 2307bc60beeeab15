//! `tend status`: what the last run of each ApplySet did on each cluster, read from the
//! ApplySet parents alone (one LIST per cluster, no discovery), every cluster at once.

use crate::cluster::Access;
use crate::plan::inventory;
use crate::report::status::{ApplySetStatus, ClusterStatus};
use crate::run::KubeconfigSecret;
use crate::source::units::KubeConfigRef;
use crate::Error;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The clusters to read and where tend keeps its state there.
#[derive(Debug, Clone)]
pub struct StatusOptions {
    /// Each cluster's name and how it is reached.
    pub clusters: Vec<(String, Access, Option<KubeconfigSecret>)>,
    pub state_namespace: String,
}

/// Read every cluster's parents, and after each hub its spokes' (the kubeconfig Secrets its
/// last apply recorded, read from the hub as a run reads them), named as a run names them.
pub fn status(opts: &StatusOptions) -> Result<Vec<ClusterStatus>, Error> {
    let several = opts.clusters.len() > 1;
    let reads = opts
        .clusters
        .iter()
        .map(|(name, access, secret)| async move {
            let namespace = &opts.state_namespace;
            let parents = read(access.clone(), secret.clone(), namespace).await;
            // A spoke's kubeconfig is read from a cluster tend reaches directly (as a run does).
            let spokes = match (&parents, secret) {
                (Ok(parents), None) => recorded_spokes(parents),
                _ => Vec::new(),
            };
            let spoke_reads = spokes.into_iter().map(|target| async move {
                let secret = KubeconfigSecret {
                    hub: access.clone(),
                    namespace: target.namespace.clone(),
                    name: target.name.clone(),
                    keys: target.keys(),
                };
                let mut spoke_access = access.clone();
                spoke_access.context = None;
                spoke_access.kubeconfig = None;
                ClusterStatus {
                    name: match several {
                        true => format!("{name}/{target}"),
                        false => target.to_string(),
                    },
                    applysets: read(spoke_access, Some(secret), namespace)
                        .await
                        .map(|parents| parents.iter().filter_map(of_parent).collect())
                        .map_err(|err| err.to_string()),
                }
            });
            let spokes = futures::future::join_all(spoke_reads).await;
            let hub = ClusterStatus {
                name: name.clone(),
                applysets: parents
                    .map(|parents| parents.iter().filter_map(of_parent).collect())
                    .map_err(|err| err.to_string()),
            };
            std::iter::once(hub).chain(spokes).collect::<Vec<_>>()
        });
    let read = crate::run::block_on(futures::future::join_all(reads))?;
    Ok(read.into_iter().flatten().collect())
}

async fn read(
    access: Access,
    secret: Option<KubeconfigSecret>,
    namespace: &str,
) -> Result<Vec<ObjectMeta>, crate::cluster::ClusterError> {
    let access = match &secret {
        Some(secret) => crate::run::executor::with_kubeconfig_of(secret, access).await?,
        None => access,
    };
    crate::cluster::labelled_secrets(&access, namespace, inventory::ID_LABEL).await
}

/// The spokes tend's parents of a hub recorded, each Secret once.
fn recorded_spokes(parents: &[ObjectMeta]) -> Vec<KubeConfigRef> {
    let mut out: Vec<KubeConfigRef> = Vec::new();
    let recorded = parents
        .iter()
        .filter(|meta| of_parent(meta).is_some())
        .filter_map(|meta| meta.annotations.as_ref()?.get(inventory::SPOKES_ANNOTATION))
        .flat_map(|list| list.split(','))
        .filter_map(KubeConfigRef::from_recorded);
    for target in recorded {
        if !out.iter().any(|known| known.same_secret(&target)) {
            out.push(target);
        }
    }
    out
}

/// A parent tend wrote (its tooling annotation says so), read.
fn of_parent(meta: &ObjectMeta) -> Option<ApplySetStatus> {
    let annotations = meta.annotations.as_ref()?;
    let tooling = annotations.get(inventory::TOOLING_ANNOTATION)?;
    if !tooling.starts_with("tend/") {
        return None;
    }
    let get = |key: &str| annotations.get(key).filter(|v| !v.is_empty()).cloned();
    let summary = get(inventory::LAST_SUMMARY_ANNOTATION);
    let count = |word: &str| summary.as_deref().and_then(|s| counted(s, word));
    // A count absent from the summary (`replaced` is written only when there are some) is 0.
    let objects = summary.as_ref().map(|_| {
        ["created", "updated", "replaced", "unchanged"]
            .iter()
            .map(|w| count(w).unwrap_or(0))
            .sum()
    });
    let interrupted = get(inventory::INTERRUPTED_ANNOTATION);
    let result = get(inventory::LAST_RESULT_ANNOTATION).unwrap_or_else(|| {
        // Parents recorded before tend wrote the result: from the counts.
        match (&interrupted, &summary, count("failed")) {
            (Some(_), _, _) => "interrupted",
            (None, None, _) => "unknown",
            (None, Some(_), Some(n)) if n > 0 => "failed",
            (None, Some(_), _) => "succeeded",
        }
        .to_string()
    });
    Some(ApplySetStatus {
        name: meta.name.clone().unwrap_or_default(),
        id: meta
            .labels
            .as_ref()
            .and_then(|l| l.get(inventory::ID_LABEL))
            .cloned()
            .unwrap_or_default(),
        last_run: get(inventory::LAST_RUN_ANNOTATION),
        commit: get(inventory::LAST_COMMIT_ANNOTATION),
        result,
        objects,
        drift: get(inventory::LAST_DRIFT_ANNOTATION).and_then(|d| d.parse().ok()),
        interrupted,
        summary,
    })
}

/// `N word` in `2 created, 1 updated, 0 pruned, 4 unchanged, 0 failed`.
fn counted(summary: &str, word: &str) -> Option<u64> {
    summary.split(',').find_map(|part| {
        let (n, w) = part.trim().split_once(' ')?;
        (w == word).then(|| n.parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_parent_reads_as_its_last_run() {
        let annotations: BTreeMap<String, String> = [
            (inventory::TOOLING_ANNOTATION, "tend/0.1.0"),
            (inventory::LAST_RUN_ANNOTATION, "2026-11-26T10:00:00Z"),
            (inventory::LAST_COMMIT_ANNOTATION, "abc"),
            (
                inventory::LAST_SUMMARY_ANNOTATION,
                "2 created, 1 updated, 1 replaced, 3 pruned, 4 unchanged, 1 failed",
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let meta = ObjectMeta {
            name: Some("tend".into()),
            annotations: Some(annotations),
            ..Default::default()
        };
        let status = of_parent(&meta).unwrap();
        assert_eq!(status.objects, Some(8));
        assert_eq!(status.result, "failed");
        assert_eq!(status.drift, None);
        let mut other = meta.clone();
        other
            .annotations
            .as_mut()
            .unwrap()
            .insert(inventory::TOOLING_ANNOTATION.into(), "kubectl/v1.33".into());
        assert_eq!(of_parent(&other), None);
    }

    #[test]
    fn a_hub_parent_names_its_spokes_each_once() {
        let hub = |spokes: &str| ObjectMeta {
            annotations: Some(
                [
                    (inventory::TOOLING_ANNOTATION, "tend/0.1.0"),
                    (inventory::SPOKES_ANNOTATION, spokes),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ),
            ..Default::default()
        };
        let spokes = recorded_spokes(&[
            hub("staging/kc,production/kc:value.yaml"),
            hub("staging/kc:other,nonsense,/x"),
        ]);
        let recorded: Vec<String> = spokes.iter().map(KubeConfigRef::recorded).collect();
        assert_eq!(recorded, ["staging/kc", "production/kc:value.yaml"]);
        assert_eq!(spokes[1].keys(), ["value.yaml"]);
    }
}
