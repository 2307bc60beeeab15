//! Flux's `HelmRelease` expanded into a tend `HelmChart` (annotated
//! [`super::EXPANDED_ANNOTATION`], so render renders it without applying it), as
//! helm-controller would install it: the chart from `spec.chart.spec` (a `HelmRepository`
//! over HTTP(S) or OCI, or a `GitRepository` path) or `spec.chartRef` (an `OCIRepository`);
//! the release name by helm-controller's rule (`spec.releaseName`, else
//! `<targetNamespace>-<name>` or `<name>`, shortened with a hash past 53 characters); the
//! release namespace `targetNamespace` or the HelmRelease's; values as fluxcd/pkg
//! `chartutil.ChartValuesFromReferences` merges them (`valuesFrom` in order, `targetPath`
//! entries set by path, `spec.values` over all); CRDs unless `install.crds: Skip`; the
//! namespace when `install.createNamespace`; `postRenderers` and `commonMetadata` written
//! on the HelmChart for the render and the source stage to run (`flux_post_render.rs`).

use super::flux_post_render::{PostRenderers, POST_RENDERERS_ANNOTATION};
use super::flux_sources;
use super::flux_values_files::VALUES_FILES_ANNOTATION;
use super::lookup::{self, Blocked, Lookup};
use super::model::{
    active_spec, chain_label, Context, Found, Outcome, Produced, Sources, EXPANDED_ANNOTATION,
};
use crate::helm::values::merge_maps;
use crate::problem::Problem;
use crate::source::paths::{leaves_root, normalize};
use crate::source::SourceFile;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// What `helm.toolkit.fluxcd.io/v2` added to the spec of v2beta2 and v2beta1.
const V2_ADDED_FIELDS: &[&str] = &[
    "commonMetadata",
    "postRenderStrategy",
    "waitStrategy",
    "healthCheckExprs",
];
const V2BETA_FIELDS: &[&str] = &[
    "chart",
    "chartRef",
    "interval",
    "kubeConfig",
    "suspend",
    "releaseName",
    "targetNamespace",
    "storageNamespace",
    "dependsOn",
    "timeout",
    "maxHistory",
    "serviceAccountName",
    "persistentClient",
    "driftDetection",
    "install",
    "upgrade",
    "test",
    "rollback",
    "uninstall",
    "valuesFrom",
    "values",
    "postRenderers",
];

/// Where charts read from a source's tree are keyed in `Charts::dirs`: outside any walked
/// path, so they never meet the repository's own.
const CHART_KEYS: &str = "/flux-charts";

pub fn expand(unit: &Found, sources: &Sources, ctx: &Context) -> Produced {
    let version = unit.api_version.split('/').nth(1).unwrap_or("");
    let v2_fields: Vec<&str> = V2BETA_FIELDS
        .iter()
        .chain(V2_ADDED_FIELDS)
        .copied()
        .collect();
    let known = if version == "v2" {
        &v2_fields[..]
    } else {
        V2BETA_FIELDS
    };
    if let Err(produced) = active_spec(unit, known, version) {
        return *produced;
    }
    let post_renderers = match super::flux_post_render::post_renderers(unit, version != "v2") {
        Ok(post_renderers) => post_renderers,
        Err(problem) => return Produced::failed(problem),
    };
    match release(unit, sources, ctx, post_renderers) {
        Ok(produced) => produced,
        Err(blocked) => lookup::produced(blocked),
    }
}

