//! Run the test API server on its own, for benchmarks and manual poking.
//!
//! Prints one JSON line `{"url": ..., "kubeconfig": ...}` on stdout, then answers commands
//! read from stdin, one per line, each with one JSON line:
//! - `stats`: request counts (total, by verb, mutating, dry-run) and bytes of response
//!   bodies sent (`responseBytes`) since the last `clear`
//! - `clear`: clear the request log
//! - `deny-cluster-wide-lists` / `allow-cluster-wide-lists`: forbid (or allow) LISTs of
//!   namespaced resources across all namespaces, as namespace-scoped RBAC would and the byte count
//! - `quit` (or end of input): stop the server and exit
//!
//! `TEND_TESTSERVER_LATENCY_MS=N` delays every request by N ms (a simulated network round trip).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use tend_testserver::TestCluster;

/// As tend itself (see its main.rs): serving a LIST of 10,000 objects is mostly cloning and
/// freeing JSON trees, and the benchmarks measure tend beside this server on the same cores.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cluster = TestCluster::start();
    // Simulated network round trip, so concurrency behaves as against a real cluster.
    if let Some(ms) = std::env::var("TEND_TESTSERVER_LATENCY_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|ms| *ms > 0)
    {
        cluster
            .inject(tend_testserver::Fault::delay(std::time::Duration::from_millis(ms)).always());
    }
    let mut out = std::io::stdout().lock();
    let hello = serde_json::json!({
        "url": cluster.url(),
        "kubeconfig": cluster.kubeconfig_path().display().to_string(),
    });
    let _ = writeln!(out, "{hello}");
    let _ = out.flush();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let reply = match line.trim() {
            "stats" => {
                let requests = cluster.requests();
                let mut by_verb: BTreeMap<String, usize> = BTreeMap::new();
                for r in &requests {
                    *by_verb
                        .entry(format!("{:?}", r.verb).to_lowercase())
                        .or_default() += 1;
                }
                // Asking what one may do (SelfSubjectAccessReview) is a POST that stores nothing.
                let mutating = requests
                    .iter()
                    .filter(|r| !r.dry_run && r.verb.is_mutating())
                    .filter(|r| r.resource != "selfsubjectaccessreviews")
                    .count();
                serde_json::json!({
                    "total": requests.len(),
                    "byVerb": by_verb,
                    "mutating": mutating,
                    "dryRun": requests.iter().filter(|r| r.dry_run).count(),
                    "responseBytes": cluster.response_bytes(),
                })
            }
            "clear" => {
                cluster.clear_requests();
                cluster.reset_response_bytes();
                serde_json::json!({"ok": true})
            }
            "deny-cluster-wide-lists" | "allow-cluster-wide-lists" => {
                cluster.deny_cluster_wide_lists(line.trim().starts_with("deny"));
                serde_json::json!({"ok": true})
            }
            "quit" => break,
            other => {
                serde_json::json!({"error": format!("unknown command {other:?}: use stats, clear, deny-cluster-wide-lists, allow-cluster-wide-lists or quit")})
            }
        };
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
}
