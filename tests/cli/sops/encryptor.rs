//! A small sops-format encryptor for the project's own fixtures, written from sops's format
//! (not from tend's decryptor): the data key sealed for an age recipient, every selected leaf
//! sealed with AES-256-GCM (32-byte iv, path as additional data), the MAC over the plaintext
//! leaves. `the_encryptor_agrees_with_real_sops` checks it against files the real sops wrote.

use aes_gcm::aead::{consts::U32, Aead, KeyInit, Payload};
use aes_gcm::{aes::Aes256, AesGcm};
use base64::Engine;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha512};
use std::io::{Read, Write};
use std::str::FromStr;

type Gcm = AesGcm<Aes256, U32>;

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/sops-fixtures");

/// The sops project's published test identity (age-keys.txt of the fixtures; not a secret).
pub const TEST_IDENTITY: &str =
    "AGE-SECRET-KEY-1NJT5YCS2LWU4V4QAJQ6R4JNU7LXPDX602DZ9NUFANVU5GDTGUWCQ5T59M6";
pub const TEST_RECIPIENT: &str = "age1yt3tfqlfrwdwx0z0ynwplcr6qxcxfaqycuprpmy89nr83ltx74tqdpszlw";

pub const LASTMODIFIED: &str = "2026-01-02T03:04:05Z";

/// Which leaves to seal, as the metadata says.
#[derive(Clone, Default)]
pub struct Rules {
    pub encrypted_regex: Option<String>,
    pub unencrypted_suffix: Option<String>,
    pub mac_only_encrypted: bool,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Deterministic ivs: a counter, so fixtures are stable (sops draws them at random).
struct Sealer {
    key: [u8; 32],
    counter: u8,
}

impl Sealer {
    fn seal(&mut self, plain: &[u8], kind: &str, aad: &str) -> String {
        self.counter = self.counter.wrapping_add(1);
        let iv = [self.counter; 32];
        let out = Gcm::new((&self.key).into())
            .encrypt(
                (&iv).into(),
                Payload {
                    msg: plain,
                    aad: aad.as_bytes(),
                },
            )
            .unwrap();
        let (data, tag) = out.split_at(out.len() - 16);
        format!(
            "ENC[AES256_GCM,data:{},iv:{},tag:{},type:{kind}]",
            b64(data),
            b64(&iv),
            b64(tag)
        )
    }
}

fn selected(rules: &Rules, path: &[String]) -> bool {
    let mut yes = true;
    if let Some(suffix) = &rules.unencrypted_suffix {
        if path.iter().any(|p| p.ends_with(suffix.as_str())) {
            yes = false;
        }
    }
    if let Some(re) = &rules.encrypted_regex {
        let re = regex::Regex::new(re).unwrap();
        yes = path.iter().any(|p| re.is_match(p));
    }
    yes
}

/// The bytes and sops type of a leaf (sops.go `ToBytes`, cipher.go types).
fn leaf_bytes(v: &Value) -> (Vec<u8>, &'static str) {
    match v {
        Value::String(s) => (s.as_bytes().to_vec(), "str"),
        Value::Bool(b) => ((if *b { "True" } else { "False" }).into(), "bool"),
        Value::Number(n) if n.is_i64() => (n.to_string().into_bytes(), "int"),
        Value::Number(n) => (format!("{}", n.as_f64().unwrap()).into_bytes(), "float"),
        _ => unreachable!(),
    }
}

fn walk(
    v: &mut Value,
    path: &mut Vec<String>,
    rules: &Rules,
    hash: &mut Sha512,
    sealer: &mut Sealer,
) {
    match v {
        Value::Null => {}
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                path.push(k.clone());
                walk(child, path, rules, hash, sealer);
                path.pop();
            }
        }
        Value::Array(items) => {
            for child in items {
                walk(child, path, rules, hash, sealer);
            }
        }
        leaf => {
            let seal = selected(rules, path);
            let (bytes, kind) = leaf_bytes(leaf);
            if !rules.mac_only_encrypted || seal {
                hash.update(&bytes);
            }
            if seal && !bytes.is_empty() {
                *leaf = Value::String(sealer.seal(&bytes, kind, &format!("{}:", path.join(":"))));
            }
        }
    }
}

/// The MAC sops computes over plaintext documents (upper-case hex SHA-512).
pub fn mac_of(docs: &[Value], rules: &Rules) -> String {
    let mut docs = docs.to_vec();
    let mut hash = Sha512::new();
    if rules.mac_only_encrypted {
        hash.update(sha2::Sha256::digest(b"sops"));
    }
    let mut sealer = Sealer {
        key: [7; 32],
        counter: 0,
    };
    for doc in &mut docs {
        walk(doc, &mut Vec::new(), rules, &mut hash, &mut sealer);
    }
    hex::encode_upper(hash.finalize())
}

fn age_seal(data_key: &[u8; 32], recipient: &str) -> String {
    let recipient = age::x25519::Recipient::from_str(recipient).unwrap();
    let encryptor =
        age::Encryptor::with_recipients(std::iter::once(&recipient as &dyn age::Recipient))
            .unwrap();
    let mut out = Vec::new();
    let armor =
        age::armor::ArmoredWriter::wrap_output(&mut out, age::armor::Format::AsciiArmor).unwrap();
    let mut writer = encryptor.wrap_output(armor).unwrap();
    writer.write_all(data_key).unwrap();
    writer.finish().unwrap().finish().unwrap();
    String::from_utf8(out).unwrap()
}