fn release(
    unit: &Found,
    sources: &Sources,
    ctx: &Context,
    post_renderers: Option<PostRenderers>,
) -> Result<Produced, Blocked> {
    let spec = unit.spec();
    let target = spec.get("targetNamespace").and_then(Value::as_str);
    let namespace = target.unwrap_or(&unit.id.namespace).to_string();
    let release_name = shorten(
        &match (spec.get("releaseName").and_then(Value::as_str), target) {
            (Some(name), _) if !name.is_empty() => name.to_string(),
            (_, Some(target)) => format!("{target}-{}", unit.id.name),
            _ => unit.id.name.clone(),
        },
    );
    let mut chart_spec = Map::new();
    let mut chain = (*unit.chain).clone();
    chain.push(unit.id.clone());
    let mut annotations = Map::new();
    annotations.insert(EXPANDED_ANNOTATION.into(), json!(chain_label(&chain)));
    if let Some(post_renderers) = post_renderers {
        annotations.insert(
            POST_RENDERERS_ANNOTATION.into(),
            json!(post_renderers.to_string()),
        );
    }
    let mut produced = Produced::outcome(Outcome::Expanded);
    super::flux_credentials::release_login(unit, sources, ctx)?;
    let spec_and_annotations = (&mut chart_spec, &mut annotations);
    chart_source(unit, sources, ctx, spec_and_annotations, &mut produced)?;
    chart_spec.insert("releaseName".into(), json!(release_name));
    let values = values(unit, sources, ctx)?;
    if values.as_object().is_some_and(|m| !m.is_empty()) {
        chart_spec.insert("values".into(), values);
    }
    let crds = spec
        .pointer("/install/crds")
        .and_then(Value::as_str)
        .unwrap_or("Create");
    chart_spec.insert("includeCrds".into(), json!(crds != "Skip"));
    let helm_chart = json!({
        "apiVersion": crate::API_VERSION,
        "kind": "HelmChart",
        "metadata": {
            "name": unit.id.name,
            "namespace": namespace,
            "annotations": Value::Object(annotations),
        },
        "spec": Value::Object(chart_spec),
    });
    let mut text = crate::yaml::to_yaml(&helm_chart);
    if spec
        .pointer("/install/createNamespace")
        .and_then(Value::as_bool)
        == Some(true)
    {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        text = format!("{text}---\n{}", crate::yaml::to_yaml(&ns));
    }
    // At the HelmRelease's line, so that every message about the release names it.
    let padding = "\n".repeat(unit.doc.line.saturating_sub(1));
    produced.files.push(SourceFile {
        path: unit.file.clone(),
        text: format!("{padding}{text}"),
        unit: None,
    });
    Ok(produced)
}

/// helm-controller's `release.ShortenName`: past 53 characters, the first 40 and 12 hex
/// digits of the name's SHA-256.
fn shorten(name: &str) -> String {
    use sha2::Digest;
    if name.len() <= 53 {
        return name.to_string();
    }
    let sum = hex::encode(sha2::Sha256::digest(name.as_bytes()));
    format!("{}-{}", &name[..40], &sum[..12])
}

