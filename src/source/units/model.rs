//! The model shared by every controller's expansion (see [`super`] for the contract): unit
//! identities, what a controller found and produced, the sources units read, the
//! [`Expander`] trait, and the helpers both controllers use.

use crate::problem::Problem;
use crate::source::{Checkout, SourceFile};
use crate::yaml;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Annotation on a tend `HelmChart` synthesized from a controller's release: its value is
/// the unit chain. Render renders the chart and leaves the HelmChart object out.
pub const EXPANDED_ANNOTATION: &str = "tend.dev/expanded-from";

/// Which controller a unit belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Controller {
    Flux,
    ArgoCd,
}

impl Controller {
    pub fn name(self) -> &'static str {
        match self {
            Controller::Flux => "Flux",
            Controller::ArgoCd => "Argo CD",
        }
    }
}

/// A controller object by identity: `Kustomization staging/apps`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct UnitId {
    pub controller: Controller,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for UnitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// `Flux Kustomization staging/apps → HelmRelease podinfo/podinfo`.
pub fn chain_label(chain: &[UnitId]) -> String {
    let mut out = String::new();
    let mut last = None;
    for (i, id) in chain.iter().enumerate() {
        if i > 0 {
            out.push_str(" → ");
        }
        if last != Some(id.controller) {
            out.push_str(id.controller.name());
            out.push(' ');
        }
        out.push_str(&id.to_string());
        last = Some(id.controller);
    }
    out
}

/// Whether a file (by its label) is what an Argo CD unit produced: Argo CD reads Helm's hook
/// annotations on every object it syncs, not only on a chart's.
pub fn made_by_argo(label: &std::path::Path) -> bool {
    label
        .to_string_lossy()
        .contains(&format!("({} ", Controller::ArgoCd.name()))
}

/// A tree of manifests or charts a Flux unit reads: its root directory and revision.
pub struct Tree {
    pub root: PathBuf,
    pub revision: Option<String>,
    /// Whether it is the checkout under test.
    pub is_checkout: bool,
    /// The private directory a built tree lives in (an ExternalArtifact), removed when the
    /// last holder drops it.
    pub _staging: Option<std::sync::Arc<tempfile::TempDir>>,
}

/// What a controller makes of one of its kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Expanded into objects.
    Unit,
    /// Named by units (a repository of manifests or charts).
    Source,
    /// The controller's, but neither (an alert, a project): not applied, not expanded.
    Inert,
}

/// A controller's document found in the desired state.
#[derive(Debug, Clone)]
pub struct Found {
    pub id: UnitId,
    pub api_version: String,
    /// The file's label, as messages name it.
    pub file: PathBuf,
    pub doc: yaml::Document,
    /// The units this document came from (empty: the walked directory's own files).
    pub chain: Arc<Vec<UnitId>>,
    /// The cluster the unit it came from targets, when not the run's own.
    pub target: Option<KubeConfigRef>,
}

impl Found {
    /// The line of a field, or the document's.
    pub fn line_of(&self, keys: &[&str]) -> usize {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        self.doc.line_of(&keys)
    }

    pub fn problem(&self, keys: &[&str], message: impl Into<String>) -> Problem {
        Problem::new(&self.file, self.line_of(keys), message)
    }

    pub fn spec(&self) -> &Value {
        self.doc.value.get("spec").unwrap_or(&Value::Null)
    }
}

/// The sources found so far, by kind, namespace and name; and every file read so far, for
/// the ConfigMaps and Secrets units read values from.
#[derive(Debug, Default)]
pub struct Sources {
    by_id: BTreeMap<(String, String, String), Found>,
    pub(super) files: Vec<SourceFile>,
    pub(super) default_namespace: String,
}

