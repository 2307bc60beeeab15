//! `tend status`: per cluster, the last run of each ApplySet tend manages there, as a table
//! or as JSON (docs/report-schema.md, "Status").

use serde_json::{json, Value};
use std::fmt::Write as _;

/// Version of the status JSON document's schema.
pub const STATUS_SCHEMA_VERSION: u32 = 1;

/// One cluster's parents, or why they could not be read.
#[derive(Debug, Clone)]
pub struct ClusterStatus {
    pub name: String,
    pub applysets: Result<Vec<ApplySetStatus>, String>,
}

/// The last run of one ApplySet, as its parent records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplySetStatus {
    pub name: String,
    pub id: String,
    pub last_run: Option<String>,
    pub commit: Option<String>,
    /// `succeeded`, `failed`, `interrupted` (or `unknown` for a parent never recorded).
    pub result: String,
    /// Objects of the ApplySet after the run (created, updated, replaced, unchanged).
    pub objects: Option<u64>,
    pub drift: Option<u64>,
    pub interrupted: Option<String>,
    pub summary: Option<String>,
}

impl ApplySetStatus {
    pub fn failed(&self) -> bool {
        self.result != "succeeded" && self.result != "unknown"
    }
}

/// The table: one line per cluster and ApplySet (a cluster that could not be read: its error).
pub fn text(clusters: &[ClusterStatus]) -> String {
    let header = [
        "CLUSTER",
        "APPLYSET",
        "LAST RUN",
        "COMMIT",
        "RESULT",
        "OBJECTS",
        "DRIFT",
        "INTERRUPTED",
    ];
    let dash = || "-".to_string();
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    let mut errors = Vec::new();
    for cluster in clusters {
        match &cluster.applysets {
            Err(error) => {
                rows.push(vec![
                    cluster.name.clone(),
                    dash(),
                    dash(),
                    dash(),
                    "unreachable".into(),
                    dash(),
                    dash(),
                    dash(),
                ]);
                errors.push(format!("cluster {}: {error}", cluster.name));
            }
            Ok(sets) if sets.is_empty() => {
                rows.push(vec![
                    cluster.name.clone(),
                    dash(),
                    dash(),
                    dash(),
                    "never applied".into(),
                    dash(),
                    dash(),
                    dash(),
                ]);
            }
            Ok(sets) => {
                for set in sets {
                    rows.push(vec![
                        cluster.name.clone(),
                        set.name.clone(),
                        set.last_run.clone().unwrap_or_else(dash),
                        set.commit
                            .as_deref()
                            .map_or_else(dash, |c| c.chars().take(12).collect()),
                        set.result.clone(),
                        set.objects.map_or_else(dash, |n| n.to_string()),
                        set.drift.map_or_else(dash, |n| n.to_string()),
                        if set.interrupted.is_some() {
                            "yes"
                        } else {
                            "no"
                        }
                        .into(),
                    ]);
                }
            }
        }
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    for error in errors {
        let _ = writeln!(out, "error: {error}");
    }
    out
}

/// The JSON document.
pub fn json(clusters: &[ClusterStatus]) -> String {
    let clusters: Vec<Value> = clusters
        .iter()
        .map(|cluster| {
            let (error, sets) = match &cluster.applysets {
                Ok(sets) => (None, sets.as_slice()),
                Err(error) => (Some(error.as_str()), &[][..]),
            };
            let sets: Vec<Value> = sets
                .iter()
                .map(|s| {
                    json!({
                        "name": s.name,
                        "id": s.id,
                        "lastRun": s.last_run,
                        "commit": s.commit,
                        "result": s.result,
                        "objects": s.objects,
                        "drift": s.drift,
                        "interrupted": s.interrupted,
                        "summary": s.summary,
                    })
                })
                .collect();
            json!({"name": cluster.name, "error": error, "applysets": sets})
        })
        .collect();
    let value = json!({"statusSchemaVersion": STATUS_SCHEMA_VERSION, "clusters": clusters});
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    text
}
