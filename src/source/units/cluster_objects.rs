//! ConfigMaps and Secrets a unit reads (Flux's `postBuild.substituteFrom`, a HelmRelease's
//! `valuesFrom`, a Kustomization's `decryption.secretRef`) that the desired state does not
//! hold, so their controller would read them from the cluster. The source stage does no API
//! call: a run that will connect expands with [`ClusterObjects`], which records what a unit
//! asked for and did not have; the run reads those once connected (`run::cluster_objects`)
//! and expands again with them. `tend render`, with no cluster, expands without: such an
//! object is missing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Mutex;

/// Kind (`ConfigMap`, `Secret`), namespace, name.
pub type ObjectRef = (String, String, String);

/// The entries of a ConfigMap (its `data`) or a Secret (`data` decoded), by key.
pub type Entries = BTreeMap<String, String>;

/// What the cluster was found to hold of the objects asked for so far (`None`: it holds no
/// such object), and what units asked for that has not been read yet.
#[derive(Default)]
pub struct ClusterObjects {
    read: BTreeMap<ObjectRef, Option<Entries>>,
    wanted: Mutex<BTreeSet<ObjectRef>>,
}

// Secret values are never printed, not even in a debug log.
impl fmt::Debug for ClusterObjects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let read: Vec<&ObjectRef> = self.read.keys().collect();
        write!(f, "ClusterObjects(read {read:?})")
    }
}

impl ClusterObjects {
    /// What a run read of the cluster (`None` for an object it does not hold).
    pub fn with(read: BTreeMap<ObjectRef, Option<Entries>>) -> ClusterObjects {
        ClusterObjects {
            read,
            wanted: Mutex::default(),
        }
    }

    /// What the cluster was found to hold of `key`: `None` if not read yet, `Some(None)`
    /// if it holds no such object.
    pub fn get(&self, key: &ObjectRef) -> Option<&Option<Entries>> {
        self.read.get(key)
    }

    /// Record that a unit asked for `key`, not read yet.
    pub fn want(&self, key: ObjectRef) {
        match self.wanted.lock() {
            Ok(mut wanted) => wanted.insert(key),
            Err(poisoned) => poisoned.into_inner().insert(key),
        };
    }

    /// The objects units asked for that are not read yet.
    pub fn wanted(&self) -> BTreeSet<ObjectRef> {
        self.wanted
            .lock()
            .map(|w| w.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }
}
