//! Writing a JSON value as YAML exactly as serde_yaml (libyaml's emitter) writes it, without
//! libyaml's per-event machinery: block mappings and sequences indented by two (sequences in
//! mappings not indented), `{}`/`[]` when empty, plain scalars where libyaml writes them
//! plain, single quotes where it quotes, literal `|` blocks for text with line breaks. For
//! what it would write otherwise (double quotes, escapes, `|+`, long or multi-line keys,
//! floats), [`write`] gives up and the caller takes serde_yaml's text: the output is the
//! same either way (tests below compare the two).

use serde_json::Value;

/// Longest key libyaml writes as a simple key (`key: value`, not `? key`).
const MAX_SIMPLE_KEY: usize = 128;

/// Where [`write`] writes, and whether a plain scalar it wrote (a key or a value) is one
/// YAML 1.1 reads as other than a string (`yes`, `0644`): written down as it is written, so
/// the text need not be scanned for them again.
struct Out<'a> {
    text: &'a mut String,
    yaml_1_1_suspect: bool,
}

impl std::ops::Deref for Out<'_> {
    type Target = String;
    fn deref(&self) -> &String {
        self.text
    }
}

impl std::ops::DerefMut for Out<'_> {
    fn deref_mut(&mut self) -> &mut String {
        self.text
    }
}

/// `value` as serde_yaml writes it (one document, no `---`), appended to `text`, and whether
/// a plain scalar of it reads otherwise as YAML 1.1 ([`super::yaml11::is_suspect`]); `None`
/// where this writer does not know libyaml's choice (then `text` holds a part of the
/// document: the caller cuts it off).
pub(super) fn write(value: &Value, text: &mut String) -> Option<bool> {
    let mut out = Out {
        text,
        yaml_1_1_suspect: false,
    };
    let out = &mut out;
    match value {
        Value::Object(map) if !map.is_empty() => write_map(map, 0, false, out)?,
        Value::Array(items) if !items.is_empty() => write_seq(items, 0, false, out)?,
        _ => {
            write_inline(value, 0, out)?;
            out.push('\n');
        }
    }
    Some(out.yaml_1_1_suspect)
}

fn indent(out: &mut String, n: usize) {
    // A slice at a time, not a char at a time: indentation is much of what is written.
    const SPACES: &str = "                                                                ";
    let mut left = n;
    while left > 0 {
        let take = left.min(SPACES.len());
        out.push_str(&SPACES[..take]);
        left -= take;
    }
}

/// A mapping whose keys sit at `at`; with `inline`, its first key follows a `- ` already
/// written.
fn write_map(
    map: &serde_json::Map<String, Value>,
    at: usize,
    inline: bool,
    out: &mut Out,
) -> Option<()> {
    for (i, (key, value)) in map.iter().enumerate() {
        if i > 0 || !inline {
            indent(out, at);
        }
        if key.len() > MAX_SIMPLE_KEY {
            return None;
        }
        write_str(key, at, true, out)?;
        out.push(':');
        match value {
            Value::Object(inner) if !inner.is_empty() => {
                out.push('\n');
                write_map(inner, at + 2, false, out)?;
            }
            Value::Array(items) if !items.is_empty() => {
                out.push('\n');
                write_seq(items, at, false, out)?;
            }
            _ => {
                out.push(' ');
                write_inline(value, at, out)?;
                out.push('\n');
            }
        }
    }
    Some(())
}

/// A sequence whose `- ` sit at `at`; with `inline`, its first item follows a `- ` already
/// written.
fn write_seq(items: &[Value], at: usize, inline: bool, out: &mut Out) -> Option<()> {
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !inline {
            indent(out, at);
        }
        out.push_str("- ");
        match item {
            Value::Object(inner) if !inner.is_empty() => write_map(inner, at + 2, true, out)?,
            Value::Array(inner) if !inner.is_empty() => write_seq(inner, at + 2, true, out)?,
            _ => {
                write_inline(item, at, out)?;
                out.push('\n');
            }
        }
    }
    Some(())
}

/// A scalar, or an empty collection, of a node at `at` (a literal block's lines go under it).
fn write_inline(value: &Value, at: usize, out: &mut Out) -> Option<()> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) if !n.is_f64() => {
            use std::fmt::Write;
            let _ = write!(out.text, "{n}");
        }
        Value::Number(_) => return None,
        Value::String(s) => write_str(s, at, false, out)?,
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
    }
    Some(())
}