/// The chart's source, written into the HelmChart's spec.
fn chart_source(
    unit: &Found,
    sources: &Sources,
    ctx: &Context,
    (chart_spec, annotations): (&mut Map<String, Value>, &mut Map<String, Value>),
    produced: &mut Produced,
) -> Result<(), Problem> {
    let spec = unit.spec();
    if let Some(chart_ref) = spec.get("chartRef") {
        return chart_ref_source(unit, chart_ref, (sources, ctx), chart_spec, produced);
    }
    let Some(template) = spec.pointer("/chart/spec") else {
        return Err(unit.problem(
            &["spec"],
            "neither spec.chart.spec nor spec.chartRef names a chart; add one",
        ));
    };
    let field = |k: &str| template.get(k).and_then(Value::as_str);
    let chart = field("chart").unwrap_or("");
    let values_files = super::flux_values_files::listed(unit, template)?;
    let source_ref = template.get("sourceRef").unwrap_or(&Value::Null);
    let kind = source_ref.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = source_ref.get("name").and_then(Value::as_str).unwrap_or("");
    let namespace = source_ref
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or(&unit.id.namespace);
    match kind {
        "HelmRepository" => {
            let Some(repository) = sources.get(kind, namespace, name) else {
                return Err(unit.problem(
                    &["spec", "chart", "spec", "sourceRef"],
                    format!("sourceRef names HelmRepository {namespace}/{name}, which the desired state does not define; define it, or fix the name"),
                ));
            };
            flux_sources::source_version(repository)?;
            let url = repository.spec().get("url").and_then(Value::as_str).unwrap_or("");
            let oci = repository.spec().get("type").and_then(Value::as_str) == Some("oci");
            if oci != url.starts_with("oci://") {
                return Err(repository.problem(
                    &["spec", "url"],
                    "spec.type oci goes with an oci:// URL, and an oci:// URL with spec.type oci",
                ));
            }
            let version = field("version").filter(|v| !v.is_empty()).unwrap_or("*");
            if let Some(verify) = template.get("verify") {
                let at = (unit, &["spec", "chart", "spec", "verify"][..]);
                chart_spec.insert("verify".into(), cosign_verify(verify, at, oci)?);
            }
            if let Some(listed) = &values_files {
                annotations.insert(VALUES_FILES_ANNOTATION.into(), json!(listed.to_string()));
            }
            chart_spec.insert("repository".into(), json!(url));
            chart_spec.insert("name".into(), json!(chart));
            chart_spec.insert("version".into(), json!(version));
            produced.revision = Some(format!("chart {chart} {version}"));
            produced.chart = Some((url.to_string(), chart.to_string(), version.to_string()));
            Ok(())
        }
        "GitRepository" => {
            let tree = flux_sources::git_tree(
                unit,
                source_ref,
                &["spec", "chart", "spec", "sourceRef"],
                sources,
                ctx,
            )?;
            let dir = normalize(Path::new(chart.trim_start_matches('/')));
            if leaves_root(&dir) || !tree.root.join(&dir).join("Chart.yaml").is_file() {
                return Err(unit.problem(
                    &["spec", "chart", "spec", "chart"],
                    format!(
                        "no chart at {} in the GitRepository's tree (a directory holding Chart.yaml, relative to the repository root)",
                        dir.display()
                    ),
                ));
            }
            let mut chart =
                crate::source::charts::read_chart(&tree.root, &tree.root.join(&dir), &dir)?;
            if let Some(listed) = &values_files {
                let at = (unit, &["spec", "chart", "spec"][..]);
                chart.values = super::flux_values_files::merged_from_tree(&tree.root, listed, at)?;
            }
            let key = PathBuf::from(format!(
                "{CHART_KEYS}/{}/{}",
                unit.id.namespace, unit.id.name
            ));
            chart_spec.insert("chart".into(), json!(key.display().to_string()));
            produced.charts.push((key, chart));
            produced.revision = tree.revision;
            Ok(())
        }
        other => Err(unit.problem(
            &["spec", "chart", "spec", "sourceRef"],
            format!("a chart from a {other:?} is not supported by tend; use a HelmRepository or a GitRepository"),
        )),
    }
}

