//! What every connection of one server shares: the store, the faults to inject, the request
//! log.

use super::request_log::Logged;
use crate::faults::Fault;
use crate::store::State;
use parking_lot::Mutex;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tokio::sync::Notify;

pub(crate) struct Shared {
    pub state: Mutex<State>,
    pub faults: Mutex<Vec<Fault>>,
    pub log: Mutex<Vec<Logged>>,
    pub aggregated_discovery: bool,
    /// When set, the client may not LIST namespaced resources across all namespaces: such
    /// LISTs are 403 and SelfSubjectAccessReviews for them say so.
    pub deny_cluster_wide_lists: std::sync::atomic::AtomicBool,
    /// Bytes of response bodies sent since the last reset.
    pub response_bytes: Arc<AtomicU64>,
    /// Woken when the simulated controllers have new work queued.
    pub controllers: Notify,
}