/// A string as serde_yaml asks for it (a literal block when it has line breaks; quoted
/// when it would read back as something else) and libyaml writes it. A `key` with a line
/// break is libyaml's (`? ` keys).
fn write_str(s: &str, at: usize, key: bool, out: &mut Out) -> Option<()> {
    // One pass over the bytes says what the string holds: most strings are ASCII, and the
    // long ones (descriptions of CRD schemas) are most of what is written.
    let holds = byte_classes(s.as_bytes());
    if key && holds & NEWLINE != 0 {
        return None;
    }
    let printable = match holds & (OTHER | TAB) {
        0 => true,
        TAB => false,
        _ if holds & NON_ASCII != 0 => printable(s),
        _ => false,
    };
    if !printable {
        // A tab (Kubernetes' API docs hold some) makes libyaml double-quote the string,
        // on one line at serde_yaml's unbounded width; other such characters are its.
        if holds & TAB != 0 && printable_but_tabs(s, holds) {
            write_double_quoted(s, out);
            return Some(());
        }
        return None;
    }
    if holds & NEWLINE != 0 {
        return write_literal(s, at, out);
    }
    let reads_as_string = matches!(super::block::resolve_unless_string(s), Some(None))
        && !super::block::leading_zero_digits(s);
    if reads_as_string && plain_allowed(s, holds) {
        out.yaml_1_1_suspect |= super::yaml11::is_suspect(s);
        out.push_str(s);
    } else {
        out.push('\'');
        match holds & QUOTE {
            0 => out.push_str(s),
            _ => {
                for (i, part) in s.split('\'').enumerate() {
                    if i > 0 {
                        out.push_str("''");
                    }
                    out.push_str(part);
                }
            }
        }
        out.push('\'');
    }
    Some(())
}

/// What [`byte_classes`] finds: a line break `\n`, a tab, a `'`, a byte past ASCII, any
/// other byte libyaml does not write as it is (controls, DEL), a `:`, a `#`.
const NEWLINE: u8 = 1;
const TAB: u8 = 2;
const QUOTE: u8 = 4;
const NON_ASCII: u8 = 8;
const OTHER: u8 = 16;
const COLON: u8 = 32;
const HASH: u8 = 64;

/// The classes of the bytes of `bytes`, or-ed: comparisons only, sixteen bytes at a time,
/// which the compiler turns into vector instructions; a string shorter than that (keys and
/// most values) by a table, a byte at a time.
fn byte_classes(bytes: &[u8]) -> u8 {
    if bytes.len() < 16 {
        return bytes
            .iter()
            .fold(0, |acc, &b| acc | CLASSES[usize::from(b)]);
    }
    let chunk_classes = |chunk: &[u8]| chunk.iter().fold(0, |acc, &b| acc | class(b));
    let mut chunks = bytes.chunks_exact(16);
    let mut holds = 0;
    for chunk in &mut chunks {
        holds |= chunk_classes(chunk);
    }
    if !chunks.remainder().is_empty() {
        // The last sixteen bytes: classes or-ed do not mind bytes seen twice.
        holds |= chunk_classes(&bytes[bytes.len() - 16..]);
    }
    holds
}

/// The classes of one byte.
const fn class(b: u8) -> u8 {
    let control = (b < 0x20) & (b != b'\n') & (b != b'\t');
    ((b == b'\n') as u8 * NEWLINE)
        | ((b == b'\t') as u8 * TAB)
        | ((b == b'\'') as u8 * QUOTE)
        | ((b >= 0x80) as u8 * (NON_ASCII | OTHER))
        | ((control | (b == 0x7f)) as u8 * OTHER)
        | ((b == b':') as u8 * COLON)
        | ((b == b'#') as u8 * HASH)
}

/// [`class`] of every byte.
const CLASSES: [u8; 256] = {
    let mut classes = [0; 256];
    let mut b = 0;
    while b < 256 {
        classes[b] = class(b as u8);
        b += 1;
    }
    classes
};

/// Whether `s` holding a tab would be [`printable`] with its tabs as spaces.
fn printable_but_tabs(s: &str, holds: u8) -> bool {
    match holds & NON_ASCII {
        0 => holds & OTHER == 0,
        _ => printable(&s.replace('\t', " ")),
    }
}

