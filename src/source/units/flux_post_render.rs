//! A HelmRelease's `spec.postRenderers`, as helm-controller builds them
//! (`internal/postrender/build.go`, `kustomize.go`): each `kustomize` post-renderer is a
//! kustomization holding the release's rendered manifests as its one resource, with the
//! renderer's `patches` and `images` (and v2beta1/v2beta2's `patchesStrategicMerge`, inline
//! objects, and `patchesJson6902`, operations with a `target`), built by kustomize; several
//! run in order, each on what the one before printed. Helm 4 sends the hooks along
//! (`postRenderStrategy`: `combined`, the default; `separate`: hooks in a build of their own;
//! `nohooks`: Helm 3's, hooks untouched); v2's `commonMetadata` after them. Here the post-renderers are checked and written
//! on the expanded HelmChart ([`POST_RENDERERS_ANNOTATION`]); the render says which
//! documents go through them, and the source stage runs the builder
//! (`source::post_render`).

use super::model::Found;
use crate::problem::Problem;
use serde_json::{json, Map, Value};

/// The expanded HelmChart's annotation holding its release's post-renderers, as JSON.
pub const POST_RENDERERS_ANNOTATION: &str = "tend.dev/flux-post-renderers";

/// Which of a release's documents go through the post-renderers (Helm's
/// `PostRenderStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookStrategy {
    /// Hooks and the other documents in one stream.
    Combined,
    /// Hooks in a stream of their own.
    Separate,
    /// Hooks not post-rendered.
    NoHooks,
}

impl HookStrategy {
    fn name(self) -> &'static str {
        match self {
            HookStrategy::Combined => "combined",
            HookStrategy::Separate => "separate",
            HookStrategy::NoHooks => "nohooks",
        }
    }

    fn parse(text: &str) -> Option<HookStrategy> {
        [Self::Combined, Self::Separate, Self::NoHooks]
            .into_iter()
            .find(|s| s.name() == text)
    }
}

/// A release's post-renderers: the kustomizations to build in order (each without its
/// `resources`, which the build adds), and the line of `spec.postRenderers` in the
/// HelmRelease's file, where their errors are reported.
#[derive(Debug, Clone, PartialEq)]
pub struct PostRenderers {
    pub kustomizations: Vec<Value>,
    /// v2's `commonMetadata` (`labels`, `annotations`), set on every post-rendered object
    /// after the kustomizations (helm-controller's `CommonRenderer`); `null` when none.
    pub common_metadata: Value,
    pub strategy: HookStrategy,
    pub line: usize,
}

impl PostRenderers {
    /// What [`POST_RENDERERS_ANNOTATION`] holds.
    pub fn parse(text: &str) -> Option<PostRenderers> {
        let value: Value = serde_json::from_str(text).ok()?;
        Some(PostRenderers {
            kustomizations: value.get("kustomizations")?.as_array()?.clone(),
            common_metadata: value.get("commonMetadata").cloned().unwrap_or(Value::Null),
            strategy: HookStrategy::parse(value.get("strategy")?.as_str()?)?,
            line: usize::try_from(value.get("line")?.as_u64()?).ok()?,
        })
    }
}

impl std::fmt::Display for PostRenderers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = json!({
            "kustomizations": self.kustomizations,
            "commonMetadata": self.common_metadata,
            "strategy": self.strategy.name(),
            "line": self.line,
        });
        write!(f, "{value}")
    }
}

/// The post-renderers of `unit` (always some: every release gets its origin labels), or
/// what is wrong with them.
/// `deprecated_patches`: the API version still has `patchesStrategicMerge` and
/// `patchesJson6902` (v2beta1, v2beta2).
pub fn post_renderers(
    unit: &Found,
    deprecated_patches: bool,
) -> Result<Option<PostRenderers>, Problem> {
    let spec = unit.spec();
    let strategy = match spec.get("postRenderStrategy") {
        None | Some(Value::Null) => HookStrategy::Combined,
        Some(value) => value
            .as_str()
            .and_then(HookStrategy::parse)
            .ok_or_else(|| {
                unit.problem(
                    &["spec", "postRenderStrategy"],
                    "spec.postRenderStrategy is one of nohooks, combined, separate",
                )
            })?,
    };
    let common_metadata = with_origin_labels(common_metadata(unit)?, unit);
    let none = Vec::new();
    let list =
        match spec.get("postRenderers") {
            None | Some(Value::Null) => &none,
            Some(Value::Array(list)) => list,
            Some(_) => return Err(unit.problem(
                &["spec", "postRenderers"],
                "spec.postRenderers is a list of post-renderers ({kustomize: {patches, images}})",
            )),
        };
    let mut kustomizations = Vec::new();
    for (i, renderer) in list.iter().enumerate() {
        let at = |message: String| {
            unit.problem(
                &["spec", "postRenderers"],
                format!("spec.postRenderers[{i}]: {message}"),
            )
        };
        let Some(renderer) = renderer.as_object() else {
            return Err(at("a post-renderer is a map ({kustomize: ...})".into()));
        };
        if let Some(other) = renderer.keys().find(|k| *k != "kustomize") {
            return Err(at(format!("{other} is not a field of a post-renderer; tend knows kustomize, as helm-controller does")));
        }
        // helm-controller skips a post-renderer without kustomize.
        if let Some(kustomize) = renderer.get("kustomize").filter(|k| !k.is_null()) {
            kustomizations.push(kustomization(kustomize, deprecated_patches).map_err(at)?);
        }
    }
    Ok(Some(PostRenderers {
        kustomizations,
        common_metadata,
        strategy,
        line: unit.line_of(&["spec", "postRenderers"]),
    }))
}

