//! A fast path for SOPS-encrypted documents: libyaml spends ~240 instructions a byte, and
//! an encrypted Secret is ~5x the bytes of a plain one (its `sops:` metadata block, the
//! ~200-byte `ENC[...]` values). sops re-emits the whole document (go-yaml v3) in a simple,
//! fixed style: block mappings and sequences, literal `|` scalars, double-quoted and plain
//! scalars, the `sops:` block last. So the block is split off at its `sops:` line and read
//! by the block reader ([`super::block`]), and so is the rest of the document when it keeps
//! to that style (else the rest goes through the usual parser). Anything that reader does
//! not know for certain makes it give up, and the full parser reads it: it never guesses.

use super::block;
use serde_json::Value;

/// The document `text` parsed as `parse` parses it, when its last top-level key is a
/// `sops:` block this reader takes whole; `None` otherwise (the caller parses it all).
pub(super) fn parse(text: &str, parse: impl Fn(&str) -> Option<Value>) -> Option<Value> {
    let start = if text.starts_with("sops:\n") {
        0
    } else {
        text.find("\nsops:\n")? + 1
    };
    let (head, rest) = text.split_at(start);
    let lines = &rest["sops:\n".len()..];
    // Only the block's own (indented) lines may follow it.
    if lines.lines().any(|l| !blank(l) && !l.starts_with(' ')) {
        return None;
    }
    if !block::readable(lines) {
        return None;
    }
    let mut reader = block::Reader::new(lines);
    let indent = reader.next_indent()?;
    let metadata = reader.map(indent, false, 1)?;
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

/// The document before its `sops:` block, when the block reader takes it whole.
fn read_head(head: &str) -> Option<Value> {
    block::parse(head)
}

/// A line of YAML whitespace only (space, tab; `\r` of a CRLF file).
fn blank(line: &str) -> bool {
    line.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
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
        // Or answers as the full parser does.
        let agrees = |text: &str| {
            if let Some(fast) = parse(text, full) {
                assert_eq!(Some(fast), full(text), "{text}");
            }
        };
        // Not last, or not at the top level.
        gives_up("sops:\n    version: 3.9.0\nkind: Secret\n");
        gives_up("data:\n  sops:\n    version: 3.9.0\n");
        // Scalars that could be numbers, nulls or escapes: resolved as the full parser
        // resolves them, or left to it.
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
            agrees(&format!("kind: Secret\nsops:\n    version: {value}\n"));
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
        // Comments, empty values and continued scalars the block reader takes, as the
        // full parser does.
        for head in [
            "# a comment\nkind: Secret\n",
            "kind: Secret # a comment\n",
            "kind: Secret\nempty:\nnext: 1\n",
            "kind: Secret\ndata:\n    a: long\n        continued\n",
            "kind: Secret\nitems:\n    - a\n      continued\n",
        ] {
            assert_eq!(read_head(head), full(head), "{head}");
        }
        for head in [
            "kind: Secret\ndata:\n    a: |\n\n        x\n",
            "kind: Secret\ndata:\n    a: |\n        x\n          \n",
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
