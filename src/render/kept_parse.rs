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
#[derive(Debug)]
pub struct KeptDoc {
    line: usize,
    start_line: usize,
    text: Option<String>,
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

/// The documents parsed from a file whose text is `text`, as kept ([`read`] reads them
/// back); `None` when they would not read back the same (a float: kept values hold
/// integers, strings, booleans and null only, so a file holding a float is parsed from its
/// text every time). The layout frames every string by its length (`<len>:<bytes>`) and
/// every number and count by `;`: read back without scanning for escapes, maps sized before
/// they are filled.
pub fn as_kept(docs: &[yaml::Document], text: &str) -> Option<String> {
    let mut out = String::new();
    let mut from = 0;
    out.push_str(&format!("{};", docs.len()));
    for doc in docs {
        out.push_str(&format!("{};{};", doc.line, doc.start_line));
        match span_in(text, &doc.text, from) {
            Some((at, len, marker)) => {
                from = at + len;
                out.push_str(&format!("S{at};{len};{}", u8::from(marker)));
            }
            None => {
                out.push('T');
                put_str(&mut out, &doc.text);
            }
        }
        out.push(if doc.typed_from_value { '1' } else { '0' });
        out.push(if doc.decrypted { '1' } else { '0' });
        out.push_str(&format!("{};", doc.sealed.len()));
        for sealed in &doc.sealed {
            put_str(&mut out, sealed);
        }
        put_value(&mut out, &doc.value)?;
    }
    Some(out)
}

fn put_str(out: &mut String, text: &str) {
    out.push_str(&text.len().to_string());
    out.push(':');
    out.push_str(text);
}

fn put_value(out: &mut String, value: &Value) -> Option<()> {
    match value {
        Value::Null => out.push('n'),
        Value::Bool(b) => out.push(if *b { 't' } else { 'f' }),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => out.push_str(&format!("u{u};")),
            (None, Some(i)) => out.push_str(&format!("i{i};")),
            (None, None) => return None,
        },
        Value::String(text) => {
            out.push('s');
            put_str(out, text);
        }
        Value::Array(items) => {
            out.push_str(&format!("a{};", items.len()));
            for item in items {
                put_value(out, item)?;
            }
        }
        Value::Object(map) => {
            out.push_str(&format!("o{};", map.len()));
            for (key, item) in map {
                put_str(out, key);
                put_value(out, item)?;
            }
        }
    }
    Some(())
}

/// The documents [`as_kept`] wrote; `None` when `kept` is not such a list (damaged).
pub fn read(kept: &str) -> Option<Vec<KeptDoc>> {
    let mut reader = Reader { kept, at: 0 };
    let count = reader.count()?;
    let mut docs = Vec::with_capacity(count.min(kept.len()));
    for _ in 0..count {
        let line = reader.count()?;
        let start_line = reader.count()?;
        let (text, span) = match reader.byte()? {
            b'S' => {
                let at = reader.count()?;
                let len = reader.count()?;
                (None, Some((at, len, reader.flag()?)))
            }
            b'T' => (Some(reader.str()?.to_string()), None),
            _ => return None,
        };
        let typed_from_value = reader.flag()?;
        let decrypted = reader.flag()?;
        let sealed_count = reader.count()?;
        let sealed = (0..sealed_count)
            .map(|_| reader.str().map(str::to_string))
            .collect::<Option<Vec<_>>>()?;
        let value = reader.value(0)?;
        docs.push(KeptDoc {
            line,
            start_line,
            text,
            span,
            value,
            typed_from_value,
            decrypted,
            sealed,
        });
    }
    (reader.at == kept.len()).then_some(docs)
}

/// Deepest nesting a kept value may have (a damaged entry could claim any).
const MAX_DEPTH: usize = 512;

struct Reader<'a> {
    kept: &'a str,
    at: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.kept.as_bytes().get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn flag(&mut self) -> Option<bool> {
        match self.byte()? {
            b'0' => Some(false),
            b'1' => Some(true),
            _ => None,
        }
    }

    /// Decimal digits up to `end`.
    fn number(&mut self, end: u8) -> Option<u64> {
        let mut n: u64 = 0;
        let mut digits = 0;
        loop {
            match self.byte()? {
                b if b == end && digits > 0 => return Some(n),
                b @ b'0'..=b'9' => {
                    n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                    digits += 1;
                }
                _ => return None,
            }
        }
    }

    fn count(&mut self) -> Option<usize> {
        usize::try_from(self.number(b';')?).ok()
    }

    fn str(&mut self) -> Option<&'a str> {
        let len = usize::try_from(self.number(b':')?).ok()?;
        let text = self.kept.get(self.at..self.at.checked_add(len)?)?;
        self.at += len;
        Some(text)
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        Some(match self.byte()? {
            b'n' => Value::Null,
            b't' => Value::Bool(true),
            b'f' => Value::Bool(false),
            b'u' => Value::Number(self.number(b';')?.into()),
            // Only negative integers are written so (the others as `u`).
            b'i' if self.byte()? == b'-' => {
                let magnitude = i128::from(self.number(b';')?);
                Value::Number(i64::try_from(-magnitude).ok()?.into())
            }
            b's' => Value::String(self.str()?.to_string()),
            b'a' => {
                let count = self.count()?;
                let mut items = Vec::with_capacity(count.min(self.kept.len()));
                for _ in 0..count {
                    items.push(self.value(depth + 1)?);
                }
                Value::Array(items)
            }
            b'o' => {
                let count = self.count()?;
                let mut map = serde_json::Map::with_capacity(count.min(self.kept.len()));
                for _ in 0..count {
                    let key = self.str()?.to_string();
                    map.insert(key, self.value(depth + 1)?);
                }
                Value::Object(map)
            }
            _ => return None,
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn read_back(text: &str) -> Option<(Vec<yaml::Document>, Vec<yaml::Document>)> {
        let (docs, problems) = yaml::parse_file(Path::new("f.yaml"), text);
        assert!(problems.is_empty(), "{problems:?}");
        let kept = as_kept(&docs, text)?;
        let kept = read(&kept).expect("reads");
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
            "a: -9223372036854775808\nb: 18446744073709551615\nc: 'é:ü;'\nd: ''\n'k:;': [null, true, false, {}, []]\n",
        ] {
            let (docs, back) = read_back(text).expect("kept");
            assert_eq!(format!("{back:?}"), format!("{docs:?}"), "{text}");
        }
        assert!(read_back("a: {b: [1.5]}\n").is_none());
        // Cut anywhere or with a byte more, what was kept does not read.
        let text = "a: {b: [1, x, -2]}\n---\nkind: List\nitems: [{k: v}]\n";
        let (docs, _) = yaml::parse_file(Path::new("f.yaml"), text);
        let kept = as_kept(&docs, text).expect("kept");
        for cut in 0..kept.len() {
            assert!(read(&kept[..cut]).is_none(), "{cut}");
        }
        assert!(read(&format!("{kept}n")).is_none());
        // A span past the file's text: the document is not taken.
        let (docs, _) = yaml::parse_file(Path::new("f.yaml"), "a: 1\n---\nb: 2\n");
        let kept = as_kept(&docs, "a: 1\n---\nb: 2\n").expect("kept");
        let kept = read(&kept).expect("reads");
        assert!(kept
            .into_iter()
            .any(|d| d.into_document("a: 1\n").is_none()));
    }
}
