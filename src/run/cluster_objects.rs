//! ConfigMaps and Secrets Flux units read that only the cluster holds (`substituteFrom`,
//! `valuesFrom`, `decryption.secretRef`; `source::units::ClusterObjects`): the source is read
//! with what the cluster was found to hold so far; the objects its units asked for and did
//! not have are read, and the source read again with them, until none is missing (a unit
//! expanded with them may hold units that ask for more).

use super::load::Loaded;
use crate::cluster::Session;
use crate::source::units::{live_entries, ClusterObjects, Entries, ObjectRef};
use crate::source::SourceOptions;
use crate::Error;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Reads of the source at most: each round is a level of units nested in what the previous
/// round's objects let expand.
const MAX_ROUNDS: usize = 8;

/// `source` with nothing read of the cluster yet: its units record what they ask for.
pub fn reading(source: &SourceOptions) -> SourceOptions {
    with_read(source, BTreeMap::new())
}

fn with_read(source: &SourceOptions, read: BTreeMap<ObjectRef, Option<Entries>>) -> SourceOptions {
    SourceOptions {
        cluster_objects: Some(Arc::new(ClusterObjects::with(read))),
        ..source.clone()
    }
}

/// What a source read with [`reading`] (or read by this module) asked of the cluster and did
/// not have.
pub fn wanted(source: &SourceOptions) -> BTreeSet<ObjectRef> {
    source
        .cluster_objects
        .as_ref()
        .map(|objects| objects.wanted())
        .unwrap_or_default()
}

/// Read the source with `load`, first reading `wanted` of the cluster, then whatever the
/// units ask for next, round by round.
pub async fn load_reading(
    session: &Session,
    source: &SourceOptions,
    mut wanted: BTreeSet<ObjectRef>,
    load: impl Fn(&SourceOptions) -> Result<Loaded, Error>,
) -> Result<Loaded, Error> {
    let mut read: BTreeMap<ObjectRef, Option<Entries>> = BTreeMap::new();
    for _ in 0..MAX_ROUNDS {
        for key in wanted {
            let (kind, namespace, name) = &key;
            let object = session
                .read_core_object(kind, namespace, name)
                .await
                .map_err(Error::Cluster)?;
            read.insert(key, object.as_ref().map(live_entries));
        }
        let source = with_read(source, read.clone());
        let loaded = load(&source)?;
        wanted = self::wanted(&source);
        if wanted.is_empty() {
            return Ok(loaded);
        }
        tracing::debug!(
            "Flux units ask for {} more object(s) of the cluster",
            wanted.len()
        );
    }
    Err(Error::Usage(format!(
        "Flux units kept asking for ConfigMaps and Secrets of the cluster after {MAX_ROUNDS} reads of the source (units nested {MAX_ROUNDS} deep, each reading one); flatten the nesting, or put those objects in the desired state"
    )))
}