/// `s` double-quoted as libyaml writes it when every character but tabs is one it writes as
/// it is: `"`, `\`, line breaks and tabs escaped.
fn write_double_quoted(s: &str, out: &mut Out) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Whether every character is one libyaml writes as it is (no escapes): its printable set,
/// less the line breaks other than `\n` (`\r`, NEL, LS, PS), tabs, BOMs and characters
/// past U+FFFF. (For ASCII, [`byte_classes`] says it.)
fn printable(s: &str) -> bool {
    s.chars().all(|c| {
        matches!(c, '\n' | '\u{20}'..='\u{7e}' | '\u{a0}'..='\u{2027}' | '\u{202a}'..='\u{d7ff}' | '\u{e000}'..='\u{fefe}' | '\u{ff00}'..='\u{fffd}')
    })
}

/// libyaml's analysis of a one-line scalar in block context: plain unless it starts with an
/// indicator, holds `: ` or ` #`, ends with `:`, or starts or ends with a space.
fn plain_allowed(s: &str, holds: u8) -> bool {
    let bytes = s.as_bytes();
    let Some(&first) = bytes.first() else {
        return false;
    };
    let blank_after = |i: usize| matches!(bytes.get(i + 1), None | Some(b' '));
    if s.starts_with("---") || s.starts_with("...") {
        return false;
    }
    let indicator = match first {
        b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\''
        | b'"' | b'%' | b'@' | b'`' => true,
        b'?' | b':' | b'-' => blank_after(0),
        _ => false,
    };
    if indicator || first == b' ' || s.ends_with(' ') {
        return false;
    }
    // Past the first byte (there, `: `, a lone `:` and `#` are indicators, above): a `:`
    // before a space or the end, a `#` after a space. Searched for only in strings that
    // hold one ([`byte_classes`]): most hold neither.
    let colon = holds & COLON != 0 && (s.contains(": ") || (bytes.len() > 1 && s.ends_with(':')));
    let comment = holds & HASH != 0 && s.contains(" #");
    !(colon || comment)
}

/// A literal block (`|`, `|-`; an indentation indicator when it starts with a space or a
/// line break) whose lines go two past `at`. `|+` (more than one final line break) is
/// left to libyaml, which may end the document with `...` after it.
fn write_literal(s: &str, at: usize, out: &mut Out) -> Option<()> {
    // A space before a line break, or at the very end, makes libyaml double-quote.
    if s.contains(" \n") || s.ends_with(' ') || s.ends_with("\n\n") || s == "\n" {
        return None;
    }
    out.push('|');
    if s.starts_with([' ', '\n']) {
        out.push('2');
    }
    let body = match s.strip_suffix('\n') {
        Some(body) => body,
        None => {
            out.push('-');
            s
        }
    };
    out.push('\n');
    for line in body.split('\n') {
        if !line.is_empty() {
            indent(out, at + 2);
            out.push_str(line);
        }
        out.push('\n');
    }
    // The caller ends the value's line.
    out.pop();
    Some(())
}

#[cfg(test)]
mod tests {
    use super::super::yaml11;
    use super::*;
    use serde_json::json;

    fn agrees(value: &Value) -> bool {
        // Written after a document already there, as a stream is.
        let mut written = String::from("---\nbefore: 1\n");
        let before = written.len();
        match write(value, &mut written) {
            Some(suspect) => {
                let text = written[before..].to_string();
                assert_eq!(
                    text,
                    serde_yaml::to_string(value).expect("serializes"),
                    "{value}"
                );
                // What the writer noted quotes as a scan of its text would.
                let quoted = |on: bool| match on {
                    true => yaml11::quote_for_yaml_1_1(&text),
                    false => text.clone(),
                };
                assert_eq!(
                    quoted(suspect),
                    quoted(yaml11::may_differ(&text)),
                    "{value}"
                );
                true
            }
            None => false,
        }
    }

