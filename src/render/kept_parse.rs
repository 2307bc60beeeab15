//! The documents of a kept Helm render, kept parsed with it (see [`super::helm_cache`]):
//! reading a big chart's kept render as YAML text again was half of a kept render's cost.
//! A render being kept has its files' documents written down as parsed ([`KeptDoc`]: every
//! field of [`yaml::Document`], its text as where it lies in the file's text) once the
//! render has parsed them; a render taken from the cache brings them back, and its files
//! are not parsed again. What was kept parsed is exactly what parsing the file's text gives: the
//! text of a kept render's file is a pure function of the kept manifest (tend's left-out
//! documents blanked), and a file whose text changes after the render (a Flux HelmRelease's
//! post-renderers) is parsed from its text as before.

use crate::yaml;
use serde::ser::{Error as _, Serialize, Serializer};
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
    Have(HashMap<String, Vec<KeptDoc>>),
    Keep(String),
}

impl KeptParses {
    pub fn extend(&mut self, other: KeptParses) {
        self.have.extend(other.have);
        self.keep.extend(other.keep);
    }

    /// Note the file `path` of a release's `template`, whose text is `text`.
    pub fn note(&mut self, release: &mut ReleaseParse, template: &str, path: &Path, text: &str) {
        match release {
            ReleaseParse::Neither => {}
            ReleaseParse::Have(parsed) => {
                let docs = parsed.remove(template).and_then(|docs| {
                    docs.into_iter()
                        .map(|doc| doc.into_document(text))
                        .collect::<Option<Vec<_>>>()
                });
                if let Some(docs) = docs {
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

/// A document as kept: [`yaml::Document`]'s fields, its text where it lies in its file's
/// text (`at`, `len`; with `marker`, its first three bytes are the `---` the document
/// splitter blanks) or, where it does not (a List's items), whole.
#[derive(Debug, serde::Deserialize)]
pub struct KeptDoc {
    line: usize,
    start_line: usize,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    span: Option<(usize, usize, bool)>,
    value: Value,
    typed_from_value: bool,
    decrypted: bool,
    sealed: Vec<String>,
}

impl KeptDoc {
    /// The document, its text taken from its file's `text`; `None` when the span does not
    /// lie in it (an entry that does not fit its render).
    fn into_document(self, text: &str) -> Option<yaml::Document> {
        let doc_text = match (self.text, self.span) {
            (Some(whole), _) => whole,
            (None, Some((at, len, false))) => text.get(at..at.checked_add(len)?)?.to_string(),
            (None, Some((at, len, true))) => {
                let rest = text.get(at.checked_add(3)?..at.checked_add(len)?)?;
                format!("   {rest}")
            }
            (None, None) => return None,
        };
        Some(yaml::Document {
            line: self.line,
            start_line: self.start_line,
            text: doc_text,
            value: self.value,
            typed_from_value: self.typed_from_value,
            decrypted: self.decrypted,
            sealed: self.sealed,
        })
    }
}

/// The documents parsed from a file whose text is `text`, as JSON to keep; `None` when
/// they would not read back the same: serde_json reads some floats back one bit off
/// (without its `float_roundtrip`), so a file holding a float is parsed from its text
/// every time.
pub fn as_json(docs: &[yaml::Document], text: &str) -> Option<String> {
    let mut from = 0;
    let kept: Vec<DocOut<'_>> = docs
        .iter()
        .map(|doc| {
            let span = span_in(text, &doc.text, from);
            if let Some((at, len, _)) = span {
                from = at + len;
            }
            DocOut { doc, span }
        })
        .collect();
    serde_json::to_string(&kept).ok()
}

/// Where `doc` lies in `text`: at byte `from` (where the document before ended) or at a
/// later `---` line (after documents of only comments, which are skipped), as it is or with
/// that `---` blanked. Compared in place, not searched for: documents follow one another.
fn span_in(text: &str, doc: &str, from: usize) -> Option<(usize, usize, bool)> {
    let at_start = |at: usize| {
        let rest = text.get(at..)?;
        if rest.starts_with(doc) {
            return Some((at, doc.len(), false));
        }
        let after_marker = doc.strip_prefix("   ")?;
        let marked = rest.starts_with("---") && rest.get(3..)?.starts_with(after_marker);
        marked.then_some((at, doc.len(), true))
    };
    let mut at = from;
    loop {
        if let Some(span) = at_start(at) {
            return Some(span);
        }
        at += text.get(at..)?.find("\n---")? + 1;
    }
}

/// A document written as [`KeptDoc`] reads it.
struct DocOut<'a> {
    doc: &'a yaml::Document,
    span: Option<(usize, usize, bool)>,
}

impl Serialize for DocOut<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let doc = self.doc;
        let mut out = s.serialize_struct("KeptDoc", 7)?;
        out.serialize_field("line", &doc.line)?;
        out.serialize_field("start_line", &doc.start_line)?;
        match self.span {
            Some(span) => out.serialize_field("span", &span)?,
            None => out.serialize_field("text", &doc.text)?,
        }
        out.serialize_field("value", &Exact(&doc.value))?;
        out.serialize_field("typed_from_value", &doc.typed_from_value)?;
        out.serialize_field("decrypted", &doc.decrypted)?;
        out.serialize_field("sealed", &doc.sealed)?;
        out.end()
    }
}

/// A value that reads back as it is: one holding a float fails to serialize.
struct Exact<'a>(&'a Value);

impl Serialize for Exact<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Number(n) if n.is_f64() => Err(S::Error::custom("a float")),
            Value::Array(items) => s.collect_seq(items.iter().map(Exact)),
            Value::Object(map) => s.collect_map(map.iter().map(|(k, v)| (k, Exact(v)))),
            other => other.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_back(text: &str) -> Option<(Vec<yaml::Document>, Vec<yaml::Document>)> {
        let (docs, problems) = yaml::parse_file(Path::new("f.yaml"), text);
        assert!(problems.is_empty(), "{problems:?}");
        let json = as_json(&docs, text)?;
        let kept: Vec<KeptDoc> = serde_json::from_str(&json).expect("reads");
        let back: Option<Vec<_>> = kept.into_iter().map(|d| d.into_document(text)).collect();
        Some((docs, back.expect("fits")))
    }

    #[test]
    fn documents_read_back_as_parsed_and_floats_are_not_kept() {
        for text in [
            "a: 1\n",
            "# c\na: 1\nb: [x, 'y']\n---\nkind: List\napiVersion: v1\nitems:\n- kind: A\n  n: -3\n- kind: B\n  s: |\n    two\n    lines\n",
            "---\na: 1\n---\n# only a comment\n---   \nb: 2\n...\nc: 3\n---\na: 1\n",
            "--- {x: 1}\n--- # c\ny: [2]\n",
        ] {
            let (docs, back) = read_back(text).expect("kept");
            assert_eq!(format!("{back:?}"), format!("{docs:?}"), "{text}");
        }
        assert!(read_back("a: {b: [1.5]}\n").is_none());
        // A span past the file's text: the document is not taken.
        let (docs, _) = yaml::parse_file(Path::new("f.yaml"), "a: 1\n---\nb: 2\n");
        let json = as_json(&docs, "a: 1\n---\nb: 2\n").expect("kept");
        let kept: Vec<KeptDoc> = serde_json::from_str(&json).expect("reads");
        assert!(kept
            .into_iter()
            .any(|d| d.into_document("a: 1\n").is_none()));
    }
}
