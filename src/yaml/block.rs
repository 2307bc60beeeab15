//! A fast reader for the block style nearly all Kubernetes YAML is written in (generated
//! CRDs, sops' output, what charts render): block mappings and sequences, one-line plain and
//! quoted scalars, literal `|`/`|-` scalars, `[]`/`{}`, comments. libyaml through serde
//! spends ~300 instructions a byte; a CRD of 800 KB is read here ~10x faster. Anything it
//! does not know for certain (flow collections, anchors, tags, escapes, folded or multi-line
//! scalars, tabs outside literal text, odd line breaks) makes it give up, and the full
//! parser ([`super::convert::direct`]) reads the document: it never guesses. Plain scalars
//! are resolved by serde_yaml's rules ([`resolve_plain`]), so every answer is the full
//! parser's (tests below compare the two).

use serde_json::{Map, Value};

/// Nesting deeper than this is left to the full parser, which reports it past
/// [`super::MAX_NESTING`].
const MAX_DEPTH: usize = 100;

/// Longest key libyaml takes without `? ` (a "simple key").
const MAX_KEY: usize = 1024;

thread_local! {
    /// Whether a plain scalar read since [`parse_noting_yaml_1_1`] began is one YAML 1.1
    /// reads otherwise (`yes`, `0644`: see `yaml11::is_suspect`).
    static YAML_1_1_SUSPECT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// [`parse`], and whether any plain scalar (key or value) of the document is one YAML 1.1
/// reads otherwise, known exactly here where a scan of the text can only guess (a `no` in
/// a literal block of prose is text in both).
pub(super) fn parse_noting_yaml_1_1(text: &str) -> Option<(Value, bool)> {
    YAML_1_1_SUSPECT.with(|s| s.set(false));
    let value = parse(text)?;
    Some((value, YAML_1_1_SUSPECT.with(std::cell::Cell::get)))
}

/// A plain scalar the reader met: [`resolve_plain`], noting one YAML 1.1 reads otherwise.
fn plain(text: &str) -> Option<Value> {
    if super::yaml11::is_suspect(text) {
        YAML_1_1_SUSPECT.with(|s| s.set(true));
    }
    resolve_plain(text)
}

/// `text` read as the full parser reads it, when it is a block mapping at column 0 in the
/// style this reader knows; `None` otherwise.
pub(super) fn parse(text: &str) -> Option<Value> {
    if !readable(text) {
        return None;
    }
    let mut reader = Reader::new(text);
    if reader.next_indent()? != 0 {
        return None;
    }
    let map = reader.map(0, false, 0)?;
    if map.is_empty() || reader.next_indent().is_some() {
        return None;
    }
    Some(Value::Object(map))
}

/// Whether every character is one libyaml takes as it is: printable, `\n` or tab (a tab is
/// taken only inside literal text, below). `\r`, NEL, LS and PS break lines for libyaml
/// and a BOM starts a stream: left to it.
pub(super) fn readable(text: &str) -> bool {
    if text.is_ascii() {
        // One pass that vectorises: no early exit.
        return text.bytes().fold(true, |ok, b| {
            ok & (b.wrapping_sub(0x20) < 0x5f || b == b'\n' || b == b'\t')
        });
    }
    text.chars().all(|c| {
        matches!(c, '\n' | '\t' | '\u{20}'..='\u{7e}' | '\u{a0}'..='\u{2027}' | '\u{202a}'..='\u{d7ff}' | '\u{e000}'..='\u{fefe}' | '\u{ff00}'..='\u{fffd}' | '\u{10000}'..)
    })
}

pub(super) struct Reader<'a> {
    lines: Vec<&'a str>,
    at: usize,
}