    const STRINGS: &[&str] = &[
        "x",
        "",
        " ",
        "a b",
        " a",
        "a ",
        "true",
        "True",
        "yes",
        "No",
        "on",
        "OFF",
        "y",
        "0644",
        "-0644",
        "1_000",
        "0b101",
        "08",
        "x\nno\n",
        "prose\n  yes\n- on\n0644: x\n",
        "null",
        "~",
        "1",
        "-1",
        "+1",
        "007",
        "0x1F",
        "1.5",
        "1e3",
        ".inf",
        ".nan",
        "inf",
        "3.9.0",
        "1:30",
        "a: b",
        "a:",
        ":a",
        ": a",
        "?",
        "? a",
        "?a",
        "-",
        "- a",
        "-a",
        "--",
        "---",
        "--- a",
        "...",
        "....",
        "a #b",
        "a#b",
        "#a",
        "'q'",
        "it's",
        "\"d\"",
        "&a",
        "*a",
        "!t",
        "@a",
        "`a",
        "%a",
        "[a]",
        "a]",
        "{a}",
        "a,b",
        ",a",
        "|",
        ">",
        "<<",
        "é",
        "a\u{a0}b",
        "a\u{85}b",
        "a\u{2028}b",
        "a\u{feff}b",
        "a\u{1F600}b",
        "a\tb",
        "\t",
        "a\t",
        "\ta",
        "x\n\ty",
        "To\n\t  resolve the error, a \"valid\" C:\\path\n",
        "a \tb\n ",
        "- a\t#b: c",
        "t\té\u{a0}x 'q'",
        "a\tlong line of words past eighty columns, which libyaml would fold if its width were the default",
        "a\t\u{85}b",
        "a\t\rb",
        "a\rb",
        "a\u{7f}b",
        "a\u{1}b",
        "line\n",
        "line",
        "two\nlines",
        "two\nlines\n",
        "trail\n\n",
        "\n",
        "\nlead",
        " lead\nx",
        "x\n\ny\n",
        "sp \nx",
        "x\n ",
        "x \n",
        "x\n\n\ny",
        "k: v\n- a\n",
        "# c\n'q'\n",
        "https://x.example:8080/a?b=c#d",
        "^[a-z]+$",
        "${X}",
        "a/b.c-d_e",
        "a\u{7f}\tb",
        "é\tb\u{1}",
        "é\tb",
        "it's a 'quoted' word in a line longer than sixteen bytes",
        "a line longer than sixteen bytes ending in a control\u{1}",
        "a line longer than sixteen bytes: with a colon",
        "a line longer than sixteen bytes # with a hash",
        "a line longer than sixteen bytes\twith a tab and 'quotes'",
        "a line longer than sixteen bytes with é past ASCII",
        "''",
        "'",
    ];

    #[test]
    fn every_string_as_a_value_a_key_and_an_item() {
        let mut taken = 0;
        for s in STRINGS {
            for value in [
                json!(s),
                json!({"k": s}),
                json!({ *s: "v" }),
                json!({"k": [s, {"n": s}]}),
                json!([s, [s, s], {"a": {"b": s}}]),
                json!({"k": {"m": [[s], {"x": s, "y": [s]}]}}),
            ] {
                taken += agrees(&value) as usize;
            }
        }
        assert!(taken > 350, "{taken}");
    }

    #[test]
    fn shapes_and_numbers() {
        for value in [
            json!({}),
            json!([]),
            json!(null),
            json!({"a": {}, "b": [], "c": [{}, [], null, true, 1, -2, 18446744073709551615u64]}),
            json!([[[]], [{}], [[1, 2], [3]], {"a": [{"b": [[{"c": 1}]]}]}]),
            json!({"a": 1.5}),
            json!({"k".repeat(128): 1, "x": 2}),
            json!({"k".repeat(129): 1}),
        ] {
            agrees(&value);
        }
    }

    /// Every document of the corpus's rendered charts and CRDs, read and written again.
    #[test]
    fn documents_of_the_corpus_are_written_as_serde_yaml_writes_them() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/helm-corpus");
        let mut files = Vec::new();
        collect_yaml(&root, &mut files);
        let (mut taken, mut docs) = (0, 0);
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            for (_, chunk) in super::super::split_documents(&text) {
                if let Some(value) = super::super::read(&chunk) {
                    docs += 1;
                    taken += agrees(&value) as usize;
                }
            }
        }
        assert!(docs == 0 || taken * 10 > docs * 9, "{taken} of {docs}");
    }

    fn collect_yaml(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && !path.ends_with("templates") {
                collect_yaml(&path, out);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
    }
}
