//! The run lock: a `coordination.k8s.io/v1` Lease in the state namespace, held for the whole
//! run and renewed in the background. A second run waits up to `--lock-timeout`, then gives
//! up naming the holder; a lease whose holder stopped renewing is taken over, and so is one
//! held by a process of this host that no longer exists (a crash or SIGKILL): at once.

use super::holder::{dead_holder, holder_identity, LocalProcesses, Processes};
use crate::cluster::{self, ClusterError, Resource, Session};
use crate::interrupt::Interrupt;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use serde_json::{json, Value};
use std::sync::Arc;
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

/// A held lock. Call [`Lock::release`] at the end of the run, on success and on failure.
pub struct Lock {
    client: Client,
    resource: Resource,
    namespace: String,
    name: String,
    holder: String,
    renewer: tokio::task::JoinHandle<()>,
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

/// How a run contends for a lock someone else holds.
pub struct Contention<'a> {
    /// How long to wait for the holder (`--lock-timeout`).
    pub timeout: Duration,
    /// Waiting ends with a stop request.
    pub interrupt: &'a Interrupt,
    /// Which holders are dead processes of this host.
    pub processes: &'a dyn Processes,
}

impl Lock {
    /// Take the lock, waiting up to `contention.timeout` for another holder to finish.
    pub async fn acquire(
        client: &Client,
        resource: &Resource,
        namespace: &str,
        name: &str,
        holder: &str,
        clock: Arc<dyn Clock>,
        contention: Contention<'_>,
    ) -> Result<Lock, LockError> {
        let Contention {
            timeout,
            interrupt,
            processes,
        } = contention;
        let started = std::time::Instant::now();
        loop {
            let now = clock.now();
            let live = cluster::get(client, resource, Some(namespace), name).await?;
            let held_by = |lease: &Value| {
                lease["spec"]["holderIdentity"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            };
            let attempt = match &live {
                // Ours already: a create or update whose answer was lost, then retried.
                Some(lease) if held_by(lease) == holder => Ok(()),
                Some(lease) if dead_holder(&held_by(lease), processes) => {
                    tracing::warn!(
                        "taking over the lock {namespace}/{name} from {}: that process no longer runs on this host",
                        held_by(lease)
                    );
                    take(client, resource, namespace, name, holder, now, lease).await
                }
                None => cluster::create(
                    client,
                    resource,
                    &lease_object(namespace, name, holder, now, None, None),
                )
                .await
                .map(|_| ()),
                Some(lease) if is_free(lease, now) => {
                    if !lease["spec"]["holderIdentity"]
                        .as_str()
                        .unwrap_or("")
                        .is_empty()
                    {
                        tracing::warn!(
                            "taking over the expired lock {namespace}/{name} from {}",
                            lease["spec"]["holderIdentity"].as_str().unwrap_or("")
                        );
                    }
                    take(client, resource, namespace, name, holder, now, lease).await
                }
                Some(lease) => {
                    if started.elapsed() >= timeout {
                        return Err(LockError::Held {
                            namespace: namespace.into(),
                            name: name.into(),
                            holder: lease["spec"]["holderIdentity"]
                                .as_str()
                                .unwrap_or("")
                                .into(),
                            renewed: lease["spec"]["renewTime"]
                                .as_str()
                                .unwrap_or("never")
                                .into(),
                            waited: timeout,
                        });
                    }
                    tracing::info!(
                        "waiting for the lock {namespace}/{name} held by {}",
                        lease["spec"]["holderIdentity"].as_str().unwrap_or("")
                    );
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(500).min(timeout)) => {}
                        _ = interrupt.requested() => {}
                    }
                    if let Some(stop) = interrupt.stopped() {
                        return Err(LockError::Interrupted {
                            namespace: namespace.into(),
                            name: name.into(),
                            signal: stop.signal,
                        });
                    }
                    continue;
                }
            };
            match attempt {
                Ok(()) => break,
                // Someone else created or updated it between our read and write: look again.
                Err(err) if err.code() == Some(409) => continue,
                Err(err) => return Err(err.into()),
            }
        }
        let renewer = tokio::spawn(renew_loop(
            client.clone(),
            resource.clone(),
            namespace.to_string(),
            name.to_string(),
            holder.to_string(),
            clock,
        ));
        Ok(Lock {
            client: client.clone(),
            resource: resource.clone(),
            namespace: namespace.into(),
            name: name.into(),
            holder: holder.into(),
            renewer,
        })
    }

    /// Give the lock up: stop renewing and clear the holder so the next run need not wait.
    pub async fn release(self) -> Result<(), ClusterError> {
        self.renewer.abort();
        let Some(mut lease) = cluster::get(
            &self.client,
            &self.resource,
            Some(&self.namespace),
            &self.name,
        )
        .await?
        else {
            return Ok(());
        };
        if lease["spec"]["holderIdentity"].as_str() != Some(self.holder.as_str()) {
            return Ok(()); // taken over; not ours to release
        }
        lease["spec"]["holderIdentity"] = Value::Null;
        lease["spec"]["leaseDurationSeconds"] = json!(1);
        if let Some(meta) = lease.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        cluster::replace(&self.client, &self.resource, &lease)
            .await
            .map(|_| ())
    }
}

