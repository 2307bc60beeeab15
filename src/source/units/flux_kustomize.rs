//! Flux's `Kustomization` expanded as kustomize-controller builds it (fluxcd/pkg
//! `kustomize/kustomize_generator.go`, `kustomize_varsub.go`): the source's tree at
//! `spec.path`, in a private copy where a `kustomization.yaml` is generated when the path
//! has none (every YAML file below it, a directory holding a kustomization as one resource)
//! and the unit's `targetNamespace`, `namePrefix`/`nameSuffix`, `patches`, `images` and
//! `components` are written into it; built with tend's kustomize builder; then
//! `commonMetadata`, the controller's owner labels (`kustomize.toolkit.fluxcd.io/name` and
//! `/namespace`) and `postBuild` substitution applied to each object, and the unit's
//! `prune: false` and `force: true` as tend's per-object policies
//! (`tend.dev/prune: disabled`, `tend.dev/replace: on-immutable`).

use super::lookup::Blocked;
use super::model::Tree;
use super::model::{active_spec, Context, Found, Outcome, Produced, Sources};
use crate::problem::Problem;
use crate::source::kustomize::{self, KUSTOMIZATION_FILES};
use crate::source::paths::{leaves_root, normalize};
use crate::source::SourceFile;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// The fields of `spec` each version's published schema has.
const V1_FIELDS: &[&str] = &[
    "commonMetadata",
    "dependsOn",
    "decryption",
    "interval",
    "retryInterval",
    "kubeConfig",
    "path",
    "postBuild",
    "prune",
    "deletionPolicy",
    "healthChecks",
    "namePrefix",
    "nameSuffix",
    "patches",
    "images",
    "serviceAccountName",
    "sourceRef",
    "suspend",
    "targetNamespace",
    "timeout",
    "force",
    "wait",
    "buildMetadata",
    "components",
    "ignoreMissingComponents",
    "healthCheckExprs",
    "ignore",
];
const V1BETA2_FIELDS: &[&str] = &[
    "commonMetadata",
    "dependsOn",
    "decryption",
    "interval",
    "retryInterval",
    "kubeConfig",
    "path",
    "postBuild",
    "prune",
    "healthChecks",
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "images",
    "serviceAccountName",
    "sourceRef",
    "suspend",
    "targetNamespace",
    "timeout",
    "force",
    "wait",
    "components",
    "validation",
];

pub fn expand(unit: &Found, sources: &Sources, ctx: &Context) -> Produced {
    let version = unit.api_version.split('/').nth(1).unwrap_or("");
    let known = if version == "v1" {
        V1_FIELDS
    } else {
        V1BETA2_FIELDS
    };
    let spec = match active_spec(unit, known, version) {
        Ok(spec) => spec,
        Err(produced) => return *produced,
    };
    let Some(source_ref) = spec.get("sourceRef") else {
        return Produced::failed(unit.problem(
            &["spec"],
            "spec.sourceRef is missing; name the GitRepository holding spec.path",
        ));
    };
    let tree = match super::flux_artifacts::source_tree(
        unit,
        source_ref,
        &["spec", "sourceRef"],
        sources,
        ctx,
    ) {
        Ok(tree) => tree,
        Err(problem) => return Produced::failed(problem),
    };
    let path = spec_path(spec);
    if leaves_root(&path) {
        return Produced::failed(unit.problem(
            &["spec", "path"],
            "spec.path leaves the repository; write a path relative to the repository root",
        ));
    }
    let walked = ctx.walked_dir();
    if tree.is_checkout && path == walked {
        let mut produced = Produced::outcome(Outcome::Root);
        produced.revision = tree.revision;
        return produced;
    }
    if tree.is_checkout && path.starts_with(&walked) {
        // Its files are walked already, as they are: built again, they would be applied twice.
        return Produced::failed(unit.problem(
            &["spec", "path"],
            format!(
                "spec.path {} is inside the directory tend reads ({}), whose files it applies as they are; run tend with --path on the cluster's own directory (the one `flux bootstrap` names), or apply Flux's objects as they are with --apply-controller-objects",
                path.display(),
                if walked.as_os_str().is_empty() { ".".to_string() } else { walked.display().to_string() },
            ),
        ));
    }
    // Read as kustomize-controller gets it: archived without what source-controller leaves out.
    let tree = match super::flux_ignore::archived(
        tree,
        (unit, source_ref),
        &["spec", "sourceRef"],
        sources,
        ctx.archives,
    ) {
        Ok(tree) => tree,
        Err(problem) => return Produced::failed(problem),
    };
    if !tree.root.join(&path).is_dir() {
        return Produced::failed(unit.problem(
            &["spec", "path"],
            format!(
                "spec.path {} is not a directory of the source's tree; fix the path (it is relative to the repository root)",
                path.display()
            ),
        ));
    }
    let keys = match super::flux_decrypt::keys(unit, sources, ctx) {
        Ok(keys) => keys,
        Err(blocked) => return super::lookup::produced(blocked),
    };
    let mut produced = match build(unit, &tree, &path, ctx, keys.as_ref()) {
        Ok(files) => {
            let mut produced = Produced::outcome(Outcome::Expanded);
            produced.files = files;
            produced
        }
        Err(problems) => {
            let mut produced = Produced::outcome(Outcome::NotExpanded("build failed".into()));
            produced.problems = problems;
            produced
        }
    };
    produced.revision = tree.revision;
    if !produced.problems.is_empty() {
        return produced;
    }
    if let Some(keys) = &keys {
        let decrypted = super::flux_decrypt::decrypt_secret_values(&mut produced.files, keys, unit);
        if let Err(problem) = decrypted {
            return Produced::failed(problem);
        }
    }
    match post_build(unit, &mut produced.files, sources, ctx) {
        Ok(()) => produced,
        Err(blocked) => super::lookup::produced(blocked),
    }
}

