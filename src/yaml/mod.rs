//! All YAML parsing lives here (serde_yaml is deprecated upstream; one module keeps a future
//! swap small). Files are split into documents by hand so that every document keeps the line
//! it starts on, and serde_yaml's own error locations are shifted to file lines.

use crate::problem::Problem;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::cell::Cell;
use std::path::Path;

mod convert;
mod limits;
mod lists;

use convert::{direct, yaml_to_json};
use limits::*;
use lists::*;

/// Deepest nesting of collections tend reads. serde_yaml stops at 128 levels itself, but
/// libyaml spends time quadratic in the depth of *flow* collections (`[[[[...`) before
/// serde_yaml gets to count, so those are rejected by a linear scan first. Real Kubernetes
/// objects stay far below this (a Deployment is about 12 levels deep).
pub const MAX_NESTING: usize = 128;

/// Largest size a document may expand to through YAML aliases (`*anchor`), counted as the
/// bytes of every scalar plus 8 per node. A document without aliases is bounded by the file
/// size limit; one with aliases could otherwise expand exponentially ("billion laughs") or
/// repeat one large string thousands of times.
pub const MAX_EXPANDED_BYTES: usize = 16 * 1024 * 1024;

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
    /// Whether typed parsing must take `value` rather than `text`: set when the value was
    /// changed after parsing (kustomize's build annotations removed), so the text would put
    /// them back.
    typed_from_value: bool,
    /// JSON pointers of the fields that were SOPS-encrypted, once the document is decrypted
    /// (see [`crate::object::Origin::sealed`]).
    pub sealed: Vec<String>,
}

impl Document {
    /// Parse this document's text again into a typed value, reporting serde's error with the
    /// file line it points at (used for tend's kinds, whose unknown fields are errors).
    pub fn parse_typed<T: DeserializeOwned>(&self, file: &Path) -> Result<T, Problem> {
        let typed = serde_yaml::from_str::<T>(&self.text).map_err(|e| self.problem_from(file, &e));
        if !self.typed_from_value || typed.is_err() {
            return typed;
        }
        // The text has told where any error is; the value is what is meant.
        serde_json::from_value::<T>(self.value.clone())
            .map_err(|e| Problem::new(file, self.line, one_line(&e.to_string())))
    }

    /// Replace the value (a decrypted one, say): typed parsing then reads the value, the text
    /// still telling lines.
    pub fn set_value(&mut self, value: Value) {
        self.value = value;
        self.typed_from_value = true;
    }

    /// The file lines this document's text covers (its `---` line included).
    pub fn lines(&self) -> std::ops::Range<usize> {
        self.start_line..self.start_line + self.text.lines().count()
    }

    fn problem_from(&self, file: &Path, err: &serde_yaml::Error) -> Problem {
        let message = friendly_message(&clean_message(&err.to_string()));
        // From the byte index, not libyaml's line: libyaml also breaks lines at a lone `\r`,
        // NEL, U+2028 and U+2029, which editors (and `path:line`) do not.
        let mut line = self
            .line_of_offset(&message)
            .or_else(|| err.location().map(|loc| self.line_of_index(loc.index())))
            .unwrap_or(self.line);
        // Reader errors name a byte offset instead ("... at position 65"); say the line.
        let message = match message.find(" at position ") {
            Some(i) => message[..i].to_string(),
            None => message,
        };
        let mut message = message;
        if message.ends_with(UNKNOWN_ANCHOR_MESSAGE) {
            // Name the alias: it starts where serde_yaml points.
            if let Some(loc) = err.location() {
                let alias: String = self
                    .text
                    .lines()
                    .nth(loc.line() - 1)
                    .and_then(|l| l.get(loc.column() - 1..))
                    .unwrap_or("")
                    .chars()
                    .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ']' | '}'))
                    .take(64)
                    .collect();
                if alias.starts_with('*') && alias.len() > 1 {
                    message = message.replacen("alias (`*name`)", &format!("alias {alias}"), 1);
                }
            }
        }
        if err.location().is_none() && message.ends_with(&alias_bomb_message()) {
            // The repetition limit has no position: point at the first alias.
            if let Some(i) = self.text.lines().position(|l| {
                l.match_indices('*').any(|(at, _)| {
                    let before = l[..at].chars().last().unwrap_or(' ');
                    let after = l[at + 1..].chars().next().unwrap_or(' ');
                    matches!(before, ' ' | '[' | '{' | ',') && after.is_alphanumeric()
                })
            }) {
                line = self.start_line + i;
            }
        }
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
        Problem::new(file, line, one_line(&message))
    }

    /// The line of the byte offset in libyaml's reader errors ("... at position 65").
    fn line_of_offset(&self, message: &str) -> Option<usize> {
        let offset: usize = message
            .rsplit_once(" at position ")?
            .1
            .trim()
            .parse()
            .ok()?;
        Some(self.line_of_index(offset))
    }

    /// The file line of a byte index into this document's text.
    fn line_of_index(&self, index: usize) -> usize {
        let end = index.min(self.text.len());
        let newlines = self.text.as_bytes()[..end]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        self.start_line + newlines
    }
}