impl Sources {
    /// The data of a ConfigMap or Secret of the desired state (a Secret's decoded), by key;
    /// an error for a SOPS-encrypted one (its values are not read for a unit).
    pub fn config_data(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<BTreeMap<String, String>>, String> {
        let candidates = self
            .files
            .iter()
            .filter(|f| f.text.contains(kind) && f.text.contains(name));
        for file in candidates {
            let (docs, _) = crate::source::kustomize_annotations::parse_source(
                &file.path,
                &file.text,
                file.unit.is_some(),
            );
            for doc in docs {
                let v = &doc.value;
                let text = |p: &str| v.pointer(p).and_then(Value::as_str);
                let ns = text("/metadata/namespace").unwrap_or(&self.default_namespace);
                if text("/kind") != Some(kind)
                    || text("/apiVersion") != Some("v1")
                    || text("/metadata/name") != Some(name)
                    || ns != namespace
                {
                    continue;
                }
                if crate::sops::has_metadata(v) {
                    return Err(format!(
                        "{kind} {namespace}/{name} is SOPS-encrypted (at {}:{}); tend does not read a unit's values from an encrypted object yet",
                        file.path.display(),
                        doc.line
                    ));
                }
                return Ok(Some(config_entries(v)));
            }
        }
        Ok(None)
    }

    pub fn get(&self, kind: &str, namespace: &str, name: &str) -> Option<&Found> {
        self.by_id
            .get(&(kind.to_string(), namespace.to_string(), name.to_string()))
    }

    /// The sources of one kind, in name order.
    pub fn of_kind<'s>(&'s self, kind: &'s str) -> impl Iterator<Item = &'s Found> + 's {
        self.by_id
            .iter()
            .filter(move |((k, _, _), _)| k == kind)
            .map(|(_, found)| found)
    }

    /// The other documents of the desired state a unit reads (ConfigMaps and Secrets of
    /// values or substitutions) are looked up here too.
    pub(super) fn insert(&mut self, found: Found) {
        let key = (
            found.id.kind.clone(),
            found.id.namespace.clone(),
            found.id.name.clone(),
        );
        self.by_id.entry(key).or_insert(found);
    }
}

/// What expanding a unit came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Expanded,
    /// `spec.suspend: true`: nothing applied, as the controller would.
    Suspended,
    /// The unit's tree is the walked directory itself (the bootstrap `flux-system`
    /// Kustomization): its objects are the run's own.
    Root,
    /// Not expanded, with the reason (shown in reports).
    NotExpanded(String),
}

/// How a live controller's copy of a unit is read and judged (the no-fight rule).
#[derive(Debug, Clone)]
pub struct LiveRule {
    /// The API group of the unit's kind (read in whatever version the cluster serves).
    pub group: &'static str,
    /// Whether the live object is active (reconciled by its controller).
    pub active: fn(&Value) -> bool,
    /// The command or step that makes it inactive.
    pub way_out: String,
}

/// One unit expanded: what a report shows and what the run checks once connected.
#[derive(Debug, Clone)]
pub struct Produced {
    pub files: Vec<SourceFile>,
    /// Charts read from a source's tree, by the key their HelmChart's `spec.chart` names
    /// (an absolute path, so it never meets the walked directory's own charts).
    pub charts: Vec<(PathBuf, crate::helm::chart::Chart)>,
    pub outcome: Outcome,
    /// The source revision read (a commit, a chart version).
    pub revision: Option<String>,
    /// A release's chart in a repository: repository, name and version range (the version
    /// it resolves to becomes the revision once fetched).
    pub chart: Option<(String, String, String)>,
    pub depends_on: Vec<UnitId>,
    pub live: Option<LiveRule>,
    pub problems: Vec<Problem>,
    /// The namespace its files' namespaced objects without one get (else `--namespace`).
    pub namespace: Option<String>,
    /// Directories of the checkout under test (relative to its root) the unit syncs: files
    /// the walk found there are the unit's, not also the run's own (an Argo CD app of apps
    /// run from the directory that holds all of it).
    pub claims: Vec<PathBuf>,
    /// Its own wave among what the unit it came from syncs (an Argo CD Application's
    /// `argocd.argoproj.io/sync-wave`): added to that unit's wave.
    pub sync_wave: i64,
    /// When it is ready, as its controller judges (Flux's `wait`, `healthChecks`,
    /// `timeout`; Helm's wait); none: as tend's waves judge (every object ready).
    pub readiness: Option<Readiness>,
}

/// When a unit is ready, as its controller judges it: which of what it applies must be ready,
/// within how long, before the units that depend on it start and before the run ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    /// On its first apply (none of its objects in the cluster yet): Helm's install.
    pub install: WaitRule,
    /// On the next ones: Helm's upgrade.
    pub upgrade: WaitRule,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitRule {
    pub checks: Checks,
    /// How long it may take, with the field that says so (`spec.timeout`); none: `--timeout`.
    pub timeout: Option<(std::time::Duration, String)>,
}