/// `spec.path` relative to the tree's root (`./apps` and `apps` are the same).
fn spec_path(spec: &Value) -> PathBuf {
    let path = spec.get("path").and_then(Value::as_str).unwrap_or("");
    normalize(Path::new(path.trim_start_matches('/')))
}

/// The kustomize build of `path` in a private copy of the tree, with the kustomization the
/// controller would write there.
fn build(
    unit: &Found,
    tree: &Tree,
    path: &Path,
    ctx: &Context,
    keys: Option<&crate::sops::Keys>,
) -> Result<Vec<SourceFile>, Vec<Problem>> {
    let fail = |message: String| vec![unit.problem(&["spec", "path"], message)];
    // Decrypted inputs are never kept, and a build kept without them is not this build.
    if keys.is_none() {
        if let Some(files) = kept_build(unit, tree, path, ctx) {
            return Ok(files);
        }
    }
    let copy = crate::source::private_copy::PrivateCopy::of(&tree.root)
        .map_err(|e| fail(format!("cannot copy the source's tree to build it: {e}")))?;
    let dir = copy.path().join(path);
    let (file_name, kustomization) =
        kustomization(&dir, unit).map_err(|e| vec![unit.problem(&["spec"], e)])?;
    let text = crate::yaml::to_yaml(&kustomization);
    std::fs::write(dir.join(file_name), &text)
        .map_err(|e| fail(format!("cannot write the kustomization to build: {e}")))?;
    let file = path.join(file_name);
    let Some(built) = kustomize::detect(copy.path(), path, &file, &text) else {
        return Err(fail("cannot build spec.path as a kustomization".into()));
    };
    let decrypted = match keys {
        Some(keys) => decrypt_inputs(unit, &copy, &built, keys)?,
        None => Vec::new(),
    };
    let inputs = match decrypted.is_empty() {
        true => kustomize::Inputs::AsCommitted,
        false => kustomize::Inputs::Decrypted,
    };
    let (files, problems) = kustomize::build_all(copy.path(), &[&built], ctx.kustomize, inputs);
    if problems.is_empty() && !decrypted.is_empty() {
        let plain = crate::source::encrypted::plaintexts(&decrypted);
        let forms = crate::sops::leaks::all_forms(&plain);
        let exposed = crate::source::encrypted::exposed_in_build(&files, &forms);
        if !exposed.is_empty() {
            return Err(exposed);
        }
    }
    if !problems.is_empty() {
        // The builder's message names the copy's kustomization: name the unit too.
        return Err(problems
            .into_iter()
            .map(|p| {
                unit.problem(
                    &["spec", "path"],
                    format!("building {}: {}", p.file.display(), p.message),
                )
            })
            .collect());
    }
    Ok(files)
}

