//! All YAML parsing lives here (serde_yaml is deprecated upstream; one module keeps a future
//! swap small). Files are split into documents by hand so that every document keeps the line
//! it starts on, and serde_yaml's own error locations are shifted to file lines.

use super::object::Problem;
use crate::source::walk::SourceFile;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::cell::Cell;
use std::path::Path;

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

/// The message for documents nested deeper than [`MAX_NESTING`].
fn nesting_message() -> String {
    format!("collections are nested more than {MAX_NESTING} levels deep; a Kubernetes object is never this deep")
}

/// The message for documents whose aliases expand beyond [`MAX_EXPANDED_BYTES`].
fn alias_bomb_message() -> String {
    format!(
        "YAML aliases expand this document to more than {} MiB (an alias bomb, \"billion laughs\"?); write the values out or use fewer aliases",
        MAX_EXPANDED_BYTES / (1024 * 1024)
    )
}

/// Replace serde_yaml's terse messages for limits and oddities with ones that say what to do.
/// A `path: ` prefix (e.g. `spec.replicas: `) is kept.
fn friendly_message(message: &str) -> String {
    let (prefix, rest) = match message.find(": ") {
        Some(i) if !message[..i].contains(' ') => (&message[..i + 2], &message[i + 2..]),
        _ => ("", message),
    };
    let rest = if rest == "recursion limit exceeded" {
        nesting_message()
    } else if rest == "repetition limit exceeded" || rest == ALIAS_BUDGET_EXCEEDED {
        alias_bomb_message()
    } else if rest == "unknown anchor" {
        format!("alias (`*name`) {UNKNOWN_ANCHOR_MESSAGE}")
    } else if rest.starts_with("invalid type: integer `")
        && (rest.contains("` as u128") || rest.contains("` as i128"))
    {
        // The number itself is not repeated: it could be a Secret value.
        "integer is too large; numbers must fit in 64 bits (quote it if it is meant as a string)"
            .to_string()
    } else {
        rest.to_string()
    };
    format!("{prefix}{rest}")
}

/// The end of the message for an alias without its anchor.
const UNKNOWN_ANCHOR_MESSAGE: &str = "refers to an anchor (`&name`) that is not defined before it in this document; anchors do not carry across `---`";

/// Marker message of the expansion budget (replaced by [`alias_bomb_message`]).
const ALIAS_BUDGET_EXCEEDED: &str = "tend: alias expansion budget exceeded";

/// Walk `text` as serde_yaml would deserialize it, following aliases, and fail as soon as the
/// expanded size passes [`MAX_EXPANDED_BYTES`]. Scalars are borrowed, not copied, so this
/// costs no more memory than the parsed events.
fn check_expansion(text: &str) -> Result<(), serde_yaml::Error> {
    use serde::de::DeserializeSeed;
    let left = Cell::new(MAX_EXPANDED_BYTES);
    let de = serde_yaml::Deserializer::from_str(text);
    Count { left: &left }.deserialize(de)
}

/// A serde visitor that only counts what it is shown.
#[derive(Clone, Copy)]
struct Count<'a> {
    left: &'a Cell<usize>,
}

impl Count<'_> {
    fn charge<E: serde::de::Error>(&self, bytes: usize) -> Result<(), E> {
        let cost = bytes.saturating_add(8);
        match self.left.get().checked_sub(cost) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => Err(E::custom(ALIAS_BUDGET_EXCEEDED)),
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Count<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Count<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_i128<E: serde::de::Error>(self, _: i128) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_u128<E: serde::de::Error>(self, _: u128) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.charge(v.len())
    }
    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<(), E> {
        self.charge(v.len())
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_newtype_struct<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.charge::<A::Error>(0)?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.charge::<A::Error>(0)?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        // A tagged node (`!tag value`): count the value.
        use serde::de::VariantAccess;
        let (_, variant) = data.variant::<serde::de::IgnoredAny>()?;
        variant.newtype_variant_seed(self)
    }
}

/// Whether a document may use aliases at all (both an anchor and an alias sign appear).
fn may_have_aliases(text: &str) -> bool {
    text.contains('&') && text.contains('*')
}