/// What must be ready for a unit to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checks {
    /// Every object it applies (Jobs complete too unless `jobs` is false).
    All { jobs: bool },
    /// The objects named (Flux's `healthChecks`), wherever they come from.
    Named(Vec<CheckRef>),
    /// Nothing: ready once applied.
    Applied,
}

/// An object a unit's health checks name, with the line naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRef {
    pub api_version: String,
    pub kind: String,
    /// None: a cluster-scoped object.
    pub namespace: Option<String>,
    pub name: String,
    pub line: usize,
}

impl Produced {
    pub fn outcome(outcome: Outcome) -> Produced {
        Produced {
            files: Vec::new(),
            charts: Vec::new(),
            outcome,
            revision: None,
            chart: None,
            depends_on: Vec::new(),
            live: None,
            problems: Vec::new(),
            namespace: None,
            claims: Vec::new(),
            sync_wave: 0,
            readiness: None,
        }
    }

    pub fn failed(problem: Problem) -> Produced {
        let mut produced = Produced::outcome(Outcome::NotExpanded(problem.message.clone()));
        produced.problems.push(problem);
        produced
    }
}

/// A unit of the run, expanded or not.
#[derive(Debug, Clone)]
pub struct ExpandedUnit {
    pub id: UnitId,
    pub file: PathBuf,
    pub line: usize,
    /// The units it came from, outermost first.
    pub parents: Vec<UnitId>,
    pub outcome: Outcome,
    pub revision: Option<String>,
    /// See [`Produced::chart`].
    pub chart: Option<(String, String, String)>,
    /// The labels of the files it produced.
    pub files: Vec<PathBuf>,
    pub depends_on: Vec<UnitId>,
    pub live: Option<LiveRule>,
    /// The cluster it targets through a kubeconfig Secret, when not the run's own.
    pub target: Option<KubeConfigRef>,
    /// See [`Produced::sync_wave`].
    pub sync_wave: i64,
    /// Its depth in the `dependsOn` graph (0: depends on nothing), plus the sync waves of
    /// it and the units it came from: the wave its objects are applied in
    /// (`render::waves::UNIT_WAVE_STEP` apart), so a unit starts when the units it
    /// depends on, and those of lower sync waves beside it, are ready.
    pub wave: i64,
    /// A Flux unit's `spec.serviceAccountName` (see `tenant.rs`).
    pub service_account: Option<String>,
    /// See [`Produced::readiness`].
    pub readiness: Option<Readiness>,
}

impl ExpandedUnit {
    /// Whether an object of `file` is the unit's: one of its files, or a chart rendered
    /// from one.
    pub fn produced(&self, file: &Path) -> bool {
        let text = file.to_string_lossy();
        self.files.iter().any(|own| {
            let own = own.to_string_lossy();
            text == own || text.starts_with(&format!("{own} (chart "))
        })
    }

    /// `Flux Kustomization staging/apps → HelmRelease podinfo/podinfo`.
    pub fn label(&self) -> String {
        let mut chain = self.parents.clone();
        chain.push(self.id.clone());
        chain_label(&chain)
    }
}

/// What the expansion needs of the run.
pub struct Context<'a> {
    pub checkout: &'a Checkout,
    pub cache_dir: &'a Path,
    /// The namespace of a controller object that names none (`--namespace`).
    pub default_namespace: &'a str,
    pub kustomize: &'a crate::source::kustomize::KustomizeOptions,
    /// The cluster the run is for (`--cluster`): a unit naming it as its destination means
    /// the cluster tend runs against.
    pub cluster: Option<&'a str>,
    /// `--units-for-kubeconfig-secret`: the run is for the cluster of this kubeconfig Secret.
    pub for_kubeconfig: Option<&'a KubeConfigRef>,
    /// The clusters of a run over several (none for a run of one): Argo CD destinations
    /// naming one are applied in that cluster's part of the run, and the clusters generator
    /// selects from them.
    pub run_clusters: &'a [crate::source::run_cluster::RunCluster],
    /// The run's trusted keys (`--trusted-keys`, `--trusted-keys-secret`), for the sources'
    /// `spec.verify`.
    pub trusted_keys: &'a crate::source::verify::TrustedKeys,
    /// ConfigMaps and Secrets read from the cluster for units (`None`: a run with no
    /// cluster, `tend render`); see `cluster_objects.rs`.
    pub cluster_objects: Option<&'a super::cluster_objects::ClusterObjects>,
    /// Logins of chart repositories units found (a HelmRepository's `secretRef`), added to
    /// the run's own for fetching charts.
    pub chart_logins: &'a std::sync::Mutex<crate::source::charts::credentials::Credentials>,
    /// Sources' trees as source-controller archives them, made once per expansion.
    pub archives: &'a super::flux_archives::Archives,
}

