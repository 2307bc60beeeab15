//! A fast path for SOPS-encrypted documents: libyaml spends ~240 instructions a byte, and
//! an encrypted Secret is ~5x the bytes of a plain one (its `sops:` metadata block, the
//! ~200-byte `ENC[...]` values). sops re-emits the whole document (go-yaml v3) in a simple,
//! fixed style: block mappings and sequences, literal `|` scalars, double-quoted and plain
//! scalars, the `sops:` block last. So the block is split off at its `sops:` line and read
//! here, and so is the rest of the document when it keeps to that style (else the rest goes
//! through the usual parser). Anything this reader does not know for certain (a flow
//! collection, an escape, a comment, a scalar that could be a number, a null or a bool)
//! makes it give up, and the full parser reads it: it never guesses. Plaintext documents
//! never come here, so they parse exactly as before.

use serde_json::{Map, Value};

/// The document `text` parsed as `parse` parses it, when its last top-level key is a
/// `sops:` block this reader takes whole; `None` otherwise (the caller parses it all).
pub(super) fn parse(text: &str, parse: impl Fn(&str) -> Option<Value>) -> Option<Value> {
    let start = if text.starts_with("sops:\n") {
        0
    } else {
        text.find("\nsops:\n")? + 1
    };
    let (head, block) = text.split_at(start);
    let block = &block["sops:\n".len()..];
    // Only the block's own (indented) lines may follow it.
    if block.lines().any(|l| !blank(l) && !l.starts_with(' ')) {
        return None;
    }
    let lines: Vec<&str> = block.lines().collect();
    let mut reader = Reader { lines, at: 0 };
    let indent = reader.next_indent()?;
    let metadata = reader.map(indent, false)?;
    if reader.next_indent().is_some() {
        return None;
    }
    let mut value = read_head(head).or_else(|| parse(head))?;
    let map = value.as_object_mut()?;
    if map.contains_key("sops") {
        return None;
    }
    map.insert("sops".into(), Value::Object(metadata));
    Some(value)
}

/// The document before its `sops:` block, when it is a block mapping in the style sops
/// writes (see the module's comment); `None` when anything in it is unsure.
fn read_head(head: &str) -> Option<Value> {
    let mut reader = Reader {
        lines: head.lines().collect(),
        at: 0,
    };
    if reader.next_indent()? != 0 {
        return None;
    }
    let map = reader.map(0, false)?;
    if map.is_empty() || reader.next_indent().is_some() {
        return None;
    }
    Some(Value::Object(map))
}

/// A mapping key this reader takes: plain, of the characters Kubernetes keys use, and
/// certainly a string (not `true`, `123` or `null`).
fn plain_key(key: &str) -> bool {
    let bytes = key.as_bytes();
    let plain = !bytes.is_empty()
        && (bytes[0].is_ascii_alphanumeric() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-'));
    if !plain {
        return false;
    }
    // Of these characters, starting with a letter, only the words [`scalar`] gives up on
    // are not certainly strings (numbers start with a digit).
    if !bytes[0].is_ascii_digit() {
        return !NOT_CERTAINLY_STRINGS
            .iter()
            .any(|word| key.eq_ignore_ascii_case(word));
    }
    matches!(scalar(key), Some(Value::String(_)))
}

/// Plain scalars (any case) that YAML 1.1 or 1.2 read as null, bool or float.
const NOT_CERTAINLY_STRINGS: [&str; 11] = [
    "null", "true", "false", "yes", "no", "on", "off", "y", "n", ".nan", ".inf",
];

/// A sealed value as sops writes it (`ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]`), most of
/// the bytes of an encrypted document, checked in one pass that vectorises (no early exit).
/// Starting with `E` and of printable ASCII other than space only, it cannot hold a comment
/// (` #`), a mapping (`: `), another line or a character YAML refuses: certainly a plain
/// string.
fn sealed_plain(text: &str) -> bool {
    text.starts_with("ENC[")
        && text.ends_with(']')
        && text.bytes().fold(true, |printable, b| {
            printable & (b.wrapping_sub(0x21) < 0x5e)
        })
}

struct Reader<'a> {
    lines: Vec<&'a str>,
    at: usize,
}