/// 0-based index of the line where flow collections (`[`, `{`) nest deeper than `limit`, by a
/// linear scan that knows quoted scalars, comments, tags, anchors and block scalars well
/// enough for Kubernetes YAML. In block context only a `[`/`{` where a node starts opens a
/// collection, so brackets inside plain scalars (`a[0]`, `x [y`) do not count.
fn deep_flow_line(text: &str, limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    // Inside a quoted scalar that continues on the next line: its quote character.
    let mut quote: Option<u8> = None;
    // Inside a block scalar (`|`, `>`): lines indented more than this belong to it.
    let mut block_parent: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        let indent = bytes.iter().take_while(|b| **b == b' ').count();
        if let Some(parent) = block_parent {
            if line.trim().is_empty() || indent > parent {
                continue;
            }
            block_parent = None;
        }
        let mut node_start = true;
        let mut prev = b' ';
        let mut j = 0;
        let mut content_end = bytes.len();
        while j < bytes.len() {
            let c = bytes[j];
            let next = bytes.get(j + 1).copied();
            if let Some(q) = quote {
                if q == b'\'' && c == b'\'' {
                    if next == Some(b'\'') {
                        j += 2;
                        continue;
                    }
                    quote = None;
                } else if q == b'"' && c == b'\\' {
                    j += 2;
                    continue;
                } else if q == b'"' && c == b'"' {
                    quote = None;
                }
                prev = c;
                j += 1;
                continue;
            }
            let blank_next = matches!(next, None | Some(b' ') | Some(b'\t'));
            match c {
                b' ' | b'\t' => {}
                b'#' if matches!(prev, b' ' | b'\t') => {
                    content_end = j;
                    break;
                }
                b'[' | b'{' if node_start || depth > 0 => {
                    depth += 1;
                    if depth > limit {
                        return Some(i);
                    }
                    node_start = true;
                }
                b']' | b'}' if depth > 0 => {
                    depth -= 1;
                    node_start = false;
                }
                b',' if depth > 0 => node_start = true,
                b'"' | b'\'' if node_start => {
                    quote = Some(c);
                    node_start = false;
                }
                // Tags, anchors and aliases: skip the token; a node may still start after it.
                b'!' | b'&' | b'*' if node_start => {
                    while j + 1 < bytes.len() && !matches!(bytes[j + 1], b' ' | b'\t') {
                        j += 1;
                    }
                }
                b'-' | b'?' if node_start && depth == 0 && blank_next => {}
                b':' if blank_next || depth > 0 => node_start = true,
                _ => node_start = false,
            }
            prev = bytes[j];
            j += 1;
        }
        if quote.is_none() && depth == 0 && opens_block_scalar(&line[..content_end]) {
            block_parent = Some(content_column(line));
        }
    }
    None
}

/// Whether a line ends with a block scalar indicator (`key: |`, `- >-`, `|2+`).
fn opens_block_scalar(line: &str) -> bool {
    let t = line.trim_end();
    let Some(pos) = t.rfind(['|', '>']) else {
        return false;
    };
    let indicators = &t[pos + 1..];
    let before = &t[..pos];
    indicators
        .bytes()
        .all(|b| b == b'-' || b == b'+' || b.is_ascii_digit())
        && (before.trim().is_empty()
            || before.ends_with(": ")
            || before.ends_with("- ")
            || before.ends_with(' ') && before.trim_end().ends_with(['!', ':', '-']))
}

