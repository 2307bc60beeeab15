//! The run: what `diff` and `apply` do as a plan ([`plan::Run`], built before any I/O it does
//! not need) and the executor that carries it out ([`executor`], the only place tasks are
//! started and joined). Beside them, what units need of the cluster or the machine before
//! they render: keys of encrypted files ([`keys`]), chart logins ([`chart_credentials`]),
//! Helm's view of the cluster and its lookups ([`helm_cluster`]), the seed of random
//! functions ([`helm_seed`]), kept renders ([`render_cache`]), keys trusted to sign the
//! source ([`trusted_keys`]), the tenants' ServiceAccounts and what they may write
//! ([`tenants`]), ConfigMaps and Secrets only the cluster holds that Flux units read
//! ([`cluster_objects`]). See ARCHITECTURE.md for where this sits in the flow.

pub mod chart_credentials;
mod cluster_objects;
pub mod executor;
pub mod helm_cluster;
pub mod helm_seed;
pub mod keys;
pub mod load;
pub mod plan;
pub mod render_cache;
mod settled_cache;
mod tenants;
mod trusted_keys;
mod unit_waits;
pub mod units_live;

pub use executor::{block_on, execute, ClusterEnd, ClusterOutcome};
pub use plan::{ClusterRun, KubeconfigSecret, Run, SecretReads};