/// A line of YAML whitespace only (space, tab; `\r` of a CRLF file).
fn blank(line: &str) -> bool {
    line.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

impl<'a> Reader<'a> {
    /// The indentation of the next non-blank line (blank lines are skipped).
    fn next_indent(&mut self) -> Option<usize> {
        while self.at < self.lines.len() && blank(self.lines[self.at]) {
            self.at += 1;
        }
        self.lines.get(self.at).map(|l| indent_of(l))
    }

    /// A block mapping whose keys sit at `indent`. With `item`, its first key is on the
    /// current line after a sequence item's `- ` (at `indent - 2`).
    fn map(&mut self, indent: usize, mut item: bool) -> Option<Map<String, Value>> {
        let mut map = Map::new();
        loop {
            let line = if std::mem::take(&mut item) {
                self.lines[self.at].get(indent..)?
            } else {
                if self.next_indent() != Some(indent) {
                    break;
                }
                &self.lines[self.at][indent..]
            };
            if line.starts_with("- ") || line.starts_with('#') || line.starts_with(' ') {
                if map.is_empty() {
                    return None;
                }
                break;
            }
            let (key, rest) = line.split_once(':')?;
            if !plain_key(key) {
                return None;
            }
            if !(rest.is_empty() || rest.starts_with(' ')) {
                return None;
            }
            let rest = rest.trim_start_matches(' ');
            self.at += 1;
            let value = self.value_after(rest, indent)?;
            if map.insert(key.to_string(), value).is_some() {
                return None;
            }
        }
        Some(map)
    }

    /// The value of a key at `indent` whose line continues with `rest`.
    fn value_after(&mut self, rest: &str, indent: usize) -> Option<Value> {
        match rest {
            "" => {
                let inner = self.next_indent()?;
                let line = self.lines[self.at];
                if inner > indent && !line[inner..].starts_with("- ") {
                    Some(Value::Object(self.map(inner, false)?))
                } else if inner >= indent && line[inner..].starts_with("- ") {
                    self.list(inner)
                } else {
                    None
                }
            }
            "|" | "|-" => Some(Value::String(self.literal(indent, rest == "|")?)),
            "[]" => Some(Value::Array(Vec::new())),
            "{}" => Some(Value::Object(Map::new())),
            _ => scalar(rest),
        }
    }

    /// A block sequence whose `- ` sits at `indent`, of mappings or of one-line scalars.
    fn list(&mut self, indent: usize) -> Option<Value> {
        let mut items = Vec::new();
        while self.next_indent() == Some(indent) && self.lines[self.at][indent..].starts_with("- ")
        {
            let item = &self.lines[self.at][indent + 2..];
            if item.contains(": ") || item.ends_with(':') {
                items.push(Value::Object(self.map(indent + 2, true)?));
            } else {
                items.push(scalar(item)?);
                self.at += 1;
                // A scalar continued on the next line: the full parser's.
                if self.next_indent().is_some_and(|next| next > indent) {
                    return None;
                }
            }
        }
        Some(Value::Array(items))
    }

    /// A literal block scalar (`|` keeps one final newline, `|-` none) under a key at
    /// `indent`.
    fn literal(&mut self, indent: usize, keep_newline: bool) -> Option<String> {
        let first = self.at;
        let content = self.next_indent()?;
        // Leading blank lines are content the full parser keeps.
        if content <= indent || self.at != first {
            return None;
        }
        let mut out = String::new();
        while self.at < self.lines.len() {
            let line = self.lines[self.at];
            if !line.trim().is_empty() && indent_of(line) < content {
                break;
            }
            if line.trim().is_empty() {
                // Spaces past the indentation on a blank line are content too.
                if line.len() > content || line.contains('\t') {
                    return None;
                }
                out.push('\n');
            } else {
                out.push_str(&line[content..]);
                out.push('\n');
            }
            self.at += 1;
        }
        let trimmed = out.trim_end_matches('\n');
        Some(if keep_newline {
            format!("{trimmed}\n")
        } else {
            trimmed.to_string()
        })
    }
}

/// A scalar on the rest of a line: double-quoted without escapes, single-quoted, or plain
/// and certainly a string, `true`/`false` or a decimal integer.
fn scalar(text: &str) -> Option<Value> {
    if sealed_plain(text) {
        return Some(Value::String(text.to_string()));
    }
    // YAML's printable characters but tab and the line breaks NEL, LS and PS (the full parser
    // refuses the others, or breaks the line at them).
    let printable = |c: char| matches!(c, '\u{20}'..='\u{7e}' | '\u{a0}'..='\u{2027}' | '\u{202a}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..);
    if !text.chars().all(printable) {
        return None;
    }
    if let Some(inner) = text.strip_prefix('"') {
        let inner = inner.strip_suffix('"')?;
        if inner.contains(['"', '\\']) {
            return None;
        }
        return Some(Value::String(inner.to_string()));
    }
    if let Some(inner) = text.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'')?;
        // Inside, a quote is written twice; any other lone quote ends the scalar early.
        if inner.replace("''", "").contains('\'') {
            return None;
        }
        return Some(Value::String(inner.replace("''", "'")));
    }
    match text {
        "true" => return Some(Value::Bool(true)),
        "false" => return Some(Value::Bool(false)),
        _ => {}
    }
    if !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'))
    {
        return text.parse::<i64>().ok().map(Value::from);
    }
    let first = text.chars().next()?;
    let plain_safe = !matches!(
        first,
        '-' | '?'
            | ':'
            | ','
            | '['
            | ']'
            | '{'
            | '}'
            | '#'
            | '&'
            | '*'
            | '!'
            | '|'
            | '>'
            | '\''
            | '"'
            | '%'
            | '@'
            | '`'
            | '+'
            | '.'
            | '~'
            | ' '
    ) && !text.contains(": ")
        && !text.contains(" #")
        && !text.ends_with(':')
        && !text.ends_with(' ')
        && !NOT_CERTAINLY_STRINGS
            .iter()
            .any(|word| text.eq_ignore_ascii_case(word));
    // A plain scalar starting with a digit may be a number of another form (1e3, 0x1f,
    // 1_000, 3.5): given up on. Those that cannot be (a PGP fingerprint, a dotted version
    // such as 3.9.0) are strings.
    let number_like = first.is_ascii_digit()
        && (["0x", "0X", "0o", "0O", "0b", "0B"]
            .iter()
            .any(|p| text.starts_with(p))
            || (text.bytes().all(|b| b"0123456789._eE+-".contains(&b))
                && text.matches('.').count() < 2));
    (plain_safe && !number_like).then(|| Value::String(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full(text: &str) -> Option<Value> {
        super::super::convert::direct(text)
    }

    /// What this reader makes of a document is what the full parser makes of it.
    fn same_as_full(text: &str) {
        let fast = parse(text, full).expect("the fast path takes it");
        assert_eq!(Some(fast), full(text), "{text}");
    }

    const AGE_AND_PGP: &str = "apiVersion: v1
kind: Secret
metadata:
    name: db
data:
    password: ENC[AES256_GCM,data:Ju5i9FGW,iv:UcgZ=,tag:wVTc==,type:str]
sops:
    kms: []
    gcp_kms: []
    age:
        - recipient: age19ctet3tdtdxc44klqkf6fymq6uq89yylmp5w8tjtzn0g2twugdrsz7prrz
          enc: |
            -----BEGIN AGE ENCRYPTED FILE-----
            YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSBpNnY1Qnc5M1hFOFlXTDVG
            -----END AGE ENCRYPTED FILE-----
    lastmodified: \"2026-01-02T03:04:05Z\"
    mac: ENC[AES256_GCM,data:XM0a0KCL3H,iv:htf4=,tag:5peG==,type:str]
    pgp:
        - created_at: \"2026-01-02T03:04:05Z\"
          enc: |-
            -----BEGIN PGP MESSAGE-----

            wcBMA+1y5LuDeFtZAQgAk
            =abcd
            -----END PGP MESSAGE-----
          fp: 2504791468B153B8A3963CC97BA53D1919C5DFD4
    encrypted_regex: ^(data|stringData)$
    mac_only_encrypted: true
    shamir_threshold: 3
    version: 3.9.0
";

    #[test]
    fn sops_blocks_read_as_the_full_parser_reads_them() {
        same_as_full(AGE_AND_PGP);
        same_as_full(&AGE_AND_PGP.replace("apiVersion: v1\nkind: Secret\n", "kind: Secret\n\n"));
        let fixtures = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/sops-fixtures/secrets.yaml"
        );
        if let Ok(text) = std::fs::read_to_string(fixtures) {
            same_as_full(&text);
        }
    }

    #[test]
    fn anything_unsure_is_left_to_the_full_parser() {
        let gives_up = |text: &str| assert_eq!(parse(text, full), None, "{text}");
        // Not last, or not at the top level.
        gives_up("sops:\n    version: 3.9.0\nkind: Secret\n");
        gives_up("data:\n  sops:\n    version: 3.9.0\n");
        // Scalars that could be numbers, nulls or escapes.
        for value in [
            "1e3",
            "0x1f",
            "3.5",
            "null",
            "~",
            "\"a\\nb\"",
            "{a: 1}",
            "[1]",
            "'x''",
        ] {
            gives_up(&format!("kind: Secret\nsops:\n    version: {value}\n"));
        }
        // No sops block at all.
        gives_up("kind: Secret\ndata: {}\n");
    }

    /// Sealed values, dotted label keys, quoted strings, lists and literal blocks outside
    /// the `sops:` block: read here too, as the full parser reads them.
    #[test]
    fn documents_in_the_style_sops_writes_are_read_whole() {
        let head = "apiVersion: v1
kind: ConfigMap
metadata:
    name: app
    namespace: prod
    labels:
        app.kubernetes.io/name: app
        tier: web-1
    annotations:
        note: 'it''s here'
        quoted: \"123\"
data:
    key-0: ENC[AES256_GCM,data:Ju5i9FGW,iv:UcgZ=,tag:wVTc==,type:str]
    script: |
        #!/bin/sh

        echo hi
    url: http://x.example:8080/a
replicas: 3
enabled: true
items:
    - a
    - name: b
      port: 80
";
        assert!(read_head(head).is_some(), "the head is taken");
        same_as_full(&format!("{head}sops:\n    version: 3.9.0\n"));
    }

    /// Whenever the reader answers, it answers what the full parser does: every scalar
    /// below, as a value, as a key, and as a list item.
    #[test]
    fn every_answer_is_the_full_parsers() {
        let scalars = [
            "x",
            "True",
            "FALSE",
            "Null",
            "~",
            "yes",
            "On",
            "y",
            "1",
            "-1",
            "+1",
            "0",
            "007",
            "1.5",
            "1e3",
            "0x1F",
            "0o7",
            ".inf",
            "-.inf",
            ".NaN",
            "1_000",
            "3.9.0",
            "1:30",
            "a: b",
            "a #b",
            "a#b",
            "#a",
            "'q'",
            "'it''s'",
            "''",
            "\"d\"",
            "\"\"",
            "\"a\\\"b\"",
            "&a",
            "*a",
            "!t",
            "@a",
            "`a",
            "%a",
            "[a]",
            "{a: 1}",
            "a,b",
            "ENC[AES256_GCM,data:x=]",
            "ENC[AES256_GCM,data:a+/b=,iv:c+d=,tag:e/f==,type:str]",
            "ENC[a b]",
            "ENC[a]:",
            "ENC[a]#b",
            "ENC[x",
            "ENC[a\u{1}]",
            "ENC[a\u{7f}]",
            "ENC[é]",
            "a\u{85}b",
            "a\u{a0}b",
            "a\u{80}b",
            "a\u{2028}b",
            "a\u{feff}b",
            "Y",
            "NO",
            "Off",
            "nul",
            "n1",
            "_x",
            "y_es",
            "a\tb",
            "é",
            "|",
            ">",
            "- a",
            "a:",
            "<<",
            "k.v/w-x_y",
        ];
        let mut taken = 0;
        for s in scalars {
            for doc in [
                format!("k: {s}\n"),
                format!("{s}: v\n"),
                format!("k:\n    - {s}\n    - z\n"),
                format!("k:\n    n: {s}\n"),
            ] {
                let full_value = full(&doc);
                if let Some(fast) = read_head(&doc) {
                    taken += 1;
                    assert_eq!(Some(fast), full_value, "{doc}");
                }
            }
        }
        assert!(taken > 30, "the reader takes the certain cases ({taken})");
    }

    #[test]
    fn unsure_heads_are_left_to_the_full_parser() {
        for head in [
            "# a comment\nkind: Secret\n",
            "kind: Secret # a comment\n",
            "kind: Secret\ndata:\n    a: |\n\n        x\n",
            "kind: Secret\ndata:\n    a: |\n        x\n          \n",
            "kind: Secret\ndata:\n    a: long\n        continued\n",
            "kind: Secret\nitems:\n    - a\n      continued\n",
            "kind: Secret\nempty:\nnext: 1\n",
            "kind: Secret\nkind: Secret\n",
            "anchors: &a\n    x: 1\n",
            "folded: >\n    x\n",
        ] {
            assert_eq!(read_head(head), None, "{head}");
            let doc = format!("{head}sops:\n    version: 3.9.0\n");
            assert_eq!(
                parse(&doc, full).or_else(|| full(&doc)),
                full(&doc),
                "{doc}"
            );
        }
    }
}
