//! Apply: the reconcile engine. Plans against the live cluster (LISTs, the fast path,
//! server-side dry runs), then applies in stage order with bounded concurrency, prunes with
//! guards, and records the run on the ApplySet parent, all under a Lease lock.

pub mod engine;
pub mod inventory;
pub mod kinds;
pub mod live;
pub mod lock;