/// The kept build of `path` with the kustomization the controller would write, found without
/// copying the tree (copying and removing it was most of a no-op run's time): the build in
/// the copy keys the same ([`kustomize::kept_overlay`]). Only where that kustomization is
/// `kustomization.yaml`, the name the overlay's key gives it.
fn kept_build(unit: &Found, tree: &Tree, path: &Path, ctx: &Context) -> Option<Vec<SourceFile>> {
    let (file_name, kustomization) = kustomization(&tree.root.join(path), unit).ok()?;
    if file_name != KUSTOMIZATION_FILES[0] {
        return None;
    }
    let text = crate::yaml::to_yaml(&kustomization);
    let built = kustomize::detect(&tree.root, path, &path.join(file_name), &text)?;
    let files = kustomize::kept_overlay(&tree.root, &built, &text, ctx.kustomize)?;
    tracing::debug!(
        "{} built as kept, found without copying the tree",
        path.display()
    );
    Some(files)
}

/// `spec.decryption`: the build's SOPS-encrypted inputs decrypted into its private copy
/// (none when it reads none).
fn decrypt_inputs(
    unit: &Found,
    copy: &crate::source::private_copy::PrivateCopy,
    built: &kustomize::Unit,
    keys: &crate::sops::Keys,
) -> Result<Vec<crate::source::encrypted::Decrypted>, Vec<Problem>> {
    use crate::source::encrypted;
    let reached = encrypted::reachable_units(copy.path(), built, &[]);
    let relabel = |p: Problem| {
        unit.problem(
            &["spec", "decryption"],
            format!("decrypting {}:{}: {}", p.file.display(), p.line, p.message),
        )
    };
    let files = encrypted::decrypt_for_build(copy.path(), &reached, keys, &built.file)
        .map_err(|problems| problems.into_iter().map(relabel).collect::<Vec<_>>())?;
    for (file, bytes) in &files {
        copy.write(file, bytes).map_err(|e| {
            vec![unit.problem(
                &["spec", "decryption"],
                format!("cannot write a decrypted input into the build's private copy: {e}"),
            )]
        })?;
    }
    Ok(files)
}

/// The kustomization at `dir` (found, or generated as the controller generates it), with
/// the unit's fields written into it.
fn kustomization(dir: &Path, unit: &Found) -> Result<(&'static str, Value), String> {
    let found = KUSTOMIZATION_FILES
        .iter()
        .find(|name| dir.join(name).is_file());
    let (name, mut value) = match found {
        Some(name) => {
            let text = std::fs::read_to_string(dir.join(name))
                .map_err(|e| format!("cannot read {name}: {e}"))?;
            let value = crate::yaml::parse_value(&text).unwrap_or(Value::Null);
            (*name, if value.is_object() { value } else { json!({}) })
        }
        None => ("kustomization.yaml", generated(dir)?),
    };
    let Some(map) = value.as_object_mut() else {
        return Err("the kustomization is not a map".into());
    };
    map.entry("apiVersion")
        .or_insert(json!("kustomize.config.k8s.io/v1beta1"));
    map.entry("kind").or_insert(json!("Kustomization"));
    let spec = unit.spec();
    for (field, key) in [
        ("targetNamespace", "namespace"),
        ("namePrefix", "namePrefix"),
        ("nameSuffix", "nameSuffix"),
    ] {
        if let Some(v) = spec.get(field).and_then(Value::as_str) {
            map.insert(key.into(), json!(v));
        }
    }
    for (field, key) in [
        ("patches", "patches"),
        ("patchesStrategicMerge", "patchesStrategicMerge"),
        ("patchesJson6902", "patchesJson6902"),
        ("components", "components"),
    ] {
        append(map, key, spec.get(field));
    }
    merge_images(map, spec.get("images"));
    Ok((name, value))
}

fn append(map: &mut Map<String, Value>, key: &str, extra: Option<&Value>) {
    let Some(Value::Array(extra)) = extra else {
        return;
    };
    let mut list = match map.remove(key) {
        Some(Value::Array(list)) => list,
        _ => Vec::new(),
    };
    list.extend(extra.iter().cloned());
    map.insert(key.into(), Value::Array(list));
}

