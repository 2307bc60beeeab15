//! The block reader ([`super::block`]) against the full parser: every answer it gives is
//! libyaml's, on scalars of every kind, odd structures, the corpus's files and documents
//! changed at random.

use super::block::parse;
use serde_json::Value;

fn full(text: &str) -> Option<Value> {
    super::convert::direct(text)
}

/// Whenever the reader answers, it is the full parser's answer.
fn agrees(text: &str) -> bool {
    match parse(text) {
        Some(fast) => {
            assert_eq!(Some(&fast), full(text).as_ref(), "{text}");
            true
        }
        None => false,
    }
}

const SCALARS: &[&str] = &[
    "x",
    "True",
    "FALSE",
    "Null",
    "NULL",
    "~",
    "yes",
    "On",
    "y",
    "1",
    "-1",
    "+1",
    "0",
    "-0",
    "+0",
    "007",
    "-007",
    "08",
    "1.5",
    "-1.5",
    "+1.5",
    "1.",
    ".5",
    "-.5",
    "1e3",
    "1E+3",
    "1e400",
    "-1e400",
    "0x1F",
    "0X1F",
    "-0x1F",
    "0x",
    "0x-1",
    "0o7",
    "-0o7",
    "0b101",
    "-0b1",
    "0b2",
    ".inf",
    "-.inf",
    "+.inf",
    ".Inf",
    ".NaN",
    ".nan",
    "+.nan",
    "inf",
    "infinity",
    "nan",
    "NaN",
    "1_000",
    "3.9.0",
    "1:30",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "340282366920938463463374607431768211456",
    "0xFFFFFFFFFFFFFFFFF",
    "a: b",
    "a #b",
    "a#b",
    "#a",
    "'q'",
    "'it''s'",
    "''",
    "'''",
    "'a' #c",
    "'a'x",
    "\"d\"",
    "\"\"",
    "\"a\\\"b\"",
    "\"a\" # c",
    "\"a\"b",
    "&a",
    "*a",
    "!t",
    "@a",
    "`a",
    "%a",
    "[a]",
    "[]",
    "[] # c",
    "{}",
    "{a: 1}",
    "a,b",
    "a]",
    "ENC[AES256_GCM,data:a+/b=,iv:c+d=,type:str]",
    "a\u{85}b",
    "a\u{a0}b",
    "a\u{80}b",
    "a\u{2028}b",
    "a\u{feff}b",
    "é",
    "nul",
    "_x",
    "a\tb",
    "|",
    "|-",
    "|+",
    ">",
    "- a",
    "-a",
    "--",
    "-",
    "a:",
    "a:b",
    "<<",
    "?a",
    ":a",
    "k.v/w-x_y",
    ".status.x[?(@.type == 'R')].y",
    "a b ",
    "^[a-z]+$",
    "x # y: z",
];

#[test]
fn every_scalar_as_a_value_a_key_and_an_item() {
    let mut taken = 0;
    for s in SCALARS {
        for doc in [
            format!("k: {s}\n"),
            format!("{s}: v\n"),
            format!("k:\n- {s}\n- z\n"),
            format!("k:\n  n: {s}\n  m: 1\n"),
            format!("k:\n  - a: {s}\n    b: {s}\n"),
        ] {
            taken += agrees(&doc) as usize;
        }
    }
    assert!(taken > 300, "the reader takes the certain cases ({taken})");
}

