//! What the last run found as desired on a cluster (`plan::settled`: uids, resourceVersions
//! and digests, nothing of the objects' content), kept in the cache directory per cluster
//! (how it is reached) and ApplySet, so that the next run reads unchanged LIST items no
//! further than their identity. A file that does not read is as good as none: every item
//! is read in full, as without it.

use super::plan::ClusterRun;
use crate::plan::settled::{Record, Settled};
use std::path::PathBuf;
use std::sync::Arc;

const FORMAT: &str = "tend-settled-2";

#[derive(serde::Serialize, serde::Deserialize)]
struct File {
    format: String,
    records: Vec<Record>,
}

/// The records read for one cluster's run, and where they go back.
pub struct Kept {
    path: PathBuf,
    read: Vec<Record>,
    pub settled: Arc<Settled>,
}

/// The records the last run of `applyset_id` on `cluster` left.
pub fn read(cluster: &ClusterRun, applyset_id: &str) -> Kept {
    use sha2::Digest;
    let reached = format!(
        "{}\n{:?}\n{applyset_id}",
        super::helm_cluster::reached_as(&cluster.target),
        cluster.kubeconfig_secret
    );
    let name = hex::encode(sha2::Sha256::digest(reached.as_bytes()));
    let path = cluster
        .cache_dir()
        .join("settled")
        .join(format!("{name}.json"));
    let read = std::fs::read(&path)
        .ok()
        .and_then(|text| serde_json::from_slice::<File>(&text).ok())
        .filter(|file| file.format == FORMAT)
        .map(|file| file.records)
        .unwrap_or_default();
    Kept {
        settled: Arc::new(Settled::new(read.clone())),
        path,
        read,
    }
}

impl Kept {
    /// Keep what this run settled for the next one (nothing is written when it is what was
    /// read). A failure only costs the next run its shortcut.
    pub fn write(&self) {
        let mut records = self.settled.settled_now();
        records.sort_by(|a, b| {
            (&a.group, &a.kind, &a.namespace, &a.name).cmp(&(
                &b.group,
                &b.kind,
                &b.namespace,
                &b.name,
            ))
        });
        // An apply that observed twice (its lock raced) noted some objects twice: the later
        // note is the one that counts.
        records.reverse();
        records.dedup_by(|later, earlier| {
            (&later.group, &later.kind, &later.namespace, &later.name)
                == (
                    &earlier.group,
                    &earlier.kind,
                    &earlier.namespace,
                    &earlier.name,
                )
        });
        records.reverse();
        if records == self.read {
            return;
        }
        let file = File {
            format: FORMAT.into(),
            records,
        };
        let dir = self.path.parent().unwrap_or(&self.path);
        let written = serde_json::to_vec(&file)
            .map_err(std::io::Error::other)
            .and_then(|text| super::render_cache::write_private(dir, &self.path, &text));
        if let Err(err) = written {
            tracing::debug!("cannot keep what this run found as desired: {err}");
        }
    }
}
