//! # tend — a run-to-completion GitOps reconciler for Kubernetes
//!
//! A run flows through the pipeline stages, one module each:
//!
//! | module      | stage | does I/O? |
//! |-------------|-------|-----------|
//! | [`cli`]     | argument parsing (clap), logging setup, exit codes | — |
//! | [`commands`]| one file per subcommand: parse its arguments, call its operation | — |
//! | [`ops`]     | the operations: load the desired state; diff/apply (`reconcile`); one chaos pass | via the modules below |
//! | [`source`]  | where desired state comes from: a local directory or a git commit; walking the tree (`.tendignore`, hidden files, symlinks) | files, git |
//! | [`object`]  | the unit every stage works on: an object as JSON, its origin and identity; Kubernetes name syntax | none |
//! | [`render`]  | YAML parsing (the only module that parses YAML), validation, targeting, tend's kinds expanded into plain objects, config-hash annotations, stable ordering; then completion with the cluster's view ([`render::complete`]: CopyRule copies, ownerReferences, config hashes of live config) | none |
//! | [`kinds`]   | tend's own kinds (`tend.dev/v1alpha1`), one folder each behind [`kinds::Kind`]: type and CRD, validation, expansion, cluster reads (through [`kinds::view::Reader`]), status | none |
//! | [`plan`]    | normalization, the fast path (unchanged from a LIST alone), masked unified diffs | none |
//! | [`cluster`] | **the only module that talks to the Kubernetes API**: connect, discovery, list/get/apply/delete with retries, request counts | Kubernetes API |
//! | [`apply`]   | the engine: plan against the cluster, apply in stages, prune with guards, ApplySet inventory, Lease lock, tend's kinds live (status, owners, recreation, reloads) | via [`cluster`] |
//! | [`kstatus`] | whether a live object is ready for `--wait`, in kstatus terms (Current / InProgress / Failed / Unknown, with a reason); the `tend.dev/wait` annotation | none |
//! | [`chaos`]   | the decisions of one `tend chaos` pass: candidates, exclusions, seeded random hits, lorem ipsum | none |
//! | [`report`]  | printing results: YAML/JSON object streams, text/json/markdown run reports, secret masking | stdout |
//!
//! `render`, `plan` and `chaos` take no client and do no I/O, so they are unit- and
//! property-tested directly; time and randomness are passed in. Errors are one enum per layer
//! ([`source::SourceError`], [`render::RenderError`], [`cluster::ClusterError`],
//! [`apply::engine::EngineError`]) with `#[source]` chains, gathered in [`Error`];
//! [`cli::main`] turns them into a message on stderr and exit code 2.

pub mod apply;
pub mod chaos;
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod error;
pub mod kinds;
pub mod kstatus;
pub mod object;
pub mod ops;
pub mod plan;
pub mod problem;
pub mod render;
pub mod report;
pub mod source;

pub use error::Error;

/// Field manager and tooling name used for everything tend writes.
pub const FIELD_MANAGER: &str = "tend";
/// tend's own API group.
pub const GROUP: &str = "tend.dev";
/// tend's own API version within [`GROUP`].
pub const VERSION: &str = "v1alpha1";
/// `GROUP/VERSION`, the apiVersion of tend's kinds.
pub const API_VERSION: &str = "tend.dev/v1alpha1";
/// The ApplySet membership label: every object tend applies carries
/// `applyset.kubernetes.io/part-of: <id>`.
pub const PART_OF_LABEL: &str = "applyset.kubernetes.io/part-of";
