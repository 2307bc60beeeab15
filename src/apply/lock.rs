//! The run lock: a `coordination.k8s.io/v1` Lease in the state namespace, held for the whole
//! run and renewed in the background. A second run waits up to `--lock-timeout`, then gives
//! up naming the holder; a lease whose holder stopped renewing is taken over, and so is one
//! held by a process of this host that no longer exists (a crash or SIGKILL): at once.
//!
//! Taking it costs a run one round trip before it reads the cluster ([`look`]); the write
//! that takes a free lease ([`take_free`]) runs beside the run's LISTs. That is safe: the
//! write carries the resourceVersion read before the LISTs started, so it succeeds only if no
//! other run took the lock in between, and only a lock holder writes.

use super::holder::{dead_holder, holder_identity, LocalProcesses, Processes};
use crate::cluster::{self, ClusterError, Resource, Session};
use crate::interrupt::Interrupt;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Seconds a lease stays valid without renewal.
pub const LEASE_SECONDS: i64 = 60;

/// Wall-clock time, passed in so tests and chaos can control it.
pub trait Clock: Send + Sync {
    fn now(&self) -> Timestamp;
}

/// The system clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another tend run holds the lock {namespace}/{name}: holder {holder}, renewed {renewed}; waited {waited:?} (--lock-timeout)")]
    Held {
        namespace: String,
        name: String,
        holder: String,
        renewed: String,
        waited: Duration,
    },
    #[error(
        "stopped by {signal} while waiting for the lock {namespace}/{name}; nothing was changed"
    )]
    Interrupted {
        namespace: String,
        name: String,
        signal: &'static str,
    },
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// Where the lock lives, and who this run is.
#[derive(Clone)]
struct Target {
    client: Client,
    leases: Resource,
    namespaces: Resource,
    namespace: String,
    name: String,
    holder: String,
    /// Which holders are dead processes of this host.
    processes: Arc<dyn Processes>,
}

impl Target {
    /// Whether a live lease may be taken now: free, or held by a dead process of this host.
    fn takeable(&self, lease: &Value, now: Timestamp) -> bool {
        is_free(lease, now) || dead_holder(holder_of(lease), self.processes.as_ref())
    }
}

fn holder_of(lease: &Value) -> &str {
    lease["spec"]["holderIdentity"].as_str().unwrap_or("")
}

/// A held lock. Call [`Lock::release`] at the end of the run, on success and on failure.
pub struct Lock {
    target: Target,
    /// The lease as this run last wrote it (acquired or renewed): release writes over it with
    /// its resourceVersion, so it needs no read first.
    written: Arc<Mutex<Value>>,
    renewer: tokio::task::JoinHandle<()>,
}

/// The lock's Lease as a run reads it before it observes the cluster.
pub struct Sighting {
    target: Target,
    /// The live lease; `None` when it (or the state namespace) does not exist yet.
    live: Option<Value>,
}

impl Sighting {
    /// Whether the lease was free when read (absent, released, or expired), or held by a
    /// dead process of this host.
    pub fn is_free(&self, now: Timestamp) -> bool {
        self.live
            .as_ref()
            .is_none_or(|lease| self.target.takeable(lease, now))
    }
}

/// Why a lease seen free was not taken.
pub enum Missed {
    /// Another run took it between the read and the write: wait for it as usual.
    Raced,
    Failed(LockError),
}

fn micro(t: Timestamp) -> String {
    // MicroTime: RFC 3339 with microseconds, as Kubernetes writes it.
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

fn lease_object(
    namespace: &str,
    name: &str,
    holder: &str,
    now: Timestamp,
    acquired: Option<&str>,
    rv: Option<&str>,
) -> Value {
    let mut lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": LEASE_SECONDS,
            "acquireTime": acquired.map(str::to_string).unwrap_or_else(|| micro(now)),
            "renewTime": micro(now),
        }
    });
    if let Some(rv) = rv {
        lease["metadata"]["resourceVersion"] = json!(rv);
    }
    lease
}

