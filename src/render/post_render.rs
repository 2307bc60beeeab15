//! A Flux HelmRelease's post-renderers (`source::units::PostRenderers`), the render's half:
//! which of the release's documents go through them ([`prepare`]: as Helm 4 does, each
//! document annotated with the file it came from, the hooks along or apart as
//! `postRenderStrategy` says), and the release's files made again of what came out
//! ([`finish`]: each document back in its template's file, so it is reported where it was
//! before; v2's `commonMetadata` set on each). The builds run in between, in the source stage (`source::post_render`): the
//! render runs no process.

use crate::helm::hooks;
use crate::problem::Problem;
use crate::source::post_render::{PostRender, Stream};
use crate::source::units::{HookStrategy, PostRenderers, POST_RENDERERS_ANNOTATION};
use crate::source::SourceFile;
use crate::yaml;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

/// Helm 4's annotation naming the file a post-rendered document came from (its
/// `annotateAndMerge`); here it holds the file's label.
const FILE_ANNOTATION: &str = "postrenderer.helm.sh/postrender-filename";

/// A release's post-render in progress: what the builder is given, and how to put its
/// output back.
#[derive(Debug)]
pub struct Pending {
    pub build: PostRender,
    /// The HelmRelease's file and the line of its `postRenderers`.
    at: (PathBuf, usize),
    /// The release's files the output replaces, in order.
    files: Vec<PathBuf>,
    /// Documents that skip the post-renderers (hooks with `nohooks`), with their files.
    kept: Vec<(PathBuf, Value)>,
    /// Labels and annotations set on every post-rendered object.
    common_metadata: Value,
}

/// The post-render of a release whose HelmChart is `doc` (in `file`) over its `files`, if
/// it has post-renderers.
pub fn of_release(
    doc: &yaml::Document,
    file: &Path,
    sealed: bool,
    files: &[&SourceFile],
) -> Result<Option<Pending>, Problem> {
    let Some(text) = doc
        .value
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(POST_RENDERERS_ANNOTATION))
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    let Some(renderers) = PostRenderers::parse(text) else {
        return Err(Problem::new(
            file,
            doc.line,
            "this HelmChart's post-renderers annotation is not what tend writes for a Flux HelmRelease; remove it",
        ));
    };
    if files.is_empty() {
        return Ok(None);
    }
    Ok(prepare(file, renderers, sealed, files))
}

/// The post-render of a release's `files` (its templates' output; not its `crds/`, which
/// Helm installs apart), or `None` when a file does not parse (the render reports it, as it
/// would without post-renderers).
fn prepare(
    at: &Path,
    renderers: PostRenderers,
    sealed: bool,
    files: &[&SourceFile],
) -> Option<Pending> {
    let mut manifests = Vec::new();
    let mut hooks_stream = Vec::new();
    let mut kept = Vec::new();
    for file in files {
        let (docs, problems) = yaml::parse_file(&file.path, &file.text);
        if !problems.is_empty() {
            return None;
        }
        for doc in docs {
            let mut value = doc.value;
            let is_hook = value
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(hooks::HOOK))
                .is_some();
            match (is_hook, renderers.strategy) {
                (true, HookStrategy::NoHooks) => kept.push((file.path.clone(), value)),
                (true, HookStrategy::Separate) => {
                    annotate(&mut value, &file.path);
                    hooks_stream.push(value);
                }
                _ => {
                    annotate(&mut value, &file.path);
                    manifests.push(value);
                }
            }
        }
    }
    let streams = [hooks_stream, manifests]
        .into_iter()
        .filter(|docs| !docs.is_empty())
        .map(|docs| Stream {
            input: stream_text(&docs),
            output: None,
        })
        .collect();
    Some(Pending {
        build: PostRender {
            kustomizations: renderers.kustomizations,
            sealed,
            streams,
        },
        at: (at.to_path_buf(), renderers.line),
        files: files.iter().map(|f| f.path.clone()).collect(),
        kept,
        common_metadata: renderers.common_metadata,
    })
}

/// The release's files in `files` replaced by what the post-renderers printed (in place of
/// the first of them), or the problem that stopped them.
pub fn finish(pending: Pending, files: &mut Vec<SourceFile>) -> Result<(), Problem> {
    let Pending {
        build,
        at,
        files: own,
        kept,
        common_metadata,
    } = pending;
    let problem = |message: String| {
        Problem::new(
            &at.0,
            at.1,
            format!("spec.postRenderers: {message}; fix the patch or its target"),
        )
    };
    let mut by_file: Vec<(PathBuf, Vec<Value>)> =
        own.iter().map(|f| (f.clone(), Vec::new())).collect();
    for (file, value) in kept {
        push_to(&mut by_file, &file, value);
    }
    for stream in build.streams {
        let text = match stream.output {
            Some(Ok(text)) => text,
            Some(Err(message)) => return Err(problem(message)),
            None => return Err(problem("the post-renderers did not run".into())),
        };
        let label = PathBuf::from(format!("{} (post-rendered)", at.0.display()));
        let (docs, problems) = yaml::parse_file(&label, &text);
        if let Some(first) = problems.first() {
            return Err(problem(format!(
                "kustomize printed what is not YAML: {}",
                first.message
            )));
        }
        for doc in docs {
            let mut value = doc.value;
            // A document whose annotation a patch removed goes with the release's first file.
            let file = take_annotation(&mut value).map(PathBuf::from);
            for field in ["labels", "annotations"] {
                if let Some(Value::Object(set)) = common_metadata.get(field) {
                    set_metadata(&mut value, field, set);
                }
            }
            let file = file
                .filter(|f| own.contains(f))
                .unwrap_or_else(|| own[0].clone());
            push_to(&mut by_file, &file, value);
        }
    }
    let Some(first) = files.iter().position(|f| own.contains(&f.path)) else {
        return Ok(());
    };
    files.retain(|f| !own.contains(&f.path));
    let made = by_file
        .into_iter()
        .filter(|(_, docs)| !docs.is_empty())
        .map(|(path, docs)| SourceFile {
            path,
            text: stream_text(&docs),
            unit: None,
        });
    files.splice(first..first, made);
    Ok(())
}