/// `spec.chartRef`: an OCIRepository holding the chart.
fn chart_ref_source(
    unit: &Found,
    chart_ref: &Value,
    (sources, ctx): (&Sources, &Context),
    chart_spec: &mut Map<String, Value>,
    produced: &mut Produced,
) -> Result<(), Problem> {
    let text = |k: &str| chart_ref.get(k).and_then(Value::as_str).unwrap_or("");
    let namespace = chart_ref
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or(&unit.id.namespace);
    if text("kind") != "OCIRepository" {
        return Err(unit.problem(
            &["spec", "chartRef"],
            format!("a chartRef of kind {:?} is not supported by tend yet; use an OCIRepository, or spec.chart", text("kind")),
        ));
    }
    let Some(repository) = sources.get("OCIRepository", namespace, text("name")) else {
        return Err(unit.problem(
            &["spec", "chartRef"],
            format!("chartRef names OCIRepository {namespace}/{}, which the desired state does not define; define it, or fix the name", text("name")),
        ));
    };
    flux_sources::source_version(repository)?;
    // What would change the pull and tend does not do: refused, never ignored.
    for field in ["certSecretRef", "proxySecretRef", "serviceAccountName"] {
        if repository.spec().get(field).is_some() {
            return Err(repository.problem(
                &["spec", field],
                format!("spec.{field} of an OCIRepository is not supported by tend yet; make the chart readable without it (secretRef, an image pull Secret, is read)"),
            ));
        }
    }
    let provider = repository.spec().get("provider").and_then(Value::as_str);
    if let Some(provider) = provider.filter(|p| *p != "generic") {
        return Err(repository.problem(
            &["spec", "provider"],
            format!("provider {provider:?} logs in through a cloud's identity, which tend does not do; use provider generic with a secretRef"),
        ));
    }
    let url = repository
        .spec()
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or("");
    let r = repository.spec().get("ref");
    let tag = |k: &str| r.and_then(|r| r.get(k)).and_then(Value::as_str);
    let version = tag("semver").or(tag("tag")).unwrap_or("latest");
    if tag("digest").is_some() {
        return Err(repository.problem(
            &["spec", "ref", "digest"],
            "an OCIRepository pinned by digest is not supported by tend yet; name its tag",
        ));
    }
    // oci://host/path/chart: the chart is the last segment.
    let Some((base, name)) = url.trim_end_matches('/').rsplit_once('/') else {
        return Err(repository.problem(&["spec", "url"], "not an oci://host/path/chart URL"));
    };
    if let Some(verify) = repository.spec().get("verify") {
        let at = (repository, &["spec", "verify"][..]);
        chart_spec.insert("verify".into(), cosign_verify(verify, at, true)?);
    }
    super::flux_credentials::oci_login(repository, sources, ctx)?;
    chart_spec.insert("repository".into(), json!(base));
    chart_spec.insert("name".into(), json!(name));
    chart_spec.insert("version".into(), json!(version));
    produced.revision = Some(format!("chart {name} {version}"));
    produced.chart = Some((base.to_string(), name.to_string(), version.to_string()));
    Ok(())
}

/// Flux's `verify` of an OCI chart (`provider: cosign`, a `secretRef` of public keys, or
/// keyless identities) as the synthesized HelmChart's `spec.verify`: the signature is checked
/// against the run's trusted cosign keys (`--trusted-keys`, `--trusted-keys-secret`); keyless
/// verification needs the network and is refused.
pub(super) fn cosign_verify(
    verify: &Value,
    (found, field): (&Found, &[&str]),
    oci: bool,
) -> Result<Value, Problem> {
    let provider = verify
        .get("provider")
        .and_then(Value::as_str)
        .unwrap_or("cosign");
    if provider != "cosign" {
        return Err(found.problem(
            field,
            format!("provider {provider:?} is not supported by tend; it checks cosign signatures"),
        ));
    }
    if !oci {
        return Err(found.problem(
            field,
            "cosign signatures are stored in OCI registries: verify needs an OCI chart source",
        ));
    }
    if verify.get("matchOIDCIdentity").is_some() || verify.get("secretRef").is_none() {
        return Err(found.problem(
            field,
            "keyless verification (Fulcio certificates, Rekor) needs the network, which tend does not use; sign the chart with a key pair (cosign sign --key cosign.key), name its public key in secretRef, and give tend the same cosign.pub with --trusted-keys",
        ));
    }
    Ok(json!({"provider": "cosign"}))
}

