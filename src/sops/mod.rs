//! SOPS-encrypted documents (getsops/sops), decrypted natively. Pure: parsed documents and
//! keys in, plaintext documents or an error out; no I/O, and no message ever holds a value.
//!
//! A file's documents form one sops tree: the top-level `sops` block (the same in every
//! document of a multi-document file) holds the data key sealed for each recipient and the
//! MAC. Every leaf the metadata's rules select is `ENC[AES256_GCM,…]` ([`cipher`]), sealed
//! with the leaf's path as additional data; the MAC is SHA-512 over the plaintext leaves in
//! document order ([`tree`]).

pub mod cache;
pub mod cipher;
pub mod formats;
pub mod keys;
pub mod leaks;
mod metadata;
mod tree;

pub use keys::Keys;
pub use metadata::Metadata;

use crate::yaml::Step;
use serde_json::Value;

/// The top-level key holding sops's metadata.
pub const METADATA_KEY: &str = "sops";

/// Why a file could not be decrypted. Names paths and recipients, never values or keys.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SopsError {
    #[error("the encrypted value at {} {source}", crate::yaml::dotted(.path))]
    Value {
        doc: usize,
        path: Vec<Step>,
        #[source]
        source: cipher::ValueError,
    },
    #[error("the value at {} looks SOPS-encrypted (ENC[…]) but the file has no `sops` metadata block to decrypt it with; encrypt the whole file with sops, or replace the value with its plaintext", crate::yaml::dotted(.path))]
    NoMetadata { doc: usize, path: Vec<Step> },
    #[error("its `sops` metadata block is unreadable: {0}")]
    BadMetadata(String),
    #[error("no available key opens this SOPS-encrypted file; its recipients: {}; tend looked in: {}. Give tend a key of one of these recipients (SOPS_AGE_KEY, SOPS_AGE_KEY_FILE, --decryption-key-file)", .recipients.join(", "), if .searched.is_empty() { "nowhere (no key source is set)".to_string() } else { .searched.join(", ") })]
    NoKey {
        recipients: Vec<String>,
        searched: Vec<String>,
    },
    #[error("this file is SOPS-encrypted only for {}, which tend does not decrypt; add an age recipient to it (in .sops.yaml, then `sops updatekeys FILE`) and give tend that age identity", .0.join(", "))]
    Unsupported(Vec<String>),
    #[error("this SOPS file splits its data key between {0} key groups (Shamir); tend decrypts files with one key group only")]
    Shamir(usize),
    #[error("the SOPS MAC does not match: the file was modified after it was encrypted (edit it with `sops FILE`, or re-encrypt it)")]
    MacMismatch,
}

/// Whether `text` holds anything SOPS-encrypted, and the 1-based line of the first sign:
/// a sealed value (`ENC[AES256_GCM,`), or sops metadata (a YAML `sops:` block, a JSON
/// `"sops":` key, dotenv `sops_*=` keys, an INI `[sops]` section). For files tend does not
/// parse itself (kustomize inputs).
pub fn looks_encrypted(text: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let t = line.trim_start();
            line.contains("ENC[AES256_GCM,")
                || line.starts_with("sops:")
                || t.starts_with("\"sops\":")
                || line.starts_with("sops_mac=")
                || line.starts_with("sops_version=")
                || line.trim() == "[sops]"
        })
        .map(|i| i + 1)
}

/// Whether a string value is (or tries to be) a sealed value.
pub fn looks_sealed(value: &str) -> bool {
    value.starts_with("ENC[AES256_GCM")
}

/// The path of the first sealed-looking string in `value` (lists add their index, for lines).
pub fn find_sealed(value: &Value) -> Option<Vec<Step>> {
    match value {
        Value::String(s) if looks_sealed(s) => Some(Vec::new()),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            find_sealed(v).map(|mut p| {
                p.insert(0, Step::Key(k.clone()));
                p
            })
        }),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
            find_sealed(v).map(|mut p| {
                p.insert(0, Step::Index(i));
                p
            })
        }),
        _ => None,
    }
}

/// Fields that name an object: printed in every report as its identity, so never masked
/// even when sops encrypted them (as it does without `--encrypted-regex`).
const IDENTITY: [&str; 4] = [
    "/apiVersion",
    "/kind",
    "/metadata/name",
    "/metadata/namespace",
];

/// Whether a JSON pointer names one of the fields that name an object ([`IDENTITY`]).
pub fn names_the_object(pointer: &str) -> bool {
    IDENTITY.contains(&pointer)
}

