//! Fuzzing the SOPS reader (issue 38) with proptest, bounded, in `cargo test`: the files the
//! real `sops` wrote (`../shared/sops-fixtures`), mutated by flipped bytes, cuts and splices
//! of the formats' own tokens (an `ENC[...]` header, a `type:` that is not the value's, a
//! `sops` key, YAML anchors), go through [`decrypt_file`] with the right keys. Nothing may
//! panic or run long, and no error may quote a plaintext value: AES-GCM authenticates a
//! value's path but not its `type:`, so a changed type reaches the plaintext and refuses it.
//! `FUZZ_CASES=<n>` runs more cases.

use super::formats::decrypt_file;
use super::keys::Keys;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::path::Path;
use std::time::{Duration, Instant};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/sops-fixtures");

const FILES: [&str; 5] = [
    "secrets.yaml",
    "secrets.json",
    "secrets.env",
    "secrets.ini",
    "secrets.bin",
];

/// The fixtures' decrypted values (their README): none may show in an error.
const PLAINTEXTS: [&str; 6] = [
    "test_value",
    "another value",
    "Welcome to SOPS",
    "example_value",
    "give you up",
    "binary_value",
];

const TOKENS: [&str; 24] = [
    "ENC[AES256_GCM,data:",
    ",iv:",
    ",tag:",
    ",type:str]",
    ",type:int]",
    ",type:float]",
    ",type:bool]",
    ",type:bytes]",
    ",type:comment]",
    "type:int",
    "sops:",
    "mac: ",
    "\n  - ",
    "{",
    "}",
    "[",
    "\"",
    ": ",
    "\n",
    "&a ",
    "*a",
    "sops_mac=",
    "[sops]\n",
    "=",
];

fn read(name: &str) -> Option<String> {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).ok()
}

fn keys() -> Keys {
    let mut keys = Keys::default();
    for file in ["age-keys.txt", "key.asc"] {
        if let Some(text) = read(file) {
            keys.add_text(file, &text).expect("the fixtures' keys read");
        }
    }
    keys
}

/// One change to a file's text.
#[derive(Debug, Clone)]
enum Edit {
    /// Replace the character at a place with an ASCII byte.
    Flip(prop::sample::Index, u8),
    /// Cut what follows a place (up to a length).
    Cut(prop::sample::Index, usize),
    /// Put one of [`TOKENS`] at a place.
    Splice(prop::sample::Index, prop::sample::Index),
    /// Change every `type:str` to another type.
    Retype(prop::sample::Index),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<prop::sample::Index>(), 0x20u8..0x7f).prop_map(|(i, b)| Edit::Flip(i, b)),
        (any::<prop::sample::Index>(), 1usize..64).prop_map(|(i, n)| Edit::Cut(i, n)),
        (any::<prop::sample::Index>(), any::<prop::sample::Index>())
            .prop_map(|(i, t)| Edit::Splice(i, t)),
        any::<prop::sample::Index>().prop_map(Edit::Retype),
    ]
}

/// The char boundary at or before `index`'s place in `text`.
fn place(text: &str, index: &prop::sample::Index) -> usize {
    if text.is_empty() {
        return 0;
    }
    let mut at = index.index(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn apply(text: &mut String, edit: &Edit) {
    match edit {
        Edit::Flip(i, b) => {
            let at = place(text, i);
            if let Some(c) = text[at..].chars().next() {
                text.replace_range(at..at + c.len_utf8(), &char::from(*b).to_string());
            }
        }
        Edit::Cut(i, n) => {
            let at = place(text, i);
            let mut end = (at + n).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.replace_range(at..end, "");
        }
        Edit::Splice(i, t) => {
            let at = place(text, i);
            text.insert_str(at, TOKENS[t.index(TOKENS.len())]);
        }
        Edit::Retype(t) => {
            let to = [
                "type:int",
                "type:float",
                "type:bool",
                "type:bytes",
                "type:comment",
            ];
            *text = text.replace("type:str", to[t.index(to.len())]);
        }
    }
}

#[test]
fn mutated_sops_files_never_panic_run_long_or_quote_a_plaintext() {
    let texts: Vec<(&str, String)> = FILES
        .iter()
        .filter_map(|name| read(name).map(|text| (*name, text)))
        .collect();
    if texts.len() != FILES.len() {
        eprintln!("no sops fixtures at {FIXTURES}: skipped");
        return;
    }
    let keys = keys();
    // The unmutated files decrypt: the mutations start from what sops really writes.
    for (name, text) in &texts {
        assert!(
            decrypt_file(Path::new(name), text, &keys).is_ok(),
            "{name} decrypts"
        );
    }
    let cases = std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (0..FILES.len(), prop::collection::vec(edit(), 1..6));
    runner
        .run(&strategy, |(file, edits)| {
            let (name, original) = &texts[file];
            let mut text = original.clone();
            for edit in &edits {
                apply(&mut text, edit);
            }
            let started = Instant::now();
            let outcome = decrypt_file(Path::new(name), &text, &keys);
            prop_assert!(started.elapsed() < Duration::from_secs(5));
            if let Err(err) = outcome {
                let message = err.to_string();
                for plain in PLAINTEXTS {
                    prop_assert!(!message.contains(plain), "{name}: {message}");
                }
            }
            Ok(())
        })
        .unwrap();
}
