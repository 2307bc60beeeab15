//! Helm charts rendered for a connected run, as `helm install` renders them: `.Capabilities`
//! reports the server's version and what it serves, `lookup` reads the cluster, and random
//! functions draw from the cluster's seed (see [`super::helm_seed`]). The render stays pure:
//! it is handed what was read, says which lookups it missed, and runs again once they are
//! read (a lookup whose arguments come from another lookup takes one more round).

use super::helm_seed::{self, NewSeed};
use super::load::{self, Loaded};
use crate::cluster::{ClusterError, Session};
use crate::helm::lookup::{Answer, ClusterFacts, LookupKey};
use crate::render::{RenderOptions, Rendered};
use crate::Error;
use serde_json::{json, Value};
use std::sync::Arc;

/// Rounds of lookups a render may take: each reads what the previous render missed.
const LOOKUP_ROUNDS: usize = 5;

/// Render `loaded` with what the cluster tells its charts. Returns the render and, when no
/// seed was stored yet and charts used random functions, the seed to store after an apply.
pub async fn render(
    session: &Session,
    loaded: &Loaded,
    render_opts: &RenderOptions,
    state_namespace: &str,
    storing: bool,
) -> Result<(Rendered, Option<NewSeed>), Error> {
    let (kube_version, stored_seed) = tokio::join!(
        session.kube_version(),
        helm_seed::read(session, state_namespace)
    );
    let mut facts = ClusterFacts {
        kube_version: kube_version.map_err(crate::apply::engine::EngineError::from)?,
        api_versions: session.resources.api_versions(),
        lookups: Default::default(),
    };
    let mut opts = render_opts.clone();
    let stored_seed = stored_seed?;
    if let Some(seed) = stored_seed {
        opts.helm_seed = seed;
    }
    let mut rounds = 0;
    let rendered = loop {
        opts.helm_cluster = Some(Arc::new(facts.clone()));
        let rendered = load::render(loaded, &opts)?;
        if rendered.lookups_missed.is_empty() {
            break rendered;
        }
        if rounds == LOOKUP_ROUNDS {
            return Err(Error::Usage(format!(
                "Helm charts still look up new objects after {LOOKUP_ROUNDS} rounds of reading them (each lookup named by the one before): {}; look for a chart whose lookups never settle",
                missed(&rendered)
            )));
        }
        rounds += 1;
        tracing::debug!("Helm lookups, round {rounds}: {}", missed(&rendered));
        for key in &rendered.lookups_missed {
            facts.lookups.insert(key.clone(), read(session, key).await);
        }
    };
    let new_seed = helm_seed::first_seed(
        &rendered.random_charts,
        stored_seed.is_none(),
        state_namespace,
        storing,
        render_opts.helm_seed,
    );
    Ok((rendered, new_seed))
}

fn missed(rendered: &Rendered) -> String {
    let keys: Vec<String> = rendered
        .lookups_missed
        .iter()
        .map(LookupKey::to_string)
        .collect();
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