/// A line of spaces only (tabs and `\r` are not taken here).
fn blank(line: &str) -> bool {
    line.bytes().all(|b| b == b' ')
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

impl<'a> Reader<'a> {
    pub(super) fn new(text: &'a str) -> Reader<'a> {
        // Sized first: a CRD is thousands of lines, and a list grown line by line is copied
        // a dozen times on the way.
        let mut lines = Vec::with_capacity(text.bytes().filter(|&b| b == b'\n').count() + 1);
        lines.extend(text.lines());
        Reader { lines, at: 0 }
    }

    /// The indentation of the next line that holds a node (blank and comment lines are
    /// skipped).
    pub(super) fn next_indent(&mut self) -> Option<usize> {
        while let Some(line) = self.lines.get(self.at) {
            let indent = indent_of(line);
            if indent < line.len() && line.as_bytes()[indent] != b'#' {
                return Some(indent);
            }
            self.at += 1;
        }
        None
    }

    /// A block mapping whose keys sit at `indent`. With `item`, its first key is on the
    /// current line after a sequence item's `- ` (at `indent - 2`).
    pub(super) fn map(
        &mut self,
        indent: usize,
        mut item: bool,
        depth: usize,
    ) -> Option<Map<String, Value>> {
        if depth > MAX_DEPTH {
            return None;
        }
        // Entries first, then the map at its size: a map grown key by key holds room for up
        // to twice its entries, and a big chart's CRDs are some 15,000 small maps.
        let mut entries: Vec<(String, Value)> = Vec::new();
        loop {
            let line = if std::mem::take(&mut item) {
                self.lines[self.at].get(indent..)?
            } else {
                if self.next_indent() != Some(indent) {
                    break;
                }
                &self.lines[self.at][indent..]
            };
            if line.starts_with("- ") || line == "-" {
                if entries.is_empty() {
                    return None;
                }
                break;
            }
            let (key, rest) = split_key(line)?;
            self.at += 1;
            let value = self.value_after(rest, indent, depth)?;
            entries.push((key, value));
        }
        let count = entries.len();
        let map = Map::from_iter(entries);
        // A key given twice is the full parser's (its error).
        (map.len() == count).then_some(map)
    }

    /// The value of a node at `indent` (a key, or a sequence item's `-`) whose line
    /// continues with `rest`; the reader is at the next line.
    fn value_after(&mut self, rest: &str, indent: usize, depth: usize) -> Option<Value> {
        let rest = rest.trim_start_matches(' ');
        if rest.is_empty() || rest.starts_with('#') {
            let Some(inner) = self.next_indent() else {
                return Some(Value::Null);
            };
            let line = &self.lines[self.at][inner..];
            let dash = line.starts_with("- ") || line == "-";
            if inner > indent {
                if let Some(empty) = self.empty_flow_below(line, indent) {
                    return Some(empty);
                }
            }
            return if inner > indent && !dash {
                Some(Value::Object(self.map(inner, false, depth + 1)?))
            } else if inner >= indent && dash {
                self.list(inner, depth + 1)
            } else {
                Some(Value::Null)
            };
        }
        let header = rest.split(" #").next().unwrap_or("").trim_end_matches(' ');
        match header {
            "|" | "|-" => Some(Value::String(self.literal(indent, header == "|")?)),
            _ if self.continued(indent) && rest.starts_with(['"', '\'']) => {
                self.quoted_lines(rest, indent)
            }
            _ if self.continued(indent) => self.plain_lines(rest, indent),
            _ => scalar(rest),
        }
    }

    /// A node's value written alone on the next line as `{}` or `[]` (what `toYaml` of an
    /// empty map or list, indented under its key, gives: charts write it so), when nothing
    /// after it is indented past the node at `indent`; the reader is at that line. Anything
    /// else there (a comment after it, more lines of the node) is the full parser's.
    fn empty_flow_below(&mut self, line: &str, indent: usize) -> Option<Value> {
        let value = match line.trim_end_matches(' ') {
            "{}" => Value::Object(Map::new()),
            "[]" => Value::Array(Vec::new()),
            _ => return None,
        };
        let next = self.at + 1;
        let ends = self.lines[next..]
            .iter()
            .find(|l| !blank(l))
            .is_none_or(|l| indent_of(l) <= indent);
        if !ends {
            return None;
        }
        self.at = next;
        Some(value)
    }

    /// Whether the next line that is not blank is indented past `indent` (so continues a
    /// scalar of a node at `indent`).
    fn continued(&self, indent: usize) -> bool {
        self.lines[self.at..]
            .iter()
            .find(|l| !blank(l))
            .is_some_and(|l| indent_of(l) > indent)
    }

    /// A quoted scalar starting with `first` and closing on a later line indented past
    /// `indent`, folded as YAML folds them (without escapes).
    fn quoted_lines(&mut self, first: &str, indent: usize) -> Option<Value> {
        let quote = first.as_bytes()[0];
        let mut text = String::new();
        let mut segment = &first[1..];
        loop {
            let (content, after) = quoted_segment(segment, quote)?;
            if let Some(after) = after {
                text.push_str(&content);
                let after = after.trim_start_matches(' ');
                return (after.is_empty() || after.starts_with('#')).then_some(Value::String(text));
            }
            // Spaces before a line break are folded away, and so is the indentation after.
            text.push_str(content.trim_end_matches(' '));
            let mut breaks = 0;
            loop {
                let line = self.lines.get(self.at)?;
                self.at += 1;
                if blank(line) {
                    breaks += 1;
                    continue;
                }
                if indent_of(line) <= indent {
                    return None;
                }
                segment = line.trim_start_matches(' ');
                break;
            }
            if breaks == 0 {
                text.push(' ');
            }
            for _ in 0..breaks {
                text.push('\n');
            }
        }
    }

    /// A plain scalar starting with `first` and continued on the lines indented past
    /// `indent`, folded as YAML folds them: one line break a space, each blank line a
    /// newline.
    fn plain_lines(&mut self, first: &str, indent: usize) -> Option<Value> {
        let first = first.trim_end_matches(' ');
        if !plain_text(first) || first.contains(": ") || first.ends_with(':') {
            return None;
        }
        // Past the first line, indicators are text; a `#` after the indentation starts a
        // comment, which ends the scalar.
        let line_ok = |text: &str| {
            !text.starts_with('#')
                && !text.contains(['\t'])
                && !text.contains(" #")
                && !text.contains(": ")
                && !text.ends_with(':')
        };
        let mut text = first.to_string();
        let mut breaks = 0;
        while let Some(line) = self.lines.get(self.at) {
            if blank(line) {
                breaks += 1;
            } else if indent_of(line) <= indent {
                break;
            } else {
                let content = line.trim_start_matches(' ').trim_end_matches(' ');
                // A comment (which ends the scalar) or an indicator: the full parser's.
                if !line_ok(content) {
                    return None;
                }
                if breaks == 0 {
                    text.push(' ');
                }
                for _ in 0..breaks {
                    text.push('\n');
                }
                breaks = 0;
                text.push_str(content);
            }
            self.at += 1;
        }
        plain(&text)
    }

    /// A block sequence whose `- ` sits at `indent`.
    fn list(&mut self, indent: usize, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut items = Vec::new();
        while self.next_indent() == Some(indent) {
            let Some(item) = self.lines[self.at][indent..].strip_prefix("- ") else {
                break;
            };
            // An empty item (`-`, `- # note`) is the full parser's: what follows at this
            // indentation is the next item, not its value.
            if item.starts_with([' ', '#']) || item.is_empty() {
                return None;
            }
            if split_key(item).is_some() {
                items.push(Value::Object(self.map(indent + 2, true, depth + 1)?));
            } else if item.starts_with("- ") || item == "-" {
                return None;
            } else {
                self.at += 1;
                items.push(self.value_after(item, indent, depth)?);
            }
        }
        items.shrink_to_fit();
        Some(Value::Array(items))
    }

    /// A literal block scalar (`|` keeps one final newline, `|-` none) under a node at
    /// `indent`; the reader is at its first line.
    fn literal(&mut self, indent: usize, keep_newline: bool) -> Option<String> {
        let first = self.lines.get(self.at)?;
        let content = indent_of(first);
        // Leading blank lines (whose spaces decide the indentation) and empty scalars are
        // the full parser's.
        if content <= indent || content == first.len() {
            return None;
        }
        let mut out = String::new();
        while let Some(line) = self.lines.get(self.at) {
            if blank(line) {
                // Spaces past the indentation on a blank line are content too.
                if line.len() > content {
                    return None;
                }
                out.push('\n');
            } else if line.trim_start_matches(' ').starts_with('\t') {
                // A tab where libyaml may expect indentation: its to judge.
                return None;
            } else if indent_of(line) < content {
                break;
            } else {
                out.push_str(&line[content..]);
                out.push('\n');
            }
            self.at += 1;
        }
        let trimmed = out.trim_end_matches('\n');
        Some(if keep_newline {
            let mut text = String::with_capacity(trimmed.len() + 1);
            text.push_str(trimmed);
            text.push('\n');
            text
        } else {
            trimmed.to_string()
        })
    }
}

/// A mapping key at the start of `line` (plain or quoted, then `:` and a space or the end
/// of the line) and what follows its `:`; `None` if the line does not start with one this
/// reader takes.
fn split_key(line: &str) -> Option<(String, &str)> {
    let (key, rest) = if line.starts_with(['"', '\'']) {
        let (key, after) = quoted(line)?;
        (key, after.strip_prefix(':')?)
    } else {
        let at = line
            .match_indices(':')
            .map(|(i, _)| i)
            .find(|&i| matches!(line.as_bytes().get(i + 1), None | Some(b' ')))?;
        let text = &line[..at];
        if text.len() > MAX_KEY || !plain_text(text) {
            return None;
        }
        let key = match plain(text)? {
            Value::String(s) => s,
            Value::Bool(b) => b.to_string(),
            Value::Number(n) if !n.is_f64() => n.to_string(),
            _ => return None,
        };
        (key, &line[at + 1..])
    };
    (rest.is_empty() || rest.starts_with(' ')).then_some((key, rest))
}

/// A one-line scalar (the rest of a line, comment and trailing spaces allowed).
fn scalar(text: &str) -> Option<Value> {
    if text.starts_with(['"', '\'']) {
        let (value, after) = quoted(text)?;
        let after = after.trim_start_matches(' ');
        return (after.is_empty() || after.starts_with('#')).then_some(Value::String(value));
    }
    let text = match text.find(" #") {
        Some(at) => &text[..at],
        None => text,
    }
    .trim_end_matches(' ');
    match text {
        "[]" => Some(Value::Array(Vec::new())),
        "{}" => Some(Value::Object(Map::new())),
        _ if plain_text(text) && !text.contains(": ") && !text.ends_with(':') => plain(text),
        _ => None,
    }
}

/// A quoted scalar at the start of `text` closing on the same line, and what follows it.
fn quoted(text: &str) -> Option<(String, &str)> {
    let quote = *text.as_bytes().first()?;
    match quoted_segment(&text[1..], quote)? {
        (content, Some(after)) => Some((content, after)),
        (_, None) => None,
    }
}

/// The text of a quoted scalar on one line (after its opening quote, or the whole of a
/// continuation line): its content, unescaped (`''` in single quotes, YAML's escapes in
/// double quotes), and what follows the closing quote if it closes here. `None` for tabs,
/// escaped line breaks and spaces, and unknown escapes: the full parser's.
fn quoted_segment(segment: &str, quote: u8) -> Option<(String, Option<&str>)> {
    if segment.contains('\t') {
        return None;
    }
    let mut content = String::new();
    let mut rest = segment;
    loop {
        let Some(end) = rest.find([quote as char, '\\']) else {
            content.push_str(rest);
            return Some((content, None));
        };
        content.push_str(&rest[..end]);
        let after = &rest[end + 1..];
        if rest.as_bytes()[end] == b'\\' && quote == b'"' {
            let (c, used) = escape(after)?;
            content.push(c);
            rest = &after[used..];
        } else if rest.as_bytes()[end] == b'\\' {
            content.push('\\');
            rest = after;
        } else if quote == b'\'' && after.starts_with('\'') {
            content.push('\'');
            rest = &after[1..];
        } else {
            return Some((content, Some(after)));
        }
    }
}

/// The character a double-quoted escape stands for (the text after its `\\`), and how many
/// bytes of that text it used.
fn escape(text: &str) -> Option<(char, usize)> {
    let c = text.chars().next()?;
    let simple = match c {
        '0' => '\0',
        'a' => '\u{7}',
        'b' => '\u{8}',
        't' => '\t',
        'n' => '\n',
        'v' => '\u{b}',
        'f' => '\u{c}',
        'r' => '\r',
        'e' => '\u{1b}',
        '"' => '"',
        '/' => '/',
        '\\' => '\\',
        'N' => '\u{85}',
        '_' => '\u{a0}',
        'L' => '\u{2028}',
        'P' => '\u{2029}',
        'x' | 'u' | 'U' => {
            let digits = match c {
                'x' => 2,
                'u' => 4,
                _ => 8,
            };
            let hex = text.get(1..1 + digits)?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            let code = u32::from_str_radix(hex, 16).ok()?;
            return char::from_u32(code).map(|c| (c, 1 + digits));
        }
        _ => return None,
    };
    Some((simple, 1))
}

/// Whether `text` (trimmed, one line) is a plain scalar in block context, by its first
/// character (no indicator; `-` only before a non-space) and its characters (no tab, no
/// comment).
fn plain_text(text: &str) -> bool {
    let Some(first) = text.bytes().next() else {
        return false;
    };
    let starts_plain = match first {
        b'-' => text.len() > 1 && text.as_bytes()[1] != b' ',
        b'?' | b':' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'&' | b'*' | b'!' | b'|'
        | b'>' | b'\'' | b'"' | b'%' | b'@' | b'`' | b' ' => false,
        _ => true,
    };
    starts_plain && !text.contains(['\t']) && !text.contains(" #") && !text.ends_with(' ')
}

/// A plain scalar as serde_yaml resolves it for a JSON value: null, bool, integer (decimal,
/// `0x`, `0o`, `0b`; not with leading zeros), finite float, else string. `None` where the
/// full parser answers something JSON has not (integers past 64 bits, infinities, NaN):
/// it says so.
pub(super) fn resolve_plain(text: &str) -> Option<Value> {
    Some(resolve_unless_string(text)?.unwrap_or_else(|| Value::String(text.to_string())))
}

/// [`resolve_plain`] but for strings: `Some(None)` for a plain scalar that reads as a
/// string.
pub(super) fn resolve_unless_string(text: &str) -> Option<Option<Value>> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Some(Some(Value::Null)),
        "true" | "True" | "TRUE" => return Some(Some(Value::Bool(true))),
        "false" | "False" | "FALSE" => return Some(Some(Value::Bool(false))),
        _ => {}
    }
    // Only these can start a number (`+`, `-`, a digit, `.` of `.5` or `.inf`): every other
    // plain scalar is a string.
    let first = text.as_bytes()[0];
    if !(first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.')) {
        return Some(None);
    }
    if let Some(n) = unsigned(text) {
        return n.map(|n| Some(Value::from(n)));
    }
    if let Some(n) = negative(text) {
        return n.map(|n| Some(Value::from(n)));
    }
    if infinite_or_nan(text) {
        return None;
    }
    if !leading_zero_digits(text) {
        if let Some(f) = float(text) {
            return serde_json::Number::from_f64(f).map(|n| Some(Value::Number(n)));
        }
    }
    Some(None)
}

