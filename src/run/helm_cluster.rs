//! Helm charts rendered for a connected run, as `helm install` renders them: `.Capabilities`
//! reports the server's version and what it serves, `lookup` reads the cluster, and random
//! functions draw from the cluster's seed (see [`super::helm_seed`]). The render stays pure:
//! it is handed what was read, says which lookups it missed, and runs again once they are
//! read (a lookup whose arguments come from another lookup takes one more round).

use super::helm_seed::{self, NewSeed};
use super::load::{self, Loaded};
use crate::cluster::{Access, ClusterError, Session};
use crate::helm::lookup::{Answer, ClusterFacts, LookupKey};
use crate::render::{RenderOptions, RenderPass, Rendered};
use crate::Error;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rounds of lookups a render may take: each reads what the previous render missed.
const LOOKUP_ROUNDS: usize = 5;

/// A render made while connecting, with what the last run learnt of the cluster's version
/// and APIs: it stands if the cluster still says the same and the render depended on
/// nothing else (no lookup, no random value, whose seed is only read once connected).
pub struct Speculative {
    kube_version: String,
    api_versions: Vec<String>,
    rendered: Rendered,
}

/// What the last run learnt of a cluster, kept in the cache directory (nothing secret:
/// the server's version and the API versions it serves), by how it was reached.
#[derive(serde::Serialize, serde::Deserialize)]
struct Remembered {
    kube_version: String,
    api_versions: Vec<String>,
}

fn remembered_path(cache_dir: &Path, access: &Access) -> PathBuf {
    cache_dir
        .join("helm-capabilities")
        .join(format!("{}.json", reached_as(access)))
}

/// A name for how a cluster is reached from here (kubeconfig, context, `KUBECONFIG`), for
/// what the cache directory keeps per cluster.
pub(super) fn reached_as(access: &Access) -> String {
    use sha2::Digest;
    let mut reached = format!(
        "{:?}\n{:?}\n{:?}",
        access.kubeconfig,
        access.context,
        std::env::var_os("KUBECONFIG")
    );
    if let Some(text) = &access.kubeconfig_text {
        reached.push_str(&format!("\n{}", text.origin));
    }
    hex::encode(sha2::Sha256::digest(reached.as_bytes()))
}

/// Render `loaded` before connecting, as the cluster was last seen; `None` when it was
/// never seen from here or the render could not stand anyway.
pub fn speculate(
    loaded: &Loaded,
    render_opts: &RenderOptions,
    cache_dir: &Path,
    access: &Access,
) -> Option<Speculative> {
    let text = std::fs::read(remembered_path(cache_dir, access)).ok()?;
    let last: Remembered = serde_json::from_slice(&text).ok()?;
    let mut opts = render_opts.clone();
    opts.helm_cluster = Some(Arc::new(ClusterFacts {
        kube_version: last.kube_version.clone(),
        api_versions: last.api_versions.clone(),
        lookups: Default::default(),
    }));
    // Its problems, if any, are found again by the render that counts.
    let RenderPass::Rendered(rendered) = load::render(loaded, &opts).ok()? else {
        return None;
    };
    rendered.random_charts.is_empty().then_some(Speculative {
        kube_version: last.kube_version,
        api_versions: last.api_versions,
        rendered,
    })
}

fn remember(cache_dir: &Path, access: &Access, facts: &ClusterFacts) {
    let path = remembered_path(cache_dir, access);
    let text = serde_json::to_vec(&Remembered {
        kube_version: facts.kube_version.clone(),
        api_versions: facts.api_versions.clone(),
    });
    let dir = path.parent().unwrap_or(cache_dir);
    let written = text
        .map_err(std::io::Error::other)
        .and_then(|text| super::render_cache::write_private(dir, &path, &text));
    if let Err(err) = written {
        // Only a cost: the next run renders after connecting.
        tracing::debug!("cannot remember the cluster's capabilities: {err}");
    }
}