/// `common` with the labels helm-controller's last post-renderer (`OriginLabels`) puts on
/// every object of every release, over any of `commonMetadata` with the same key:
/// `helm.toolkit.fluxcd.io/name` and `/namespace`, the HelmRelease's own.
fn with_origin_labels(mut common: Value, unit: &Found) -> Value {
    if !common.is_object() {
        common = json!({});
    }
    let labels = &mut common["labels"];
    if !labels.is_object() {
        *labels = json!({});
    }
    labels["helm.toolkit.fluxcd.io/name"] = json!(unit.id.name);
    labels["helm.toolkit.fluxcd.io/namespace"] = json!(unit.id.namespace);
    common
}

/// `spec.commonMetadata` (v2; other versions refuse the field): maps of strings.
fn common_metadata(unit: &Found) -> Result<Value, Problem> {
    let Some(common) = unit.spec().get("commonMetadata").filter(|c| !c.is_null()) else {
        return Ok(Value::Null);
    };
    let maps_of_strings = common.as_object().is_some_and(|fields| {
        fields.iter().all(|(key, value)| {
            matches!(key.as_str(), "labels" | "annotations")
                && (value.is_null()
                    || value
                        .as_object()
                        .is_some_and(|m| m.values().all(Value::is_string)))
        })
    });
    if !maps_of_strings {
        return Err(unit.problem(
            &["spec", "commonMetadata"],
            "spec.commonMetadata has labels and annotations, each a map of strings",
        ));
    }
    Ok(common.clone())
}

/// The kustomization helm-controller writes for one `kustomize` post-renderer.
fn kustomization(kustomize: &Value, deprecated_patches: bool) -> Result<Value, String> {
    let Some(fields) = kustomize.as_object() else {
        return Err("kustomize is a map of patches and images".into());
    };
    let mut out = Map::new();
    out.insert(
        "apiVersion".into(),
        json!("kustomize.config.k8s.io/v1beta1"),
    );
    out.insert("kind".into(), json!("Kustomization"));
    for (key, value) in fields {
        let list = match value {
            Value::Null => continue,
            Value::Array(list) => list,
            _ => return Err(format!("kustomize.{key} is a list")),
        };
        match key.as_str() {
            "patches" | "images" => {
                out.insert(key.clone(), value.clone());
            }
            "patchesStrategicMerge" if deprecated_patches => {
                // Inline objects, which kustomize reads as inline patches when written as text.
                let texts = list.iter().map(|p| json!(p.to_string())).collect();
                out.insert(key.clone(), Value::Array(texts));
            }
            "patchesJson6902" if deprecated_patches => {
                let mut patches = Vec::new();
                for patch in list {
                    let operations = patch.get("patch").unwrap_or(&Value::Null);
                    if !operations.is_array() {
                        return Err("kustomize.patchesJson6902[].patch is a list of JSON patch operations ({op, path, value})".into());
                    }
                    let target = patch.get("target").cloned().unwrap_or(json!({}));
                    patches.push(json!({"target": target, "patch": operations.to_string()}));
                }
                out.insert(key.clone(), Value::Array(patches));
            }
            other => {
                let hint = if matches!(other, "patchesStrategicMerge" | "patchesJson6902") {
                    "helm.toolkit.fluxcd.io/v2 removed it; write it as an entry of patches"
                } else {
                    "a kustomize post-renderer has patches and images"
                };
                return Err(format!("kustomize.{other} is not a field here: {hint}"));
            }
        }
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deprecated_patches_are_written_as_kustomize_reads_them() {
        let renderer = json!({
            "patchesStrategicMerge": [{"kind": "Deployment", "metadata": {"name": "a"}}],
            "patchesJson6902": [{"target": {"kind": "Service", "name": "a"}, "patch": [{"op": "remove", "path": "/spec/type"}]}],
        });
        let written = kustomization(&renderer, true).unwrap();
        assert_eq!(
            written["patchesJson6902"][0]["patch"],
            json!(r#"[{"op":"remove","path":"/spec/type"}]"#)
        );
        assert!(written["patchesStrategicMerge"][0]
            .as_str()
            .unwrap()
            .contains("\"Deployment\""));
        let refused = kustomization(&renderer, false).unwrap_err();
        assert!(refused.contains("removed it"), "{refused}");
    }

    #[test]
    fn post_renderers_survive_their_annotation() {
        let renderers = PostRenderers {
            kustomizations: vec![json!({"images": [{"name": "nginx", "newTag": "1"}]})],
            common_metadata: json!({"labels": {"team": "a"}}),
            strategy: HookStrategy::Separate,
            line: 12,
        };
        assert_eq!(
            PostRenderers::parse(&renderers.to_string()),
            Some(renderers)
        );
    }
}