/// `spec.images` over the kustomization's own: an image named in both takes the unit's
/// name, and its tag and digest together when it sets either (as the generator does).
fn merge_images(map: &mut Map<String, Value>, extra: Option<&Value>) {
    let Some(Value::Array(extra)) = extra else {
        return;
    };
    let mut list = match map.remove("images") {
        Some(Value::Array(list)) => list,
        _ => Vec::new(),
    };
    for image in extra {
        let name = image.get("name");
        match list.iter_mut().find(|i| i.get("name") == name) {
            Some(existing) => {
                let Some(existing) = existing.as_object_mut() else {
                    continue;
                };
                if let Some(new_name) = image.get("newName") {
                    existing.insert("newName".into(), new_name.clone());
                }
                if image.get("newTag").is_some() || image.get("digest").is_some() {
                    existing.remove("newTag");
                    existing.remove("digest");
                    for key in ["newTag", "digest"] {
                        if let Some(v) = image.get(key) {
                            existing.insert(key.into(), v.clone());
                        }
                    }
                }
            }
            None => list.push(image.clone()),
        }
    }
    map.insert("images".into(), Value::Array(list));
}

/// The kustomization the controller generates for a directory without one: every `.yaml`
/// and `.yml` file below it, a directory holding a kustomization as one resource.
fn generated(dir: &Path) -> Result<Value, String> {
    let mut resources = Vec::new();
    scan(dir, dir, &mut resources)?;
    resources.sort();
    if resources.is_empty() {
        // An empty kustomization does not build.
        return Ok(json!({"namespace": "_placeholder"}));
    }
    Ok(json!({ "resources": resources }))
}

fn scan(base: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let rel = || {
            format!(
                "./{}",
                path.strip_prefix(base).unwrap_or(&path).to_string_lossy()
            )
        };
        if path.is_dir() {
            if KUSTOMIZATION_FILES.iter().any(|n| path.join(n).is_file()) {
                out.push(rel());
            } else {
                scan(base, &path, out)?;
            }
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        ) {
            out.push(rel());
        }
    }
    Ok(())
}

/// `commonMetadata` and `postBuild` substitution, object by object, on the built files.
fn post_build(
    unit: &Found,
    files: &mut [SourceFile],
    sources: &Sources,
    ctx: &Context,
) -> Result<(), Blocked> {
    let spec = unit.spec();
    let common = spec.get("commonMetadata");
    let vars = super::flux_substitute::variables(unit, sources, ctx)?;
    let mut policies = Vec::new();
    if spec.get("prune").and_then(Value::as_bool) == Some(false) {
        policies.push(("tend.dev/prune", "disabled"));
    }
    if spec.get("force").and_then(Value::as_bool) == Some(true) {
        policies.push(("tend.dev/replace", "on-immutable"));
    }
    let ignore = super::flux_drift_ignore::rules(unit)?;
    // kustomize-controller labels every object it applies with its Kustomization
    // (fluxcd/pkg `ssa.ResourceManager.SetOwnerLabels`), over labels of the same keys.
    let owner = json!({"labels": {
        "kustomize.toolkit.fluxcd.io/name": unit.id.name,
        "kustomize.toolkit.fluxcd.io/namespace": unit.id.namespace,
    }});
    for file in files.iter_mut() {
        let (docs, problems) = crate::yaml::parse_file(&file.path, &file.text);
        if !problems.is_empty() {
            continue; // reported by render
        }
        let mut out = String::new();
        for doc in docs {
            let mut value = doc.value;
            if value.get("sops").is_some() {
                // Still encrypted (the unit has no `decryption`): its MAC covers its
                // metadata, so it goes on as written.
                out.push_str("---\n");
                let text = doc.text.trim_start();
                out.push_str(text);
                if !text.ends_with('\n') {
                    out.push('\n');
                }
                continue;
            }
            if let Some(common) = common {
                apply_common_metadata(&mut value, common);
            }
            let own: serde_json::Map<String, Value> = policies
                .iter()
                .copied()
                .chain(object_policies(&value))
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            if !own.is_empty() {
                // An object's own policy wins over the unit's.
                let existing = value.pointer("/metadata/annotations").cloned();
                let mut annotations = json!({ "annotations": own });
                if let Some(Value::Object(existing)) = existing {
                    for (k, v) in existing {
                        annotations["annotations"][k] = v;
                    }
                }
                apply_common_metadata(&mut value, &annotations);
            }
            apply_common_metadata(&mut value, &owner);
            let ignored = ignore.paths_for(&value);
            keep_live_at(&mut value, ignored);
            let mut text = crate::yaml::to_yaml(&value);
            if let Some(vars) = &vars {
                if !super::flux_substitute::disabled(&value) {
                    secret_only_in_secrets(unit, &file.path, &value, &text, vars)?;
                    text =
                        super::flux_substitute::substitute(&text, &vars.values).map_err(|e| {
                            unit.problem(
                                &["spec", "postBuild"],
                                format!("substituting variables in {}: {e}", file.path.display()),
                            )
                        })?;
                }
            }
            out.push_str("---\n");
            out.push_str(&text);
        }
        file.text = out;
    }
    Ok(())
}