fn push_to(by_file: &mut [(PathBuf, Vec<Value>)], file: &Path, value: Value) {
    if let Some((_, docs)) = by_file.iter_mut().find(|(f, _)| f == file) {
        docs.push(value);
    }
}

fn stream_text(docs: &[Value]) -> String {
    let texts: Vec<String> = docs.iter().map(yaml::to_yaml).collect();
    texts.join("---\n")
}

fn annotate(value: &mut Value, file: &Path) {
    let entry = (
        FILE_ANNOTATION.to_string(),
        json!(file.display().to_string()),
    );
    set_metadata(value, "annotations", &Map::from_iter([entry]));
}

/// `metadata.<field>` (labels or annotations) given `set`'s entries, over its own, as
/// kustomize's label and annotation transformers do.
fn set_metadata(value: &mut Value, field: &str, set: &Map<String, Value>) {
    let Some(metadata) = value.as_object_mut().map(|v| {
        v.entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()))
    }) else {
        return;
    };
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let entries = metadata
        .entry(field)
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(entries) = entries.as_object_mut() {
        entries.extend(set.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// The file annotation's value, removed (with the annotations, when it was the only one).
fn take_annotation(value: &mut Value) -> Option<String> {
    let metadata = value.get_mut("metadata")?.as_object_mut()?;
    let annotations = metadata.get_mut("annotations")?.as_object_mut()?;
    let file = annotations.remove(FILE_ANNOTATION)?;
    if annotations.is_empty() {
        metadata.remove("annotations");
    }
    file.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> SourceFile {
        SourceFile {
            path: PathBuf::from(path),
            text: text.into(),
            unit: None,
        }
    }

    fn renderers(strategy: HookStrategy) -> PostRenderers {
        PostRenderers {
            kustomizations: vec![json!({})],
            common_metadata: json!({"labels": {"team": "a"}}),
            strategy,
            line: 7,
        }
    }

    const HOOK: &str =
        "kind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install\n";

    #[test]
    fn hooks_go_along_apart_or_not_at_all() {
        let deployment = file(
            "r (chart c, templates/d.yaml)",
            "kind: Deployment\nmetadata:\n  name: d\n",
        );
        let job = file("r (chart c, templates/j.yaml)", HOOK);
        let files = [&deployment, &job];
        let streams = |s| {
            let pending = prepare(Path::new("r"), renderers(s), false, &files).unwrap();
            (pending.build.streams.len(), pending.kept.len())
        };
        assert_eq!(streams(HookStrategy::Combined), (1, 0));
        assert_eq!(streams(HookStrategy::Separate), (2, 0));
        assert_eq!(streams(HookStrategy::NoHooks), (1, 1));
    }

    #[test]
    fn output_goes_back_to_the_files_it_came_from() {
        let deployment = file(
            "r (chart c, templates/d.yaml)",
            "kind: Deployment\nmetadata:\n  name: d\n",
        );
        let job = file("r (chart c, templates/j.yaml)", HOOK);
        let other = file("plain.yaml", "kind: ConfigMap\n");
        let mut pending = prepare(
            Path::new("r"),
            renderers(HookStrategy::NoHooks),
            false,
            &[&deployment, &job],
        )
        .unwrap();
        // The builder's output: the input, patched.
        let patched = pending.build.streams[0]
            .input
            .replace("name: d", "name: d\n  labels:\n    patched: ok");
        pending.build.streams[0].output = Some(Ok(patched));
        let mut files = vec![deployment.clone(), job.clone(), other.clone()];
        finish(pending, &mut files).unwrap();
        assert_eq!(files.len(), 3);
        assert_eq!(files[0].path, deployment.path);
        assert!(files[0].text.contains("patched: ok"), "{}", files[0].text);
        assert!(!files[0].text.contains(FILE_ANNOTATION));
        assert!(!files[0].text.contains("annotations"));
        // commonMetadata on post-rendered objects, not on hooks that skipped them.
        assert!(files[0].text.contains("team: a"), "{}", files[0].text);
        assert!(!files[1].text.contains("team: a"), "{}", files[1].text);
        assert!(files[1].text.contains("helm.sh/hook"));
        assert_eq!(files[2].path, other.path);
    }

    #[test]
    fn a_failed_build_is_reported_at_the_post_renderers() {
        let deployment = file("r (chart c, templates/d.yaml)", "kind: Deployment\n");
        let mut pending = prepare(
            Path::new("r"),
            renderers(HookStrategy::Combined),
            false,
            &[&deployment],
        )
        .unwrap();
        pending.build.streams[0].output =
            Some(Err("no matches for Id Deployment.v1.apps/x".into()));
        let problem = finish(pending, &mut vec![deployment]).unwrap_err();
        assert_eq!(
            (problem.line, problem.file.display().to_string()),
            (7, "r".to_string())
        );
        assert!(
            problem.message.contains("no matches"),
            "{}",
            problem.message
        );
    }
}