/// JSON pointers (RFC 6901) of every sealed-looking string leaf of an encrypted document
/// (its `sops` block and identity fields left out): the fields whose plaintext reports must
/// mask once the document is decrypted, whatever its kind.
pub fn sealed_pointers(value: &Value) -> Vec<String> {
    fn walk(value: &Value, pointer: &mut String, out: &mut Vec<String>) {
        match value {
            Value::String(s) if looks_sealed(s) && !IDENTITY.contains(&pointer.as_str()) => {
                out.push(pointer.clone());
            }
            Value::Object(map) => {
                for (key, item) in map {
                    if pointer.is_empty() && key == METADATA_KEY {
                        continue;
                    }
                    let len = pointer.len();
                    pointer.push('/');
                    if key.contains(['~', '/']) {
                        pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    } else {
                        pointer.push_str(key);
                    }
                    walk(item, pointer, out);
                    pointer.truncate(len);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = pointer.len();
                    pointer.push_str(&format!("/{i}"));
                    walk(item, pointer, out);
                    pointer.truncate(len);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut String::new(), &mut out);
    out
}

/// Whether a document carries sops metadata.
pub fn has_metadata(doc: &Value) -> bool {
    doc.get(METADATA_KEY).is_some_and(Value::is_object)
}

/// Decrypt a file's documents in place (their `sops` blocks removed), verifying the MAC.
/// Documents without metadata in a file without any are left alone, unless they hold a
/// sealed value ([`SopsError::NoMetadata`]). Returns whether the file was encrypted.
pub fn decrypt_documents(docs: &mut [Value], keys: &Keys) -> Result<bool, SopsError> {
    let Some(meta) = docs
        .iter()
        .rev()
        .find_map(|d| d.get(METADATA_KEY).filter(|m| m.is_object()))
    else {
        for (doc, value) in docs.iter().enumerate() {
            if let Some(path) = find_sealed(value) {
                return Err(SopsError::NoMetadata { doc, path });
            }
        }
        return Ok(false);
    };
    let meta = Metadata::parse(meta)?;
    let data_key = meta.data_key(keys)?;
    for doc in docs.iter_mut() {
        if let Some(map) = doc.as_object_mut() {
            map.shift_remove(METADATA_KEY);
        }
    }
    tree::decrypt(docs, &meta, &data_key)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/sops-fixtures");

    fn fixture(name: &str) -> Option<String> {
        let text = std::fs::read_to_string(format!("{FIXTURES}/{name}")).ok();
        if text.is_none() {
            eprintln!("no sops fixtures at {FIXTURES}: skipped");
        }
        text
    }

    fn docs(text: &str) -> Vec<Value> {
        let (docs, problems) = crate::yaml::parse_file(std::path::Path::new("f.yaml"), text);
        assert!(problems.is_empty(), "{problems:?}");
        docs.into_iter().map(|d| d.value).collect()
    }

    fn keys() -> Keys {
        let mut keys = Keys::default();
        keys.add_text("age-keys.txt", &fixture("age-keys.txt").unwrap_or_default())
            .unwrap();
        keys
    }

    #[test]
    fn the_real_sops_yaml_fixture_decrypts() {
        let Some(text) = fixture("secrets.yaml") else {
            return;
        };
        let mut values = docs(&text);
        assert_eq!(decrypt_documents(&mut values, &keys()), Ok(true));
        assert_eq!(
            values[0],
            serde_json::json!({
                "test_key": "test_value",
                "a_list": ["e1", "e3"],
                "nested": {"test": {"file": "another value"}},
            })
        );
    }

    #[test]
    fn a_changed_value_breaks_the_mac_or_its_seal() {
        let Some(text) = fixture("secrets.yaml") else {
            return;
        };
        // Swapping two sealed values keeps each one intact but moves it to another path.
        let mut values = docs(&text);
        let list = values[0]["a_list"].as_array_mut().unwrap();
        list.swap(0, 1);
        assert_eq!(
            decrypt_documents(&mut values, &keys()),
            Err(SopsError::MacMismatch)
        );
        let mut values = docs(&text);
        values[0]["nested"]["test"]["file"] = Value::String("plain".into());
        assert!(matches!(
            decrypt_documents(&mut values, &keys()),
            Err(SopsError::Value { .. })
        ));
    }

    #[test]
    fn without_a_key_the_recipients_and_places_are_named() {
        let Some(text) = fixture("secrets.yaml") else {
            return;
        };
        let mut values = docs(&text);
        let mut keys = Keys::default();
        keys.note("SOPS_AGE_KEY (unset)".into());
        let err = decrypt_documents(&mut values, &keys).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("age age1yt3tfqlfrwdwx0z0ynwplcr6qxcxfaqycuprpmy89nr83ltx74tqdpszlw"),
            "{message}"
        );
        assert!(
            message.contains("PGP key 2504791468B153B8A3963CC97BA53D1919C5DFD4"),
            "{message}"
        );
        assert!(message.contains("SOPS_AGE_KEY (unset)"), "{message}");
    }

    fn pgp_keys() -> Keys {
        let mut keys = Keys::default();
        keys.add_text("key.asc", &fixture("key.asc").unwrap_or_default())
            .unwrap();
        keys
    }

    fn decrypted(name: &str, keys: &Keys) -> Option<String> {
        let text = fixture(name)?;
        let plain = formats::decrypt_file(std::path::Path::new(name), &text, keys).unwrap();
        Some(String::from_utf8(plain.to_vec()).unwrap())
    }

    #[test]
    fn the_real_fixtures_of_every_format_decrypt_with_the_pgp_key() {
        let keys = pgp_keys();
        let Some(yaml) = decrypted("secrets.yaml", &keys) else {
            return;
        };
        assert!(yaml.contains("test_key: test_value"), "{yaml}");
        let json = decrypted("secrets.json", &keys).unwrap();
        let json: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(json["test_key"], "test_value");
        assert_eq!(
            decrypted("secrets.env", &keys).unwrap(),
            "hello=Welcome to SOPS! Edit this file as you please!\nexample_key=example_value\nexample_multiline=foo\\nbar\\nbaz\nnever_gonna=give you up\n"
        );
        assert_eq!(decrypted("secrets.bin", &keys).unwrap(), "binary_value\n");
        assert_eq!(
            decrypted("secrets.ini", &keys).unwrap(),
            "[Welcome!]\nhello = Welcome to SOPS! Edit this file as you please!\nexample_key = example_value\nnever_gonna = give you up\n"
        );
    }

    #[test]
    fn the_real_dotenv_fixture_names_its_pgp_recipients() {
        let Some(text) = fixture("secrets.env") else {
            return;
        };
        let err = formats::decrypt_file(std::path::Path::new("s.env"), &text, &keys()).unwrap_err();
        let SopsError::NoKey { recipients, .. } = err else {
            panic!("{err:?}");
        };
        assert_eq!(
            recipients,
            vec![
                "PGP key 7FB89715AADA920D65D25E63F9BA9DEBD03F57C0".to_string(),
                "PGP key 2504791468B153B8A3963CC97BA53D1919C5DFD4".to_string()
            ]
        );
    }

    #[test]
    fn a_broken_pgp_key_block_is_named_by_its_line() {
        let Some(text) = fixture("key.asc") else {
            return;
        };
        // Cut short: named by its line, never echoed.
        let lines: Vec<&str> = text.lines().collect();
        let broken = [&lines[..8], &lines[lines.len() - 1..]].concat().join("\n");
        let err = Keys::default()
            .add_text("k", &format!("# x\n{broken}"))
            .unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn sealed_pointers_name_every_encrypted_leaf_but_identity_and_metadata() {
        let doc: Value = serde_json::json!({
            "apiVersion": "ENC[AES256_GCM,data:x]",
            "kind": "ConfigMap",
            "metadata": {"name": "ENC[AES256_GCM,data:y]", "labels": {"a/b": "ENC[AES256_GCM,data:z]"}},
            "data": {"plain": "v", "token": "ENC[AES256_GCM,data:t]"},
            "list": ["ENC[AES256_GCM,data:l]", 1],
            "sops": {"mac": "ENC[AES256_GCM,data:m]"}
        });
        assert_eq!(
            sealed_pointers(&doc),
            vec!["/metadata/labels/a~1b", "/data/token", "/list/0"]
        );
    }

    #[test]
    fn sealed_values_without_metadata_are_refused() {
        let mut values = docs("a:\n  b:\n    - ENC[AES256_GCM,data:x]\n");
        let err = decrypt_documents(&mut values, &Keys::default()).unwrap_err();
        assert_eq!(
            err,
            SopsError::NoMetadata {
                doc: 0,
                path: vec![Step::Key("a".into()), Step::Key("b".into()), Step::Index(0)]
            }
        );
        assert_eq!(looks_encrypted("x: 1\nk=ENC[AES256_GCM,data:"), Some(2));
        assert_eq!(looks_encrypted("x: 1\n"), None);
    }
}

#[cfg(test)]
mod fuzz_tests;
