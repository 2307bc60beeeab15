//! The kustomize post-renderers of Flux HelmReleases (`units::PostRenderers`), run as
//! helm-controller runs them (`internal/postrender/kustomize.go`): for each post-renderer in
//! order, a kustomization whose one resource is the manifests (`helm-output.yaml`) with the
//! renderer's patches and images, built by tend's kustomize builder in a private directory;
//! what it prints is the next one's input. The render says what goes in and takes what
//! comes out ([`PostRender`]); this stage only runs the builds, as it runs every other
//! kustomize build.

use super::kustomize::{self, Inputs, KustomizeOptions};
use serde_json::Value;
use std::path::Path;

/// The manifests kustomize reads, as helm-controller names them.
const INPUT: &str = "helm-output.yaml";

/// One release's post-render: filled in by the render (`render::helm_charts`), built here,
/// read back by the render.
#[derive(Debug, Clone)]
pub struct PostRender {
    /// The release's kustomizations, in order.
    pub kustomizations: Vec<Value>,
    /// Values from SOPS-encrypted files reached the render: the builder's messages may quote
    /// them, so they are not shown.
    pub sealed: bool,
    /// The streams of documents post-rendered one after the other (the hooks apart with
    /// `postRenderStrategy: separate`).
    pub streams: Vec<Stream>,
}

/// Documents that go through the post-renderers together, and what came out.
#[derive(Debug, Clone)]
pub struct Stream {
    /// A YAML stream.
    pub input: String,
    /// The last post-renderer's output, or why a build failed; `None` until built.
    pub output: Option<Result<String, String>>,
}

/// Build every stream of every post-render (several releases at once).
pub fn run_all(mut post_renders: Vec<&mut PostRender>, opts: &KustomizeOptions) {
    let jobs: Vec<(usize, usize)> = post_renders
        .iter()
        .enumerate()
        .flat_map(|(i, p)| (0..p.streams.len()).map(move |s| (i, s)))
        .collect();
    let built = crate::parallel::map(&jobs, crate::parallel::budget(), 1, |&(i, s)| {
        let post = &*post_renders[i];
        chain(
            &post.streams[s].input,
            &post.kustomizations,
            post.sealed,
            opts,
        )
    });
    for (&(i, s), output) in jobs.iter().zip(built) {
        post_renders[i].streams[s].output = Some(output);
    }
}

/// `input` through each kustomization in turn.
fn chain(
    input: &str,
    kustomizations: &[Value],
    sealed: bool,
    opts: &KustomizeOptions,
) -> Result<String, String> {
    let mut text = input.to_string();
    for (i, kustomization) in kustomizations.iter().enumerate() {
        text = build(&text, kustomization, sealed, opts)
            .map_err(|message| format!("post-renderer {i}: {message}"))?;
    }
    Ok(text)
}

/// One kustomize post-renderer over `input`.
fn build(
    input: &str,
    kustomization: &Value,
    sealed: bool,
    opts: &KustomizeOptions,
) -> Result<String, String> {
    let mut kustomization = kustomization.clone();
    let Some(map) = kustomization.as_object_mut() else {
        return Err("a post-renderer's kustomization is not a map".into());
    };
    map.insert("resources".into(), serde_json::json!([INPUT]));
    let text = crate::yaml::to_yaml(&kustomization);
    let dir = tempfile::tempdir().map_err(|e| format!("cannot make a private directory: {e}"))?;
    let file = Path::new(kustomize::KUSTOMIZATION_FILES[0]);
    std::fs::write(dir.path().join(INPUT), input)
        .and_then(|()| std::fs::write(dir.path().join(file), &text))
        .map_err(|e| format!("cannot write the kustomization to build: {e}"))?;
    let Some(unit) = kustomize::detect(dir.path(), Path::new(""), file, &text) else {
        return Err("the post-renderer is not a kustomization".into());
    };
    let inputs = match sealed {
        true => Inputs::Decrypted,
        false => Inputs::AsCommitted,
    };
    kustomize::build_output(dir.path(), &unit, opts, inputs).map_err(|problem| problem.message)
}