/// One step of a path into a document: a mapping key or a sequence index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Key(k) => write!(f, "{k}"),
            Step::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// `spec.template.spec.containers[0].env[1].value`
pub fn dotted(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        if matches!(step, Step::Key(_)) && !out.is_empty() {
            out.push('.');
        }
        out.push_str(&step.to_string());
    }
    out
}

impl Document {
    /// Best-effort line of the node at `path` (keys and sequence indexes) in block-style
    /// YAML. Where the path continues in flow style (`{a: 1}`, `[x, y]`) or cannot be
    /// followed, the line of the deepest node found; the document's first line at worst.
    pub fn line_at(&self, path: &[Step]) -> usize {
        self.locate(path).0
    }

    /// Line of a nested mapping key (e.g. `["spec", "eagerness"]`), for pointing semantic
    /// errors at the offending field; the document's first line when the key is not written
    /// in block style (absent, or inside a flow mapping).
    pub fn line_of(&self, keys: &[String]) -> usize {
        let path: Vec<Step> = keys.iter().cloned().map(Step::Key).collect();
        match self.locate(&path) {
            (line, true) => line,
            (_, false) => self.line,
        }
    }

    /// [`Self::line_at`], and whether the whole path was found.
    fn locate(&self, path: &[Step]) -> (usize, bool) {
        // Content lines: (0-based line, indentation, text after the indentation).
        let lines: Vec<(usize, usize, &str)> = self
            .text
            .lines()
            .enumerate()
            .filter_map(|(i, raw)| {
                let t = raw.trim_start_matches(' ');
                let blank = t.trim().is_empty() || t.starts_with('#');
                (!blank).then_some((i, raw.len() - t.len(), t))
            })
            .collect();
        let is_item = |t: &str| t == "-" || t.starts_with("- ");
        let mut found = self.line;
        // The scope of the current node: lines[lo..hi]; for a sequence item, its first line
        // is seen from after the `- ` marker (column and text).
        let (mut lo, mut hi) = (0, lines.len());
        let mut item_head: Option<(usize, &str)> = None;
        fn view<'t>(
            lines: &[(usize, usize, &'t str)],
            n: usize,
            lo: usize,
            head: Option<(usize, &'t str)>,
        ) -> (usize, &'t str) {
            match head {
                Some((col, text)) if n == lo => (col, text),
                _ => (lines[n].1, lines[n].2),
            }
        }
        let mut resolved = 0;
        for step in path {
            if lo >= hi {
                break;
            }
            let (col, text) = view(&lines, lo, lo, item_head);
            match step {
                Step::Key(key) => {
                    if is_item(text) {
                        break;
                    }
                    let hit = (lo..hi).find(|&n| {
                        let (c, t) = view(&lines, n, lo, item_head);
                        c == col && key_matches(t, key)
                    });
                    let Some(n) = hit else { break };
                    found = self.start_line + lines[n].0;
                    let mut end = n + 1;
                    while end < hi
                        && (lines[end].1 > col || lines[end].1 == col && is_item(lines[end].2))
                    {
                        end += 1;
                    }
                    (lo, hi, item_head) = (n + 1, end, None);
                    resolved += 1;
                }
                Step::Index(index) => {
                    if !is_item(text) {
                        break;
                    }
                    let items: Vec<usize> = (lo..hi)
                        .filter(|&n| {
                            let (c, t) = view(&lines, n, lo, item_head);
                            c == col && is_item(t)
                        })
                        .collect();
                    let Some(&n) = items.get(*index) else { break };
                    found = self.start_line + lines[n].0;
                    let next = items.get(index + 1).copied().unwrap_or(hi);
                    let (c, t) = view(&lines, n, lo, item_head);
                    let rest = t[1..].trim_start_matches(' ');
                    if rest.is_empty() {
                        (lo, hi, item_head) = (n + 1, next, None);
                    } else {
                        let rest_col = c + (t.len() - rest.len());
                        (lo, hi, item_head) = (n, next, Some((rest_col, rest)));
                    }
                    resolved += 1;
                }
            }
        }
        (found, resolved == path.len())
    }
}

/// Whether a line (from its content column) defines mapping key `key`.
fn key_matches(text: &str, key: &str) -> bool {
    let rest = if let Some(r) = text.strip_prefix(key) {
        r
    } else if let Some(r) = text
        .strip_prefix('"')
        .and_then(|t| t.strip_prefix(key))
        .and_then(|t| t.strip_prefix('"'))
    {
        r
    } else if let Some(r) = text
        .strip_prefix('\'')
        .and_then(|t| t.strip_prefix(key))
        .and_then(|t| t.strip_prefix('\''))
    {
        r
    } else {
        return false;
    };
    rest == ":" || rest.starts_with(": ") || rest.starts_with(":\t")
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

/// A message as one line: line breaks and other control characters (which a message can
/// pick up from the input it quotes) escaped, so every problem stays one `path:line:` line.
pub fn one_line(message: &str) -> String {
    if !message
        .chars()
        .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
    {
        return message.to_string();
    }
    message
        .chars()
        .map(|c| match c {
            '\n' => "\\n".to_string(),
            '\r' => "\\r".to_string(),
            '\t' => "\\t".to_string(),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => {
                c.escape_unicode().to_string()
            }
            c => c.to_string(),
        })
        .collect()
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
            typed_from_value: false,
            sealed: Vec::new(),
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
        if let Some(deep) = deep_flow_line(&doc.text, MAX_NESTING) {
            problems.push(Problem::new(file, start_line + deep, nesting_message()));
            continue;
        }
        if may_have_aliases(&doc.text) {
            if let Err(e) = check_expansion(&doc.text) {
                problems.push(doc.problem_from(file, &e));
                continue;
            }
        }
        if let Some(value) = direct(&doc.text) {
            if !value.is_null() {
                doc.value = value;
                expand_lists(file, doc, 0, &mut docs, &mut problems);
            }
            continue;
        }
        // Rare: what the fast path does not take, through serde_yaml's tree, tracking the
        // path to say where a problem is.
        match serde_yaml::from_str::<serde_yaml::Value>(&doc.text) {
            Ok(yaml) => match yaml_to_json(yaml, &mut Vec::new()) {
                Ok(Value::Null) => continue,
                Ok(value) => {
                    doc.value = value;
                    expand_lists(file, doc, 0, &mut docs, &mut problems);
                }
                Err((path, msg)) => {
                    problems.push(Problem::new(file, doc.line_at(&path), one_line(&msg)))
                }
            },
            Err(e) => problems.push(doc.problem_from(file, &e)),
        }
    }
    (docs, problems)
}

/// Parse one source file: [`parse_file`], and for text that kustomize built (`built`), without
/// kustomize's build annotations (SPEC 2: they describe the build, not the object).
pub fn parse_source(file: &Path, text: &str, built: bool) -> (Vec<Document>, Vec<Problem>) {
    let (mut docs, problems) = parse_file(file, text);
    if built {
        for doc in &mut docs {
            if strip_build_annotations(&mut doc.value) {
                doc.typed_from_value = true;
            }
        }
    }
    (docs, problems)
}

/// Annotations kustomize (and kyaml) add while building, never meant for the cluster: the
/// origin and transformer records of `buildMetadata`, and kyaml's internal bookkeeping.
pub fn is_build_annotation(key: &str) -> bool {
    matches!(
        key,
        "config.kubernetes.io/origin"
            | "alpha.config.kubernetes.io/transformations"
            | "config.kubernetes.io/path"
            | "config.kubernetes.io/index"
            | "config.k8s.io/id"
            | "kustomize.config.k8s.io/id"
    ) || key.starts_with("internal.config.kubernetes.io/")
}

/// Remove kustomize's build annotations (and an `annotations` mapping left empty by that).
/// Whether anything was removed.
fn strip_build_annotations(value: &mut Value) -> bool {
    let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) else {
        return false;
    };
    let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) else {
        return false;
    };
    let before = annotations.len();
    annotations.retain(|key, _| !is_build_annotation(key));
    if annotations.len() == before {
        return false;
    }
    if annotations.is_empty() {
        meta.remove("annotations");
    }
    true
}

