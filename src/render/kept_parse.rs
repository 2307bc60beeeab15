//! The documents of a kept Helm render, kept parsed with it (see [`super::helm_cache`]):
//! reading a big chart's kept render as YAML text again was half of a kept render's cost.
//! A render being kept has its files' documents written down as parsed (JSON, every field
//! of [`yaml::Document`], the lines and text of messages included) once the render has
//! parsed them; a render taken from the cache brings them back, and its files are not
//! parsed again. What was kept parsed is exactly what parsing the file's text gives: the
//! text of a kept render's file is a pure function of the kept manifest (tend's left-out
//! documents blanked), and a file whose text changes after the render (a Flux HelmRelease's
//! post-renderers) is parsed from its text as before.

use super::helm_cache::KeptRenders;
use crate::problem::Problem;
use crate::source::SourceFile;
use crate::yaml;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The chart files of a render that are parsed already, or whose documents are to be kept.
#[derive(Debug, Default)]
pub struct KeptParses {
    /// Files whose documents came with a kept render: not parsed again.
    pub have: HashMap<PathBuf, Vec<yaml::Document>>,
    /// Files of a render being kept: their documents, once parsed, are kept with it, under
    /// (the render's key, the template).
    pub keep: HashMap<PathBuf, (String, String)>,
}

/// What a release's files are to the kept render: parsed already (a kept render's
/// documents, by template), to be kept once parsed (the key of the render being kept), or
/// neither.
#[derive(Debug, Default)]
pub enum ReleaseParse {
    #[default]
    Neither,
    Have(HashMap<String, Vec<yaml::Document>>),
    Keep(String),
}

impl KeptParses {
    pub fn extend(&mut self, other: KeptParses) {
        self.have.extend(other.have);
        self.keep.extend(other.keep);
    }

    /// Note the file `path` of a release's `template`.
    pub fn note(&mut self, release: &mut ReleaseParse, template: &str, path: &Path) {
        match release {
            ReleaseParse::Neither => {}
            ReleaseParse::Have(parsed) => {
                if let Some(docs) = parsed.remove(template) {
                    self.have.insert(path.to_path_buf(), docs);
                }
            }
            ReleaseParse::Keep(key) => {
                self.keep
                    .insert(path.to_path_buf(), (key.clone(), template.to_string()));
            }
        }
    }

    /// Forget the files `paths`: their text changes after the render (post-renderers).
    pub fn forget<'p>(&mut self, paths: impl Iterator<Item = &'p Path>) {
        for path in paths {
            self.have.remove(path);
            self.keep.remove(path);
        }
    }
}

/// The documents and problems of each file, with the documents of those to keep handed to
/// the render being kept (`kept_renders`).
#[allow(clippy::type_complexity)]
pub fn hand_over(
    files: &[SourceFile],
    parsed: Vec<(
        Vec<(yaml::Document, Vec<Problem>)>,
        Vec<Problem>,
        Option<String>,
    )>,
    kept: &KeptParses,
    kept_renders: Option<&KeptRenders>,
) -> Vec<(Vec<(yaml::Document, Vec<Problem>)>, Vec<Problem>)> {
    files
        .iter()
        .zip(parsed)
        .map(|(file, (docs, problems, to_keep))| {
            let key = kept.keep.get(&file.path);
            if let (Some(json), Some((key, template)), Some(renders)) = (to_keep, key, kept_renders)
            {
                renders.put_parsed(key, template, json);
            }
            (docs, problems)
        })
        .collect()
}

/// The documents parsed from a file, as JSON to keep; `None` when they would not read back
/// the same: serde_json reads some floats back one bit off (without its `float_roundtrip`),
/// so a file holding a float is parsed from its text every time.
pub fn as_json(docs: &[yaml::Document]) -> Option<String> {
    if docs.iter().any(|doc| holds_float(&doc.value)) {
        return None;
    }
    serde_json::to_string(docs).ok()
}

fn holds_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(holds_float),
        Value::Object(map) => map.values().any(holds_float),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_read_back_as_parsed_and_floats_are_not_kept() {
        let text = "# c\na: 1\nb: [x, 'y']\n---\nkind: List\napiVersion: v1\nitems:\n- kind: A\n  n: -3\n- kind: B\n  s: |\n    two\n    lines\n";
        let (docs, problems) = yaml::parse_file(Path::new("f.yaml"), text);
        assert!(problems.is_empty() && docs.len() == 3, "{problems:?}");
        let json = as_json(&docs).expect("kept");
        let back: Vec<yaml::Document> = serde_json::from_str(&json).expect("reads");
        assert_eq!(format!("{back:?}"), format!("{docs:?}"));
        let (floats, _) = yaml::parse_file(Path::new("f.yaml"), "a: {b: [1.5]}\n");
        assert_eq!(as_json(&floats), None);
    }
}
