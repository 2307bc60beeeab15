//! # tend — a run-to-completion GitOps reconciler for Kubernetes
//!
//! A run flows one way through the pipeline stages, one module each. No two modules import
//! each other, directly or around a loop: `tests/cli/architecture.rs` fails on any cycle and
//! on files that outgrow their limits; `scripts/module-graph.py` prints the graph.
//!
//! source → render (+ kinds) → cluster view (apply::live) → render::complete → plan → apply → report
//!
//! ARCHITECTURE.md at the repository's root draws one run with these names, says which
//! module may call which and where concurrency lives.
//!
//! | module      | stage | does I/O? |
//! |-------------|-------|-----------|
//! | [`cli`]     | the clap definition, logging setup, and the one place results become exit codes ([`cli::exit_code`]: 0 success / in sync, 1 differences, 2 error) | — |
//! | [`commands`]| one file per subcommand: its flags, the options it builds once ([`ops::reconcile::ReconcileOptions`], [`ops::chaos::ChaosOptions`]), a call into its operation, printing through [`report`]; `-o` is checked before any work | stdout |
//! | [`ops`]     | the operations, free of the CLI: diff/apply ([`ops::reconcile`], which builds a [`run::Run`]); one chaos pass. Domain options in, domain results and a [`ops::Verdict`] out | via the modules below |
//! | [`run`]     | a run as a plan ([`run::Run`] of [`run::ClusterRun`]s; the source's [`run::Unit`]s and what each needs of the cluster) and **the executor**, the only place tasks are started and joined ([`run::executor`]): connecting while the source is read and rendered, secrets, Helm's capabilities, lookups and seed, the cluster view, the engine | via the modules below |
//! | [`source`]  | where desired state comes from: a local directory or a git commit; walking the tree (`.tendignore`, hidden files, symlinks); kustomize build units; Helm chart directories, read whole | files, git, kustomize |
//! | [`sops`]    | SOPS-encrypted files decrypted natively (age and OpenPGP keys, AES-256-GCM values, the MAC): parsed documents or file bytes and [`sops::Keys`] in, plaintext or a [`sops::SopsError`] out; used by [`render`] for plain manifests and by [`source`] for kustomize inputs (decrypted into a private copy of the tree) | none |
//! | [`helm`]    | Helm charts rendered natively: Go's `text/template` ([`helm::template`]), Helm's and Sprig's functions ([`helm::funcs`], `toYaml` with go-yaml's exact text), a chart's render as `helm template` gives it ([`helm::chart`]); used by [`render`] for `HelmChart` objects, on charts [`source`] read | none |
//! | [`object`]  | the unit every stage works on: an object as JSON, its origin and identity; Kubernetes name syntax | none |
//! | [`yaml`]    | the only module that parses YAML: documents with their lines (a path → line locator for every message), List documents expanded per item, loader limits (nesting, aliases), YAML → JSON | none |
//! | [`render`]  | validation (wave and hook annotations in [`render::waves`]), targeting, tend's kinds expanded into plain objects, config-hash annotations, stable ordering — once, offline; then [`render::complete`] with the cluster's view (CopyRule copies, ownerReferences, config hashes of live config) | none |
//! | [`kinds`]   | tend's own kinds (`tend.dev/v1alpha1`), one folder each behind [`kinds::Kind`]: type and CRD, validation, expansion, cluster reads (through [`kinds::read::Reader`]), typed status; the decisions of one `tend chaos` pass ([`kinds::chaos_agent::pass`]) | none |
//! | [`plan`]    | the pure planner ([`plan::planner`]: triage by the fast path, create/update/replace/unchanged/prune/kept/recreate, per-object policies, prune guards), normalization, masked unified diffs, drift (which other field manager last wrote a changed field), the ApplySet inventory | none |
//! | [`cluster`] | **the only module that talks to the Kubernetes API**: the [`cluster::Session`], discovery, one call wrapper for every verb (retries, what was attempted) over a client layer that rides out outages under the run's `--retry-timeout` budget and logs each request at `-v` ([`cluster::outage`]), label-selected and metadata-only LISTs, request and byte counts; server errors cut to their cause ([`cluster::cause`], pure) | Kubernetes API |
//! | [`apply`]   | the engine, one file per step: [`apply::engine`] orchestrates prepare → observe → plan → stages → prune → parent record → wait, under the [`apply::lock`], and stops starting writes on a signal ([`apply::interrupted`]); [`apply::waves`] runs the stages wave by wave with the hooks ([`apply::hooks`]) around them; [`apply::live`] reads the cluster view for tend's kinds and reloads | via [`cluster`] |
//! | [`kstatus`] | whether a live object is ready for `--wait`, in kstatus terms (Current / InProgress / Failed / Unknown, with a reason); the `tend.dev/wait` annotation (checked by [`render`], obeyed by [`apply::wait`]) | none |
//! | [`interrupt`] | a run's stop request (first SIGTERM/SIGINT), passed down to the engine (no new writes) and the cluster client (no more waiting through outages) | none |
//! | [`text`]    | the words messages share: [`text::count`] (`1 object`, `3 objects`) | none |
//! | [`parallel`]| the one thread budget and the one parallel map (results in item order) that render and source use | none |
//! | [`report`]  | printing results: YAML/JSON object streams, text/json/markdown run reports sized for CI logs (one line per create/prune, markdown under GitLab's note limit), chaos reports; secret values masked once for every format | — |
//!
//! `render`, `kinds`, `plan` and `kstatus` take no client and do no I/O, so they are
//! unit- and property-tested directly; time and randomness are passed in. Errors are one enum
//! per layer ([`source::SourceError`], [`render::RenderError`], [`cluster::ClusterError`],
//! [`apply::engine::EngineError`]) with `#[source]` chains, gathered in [`Error`] (whose
//! `Cluster` variant holds connection and discovery errors met outside the engine);
//! [`cli::main`] turns them into a message on stderr and exit code 2.

mod apply;
mod cli;
mod cluster;
mod commands;
mod error;
mod helm;
mod interrupt;
mod kinds;
mod kstatus;
mod object;
mod ops;
mod parallel;
mod plan;
mod problem;
mod render;
mod report;
mod run;
mod sops;
mod source;
mod text;
mod yaml;

pub use error::Error;

// The library's surface: what the binary and the integration tests use. Everything else is
// private to the crate, so the compiler finds what nothing uses.
pub use cli::main;
pub use kinds::{crds, root_field_problems, TendKind, TendObject};
pub use plan::{fast_path, normalize::normalize};
pub use render::{render, RenderOptions, Rendered};
pub use source::{git, SourceFile};
/// YAML as tend writes it: kubectl (YAML 1.1) and tend read back the values written.
pub use yaml::to_yaml;

/// Helm charts as tend reads and renders them, for the corpus test against `helm template`.
pub mod charts {
    pub use crate::helm::chart::{render, Chart, Manifest, Release};
    pub use crate::helm::hooks::{classify, Hook};
    pub use crate::helm::template::RenderLimits;
    pub use crate::helm::template_text::helm_template_text;
    pub use crate::helm::values::{merge_maps, parse_set};
    pub use crate::source::charts::read_chart;
    pub use crate::yaml::{parse_helm_yaml, parse_value};
}

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