/// A kubeconfig Secret a unit names for its target cluster (hub and spoke), in the hub
/// cluster: Flux's `spec.kubeConfig.secretRef` in the unit's namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KubeConfigRef {
    pub namespace: String,
    pub name: String,
    /// `secretRef.key`; none: Flux's `value`, else `value.yaml`.
    pub key: Option<String>,
}

impl KubeConfigRef {
    /// Whether both name the same Secret (the key aside: a Secret is one cluster).
    pub fn same_secret(&self, other: &KubeConfigRef) -> bool {
        self.namespace == other.namespace && self.name == other.name
    }

    /// The keys to read the kubeconfig from, in Flux's order.
    pub fn keys(&self) -> Vec<String> {
        match &self.key {
            Some(key) => vec![key.clone()],
            None => vec!["value".into(), "value.yaml".into()],
        }
    }

    /// As recorded on a hub's ApplySet parent: `namespace/name`, or `namespace/name:key`.
    pub fn recorded(&self) -> String {
        match &self.key {
            Some(key) => format!("{self}:{key}"),
            None => self.to_string(),
        }
    }

    /// Read back what [`KubeConfigRef::recorded`] wrote; `None` for anything else.
    pub fn from_recorded(text: &str) -> Option<KubeConfigRef> {
        let (secret, key) = match text.split_once(':') {
            Some((secret, key)) => (secret, Some(key.to_string())),
            None => (text, None),
        };
        let (namespace, name) = secret.split_once('/')?;
        let valid = |part: &str| !part.is_empty() && !part.contains('/');
        (valid(namespace) && valid(name) && key.as_deref().is_none_or(valid)).then(|| {
            KubeConfigRef {
                namespace: namespace.to_string(),
                name: name.to_string(),
                key,
            }
        })
    }
}

impl std::fmt::Display for KubeConfigRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl Context<'_> {
    /// The walked directory relative to the repository root (`clusters/staging`), `` for the
    /// root itself.
    pub fn walked_dir(&self) -> PathBuf {
        self.checkout
            .dir
            .strip_prefix(&self.checkout.root)
            .map(crate::source::paths::normalize)
            .unwrap_or_default()
    }

    /// Whether a source URL means the checkout under test (see [`same_repository`]).
    pub fn is_checkout_url(&self, url: &str) -> bool {
        self.checkout
            .url
            .as_deref()
            .is_some_and(|own| same_repository(own, url))
    }

    /// The repository root of the checkout under test, with its revision.
    pub fn tree_of_checkout(&self) -> (PathBuf, Option<String>) {
        (self.checkout.root.clone(), self.checkout.commit.clone())
    }
}

/// A controller plugged into the loop.
pub trait Expander: Sync {
    fn controller(&self) -> Controller;
    /// A string every document of this controller holds (`toolkit.fluxcd.io`): files
    /// without it are not parsed.
    fn marker(&self) -> &'static str;
    /// What `api_version`/`kind` is to this controller, `None` if not its own.
    fn role(&self, api_version: &str, kind: &str) -> Option<Role>;
    /// Expand one unit, reading the sources found so far.
    fn expand(&self, unit: &Found, sources: &Sources, ctx: &Context) -> Produced;
    /// The kubeconfig Secret a unit targets another cluster through, if any.
    fn kube_config(&self, _unit: &Found) -> Option<KubeConfigRef> {
        None
    }
}

/// Whether two repository URLs name the same repository, as a controller's source names the
/// one under test: scheme, credentials, a trailing `.git` or `/` and the host's case aside
/// (`git@github.com:org/repo.git` is `https://github.com/org/repo`).
pub fn same_repository(a: &str, b: &str) -> bool {
    let (a, b) = (normalized_repository(a), normalized_repository(b));
    !a.is_empty() && a == b
}