#[test]
fn structures_read_as_the_full_parser_reads_them() {
    let taken = [
        "a:\n  b:\n    c: 1\n  d:\n  - x\n  - y: 2\n    z:\n    - 3\ne: f\n",
        "a:\n- b\n- c\nd: 1\n",
        "a: # note\n  b: 1\n# between\n   # odd\nc: |\n  line\n  # not a comment\n\n  more\n\nd: 2\n",
        "a: |-\n    x\n      y\n\n\nb: 1\n",
        "a: |\n    x\n  \nb: 1\n",
        "a: | # c\n  x\n",
        "a:\nb:\n",
        "a:\n  - b:\n  - c\n",
        "'q': 1\n\"d\": 2\n\"helm.sh/hook\": x\n",
        "a:\n  b: 1\n  # trailing\n",
        "- a\n",
        "a: 1\n  b: 2\n",
        "a:\n  b: 1\n c: 2\n",
        "a: x\n  continued\n",
        "a:\n- x\n  continued\n",
        "a: |\n\n  x\n",
        "a: |\n  x\n   \n",
        "a: |\n",
        "a: >\n  x\n",
        "a: |2\n   x\n",
        "a:\n-\n- x\n",
        "a:\n- # c\n- x\n",
        "a:\n-   b: 1\n",
        "a:\n- - x\n",
        "a: 1\na: 2\n",
        "1: a\n0x10: b\ntrue: c\n",
        "~: a\n",
        "1.5: a\n",
        "a:\n\tb: 1\n",
        "a: |\n  \tx\n",
        "a: x\r\nb: y\r\n",
        "a: 'x\n  y'\n",
        "a: \"x\n  y\"\n",
        "a: b: c\n",
        "a: [1, 2]\n",
        "   \nkind: X\n",
        "  a: 1\n",
        "a: &x 1\nb: *x\n",
        "a: long\n  continued\n\n\n  after blanks\nb: 1\n",
        "a:\n- x\n  y\n- 'p\n  q'\n",
        "a: 'one\n  two ''q''\n\n  three'\n",
        "a: \"one\\n\\t\\\"x\\\" \\u00e9\\x41\n  two\\\n  three\"\n",
        "a: \"x \\ y\"\n",
        "a: \"x\\q\"\n",
        "a: x\n  - y\n  'z'\n",
        "a: x\n  # c\n",
        "a: x\n  y: z\n",
        "a: 'x\nb: 1\n",
        "a: 'x\n  y' z\n",
        "a:\n  {}\n  b: 1\n",
        "a:\n  {}\n# c\n    b: 1\n",
        "a:\n  {} # c\nb: 1\n",
        "a:\n  {}\n    []\n",
        "a:\n  {x: 1}\nb: 1\n",
        "a:\n  [1]\n",
        "- a:\n    {}\n",
    ]
    .iter()
    .filter(|t| agrees(t))
    .count();
    assert!(taken >= 12, "{taken}");
}

/// `{}` and `[]` alone on the line below their key, as `toYaml | indent` writes an empty
/// map or list: taken, and read as the full parser reads them.
#[test]
fn empty_flow_collections_below_their_key_are_taken() {
    for text in [
        "a:\n  {}\nb: 1\n",
        "a:\n    []  \n\nb: 1\n",
        "m:\n  annotations:\n    {}\n  labels:\n    x: y\ndata:\n  k: |-\n    {\"j\": 1}\n",
        "a:\n- b:\n    {}\n- c\n",
        "a:\n  b:\n    []\n# c\n  d: 1\n",
        "a:\n  {}\n",
    ] {
        assert!(agrees(text), "not taken: {text:?}");
    }
}

/// Every document of the corpus's charts and of the repository's examples: the reader
/// agrees where it answers, and takes every document of the big CRD files.
#[test]
fn files_of_the_corpus_read_as_the_full_parser_reads_them() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["../shared/helm-corpus", "examples", "tests"] {
        collect_yaml(&root.join(dir), &mut files);
    }
    let (mut taken, mut docs) = (0, 0);
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let crds = file.to_string_lossy().contains("/crds/");
        for (_, chunk) in super::split_documents(&text) {
            docs += 1;
            let agreed = agrees(&chunk);
            taken += agreed as usize;
            if crds && !agreed && full(&chunk).is_some_and(|v| v.is_object()) {
                // The first line whose prefix the full parser takes and this one not.
                let lines: Vec<&str> = chunk.lines().collect();
                let fails = |n: usize| {
                    if lines[n - 1].ends_with(['|', '-']) {
                        return false; // an empty block scalar: the full parser's
                    }
                    let prefix = lines[..n].join("\n");
                    parse(&prefix).is_none() && full(&prefix).is_some_and(|v| v.is_object())
                };
                let coarse = (1..=lines.len()).step_by(100).find(|&n| fails(n));
                let from = coarse.map_or(1, |n| n.saturating_sub(100).max(1));
                let line = (from..=lines.len()).find(|&n| fails(n));
                panic!(
                    "{}: the reader does not take a CRD document (near {line:?} of the document)",
                    file.display()
                );
            }
        }
    }
    assert!(docs == 0 || taken * 2 > docs, "{taken} of {docs}");
}