/// YAML's `.inf`, `-.inf` and `.nan` forms, which JSON has no number for.
fn infinite_or_nan(text: &str) -> bool {
    let body = text.strip_prefix('+').unwrap_or(text);
    matches!(body, ".inf" | ".Inf" | ".INF")
        || matches!(text, "-.inf" | "-.Inf" | "-.INF" | ".nan" | ".NaN" | ".NAN")
}

/// Digits after a leading `0` (an optional sign first): a string, as YAML 1.2 says.
pub(super) fn leading_zero_digits(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    digits.len() > 1 && digits.starts_with('0') && digits[1..].bytes().all(|b| b.is_ascii_digit())
}

/// `Some(Some(n))`: a non-negative integer that fits in 64 bits; `Some(None)`: one that
/// does not (the full parser's to refuse); `None`: not a non-negative integer.
fn unsigned(text: &str) -> Option<Option<u64>> {
    let body = text.strip_prefix('+').unwrap_or(text);
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(digits) = body.strip_prefix(prefix) {
            if digits.starts_with(['+', '-']) {
                return None;
            }
            if let Some(n) = radix_int(digits, radix) {
                return Some(n);
            }
        }
    }
    if body.starts_with(['+', '-']) || leading_zero_digits(text) {
        return None;
    }
    radix_int(body, 10)
}

