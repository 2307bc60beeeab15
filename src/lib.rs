//! # tend — a run-to-completion GitOps reconciler for Kubernetes
//!
//! A run flows through the pipeline stages, one module each:
//!
//! | module      | stage | does I/O? |
//! |-------------|-------|-----------|
//! | [`cli`]     | argument parsing (clap), logging setup, exit codes | — |
//! | [`commands`]| one file per subcommand: parse its arguments, call its operation | — |
//! | [`source`]  | where desired state comes from: a local directory or a git commit; walking the tree (`.tendignore`, hidden files, symlinks) | files, git |
//! | [`render`]  | YAML parsing (the only module that parses YAML), validation, targeting, tend's kinds expanded into plain objects, config-hash annotations, stable ordering | none |
//! | [`kinds`]   | the Rust types of tend's own kinds (`tend.dev/v1alpha1`) and their CRDs | none |
//! | [`chaos`]   | the decisions of one `tend chaos` pass: candidates, exclusions, seeded random hits, lorem ipsum | none |
//! | [`report`]  | printing results: YAML/JSON object streams, summaries, secret masking | stdout |
//!
//! `render` takes no client and does no I/O, so it is unit- and property-tested directly.
//! Errors are one enum per layer ([`source::SourceError`], [`render::RenderError`]) with
//! `#[source]` chains; [`cli::main`] turns them into a message on stderr and exit code 2.

pub mod apply;
pub mod chaos;
pub mod cli;
pub mod cluster;
pub mod commands;
pub mod error;
pub mod kinds;
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