/// Whether a live lease is free: no holder, or not renewed within its duration.
fn is_free(lease: &Value, now: Timestamp) -> bool {
    let spec = &lease["spec"];
    let holder = spec["holderIdentity"].as_str().unwrap_or("");
    if holder.is_empty() {
        return true;
    }
    let duration = spec["leaseDurationSeconds"]
        .as_i64()
        .unwrap_or(LEASE_SECONDS);
    let renewed = spec["renewTime"]
        .as_str()
        .or(spec["acquireTime"].as_str())
        .and_then(|t| t.parse::<Timestamp>().ok());
    match renewed {
        Some(t) => now.duration_since(t) > SignedDuration::from_secs(duration),
        None => true,
    }
}

/// Read the run's lock Lease (`tend-lock`, or `tend-lock-<applyset>` for another ApplySet)
/// in the state namespace: one GET.
pub async fn look(
    session: &Session,
    state_namespace: &str,
    applyset: &str,
) -> Result<Sighting, LockError> {
    let target = Target {
        client: session.client.clone(),
        leases: session.served("coordination.k8s.io", "v1", "Lease")?,
        namespaces: session.core("Namespace")?,
        namespace: state_namespace.into(),
        name: if applyset == "tend" {
            "tend-lock".to_string()
        } else {
            format!("tend-lock-{applyset}")
        },
        holder: holder_identity(),
        processes: Arc::new(LocalProcesses),
    };
    let live = read(&target).await?;
    Ok(Sighting { target, live })
}

/// Take a lease seen free, in one write (on a first run, the state namespace first).
pub async fn take_free(sighting: &Sighting, clock: Arc<dyn Clock>) -> Result<Lock, Missed> {
    let target = &sighting.target;
    match write_free(target, sighting.live.as_ref(), clock.now()).await {
        Ok(written) => Ok(Lock::held(target, written, clock)),
        Err(err) if err.code() == Some(409) => Err(Missed::Raced),
        Err(err) => Err(Missed::Failed(err.into())),
    }
}

/// Take the lock seen in `sighting`, waiting up to `timeout` for its holder to finish (or
/// until the run is stopped).
pub async fn wait_for(
    sighting: &Sighting,
    timeout: Duration,
    clock: Arc<dyn Clock>,
    interrupt: &Interrupt,
) -> Result<Lock, LockError> {
    let target = &sighting.target;
    let started = std::time::Instant::now();
    loop {
        let now = clock.now();
        let live = read(target).await?;
        if let Some(lease) = live.as_ref().filter(|l| holder_of(l) == target.holder) {
            // Ours already: a take whose answer was lost, sent again, refused as a conflict.
            return Ok(Lock::held(target, lease.clone(), clock));
        }
        if let Some(lease) = live.as_ref().filter(|lease| !target.takeable(lease, now)) {
            let holder = holder_of(lease);
            if started.elapsed() >= timeout {
                return Err(LockError::Held {
                    namespace: target.namespace.clone(),
                    name: target.name.clone(),
                    holder: holder.into(),
                    renewed: lease["spec"]["renewTime"]
                        .as_str()
                        .unwrap_or("never")
                        .into(),
                    waited: timeout,
                });
            }
            tracing::info!(
                "waiting for the lock {}/{} held by {holder}",
                target.namespace,
                target.name
            );
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(500).min(timeout)) => {}
                _ = interrupt.requested() => {}
            }
            if let Some(stop) = interrupt.stopped() {
                return Err(LockError::Interrupted {
                    namespace: target.namespace.clone(),
                    name: target.name.clone(),
                    signal: stop.signal,
                });
            }
            continue;
        }
        match write_free(target, live.as_ref(), now).await {
            Ok(written) => return Ok(Lock::held(target, written, clock)),
            // Someone else created or updated it between our read and write: look again.
            Err(err) if err.code() == Some(409) => continue,
            Err(err) => return Err(err.into()),
        }
    }
}

async fn read(target: &Target) -> Result<Option<Value>, ClusterError> {
    cluster::get(
        &target.client,
        &target.leases,
        Some(&target.namespace),
        &target.name,
    )
    .await
}