/// Encrypt documents for an age recipient: the sealed documents and their `sops` block.
/// `data_key` seeds the data key, so files are reproducible.
pub fn encrypt_tree(
    docs: &[Value],
    recipient: &str,
    rules: &Rules,
    data_key: u8,
) -> (Vec<Value>, Map<String, Value>) {
    let key = [data_key; 32];
    let mut sealer = Sealer { key, counter: 0 };
    let mut hash = Sha512::new();
    if rules.mac_only_encrypted {
        hash.update(sha2::Sha256::digest(b"sops"));
    }
    let mut docs = docs.to_vec();
    for doc in &mut docs {
        walk(doc, &mut Vec::new(), rules, &mut hash, &mut sealer);
    }
    let mac = hex::encode_upper(hash.finalize());
    let mut meta = Map::new();
    meta.insert(
        "age".into(),
        json!([{"recipient": recipient, "enc": age_seal(&key, recipient)}]),
    );
    meta.insert("lastmodified".into(), json!(LASTMODIFIED));
    meta.insert(
        "mac".into(),
        json!(sealer.seal(mac.as_bytes(), "str", LASTMODIFIED)),
    );
    if let Some(re) = &rules.encrypted_regex {
        meta.insert("encrypted_regex".into(), json!(re));
    }
    if let Some(s) = &rules.unencrypted_suffix {
        meta.insert("unencrypted_suffix".into(), json!(s));
    }
    if rules.mac_only_encrypted {
        meta.insert("mac_only_encrypted".into(), json!(true));
    }
    meta.insert("version".into(), json!("3.9.0"));
    (docs, meta)
}

/// YAML documents as `sops --encrypt` writes them (the same `sops` block in every document).
pub fn encrypt_yaml(docs: &[Value], recipient: &str, rules: &Rules, data_key: u8) -> String {
    let (mut docs, meta) = encrypt_tree(docs, recipient, rules, data_key);
    docs.iter_mut()
        .map(|doc| {
            doc.as_object_mut()
                .unwrap()
                .insert("sops".into(), Value::Object(meta.clone()));
            serde_yaml::to_string(doc).unwrap()
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

/// A dotenv file as sops writes it: `KEY=ENC[...]` lines, then the metadata flattened into
/// sorted `sops_*` keys (`sops_age__list_0__map_enc`), newlines escaped.
pub fn encrypt_dotenv(pairs: &[(&str, &str)], recipient: &str, data_key: u8) -> String {
    let mut map = Map::new();
    for (k, v) in pairs {
        map.insert(k.to_string(), json!(v));
    }
    let (docs, meta) = encrypt_tree(
        &[Value::Object(map)],
        recipient,
        &Rules::default(),
        data_key,
    );
    let mut out = String::new();
    for (k, v) in docs[0].as_object().unwrap() {
        out.push_str(&format!("{k}={}\n", v.as_str().unwrap()));
    }
    let mut flat: Vec<(String, String)> = Vec::new();
    for (k, v) in &meta {
        match v {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    for (field, value) in item.as_object().unwrap() {
                        flat.push((
                            format!("{k}__list_{i}__map_{field}"),
                            value.as_str().unwrap().to_string(),
                        ));
                    }
                }
            }
            Value::String(s) => flat.push((k.clone(), s.clone())),
            other => flat.push((k.clone(), other.to_string())),
        }
    }
    flat.sort();
    for (k, v) in flat {
        out.push_str(&format!("sops_{k}={}\n", v.replace('\n', "\\n")));
    }
    out
}

/// The MAC stored in a sops file, opened with an age identity (independently of tend).
pub fn stored_mac(sops: &Value, identity: &str) -> String {
    let identity = age::x25519::Identity::from_str(identity).unwrap();
    let enc = sops["age"][0]["enc"].as_str().unwrap();
    let decryptor = age::Decryptor::new(age::armor::ArmoredReader::new(enc.as_bytes())).unwrap();
    let mut key = Vec::new();
    decryptor
        .decrypt(std::iter::once(&identity as &dyn age::Identity))
        .unwrap()
        .read_to_end(&mut key)
        .unwrap();
    let sealed = sops["mac"].as_str().unwrap();
    let inner = &sealed["ENC[AES256_GCM,".len()..sealed.len() - 1];
    let field = |name: &str| {
        let part = inner
            .split(',')
            .find_map(|p| p.strip_prefix(&format!("{name}:")))
            .unwrap();
        base64::engine::general_purpose::STANDARD
            .decode(part)
            .unwrap()
    };
    let mut msg = field("data");
    msg.extend(field("tag"));
    let iv = field("iv");
    let key: [u8; 32] = key.try_into().unwrap();
    let plain = Gcm::new((&key).into())
        .decrypt(
            iv.as_slice().try_into().unwrap(),
            Payload {
                msg: &msg,
                aad: sops["lastmodified"].as_str().unwrap().as_bytes(),
            },
        )
        .unwrap();
    String::from_utf8(plain).unwrap()
}