/// Replace a free or abandoned lease with one held by `holder` (409 if someone was faster).
async fn take(
    client: &Client,
    resource: &Resource,
    namespace: &str,
    name: &str,
    holder: &str,
    now: Timestamp,
    lease: &Value,
) -> Result<(), ClusterError> {
    let rv = lease
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str);
    cluster::replace(
        client,
        resource,
        &lease_object(namespace, name, holder, now, None, rv),
    )
    .await
    .map(|_| ())
}

/// Renew a third of the way through each lease period.
async fn renew_loop(
    client: Client,
    resource: Resource,
    namespace: String,
    name: String,
    holder: String,
    clock: Arc<dyn Clock>,
) {
    let period = Duration::from_secs((LEASE_SECONDS / 3) as u64);
    loop {
        tokio::time::sleep(period).await;
        let Ok(Some(lease)) = cluster::get(&client, &resource, Some(&namespace), &name).await
        else {
            continue;
        };
        if lease["spec"]["holderIdentity"].as_str() != Some(holder.as_str()) {
            tracing::warn!("lost the lock {namespace}/{name}");
            return;
        }
        let rv = lease
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str);
        let acquired = lease["spec"]["acquireTime"].as_str();
        let renewed = lease_object(&namespace, &name, &holder, clock.now(), acquired, rv);
        if let Err(err) = cluster::replace(&client, &resource, &renewed).await {
            tracing::warn!("cannot renew the lock {namespace}/{name}: {err}");
        }
    }
}

/// Take the run's lock: the Lease `tend-lock` (or `tend-lock-<applyset>` for another
/// ApplySet) in the state namespace, which is created first when missing.
pub async fn take_for_run(
    session: &Session,
    state_namespace: &str,
    applyset: &str,
    timeout: Duration,
    clock: Arc<dyn Clock>,
    interrupt: &Interrupt,
) -> Result<Lock, LockError> {
    ensure_namespace(session, state_namespace).await?;
    let lease = session.served("coordination.k8s.io", "v1", "Lease")?;
    let name = if applyset == "tend" {
        "tend-lock".to_string()
    } else {
        format!("tend-lock-{applyset}")
    };
    Lock::acquire(
        &session.client,
        &lease,
        state_namespace,
        &name,
        &holder_identity(),
        clock,
        Contention {
            timeout,
            interrupt,
            processes: &LocalProcesses,
        },
    )
    .await
}

async fn ensure_namespace(session: &Session, namespace: &str) -> Result<(), ClusterError> {
    let ns = session.core("Namespace")?;
    if cluster::get(&session.client, &ns, None, namespace)
        .await?
        .is_none()
    {
        let object = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        cluster::apply(
            &session.client,
            &ns,
            &object,
            crate::FIELD_MANAGER,
            true,
            false,
        )
        .await?;
    }
    Ok(())
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
