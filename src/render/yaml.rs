//! All YAML parsing lives here (serde_yaml is deprecated upstream; one module keeps a future
//! swap small). Files are split into documents by hand so that every document keeps the line
//! it starts on, and serde_yaml's own error locations are shifted to file lines.

use super::object::Problem;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::Path;

/// One YAML document of a file, parsed into JSON.
#[derive(Debug, Clone)]
pub struct Document {
    /// 1-based line of the first non-blank, non-comment line of the document.
    pub line: usize,
    /// 1-based line where the document's text starts (its `---` line, or line 1).
    start_line: usize,
    /// The document's text (`---` marker blanked out, so lines and columns stay put).
    pub text: String,
    pub value: Value,
}

impl Document {
    /// Parse this document's text again into a typed value, reporting serde's error with the
    /// file line it points at (used for tend's kinds, whose unknown fields are errors).
    pub fn parse_typed<T: DeserializeOwned>(&self, file: &Path) -> Result<T, Problem> {
        serde_yaml::from_str::<T>(&self.text).map_err(|e| self.problem_from(file, &e))
    }

    fn problem_from(&self, file: &Path, err: &serde_yaml::Error) -> Problem {
        let message = clean_message(&err.to_string());
        let mut line = err
            .location()
            .map(|loc| self.start_line + loc.line() - 1)
            .unwrap_or(self.line);
        // serde_yaml points duplicate keys at the start of their mapping; point at the
        // second occurrence of the key instead, which is the line to fix.
        if let Some(key) = duplicate_key(&message) {
            let from = line.saturating_sub(self.start_line);
            let mut seen = 0;
            for (i, text) in self.text.lines().enumerate().skip(from) {
                let t = text.trim_start().trim_start_matches("- ");
                if t.starts_with(&format!("{key}:")) || t.starts_with(&format!("\"{key}\":")) {
                    seen += 1;
                    if seen == 2 {
                        line = self.start_line + i;
                        break;
                    }
                }
            }
        }
        Problem::new(file, line, message)
    }

    /// Best-effort line of a nested mapping key (e.g. `["spec", "eagerness"]`) in this
    /// document, for pointing semantic errors at the offending field. Falls back to the
    /// document's first line.
    pub fn line_of(&self, path: &[String]) -> usize {
        let mut indent: Option<usize> = None;
        let mut depth = 0;
        for (i, raw) in self.text.lines().enumerate() {
            if depth == path.len() {
                break;
            }
            let trimmed = raw.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let this_indent = raw.len() - trimmed.len();
            if let Some(parent) = indent {
                if this_indent <= parent {
                    // Left the parent mapping without finding the key.
                    return self.line;
                }
            }
            let key = &path[depth];
            let candidate = trimmed.trim_start_matches("- ");
            if candidate.starts_with(&format!("{key}:"))
                || candidate.starts_with(&format!("\"{key}\":"))
            {
                depth += 1;
                indent = Some(this_indent);
                if depth == path.len() {
                    return self.start_line + i;
                }
            }
        }
        self.line
    }
}

/// The key named by serde_yaml's "duplicate entry with key \"k\"" message.
fn duplicate_key(message: &str) -> Option<&str> {
    let rest = message.split("duplicate entry with key \"").nth(1)?;
    rest.split('"').next()
}

/// serde_yaml appends " at line X column Y" to messages; we print our own file:line.
fn clean_message(msg: &str) -> String {
    match msg.find(" at line ") {
        Some(idx) => msg[..idx].to_string(),
        None => msg.to_string(),
    }
}

/// Split `text` into documents and parse each. Empty documents (only comments or blank) are
/// skipped. Problems are returned per document; a bad document does not hide later ones.
pub fn parse_file(file: &Path, text: &str) -> (Vec<Document>, Vec<Problem>) {
    let mut docs = Vec::new();
    let mut problems = Vec::new();
    for (start_line, chunk) in split_documents(text) {
        let Some(first) = first_content_line(&chunk) else {
            continue;
        };
        let line = start_line + first;
        let mut doc = Document {
            line,
            start_line,
            text: chunk,
            value: Value::Null,
        };
        if doc.text.contains('\t') {
            if let Some(tab_line) = leading_tab_line(&doc.text) {
                problems.push(Problem::new(
                    file,
                    start_line + tab_line,
                    "tab character used for indentation; YAML allows only spaces",
                ));
                continue;
            }
        }
        match serde_yaml::from_str::<serde_yaml::Value>(&doc.text) {
            Ok(yaml) => match yaml_to_json(yaml) {
                Ok(Value::Null) => continue,
                Ok(value) => {
                    doc.value = value;
                    docs.push(doc);
                }
                Err(msg) => problems.push(Problem::new(file, line, msg)),
            },
            Err(e) => problems.push(doc.problem_from(file, &e)),
        }
    }
    (docs, problems)
}

