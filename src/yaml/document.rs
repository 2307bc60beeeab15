//! One YAML document of a file ([`Document`]), and finding the line of a node in it from a
//! path of [`Step`]s, so every message can name the line.

use super::limits::{alias_bomb_message, friendly_message, UNKNOWN_ANCHOR_MESSAGE};
use crate::problem::Problem;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::Path;

/// One YAML document of a file, parsed into JSON (kept with a kept Helm render:
/// `render::kept_parse`, which writes every field down).
#[derive(Debug, Clone)]
pub struct Document {
    /// 1-based line of the first non-blank, non-comment line of the document.
    pub line: usize,
    /// 1-based line where the document's text starts (its `---` line, or line 1).
    pub(crate) start_line: usize,
    /// The document's text (`---` marker blanked out, so lines and columns stay put).
    pub text: String,
    pub value: Value,
    /// Whether typed parsing must take `value` rather than `text`: set when the value was
    /// changed after parsing (kustomize's build annotations removed), so the text would put
    /// them back.
    pub(crate) typed_from_value: bool,
    /// The value was decrypted from the text's ciphertext: serde's messages about it could
    /// quote plaintext, so they are not shown.
    pub(crate) decrypted: bool,
    /// JSON pointers of the fields that were SOPS-encrypted, once the document is decrypted
    /// (see [`crate::object::Origin::sealed`]).
    pub sealed: Vec<String>,
}

impl Document {
    /// Parse this document's text again into a typed value, reporting serde's error with the
    /// file line it points at (used for tend's kinds, whose unknown fields are errors).
    pub fn parse_typed<T: DeserializeOwned>(&self, file: &Path) -> Result<T, Problem> {
        let typed = serde_yaml::from_str::<T>(&self.text).map_err(|e| self.problem_from(file, &e));
        if self.decrypted {
            // The text holds ciphertext (`ENC[...,type:int]` where a number belongs): the
            // value decides, and a problem keeps only the line the text tells.
            return serde_json::from_value::<T>(self.value.clone()).map_err(|_| {
                let line = typed.err().map_or(self.line, |p| p.line);
                Problem::new(
                    file,
                    line,
                    "this decrypted document does not have the shape its kind needs; the details are not shown, as they may quote decrypted values (check the output of `sops -d` on the file)",
                )
            });
        }
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

    /// Replace the value with the one decrypted from the text's ciphertext.
    pub fn set_decrypted_value(&mut self, value: Value) {
        self.set_value(value);
        self.decrypted = true;
    }

    /// The file lines this document's text covers (its `---` line included).
    pub fn lines(&self) -> std::ops::Range<usize> {
        self.start_line..self.start_line + self.text.lines().count()
    }

    pub(super) fn problem_from(&self, file: &Path, err: &serde_yaml::Error) -> Problem {
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
pub(super) fn key_matches(text: &str, key: &str) -> bool {
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