/// `Some(Some(n))`: a negative integer that fits in 64 bits; `Some(None)`: one that does
/// not; `None`: not a negative integer.
fn negative(text: &str) -> Option<Option<i64>> {
    for (prefix, radix) in [("-0x", 16), ("-0o", 8), ("-0b", 2)] {
        if let Some(digits) = text.strip_prefix(prefix) {
            if let Some(n) = radix_int(&format!("-{digits}"), radix) {
                return Some(n.map(|n| n as i64));
            }
        }
    }
    if leading_zero_digits(text) {
        return None;
    }
    let magnitude = text.strip_prefix('-')?;
    radix_int(&format!("-{magnitude}"), 10).map(|n| n.map(|n| n as i64))
}

/// Parse an integer as Rust's `from_str_radix` does (a sign allowed before the digits), its
/// value if it fits in `i64`/`u64` by sign, `Some(None)` if it is one but larger.
fn radix_int(text: &str, radix: u32) -> Option<Option<u64>> {
    if text.starts_with('-') {
        return match i64::from_str_radix(text, radix) {
            Ok(n) => Some(Some(n as u64)),
            Err(_) => i128::from_str_radix(text, radix).ok().map(|_| None),
        };
    }
    match u64::from_str_radix(text, radix) {
        Ok(n) => Some(Some(n)),
        Err(_) => u128::from_str_radix(text, radix).ok().map(|_| None),
    }
}

/// A float as serde_yaml reads it: `.inf`/`.nan` forms (infinite: `None`, refused by the
/// full parser) or what Rust's parser takes, finite only.
fn float(text: &str) -> Option<f64> {
    let body = match text.strip_prefix('+') {
        Some(body) if body.starts_with(['+', '-']) => return None,
        Some(body) => body,
        None => text,
    };
    let f = body.parse::<f64>().ok()?;
    f.is_finite().then_some(f)
}