/// `valuesFrom` in order, then `spec.values` over them (fluxcd/pkg
/// `ChartValuesFromReferences`).
fn values(unit: &Found, sources: &Sources, ctx: &Context) -> Result<Value, Blocked> {
    let spec = unit.spec();
    let own = spec.get("values").cloned().unwrap_or(json!({}));
    let mut result = json!({});
    let list = spec.get("valuesFrom").and_then(Value::as_array);
    for reference in list.into_iter().flatten() {
        let text = |k: &str| reference.get(k).and_then(Value::as_str).unwrap_or("");
        let (kind, name) = (text("kind"), text("name"));
        let key = Some(text("valuesKey"))
            .filter(|k| !k.is_empty())
            .unwrap_or("values.yaml");
        let optional = reference.get("optional").and_then(Value::as_bool) == Some(true);
        let at = |message: String| unit.problem(&["spec", "valuesFrom"], message);
        if !matches!(kind, "ConfigMap" | "Secret") {
            return Err(at(format!(
                "valuesFrom kind {kind:?} is neither ConfigMap nor Secret"
            ))
            .into());
        }
        let found = lookup::lookup(sources, ctx, kind, &unit.id.namespace, name).map_err(&at)?;
        if matches!(found, Lookup::Pending) {
            return Err(Blocked::Pending);
        }
        let data = found.entries();
        if kind == "Secret" && data.is_some() {
            return Err(at(format!(
                "valuesFrom names Secret {name}: what a chart makes of a Secret's values cannot be traced back to mask them (tend masks Secret data only), so tend does not render them yet; read the values from a ConfigMap, or keep the secret in a Secret the chart references by name"
            ))
            .into());
        }
        let Some(data) = data.and_then(|d| d.get(key).cloned()) else {
            if optional {
                continue;
            }
            return Err(at(format!(
                "valuesFrom names key {key:?} of {kind} {}/{name}, which {}; create it, or mark it optional: true",
                unit.id.namespace,
                lookup::looked_in(ctx)
            ))
            .into());
        };
        let target = text("targetPath");
        if !target.is_empty() {
            result = merge_maps(&result, &own);
            let literal = reference.get("literal").and_then(Value::as_bool) == Some(true);
            let value = if literal { json!(data) } else { typed(&data) };
            set_path(&mut result, target, value);
            continue;
        }
        let read = crate::yaml::parse_helm_yaml(&data).map_err(|e| {
            at(format!(
                "the values in {kind} {name} key {key:?} are not YAML: {e}"
            ))
        })?;
        result = merge_maps(&result, &read);
    }
    Ok(merge_maps(&result, &own))
}

/// A `--set` value as Helm's strvals types it.
fn typed(text: &str) -> Value {
    match text {
        "true" => json!(true),
        "false" => json!(false),
        "null" => Value::Null,
        _ if text == "0" || (!text.starts_with('0') && text.parse::<i64>().is_ok()) => {
            json!(text.parse::<i64>().unwrap_or(0))
        }
        _ => json!(text),
    }
}

/// Set `path` (`a.b.c`, `\.` for a literal dot) in `values`, making maps as needed.
fn set_path(values: &mut Value, path: &str, value: Value) {
    let mut keys = Vec::new();
    let mut current = String::new();
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.extend(chars.next()),
            '.' => keys.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    keys.push(current);
    let mut node = values;
    for (i, key) in keys.iter().enumerate() {
        if !node.is_object() {
            *node = json!({});
        }
        let Some(map) = node.as_object_mut() else {
            return;
        };
        if i + 1 == keys.len() {
            map.insert(key.clone(), value);
            return;
        }
        node = map.entry(key.clone()).or_insert_with(|| json!({}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_release_names_are_shortened_as_helm_controller_does() {
        assert_eq!(shorten("podinfo"), "podinfo");
        let long = "a".repeat(60);
        let short = shorten(&long);
        assert_eq!(short.len(), 53);
        assert!(short.starts_with(&format!("{}-", "a".repeat(40))));
    }

    #[test]
    fn target_paths_set_typed_values() {
        let mut values = json!({"a": {"b": 1}});
        set_path(&mut values, "a.c", typed("true"));
        set_path(&mut values, r"x\.y.z", typed("12"));
        assert_eq!(values, json!({"a": {"b": 1, "c": true}, "x.y": {"z": 12}}));
    }
}