/// Split on `---` document markers (and `...` end markers) at column 0, returning each chunk
/// with the 1-based line where it starts. Marker lines are blanked so line numbers hold.
fn split_documents(text: &str) -> Vec<(usize, String)> {
    let mut chunks = Vec::new();
    let mut current = String::new();
    let mut start = 1;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let content = line.trim_end_matches(['\n', '\r']);
        let is_start = content == "---"
            || content.starts_with("--- ")
            || content.starts_with("---\t")
            || content.starts_with("---#");
        let is_end = content == "..." || content.starts_with("... ");
        if is_start || is_end {
            if !current.is_empty() {
                chunks.push((start, std::mem::take(&mut current)));
            }
            start = i + 1;
            if is_start {
                // Keep inline content after the marker (`--- !tag` or `--- {a: 1}`), blanking
                // the marker itself so columns stay put.
                current.push_str("   ");
                current.push_str(&line[3..]);
            } else {
                current.push('\n');
            }
        } else {
            current.push_str(line);
        }
    }
    if !current.is_empty() {
        chunks.push((start, current));
    }
    chunks
}

/// 0-based index of the first line that is neither blank nor a comment.
fn first_content_line(chunk: &str) -> Option<usize> {
    chunk.lines().position(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#') && !t.starts_with('%')
    })
}

/// 0-based index of a line whose indentation contains a tab (outside block scalars we cannot
/// tell cheaply, so only leading tabs before any content are flagged).
fn leading_tab_line(chunk: &str) -> Option<usize> {
    chunk.lines().position(|l| {
        let indent: String = l.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
        indent.contains('\t') && !l.trim().is_empty() && !l.trim_start().starts_with('#')
    })
}

/// Convert YAML to JSON: keys must be strings (as in every Kubernetes object), tags are
/// dropped, and non-finite floats are rejected.
fn yaml_to_json(value: serde_yaml::Value) -> Result<Value, String> {
    use serde_yaml::Value as Y;
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                serde_json::Number::from_f64(f)
                    .map(Value::Number)
                    .ok_or_else(|| format!("number {f} is not representable in JSON"))?
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(
            items
                .into_iter()
                .map(yaml_to_json)
                .collect::<Result<_, _>>()?,
        ),
        Y::Mapping(map) => {
            let mut out = serde_json::Map::with_capacity(map.len());
            for (k, v) in map {
                let key = match k {
                    Y::String(s) => s,
                    Y::Bool(b) => b.to_string(),
                    Y::Number(n) => n.to_string(),
                    other => {
                        return Err(format!(
                            "mapping key {} is not a string; quote it",
                            serde_yaml::to_string(&other).unwrap_or_default().trim()
                        ))
                    }
                };
                out.insert(key, yaml_to_json(v)?);
            }
            Value::Object(out)
        }
        Y::Tagged(tagged) => yaml_to_json(tagged.value)?,
    })
}

/// Serialize a value as one YAML document (no leading `---`).
pub fn to_yaml(value: &Value) -> String {
    serde_yaml::to_string(value).unwrap_or_else(|e| format!("# cannot serialize: {e}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Vec<Document>, Vec<Problem>) {
        parse_file(Path::new("f.yaml"), text)
    }

    #[test]
    fn documents_keep_their_lines() {
        let (docs, problems) = parse("# header\na: 1\n---\n\n# c\nb: 2\n---\n---\nc: 3\n");
        assert!(problems.is_empty(), "{problems:?}");
        let lines: Vec<usize> = docs.iter().map(|d| d.line).collect();
        assert_eq!(lines, vec![2, 6, 9]);
        assert_eq!(docs[1].value["b"], 2);
    }

    #[test]
    fn errors_point_at_the_file_line() {
        let (docs, problems) = parse("a: 1\n---\nb: 2\nc: [unclosed\n");
        assert_eq!(docs.len(), 1);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].line >= 4, "{:?}", problems[0]);
    }

    #[test]
    fn duplicate_keys_are_errors() {
        let (_, problems) = parse("a: 1\na: 2\n");
        assert_eq!(problems.len(), 1);
        assert!(problems[0].message.contains("duplicate"), "{}", problems[0]);
        assert_eq!(problems[0].line, 2);
    }

    #[test]
    fn tabs_are_reported() {
        let (_, problems) = parse("a:\n\tb: 1\n");
        assert_eq!(problems[0].line, 2);
        assert!(problems[0].message.contains("tab"));
    }

    #[test]
    fn inline_document_after_marker() {
        let (docs, problems) = parse("--- {a: 1}\n");
        assert!(problems.is_empty());
        assert_eq!(docs[0].value["a"], 1);
        assert_eq!(docs[0].line, 1);
    }

    #[test]
    fn line_of_nested_key() {
        let (docs, _) = parse("---\nkind: X\nspec:\n  a: 1\n  eagerness: 200\n");
        let path = vec!["spec".to_string(), "eagerness".to_string()];
        assert_eq!(docs[0].line_of(&path), 5);
    }
}