/// Column of a line's content after its indentation and any `- ` sequence markers: the
/// indentation a block scalar's parent node has.
fn content_column(line: &str) -> usize {
    let mut col = 0;
    let bytes = line.as_bytes();
    loop {
        while col < bytes.len() && bytes[col] == b' ' {
            col += 1;
        }
        if bytes.get(col) == Some(&b'-') && bytes.get(col + 1) == Some(&b' ') {
            col += 2;
        } else {
            return col;
        }
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
            typed_from_value: false,
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
        match serde_yaml::from_str::<serde_yaml::Value>(&doc.text) {
            Ok(yaml) => match to_json(yaml).ok_or(()).or_else(|()| {
                // Rare: parse again, tracking the path, to say where the problem is.
                let again = serde_yaml::from_str::<serde_yaml::Value>(&doc.text)
                    .map_err(|e| (Vec::new(), e.to_string()))?;
                yaml_to_json(again, &mut Vec::new())
            }) {
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

/// Parse one source file: [`parse_file`], and for text that kustomize built, without
/// kustomize's build annotations (SPEC 2: they describe the build, not the object).
pub fn parse_source(file: &SourceFile) -> (Vec<Document>, Vec<Problem>) {
    let (mut docs, problems) = parse_file(&file.path, &file.text);
    if file.unit.is_some() {
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

/// Whether a parsed document is a list of objects (as `kubectl apply` reads them): `kind:
/// List`, or any `<Kind>List` with an `items` sequence. `Err` for a `kind: List` whose
/// `items` is not a sequence.
fn list_items(value: &Value) -> Result<Option<&[Value]>, String> {
    let Some(kind) = value.get("kind").and_then(Value::as_str) else {
        return Ok(None);
    };
    if !kind.ends_with("List") {
        return Ok(None);
    }
    match value.get("items") {
        Some(Value::Array(items)) => Ok(Some(items)),
        // `items:` with nothing after it, or no items at all: an empty List.
        None | Some(Value::Null) if kind == "List" => Ok(Some(&[])),
        Some(Value::Null) => Ok(Some(&[])),
        Some(other) if kind == "List" => Err(format!(
            "items of a List must be a sequence of objects, found {}",
            match other {
                Value::Object(_) => "a mapping",
                Value::String(_) => "a string",
                _ => "a scalar",
            }
        )),
        // `<Kind>List` without an items sequence: a kind of its own (e.g. a custom resource).
        _ => Ok(None),
    }
}

/// Push `doc`, or, if it is a List, its items, each as a document at its own line.
fn expand_lists(
    file: &Path,
    doc: Document,
    depth: usize,
    out: &mut Vec<Document>,
    problems: &mut Vec<Problem>,
) {
    let items = match list_items(&doc.value) {
        Ok(Some(items)) if depth < MAX_NESTING => items,
        Ok(_) => {
            out.push(doc);
            return;
        }
        Err(message) => {
            problems.push(Problem::new(
                file,
                doc.line_at(&[Step::Key("items".into())]),
                message,
            ));
            return;
        }
    };
    let list_kind = doc.value["kind"].as_str().unwrap_or("List");
    // Items of a typed list (`RoleList`) may leave out apiVersion and kind, as the API server
    // returns them: they are the list's apiVersion and its kind without `List`.
    let inherited = match (list_kind.strip_suffix("List"), doc.value.get("apiVersion")) {
        (Some(kind), Some(Value::String(api_version))) if !kind.is_empty() => {
            Some((api_version.clone(), kind.to_string()))
        }
        _ => None,
    };
    let spans = item_spans(&doc, items.len());
    // Items in flow style (JSON, `[{...}, {...}]`): the line each starts on.
    let flow_lines = match spans {
        Some(_) => None,
        None => flow_item_lines(&doc, items.len()),
    };
    for (i, item) in items.iter().enumerate() {
        let line = match &flow_lines {
            Some(lines) => lines[i],
            None => doc.line_at(&[Step::Key("items".into()), Step::Index(i)]),
        };
        let mut value = item.clone();
        let mut needs_own_text = false;
        if let (Some((api_version, kind)), Value::Object(map)) = (&inherited, &mut value) {
            if !map.contains_key("apiVersion") && !map.contains_key("kind") {
                map.insert("apiVersion".into(), Value::String(api_version.clone()));
                map.insert("kind".into(), Value::String(kind.clone()));
                needs_own_text = true;
            }
        }
        // The item's own lines, so that messages about its fields point into it; where they
        // cannot be cut out (flow style, JSON, aliases across items), its value as one line
        // of JSON at the item's line.
        let sliced = spans
            .as_ref()
            .filter(|_| !needs_own_text)
            .and_then(|spans| item_text(&doc, spans[i]))
            .filter(|(_, text)| {
                serde_yaml::from_str::<serde_yaml::Value>(text)
                    .ok()
                    .and_then(|y| yaml_to_json(y, &mut Vec::new()).ok())
                    .as_ref()
                    == Some(item)
            });
        let (start_line, text) = match sliced {
            Some((start, text)) => (start, text),
            None => (
                line,
                serde_json::to_string(&value).unwrap_or_default() + "\n",
            ),
        };
        let item_doc = Document {
            line,
            start_line,
            text,
            value,
            typed_from_value: false,
        };
        expand_lists(file, item_doc, depth + 1, out, problems);
    }
}

/// Walk flow-style YAML (JSON included) from byte `from`, calling `at(depth, offset, line)`
/// where a node starts (`depth` counts the open `[`/`{` around it), until the collection
/// that starts at `from` closes or `at` returns true. Quoted scalars and comments are
/// skipped; in flow context plain scalars cannot hold `[]{},`.
fn scan_flow(text: &str, from: usize, mut at: impl FnMut(usize, usize, usize) -> bool) {
    let bytes = text.as_bytes();
    let mut line = 1 + bytes[..from].iter().filter(|b| **b == b'\n').count();
    let (mut depth, mut quote, mut node_start) = (0usize, None::<u8>, true);
    let mut i = from;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            line += 1;
        }
        if let Some(q) = quote {
            if q == b'"' && c == b'\\' {
                if bytes.get(i + 1) == Some(&b'\n') {
                    line += 1;
                }
                i += 2;
                continue;
            }
            if c == q {
                if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                    i += 2;
                    continue;
                }
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b' ' | b'\t' | b'\r' | b'\n' => {}
            b'#' if i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'\n') => {
                while i + 1 < bytes.len() && bytes[i + 1] != b'\n' {
                    i += 1;
                }
            }
            b'[' | b'{' => {
                if node_start && at(depth, i, line) {
                    return;
                }
                depth += 1;
                node_start = true;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return;
                }
                node_start = false;
            }
            b',' | b':' => node_start = true,
            _ => {
                if node_start && at(depth, i, line) {
                    return;
                }
                if matches!(c, b'"' | b'\'') && node_start {
                    quote = Some(c);
                }
                node_start = false;
            }
        }
        i += 1;
    }
}

/// Byte offset of the `[` that opens the top-level `items` of a document, when it is in flow
/// style: in a flow (JSON) document, or after a block `items:` key.
fn flow_items_open(doc: &Document) -> Option<usize> {
    let text = &doc.text;
    let first = text.find(|c: char| !c.is_whitespace())?;
    // `[` after `items` + `:` (and spaces), from a key's offset.
    let open_after_key = |offset: usize| -> Option<usize> {
        let rest = &text[offset..];
        let key_len = ["\"items\"", "'items'", "items"]
            .iter()
            .find(|k| rest.starts_with(*k))?
            .len();
        let after = rest[key_len..].trim_start_matches([' ', '\t']);
        let after = after.strip_prefix(':')?;
        let value = after.trim_start();
        value.starts_with('[').then(|| text.len() - value.len())
    };
    if text[first..].starts_with('{') {
        let mut open = None;
        scan_flow(text, first, |depth, offset, _| {
            if depth == 1 {
                open = open_after_key(offset);
            }
            open.is_some()
        });
        return open;
    }
    let line = doc.line_at(&[Step::Key("items".into())]);
    let index = line.checked_sub(doc.start_line)?;
    let line_offset: usize = text.split_inclusive('\n').take(index).map(str::len).sum();
    let line_text = text[line_offset..].lines().next()?;
    let indent = line_text.len() - line_text.trim_start_matches(' ').len();
    open_after_key(line_offset + indent)
}

/// The file line of each entry of a flow-style top-level `items` sequence.
fn flow_item_lines(doc: &Document, count: usize) -> Option<Vec<usize>> {
    let open = flow_items_open(doc)?;
    let mut lines = Vec::new();
    scan_flow(&doc.text, open, |depth, _, line| {
        if depth == 1 {
            lines.push(doc.start_line + line - 1);
        }
        false
    });
    (lines.len() == count).then_some(lines)
}

/// For a document whose top-level `items` is a block sequence of `count` entries: each
/// entry's 0-based first text line, end (exclusive) and the column of its `-`.
fn item_spans(doc: &Document, count: usize) -> Option<Vec<(usize, usize, usize)>> {
    let lines: Vec<&str> = doc.text.lines().collect();
    let content = |l: &str| {
        let t = l.trim_start_matches(' ');
        !(t.trim().is_empty() || t.starts_with('#'))
    };
    let indent = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let is_item = |t: &str| t == "-" || t.starts_with("- ");
    let first = lines.iter().position(|l| content(l))?;
    let root = indent(lines[first]);
    let key = (first..lines.len()).find(|&n| {
        let l = lines[n];
        if !content(l) || indent(l) != root {
            return false;
        }
        let t = &l[root..];
        key_matches(t, "items") && {
            let rest = t["items".len()..].trim_start_matches(':').trim();
            rest.is_empty() || rest.starts_with('#')
        }
    })?;
    let mut spans: Vec<(usize, usize, usize)> = Vec::new();
    let mut col = None;
    let mut end = lines.len();
    for (n, l) in lines.iter().enumerate().skip(key + 1) {
        if !content(l) {
            continue;
        }
        let (c, t) = (indent(l), &l[indent(l)..]);
        let col = *col.get_or_insert(c);
        if c < col || (c == col && !is_item(t)) {
            end = n;
            break;
        }
        if c == col {
            if let Some(last) = spans.last_mut() {
                last.1 = n;
            }
            spans.push((n, lines.len(), c));
        }
    }
    if let Some(last) = spans.last_mut() {
        last.1 = end;
    }
    (spans.len() == count).then_some(spans)
}

/// The text of one list entry as a document of its own: its lines, with the entry's `-`
/// blanked, and the file line it starts on. Trailing comment lines stay; they are harmless.
fn item_text(doc: &Document, (start, end, col): (usize, usize, usize)) -> Option<(usize, String)> {
    let mut text = String::new();
    for (n, line) in doc.text.lines().enumerate().take(end).skip(start) {
        if n == start {
            text.push_str(line.get(..col)?);
            text.push(' ');
            text.push_str(line.get(col + 1..)?);
        } else {
            text.push_str(line);
        }
        text.push('\n');
    }
    Some((doc.start_line + start, text))
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
/// dropped, and non-finite floats are rejected. On error: the path of the offending node.
/// [`yaml_to_json`] without tracking the path: `None` where that would fail. The common case,
/// run for every document of a site, so it allocates nothing beyond the result.
fn to_json(value: serde_yaml::Value) -> Option<Value> {
    use serde_yaml::Value as Y;
    Some(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                Value::Number(serde_json::Number::from_f64(n.as_f64()?)?)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(to_json).collect::<Option<_>>()?),
        Y::Mapping(map) => {
            let mut out = serde_json::Map::with_capacity(map.len());
            for (k, v) in map {
                let key = match k {
                    Y::String(s) => s,
                    Y::Bool(b) => b.to_string(),
                    Y::Number(n) => n.to_string(),
                    _ => return None,
                };
                out.insert(key, to_json(v)?);
            }
            Value::Object(out)
        }
        Y::Tagged(tagged) => to_json(tagged.value)?,
    })
}

fn yaml_to_json(
    value: serde_yaml::Value,
    path: &mut Vec<Step>,
) -> Result<Value, (Vec<Step>, String)> {
    use serde_yaml::Value as Y;
    let at = |path: &Vec<Step>, message: String| {
        let place = dotted(path);
        let message = if place.is_empty() {
            message
        } else {
            format!("{place}: {message}")
        };
        (path.clone(), message)
    };
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
                match serde_json::Number::from_f64(f) {
                    Some(n) => Value::Number(n),
                    None => {
                        return Err(at(
                            path,
                            format!("number {f} is not representable in JSON; quote it if it is meant as a string"),
                        ))
                    }
                }
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                path.push(Step::Index(i));
                out.push(yaml_to_json(item, path)?);
                path.pop();
            }
            Value::Array(out)
        }
        Y::Mapping(map) => {
            let mut out = serde_json::Map::with_capacity(map.len());
            for (k, v) in map {
                let key = match k {
                    Y::String(s) => s,
                    Y::Bool(b) => b.to_string(),
                    Y::Number(n) => n.to_string(),
                    other => {
                        let shown = serde_json::to_string(
                            &yaml_to_json(other, &mut Vec::new()).unwrap_or(Value::Null),
                        )
                        .unwrap_or_default();
                        let shown: String = shown.chars().take(60).collect();
                        return Err(at(
                            path,
                            format!("mapping key {shown} is not a string; keys of Kubernetes objects are strings (quote it)"),
                        ));
                    }
                };
                path.push(Step::Key(key.clone()));
                let value = yaml_to_json(v, path)?;
                path.pop();
                out.insert(key, value);
            }
            Value::Object(out)
        }
        Y::Tagged(tagged) => yaml_to_json(tagged.value, path)?,
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
        let file = SourceFile {
            path: "x (kustomize build)".into(),
            text: "kind: A\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/origin: |\n      path: a.yaml\n    internal.config.kubernetes.io/x: y\n---\nkind: B\nmetadata:\n  annotations:\n    keep: me\n    config.kubernetes.io/origin: x\n".into(),
            unit: Some("x".into()),
        };
        let (docs, _) = parse_source(&file);
        assert!(docs[0].value["metadata"].get("annotations").is_none());
        assert_eq!(
            docs[1].value["metadata"]["annotations"],
            serde_json::json!({"keep": "me"})
        );
        let typed: Value = docs[0].parse_typed(Path::new("x")).unwrap();
        assert!(typed["metadata"].get("annotations").is_none());
        // A plain file keeps them.
        let plain = SourceFile { unit: None, ..file };
        let (docs, _) = parse_source(&plain);
        assert!(docs[0].value["metadata"]["annotations"].is_object());
    }

    #[test]
    fn line_of_nested_key() {
        let (docs, _) = parse("---\nkind: X\nspec:\n  a: 1\n  eagerness: 200\n");
        let path = vec!["spec".to_string(), "eagerness".to_string()];
        assert_eq!(docs[0].line_of(&path), 5);
    }
}