/// Parse a small YAML text (an annotation's value) into JSON; `None` if it is not YAML.
pub fn parse_value(text: &str) -> Option<Value> {
    let yaml = serde_yaml::from_str::<serde_yaml::Value>(text).ok()?;
    yaml_to_json(yaml, &mut Vec::new()).ok()
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
    fn deep_flow_nesting_is_refused_quickly() {
        let text = format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let started = std::time::Instant::now();
        let (docs, problems) = parse(&text);
        assert!(docs.is_empty());
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.contains("nested more than 128"),
            "{}",
            problems[0]
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let deep = "[".repeat(200);
        for text in [
            format!("a: !tag {deep}\n"),
            format!("a: &anchor {deep}\n"),
            format!("- {deep}\n"),
            format!("? {deep}\n"),
            format!("a:\n  b: [1, {deep}\n"),
            format!("a: {{b: x, c: {deep}\n"),
        ] {
            let (_, problems) = parse(&text);
            assert!(
                problems.len() == 1 && problems[0].message.contains("nested more than 128"),
                "{text}: {problems:?}"
            );
        }
    }

    #[test]
    fn deep_block_nesting_names_its_line() {
        let mut text = String::new();
        for i in 0..200 {
            text.push_str(&format!("{}k{i}:\n", "  ".repeat(i)));
        }
        let (_, problems) = parse(&text);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.contains("nested more than 128"),
            "{}",
            problems[0]
        );
        assert!(problems[0].line > 100, "{}", problems[0]);
    }

    #[test]
    fn brackets_in_block_scalars_quotes_and_comments_do_not_count() {
        let inner = "[".repeat(300);
        let text = format!(
            "a: |\n  {inner}\n  more {inner}\nb: \"{inner}\"\nc: '{inner}'\n# {inner}\nd: x{inner}\ne: [1, [2, {{f: 3}}]]\n"
        );
        let (docs, problems) = parse(&text);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(docs[0].value["e"][1][1]["f"], 3);
    }

    #[test]
    fn alias_bombs_are_refused() {
        // Exponential: nine levels of nine aliases.
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
        let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
        for w in names.windows(2) {
            let refs = vec![format!("*{}", w[0]); 9].join(", ");
            text.push_str(&format!("{}: &{} [{refs}]\n", w[1], w[1]));
        }
        let (_, problems) = parse(&text);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.contains("billion laughs"),
            "{}",
            problems[0]
        );

        // Linear: one large string repeated (within serde_yaml's own repetition limit).
        let big = "x".repeat(1 << 20);
        let mut text = format!("a: &a \"{big}\"\nb: [");
        text.push_str(&"*a, ".repeat(100));
        text.push_str("]\n");
        let started = std::time::Instant::now();
        let (_, problems) = parse(&text);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.contains("more than 16 MiB"),
            "{}",
            problems[0]
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn modest_aliases_are_fine() {
        let (docs, problems) =
            parse("base: &labels {app: web, tier: front}\nmetadata:\n  labels: *labels\n");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(docs[0].value["metadata"]["labels"]["tier"], "front");
    }

    #[test]
    fn clear_messages_for_odd_input() {
        let (_, p) = parse("a: *nowhere\n");
        assert!(p[0].message.contains("anchor"), "{}", p[0]);
        let (_, p) = parse("a:\n  b: 123456789012345678901234567890\n");
        assert_eq!(p[0].line, 2);
        assert!(
            p[0].message.starts_with("a.b: integer is too large"),
            "{}",
            p[0]
        );
        assert!(!p[0].message.contains("1234567890"), "{}", p[0]);
        let (_, p) = parse("a:\n  ? [x, y]\n  : z\n");
        assert_eq!(p[0].line, 1);
        assert!(p[0].message.contains("is not a string"), "{}", p[0]);
        assert!(!p[0].message.contains('\n'));
        let (_, p) = parse("a: 1\nb: x\u{7}y\n");
        assert_eq!(p[0].line, 2, "{}", p[0]);
        assert_eq!(p[0].message, "control characters are not allowed");
    }

    #[test]
    fn line_at_follows_keys_and_indexes() {
        let text = "kind: X\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n        image: x\n      - name: b\n        ports:\n          - containerPort: 80\n          - containerPort: http\n";
        let (docs, _) = parse(text);
        let path = |steps: &[&str]| -> Vec<Step> {
            steps
                .iter()
                .map(|s| match s.parse::<usize>() {
                    Ok(i) => Step::Index(i),
                    Err(_) => Step::Key(s.to_string()),
                })
                .collect()
        };
        let d = &docs[0];
        assert_eq!(
            d.line_at(&path(&["spec", "template", "spec", "containers"])),
            5
        );
        assert_eq!(
            d.line_at(&path(&["spec", "template", "spec", "containers", "1"])),
            8
        );
        assert_eq!(
            d.line_at(&path(&[
                "spec",
                "template",
                "spec",
                "containers",
                "1",
                "ports",
                "1",
                "containerPort"
            ])),
            11
        );
        assert_eq!(
            d.line_at(&path(&[
                "spec",
                "template",
                "spec",
                "containers",
                "0",
                "image"
            ])),
            7
        );
        // Flow style: the deepest block node found.
        let (docs, _) = parse("a:\n  b: {c: [1, 2]}\n");
        assert_eq!(docs[0].line_at(&path(&["a", "b", "c", "1"])), 2);
        assert_eq!(dotted(&path(&["a", "b", "0", "c"])), "a.b[0].c");
    }

    #[test]
    fn lists_expand_into_items_at_their_lines() {
        let text = "# c\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleList\nitems:\n- apiVersion: rbac.authorization.k8s.io/v1\n  kind: Role\n  metadata:\n    name: a\n\n  # between\n- metadata:\n    name: b\n    labels:\n      x: |\n        - not an item\n-\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\nmetadata: {}\n";
        let (docs, problems) = parse(text);
        assert!(problems.is_empty(), "{problems:?}");
        let lines: Vec<usize> = docs.iter().map(|d| d.line).collect();
        assert_eq!(lines, vec![5, 11, 16]);
        // Inherited from the typed list.
        assert_eq!(docs[1].value["kind"], "Role");
        assert_eq!(docs[1].value["apiVersion"], "rbac.authorization.k8s.io/v1");
        assert_eq!(docs[2].value["kind"], "ConfigMap");
        // Lines inside an item point into the file.
        let name = vec!["metadata".to_string(), "name".to_string()];
        assert_eq!(docs[0].line_of(&name), 8);
        assert_eq!(docs[2].line_of(&["apiVersion".to_string()]), 17);
        #[derive(serde::Deserialize)]
        struct Named {
            metadata: serde_json::Map<String, Value>,
        }
        let typed: Named = docs[0].parse_typed(Path::new("f.yaml")).unwrap();
        assert_eq!(typed.metadata["name"], "a");
    }

    #[test]
    fn list_shapes() {
        // JSON: each item at the line it starts on.
        let (docs, _) = parse("{\"kind\": \"List\", \"apiVersion\": \"v1\",\n \"items\": [\n  {\"kind\": \"A\", \"s\": \"[{,\\\"\"},\n  {\"kind\": \"B\"}]}\n");
        assert_eq!(docs.iter().map(|d| d.line).collect::<Vec<_>>(), vec![3, 4]);
        // Empty and absent items; a kind that only ends in List is not a list.
        let (docs, problems) =
            parse("kind: List\nitems: []\n---\nkind: List\n---\nkind: AllowList\nspec: {}\n");
        assert!(problems.is_empty());
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].value["kind"], "AllowList");
        let (_, problems) = parse("kind: List\nitems: nope\n");
        assert_eq!(problems[0].line, 2);
        assert!(problems[0].message.contains("sequence"), "{}", problems[0]);
    }

    #[test]
    fn built_documents_lose_build_annotations() {
        let path = Path::new("x (kustomize build)");
        let text = "kind: A\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/origin: |\n      path: a.yaml\n    internal.config.kubernetes.io/x: y\n---\nkind: B\nmetadata:\n  annotations:\n    keep: me\n    config.kubernetes.io/origin: x\n";
        let (docs, _) = parse_source(path, text, true);
        assert!(docs[0].value["metadata"].get("annotations").is_none());
        assert_eq!(
            docs[1].value["metadata"]["annotations"],
            serde_json::json!({"keep": "me"})
        );
        let typed: Value = docs[0].parse_typed(Path::new("x")).unwrap();
        assert!(typed["metadata"].get("annotations").is_none());
        // A plain file keeps them.
        let (docs, _) = parse_source(path, text, false);
        assert!(docs[0].value["metadata"]["annotations"].is_object());
    }

    #[test]
    fn line_of_nested_key() {
        let (docs, _) = parse("---\nkind: X\nspec:\n  a: 1\n  eagerness: 200\n");
        let path = vec!["spec".to_string(), "eagerness".to_string()];
        assert_eq!(docs[0].line_of(&path), 5);
    }
}