fn normalized_repository(url: &str) -> String {
    let url = url.trim();
    let rest = match url.find("://") {
        Some(i) => &url[i + 3..],
        // scp-like `git@host:path`
        None => url,
    };
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let (host, path) = match rest.split_once('/') {
        Some((host, path)) if !url.contains("://") && host.contains(':') => {
            let (h, first) = host.split_once(':').unwrap_or((host, ""));
            (h.to_string(), format!("{first}/{path}"))
        }
        Some((host, path)) => (host.to_string(), path.to_string()),
        None => match rest.split_once(':') {
            Some((h, p)) => (h.to_string(), p.to_string()),
            None => (rest.to_string(), String::new()),
        },
    };
    // A port is the scheme's business (ssh on 22, https on 443).
    let host = host.split(':').next().unwrap_or("").to_ascii_lowercase();
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path).trim_matches('/');
    if host.is_empty() || path.is_empty() {
        return String::new();
    }
    format!("{host}/{path}")
}

/// A ConfigMap's `data`, or a Secret's `data` decoded and `stringData`.
pub(super) fn config_entries(value: &Value) -> BTreeMap<String, String> {
    use base64::Engine;
    let mut out = BTreeMap::new();
    let is_secret = value.get("kind").and_then(Value::as_str) == Some("Secret");
    if let Some(Value::Object(data)) = value.get("data") {
        for (k, v) in data {
            let Some(text) = v.as_str() else { continue };
            let text = if is_secret {
                match base64::engine::general_purpose::STANDARD.decode(text.trim()) {
                    Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    Err(_) => continue,
                }
            } else {
                text.to_string()
            };
            out.insert(k.clone(), text);
        }
    }
    if let Some(Value::Object(data)) = value.get("stringData").filter(|_| is_secret) {
        for (k, v) in data {
            if let Some(text) = v.as_str() {
                out.insert(k.clone(), text.to_string());
            }
        }
    }
    out
}

/// A Flux unit's spec, or what the unit produces instead: the problems of the fields its
/// version does not have, or that it is suspended.
pub fn active_spec<'a>(
    unit: &'a Found,
    known: &[&str],
    version: &str,
) -> Result<&'a Value, Box<Produced>> {
    let problems = unknown_fields(unit, known, version);
    if !problems.is_empty() {
        let mut produced = Produced::outcome(Outcome::NotExpanded("invalid spec".into()));
        produced.problems = problems;
        return Err(Box::new(produced));
    }
    let spec = unit.spec();
    if spec.get("suspend").and_then(Value::as_bool) == Some(true) {
        return Err(Box::new(Produced::outcome(Outcome::Suspended)));
    }
    Ok(spec)
}

/// Names the fields of `spec` a published schema does not know, at their lines.
pub fn unknown_fields(found: &Found, known: &[&str], version: &str) -> Vec<Problem> {
    let Some(spec) = found.spec().as_object() else {
        return Vec::new();
    };
    let known: BTreeSet<&str> = known.iter().copied().collect();
    spec.keys()
        .filter(|k| !known.contains(k.as_str()))
        .map(|k| {
            found.problem(
                &["spec", k],
                format!(
                    "spec.{k} is not a field of {} {version}; remove it or fix its spelling (see the controller's API reference)",
                    found.id.kind
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_urls_name_the_same_repository_whatever_their_scheme() {
        let same = [
            ("https://github.com/org/repo", "git@github.com:org/repo.git"),
            (
                "ssh://git@GitHub.com/org/repo.git",
                "https://github.com/org/repo/",
            ),
            (
                "ssh://git@github.com:22/org/repo",
                "https://token@github.com/org/repo",
            ),
        ];
        for (a, b) in same {
            assert!(same_repository(a, b), "{a} {b}");
        }
        assert!(!same_repository(
            "https://github.com/org/repo",
            "https://github.com/org/other"
        ));
        assert!(!same_repository("", ""));
    }

    #[test]
    fn chains_name_each_controller_once() {
        let id = |controller, kind: &str, name: &str| UnitId {
            controller,
            kind: kind.into(),
            namespace: "ns".into(),
            name: name.into(),
        };
        let chain = [
            id(Controller::Flux, "Kustomization", "apps"),
            id(Controller::Flux, "HelmRelease", "web"),
        ];
        assert_eq!(
            chain_label(&chain),
            "Flux Kustomization ns/apps → HelmRelease ns/web"
        );
    }
}