/// Render `loaded` with what the cluster tells its charts. Returns the render and, when no
/// seed was stored yet and charts used random functions, the seed to store after an apply.
pub async fn render(
    session: &Session,
    loaded: &Loaded,
    render_opts: &RenderOptions,
    (state_namespace, storing): (&str, bool),
    speculative: Option<Speculative>,
    (cache_dir, access): (&Path, &Access),
) -> Result<(Rendered, Option<NewSeed>), Error> {
    let (kube_version, stored_seed) = tokio::join!(
        session.kube_version(),
        helm_seed::read(session, state_namespace)
    );
    let facts = ClusterFacts {
        kube_version: kube_version.map_err(Error::Cluster)?,
        api_versions: session.resources.api_versions(),
        lookups: Default::default(),
    };
    match speculative {
        Some(s) if s.kube_version == facts.kube_version && s.api_versions == facts.api_versions => {
            tracing::debug!("Helm charts: rendered while connecting, as the cluster was last seen");
            // No random values in it: the stored seed (or its absence) does not matter.
            stored_seed?;
            return Ok((s.rendered, None));
        }
        _ => remember(cache_dir, access, &facts),
    }
    let mut opts = render_opts.clone();
    let stored_seed = stored_seed?;
    if let Some(seed) = stored_seed {
        opts.helm_seed = seed;
        opts.helm_seed_kept = true;
    }
    let rendered = render_with_lookups(session, loaded, opts, facts).await?;
    let new_seed = helm_seed::first_seed(
        &rendered.random_charts,
        stored_seed.is_none(),
        state_namespace,
        storing,
        render_opts.helm_seed,
    );
    Ok((rendered, new_seed))
}

/// Render, read the lookups the render missed, and render again with their answers, until
/// none is missed (a lookup whose arguments come from another takes one more round).
async fn render_with_lookups(
    session: &Session,
    loaded: &Loaded,
    mut opts: RenderOptions,
    mut facts: ClusterFacts,
) -> Result<Rendered, Error> {
    let mut rounds = 0;
    loop {
        opts.helm_cluster = Some(Arc::new(facts.clone()));
        let missed = match load::render(loaded, &opts)? {
            RenderPass::Rendered(rendered) => return Ok(rendered),
            RenderPass::NeedsLookups(missed) => missed,
        };
        if rounds == LOOKUP_ROUNDS {
            return Err(Error::Usage(format!(
                "Helm charts still look up new objects after {LOOKUP_ROUNDS} rounds of reading them (each lookup named by the one before): {}; look for a chart whose lookups never settle",
                listed(&missed)
            )));
        }
        rounds += 1;
        tracing::debug!("Helm lookups, round {rounds}: {}", listed(&missed));
        for key in &missed {
            facts.lookups.insert(key.clone(), read(session, key).await);
        }
    }
}

fn listed(missed: &BTreeSet<LookupKey>) -> String {
    let keys: Vec<String> = missed.iter().map(LookupKey::to_string).collect();
    keys.join(", ")
}

/// What Helm's `lookup` answers: the object, the list (`<Kind>List` with `items`), or an
/// empty map when there is none; an error for a group/version the cluster does not serve or
/// a read the cluster refuses.
async fn read(session: &Session, key: &LookupKey) -> Answer {
    let (group, version) = match key.api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", key.api_version.as_str()),
    };
    if !session.resources.serves_group_version(group, version) {
        return Answer::Failed(format!(
            "lookup {key}: the cluster serves no {}",
            key.api_version
        ));
    }
    // A kind the group/version does not serve: nothing to find (Helm asks for a resource
    // without a name, which the server does not have).
    let Some(resource) = session.resources.get(group, version, &key.kind) else {
        return Answer::Found(json!({}));
    };
    let namespace =
        (resource.namespaced && !key.namespace.is_empty()).then_some(key.namespace.as_str());
    let answer = if key.name.is_empty() {
        crate::cluster::list(&session.client, resource, namespace, None)
            .await
            .map(|items| {
                let items: Vec<Value> = items
                    .into_iter()
                    .map(|mut item| {
                        // As client-go's unstructured lists give them: each item typed.
                        if let Some(map) = item.as_object_mut() {
                            map.entry("apiVersion")
                                .or_insert_with(|| json!(key.api_version));
                            map.entry("kind").or_insert_with(|| json!(key.kind));
                        }
                        item
                    })
                    .collect();
                json!({
                    "apiVersion": key.api_version,
                    "kind": format!("{}List", key.kind),
                    "metadata": {},
                    "items": items,
                })
            })
    } else if resource.namespaced && namespace.is_none() {
        // A namespaced object named without a namespace: Helm asks a path the server
        // answers with 404.
        Ok(json!({}))
    } else {
        crate::cluster::get(&session.client, resource, namespace, &key.name)
            .await
            .map(|found| found.unwrap_or_else(|| json!({})))
    };
    match answer {
        Ok(value) => Answer::Found(value),
        Err(err) if err.code() == Some(404) => Answer::Found(json!({})),
        Err(err) => Answer::Failed(format!("lookup {key}: {}", reason(&err))),
    }
}

/// Why a read failed, as the server said it (never a value).
fn reason(err: &ClusterError) -> String {
    match err.server_message() {
        Some(message) => message.to_string(),
        None => err.to_string(),
    }
}