/// Write this run as the holder of a lease read as free (`live`), or create the lease when
/// absent. A 409 means another run won the race.
async fn write_free(
    target: &Target,
    live: Option<&Value>,
    now: Timestamp,
) -> Result<Value, ClusterError> {
    let (namespace, name, holder) = (&target.namespace, &target.name, &target.holder);
    let Some(lease) = live else {
        let fresh = lease_object(namespace, name, holder, now, None, None);
        return match cluster::create(&target.client, &target.leases, &fresh).await {
            // The state namespace does not exist yet (a first run): create it, then the lease.
            Err(err) if err.code() == Some(404) => {
                let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
                cluster::apply(
                    &target.client,
                    &target.namespaces,
                    &ns,
                    crate::FIELD_MANAGER,
                    true,
                    false,
                )
                .await?;
                cluster::create(&target.client, &target.leases, &fresh).await
            }
            other => other,
        };
    };
    let previous = holder_of(lease);
    if !is_free(lease, now) {
        tracing::warn!(
            "taking over the lock {namespace}/{name} from {previous}: that process no longer runs on this host"
        );
    } else if !previous.is_empty() {
        tracing::warn!("taking over the expired lock {namespace}/{name} from {previous}");
    }
    let rv = lease
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str);
    let taken = lease_object(namespace, name, holder, now, None, rv);
    cluster::replace(&target.client, &target.leases, &taken).await
}

impl Lock {
    fn held(target: &Target, written: Value, clock: Arc<dyn Clock>) -> Lock {
        let written = Arc::new(Mutex::new(written));
        let renewer = tokio::spawn(renew_loop(target.clone(), written.clone(), clock));
        Lock {
            target: target.clone(),
            written,
            renewer,
        }
    }

    /// Give the lock up: stop renewing and clear the holder so the next run need not wait.
    /// One write over the lease as this run last wrote it; only when that meets a change (a
    /// renewal that crossed it, a takeover) is the lease read again.
    pub async fn release(self) -> Result<(), ClusterError> {
        self.renewer.abort();
        let target = &self.target;
        if let Ok(written) = self.written.lock().map(|w| w.clone()) {
            match cluster::replace(&target.client, &target.leases, &released(written)).await {
                Ok(_) => return Ok(()),
                Err(err) if err.code() == Some(409) => {}
                Err(err) => return Err(err),
            }
        }
        let Some(lease) = read(target).await? else {
            return Ok(());
        };
        if lease["spec"]["holderIdentity"].as_str() != Some(target.holder.as_str()) {
            return Ok(()); // taken over; not ours to release
        }
        cluster::replace(&target.client, &target.leases, &released(lease))
            .await
            .map(|_| ())
    }
}

/// A lease with its holder cleared (and a one-second duration, for readers that ignore an
/// empty holder).
fn released(mut lease: Value) -> Value {
    lease["spec"]["holderIdentity"] = Value::Null;
    lease["spec"]["leaseDurationSeconds"] = json!(1);
    if let Some(meta) = lease.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    lease
}

/// Renew a third of the way through each lease period, over the lease as last written.
async fn renew_loop(target: Target, written: Arc<Mutex<Value>>, clock: Arc<dyn Clock>) {
    let period = Duration::from_secs((LEASE_SECONDS / 3) as u64);
    let (namespace, name) = (&target.namespace, &target.name);
    loop {
        tokio::time::sleep(period).await;
        let Ok(last) = written.lock().map(|w| w.clone()) else {
            return;
        };
        let rv = last
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str);
        let acquired = last["spec"]["acquireTime"].as_str();
        let renewed = lease_object(namespace, name, &target.holder, clock.now(), acquired, rv);
        match cluster::replace(&target.client, &target.leases, &renewed).await {
            Ok(lease) => {
                if let Ok(mut w) = written.lock() {
                    *w = lease;
                }
            }
            // Only a takeover writes over a held lease.
            Err(err) if err.code() == Some(409) => {
                tracing::warn!("lost the lock {namespace}/{name}");
                return;
            }
            Err(err) => tracing::warn!("cannot renew the lock {namespace}/{name}: {err}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_and_empty_leases_are_free() {
        let now: Timestamp = "2026-01-01T00:10:00Z".parse().unwrap();
        let recent = lease_object(
            "ns",
            "l",
            "a",
            "2026-01-01T00:09:30Z".parse().unwrap(),
            None,
            None,
        );
        assert!(!is_free(&recent, now));
        let old = lease_object(
            "ns",
            "l",
            "a",
            "2026-01-01T00:08:00Z".parse().unwrap(),
            None,
            None,
        );
        assert!(is_free(&old, now));
        let mut empty = recent.clone();
        empty["spec"]["holderIdentity"] = Value::Null;
        assert!(is_free(&empty, now));
        assert_eq!(micro(now), "2026-01-01T00:10:00.000000Z");
    }
}