/// Add `paths` (from `spec.ignore`) to the object's `tend.dev/keep-live-at`.
fn keep_live_at(object: &mut Value, paths: Vec<String>) {
    if paths.is_empty() {
        return;
    }
    // render's `policy::KEEP_LIVE_ANNOTATION` (the source stage comes before render).
    let key = "tend.dev/keep-live-at";
    let own = object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key));
    let mut all: Vec<String> = own
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    for path in paths {
        if !all.contains(&path) {
            all.push(path);
        }
    }
    let list = serde_json::to_string(&all).unwrap_or_default();
    apply_common_metadata(object, &json!({"annotations": {key: list}}));
}

/// The tend policies an object's own kustomize-controller settings ask for, labels or
/// annotations (fluxcd/pkg `utils.AnyInMetadata`): `kustomize.toolkit.fluxcd.io/ssa:
/// IfNotPresent` (created, never updated), `force: enabled` (replaced where an update is
/// immutable), `prune: disabled`; `ssa: Ignore` and the older `reconcile: disabled` (never
/// written, never pruned) as created-if-missing and never pruned, the closest tend has.
fn object_policies(object: &Value) -> Vec<(&'static str, &'static str)> {
    let says = |key: &str, wanted: &str| {
        ["labels", "annotations"].iter().any(|field| {
            object
                .pointer(&format!("/metadata/{field}"))
                .and_then(|m| m.get(format!("kustomize.toolkit.fluxcd.io/{key}")))
                .and_then(Value::as_str)
                == Some(wanted)
        })
    };
    let ignored = says("ssa", "Ignore") || says("reconcile", "disabled");
    let mut out = Vec::new();
    if says("prune", "disabled") || ignored {
        out.push(("tend.dev/prune", "disabled"));
    }
    if says("ssa", "IfNotPresent") || ignored {
        out.push(("tend.dev/apply", "if-not-present"));
    }
    if says("force", "enabled") {
        out.push(("tend.dev/replace", "on-immutable"));
    }
    out
}

/// A variable from a Secret lands only in a Secret (tend masks Secret data only).
fn secret_only_in_secrets(
    unit: &Found,
    file: &Path,
    value: &Value,
    text: &str,
    vars: &super::flux_substitute::Variables,
) -> Result<(), Problem> {
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("object");
    let is_secret =
        kind == "Secret" && value.get("apiVersion").and_then(Value::as_str) == Some("v1");
    let used = super::flux_substitute::referenced(text, &vars.from_secrets);
    if is_secret || used.is_empty() {
        return Ok(());
    }
    let name = value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    Err(unit.problem(
        &["spec", "postBuild", "substituteFrom"],
        format!(
            "{kind} {name} in {} would get ${{{}}}, read from a Secret: tend masks Secret data only, so it would show in diffs; substitute it into a Secret only, or read it from a ConfigMap",
            file.display(),
            used.join("}, ${"),
        ),
    ))
}

fn apply_common_metadata(value: &mut Value, common: &Value) {
    for field in ["labels", "annotations"] {
        let Some(Value::Object(extra)) = common.get(field) else {
            continue;
        };
        let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        let target = meta.entry(field).or_insert_with(|| json!({}));
        if let Some(target) = target.as_object_mut() {
            for (k, v) in extra {
                target.insert(k.clone(), v.clone());
            }
        }
    }
}