fn collect_yaml(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("templates") {
            collect_yaml(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// Documents changed at random places into odd YAML: the reader either gives up or
/// agrees.
#[test]
fn mutated_documents_agree_or_are_left_to_the_full_parser() {
    let bases = [
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-b\n  labels:\n    app.kubernetes.io/name: x\n  annotations:\n    'q': \"1\"\ndata:\n  script: |-\n    #!/bin/sh\n    echo 1\n\n  n: 12\nlist:\n- a\n- b: 1\n  c:\n  - 2.5\n  d: ~\n",
        "spec:\n  description: a long\n    text, folded\n\n    here\n  quoted: 'it''s\n    folded'\n  escaped: \"a\\n\\tb \\\"c\\\"\n    d\"\n  list:\n  - one\n    two\n  - x: 'y'\n",
    ];
    let inserts = [
        " ", "\n", "  ", "- ", ": ", "#", " #", "'", "\"", "|", ">", "[", "]", "{", "}", ",", "&",
        "*", "!", "?", "%", "@", "\t", "0", "-", ".", "e", "x", "\\", "\r", "\u{85}", "~", "null",
        "true", "0x", "|-\n", ":\n",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let mut taken = 0;
    for round in 0..6000 {
        let mut text = bases[round % bases.len()].to_string();
        for _ in 0..1 + next(3) {
            let mut at = next(text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            if next(4) == 0 && at < text.len() {
                let mut end = at + 1;
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                text.replace_range(at..end, "");
            } else {
                text.insert_str(at, inserts[next(inserts.len())]);
            }
        }
        taken += agrees(&text) as usize;
    }
    assert!(taken > 800, "{taken}");
}

/// The block reader says exactly when a plain scalar reads otherwise in YAML 1.1 (so only
/// then is the document read again as kubectl reads it); words in literal text or quoted
/// never count, and the document reads as YAML 1.1 either way.
#[test]
fn a_plain_scalar_that_yaml_1_1_reads_otherwise_is_noted_and_only_that() {
    let noted = |text: &str| super::block::parse_noting_yaml_1_1(text).map(|(_, n)| n);
    for text in [
        "a: yes\n",
        "on: 1\n",
        "mode: 0644\n",
        "n: 1_000\n",
        "l:\n- off\n",
        "m:\n  k: folded\n    no\n  x: N\n",
    ] {
        assert_eq!(noted(text), Some(true), "{text}");
    }
    for text in [
        "a: 'yes'\n",
        "a: \"on\"\n",
        "d: |\n  no\n  on: yes\n",
        "a: yes please\n",
        "b: 644\n",
        "c: true\n",
    ] {
        assert_eq!(noted(text), Some(false), "{text}");
    }
    let (docs, problems) = super::parse_file(
        std::path::Path::new("a.yaml"),
        "a: yes\nb: 0644\nd: |\n  no\n",
    );
    assert!(problems.is_empty());
    let value = &docs[0].value;
    assert_eq!(value["a"], Value::Bool(true));
    assert_eq!(value["b"].as_f64(), Some(420.0));
    assert_eq!(value["d"], Value::String("no\n".into()));
}
