//! Whole files in sops's stores, decrypted back to plaintext in the same format (what a
//! kustomize unit reads): YAML, JSON, dotenv (metadata flattened into `sops_*` keys) and
//! binary (a JSON wrapper whose `data` holds the file). The format follows the extension, as
//! sops chooses it.

use super::{decrypt_documents, Keys, SopsError, METADATA_KEY};
use serde_json::{Map, Value};
use std::path::Path;
use zeroize::Zeroizing;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
    Dotenv,
    Binary,
}

impl Format {
    /// sops's choice by extension: `.yaml`/`.yml`, `.json`, `.env`; anything else is binary.
    pub fn of(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some("yaml" | "yml") => Format::Yaml,
            Some("json") => Format::Json,
            Some("env") => Format::Dotenv,
            _ => Format::Binary,
        }
    }
}

/// The plaintext of an encrypted file, in its own format. Nothing of it is ever in an error.
pub fn decrypt_file(path: &Path, text: &str, keys: &Keys) -> Result<Zeroizing<Vec<u8>>, SopsError> {
    let unreadable = |what: &str| SopsError::BadMetadata(format!("the file is not {what}"));
    match Format::of(path) {
        Format::Yaml => {
            let (docs, problems) = crate::yaml::parse_file(path, text);
            if !problems.is_empty() {
                return Err(unreadable("readable YAML"));
            }
            let mut values: Vec<Value> = docs.into_iter().map(|d| d.value).collect();
            decrypt_documents(&mut values, keys)?;
            let texts: Vec<String> = values.iter().map(crate::yaml::to_yaml).collect();
            Ok(Zeroizing::new(texts.join("---\n").into_bytes()))
        }
        Format::Json => {
            let mut value: Value =
                serde_json::from_str(text).map_err(|_| unreadable("readable JSON"))?;
            decrypt_documents(std::slice::from_mut(&mut value), keys)?;
            let out = serde_json::to_string_pretty(&value).unwrap_or_default();
            Ok(Zeroizing::new(out.into_bytes()))
        }
        Format::Binary => {
            let mut value: Value = serde_json::from_str(text)
                .map_err(|_| unreadable("a sops binary file (JSON with `data` and `sops`)"))?;
            decrypt_documents(std::slice::from_mut(&mut value), keys)?;
            match value.get("data") {
                Some(Value::String(data)) => Ok(Zeroizing::new(data.clone().into_bytes())),
                _ => Err(unreadable(
                    "a sops binary file (JSON with `data` and `sops`)",
                )),
            }
        }
        Format::Dotenv => {
            let mut value = dotenv_tree(text).ok_or_else(|| unreadable("a dotenv file"))?;
            decrypt_documents(std::slice::from_mut(&mut value), keys)?;
            let mut out = String::new();
            for (key, v) in value.as_object().into_iter().flatten() {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.push_str(&format!("{key}={}\n", v.replace('\n', "\\n")));
            }
            Ok(Zeroizing::new(out.into_bytes()))
        }
    }
}

/// A dotenv file as sops reads it (`KEY=value`, `\n` escapes, `#` comments, which are never
/// in the MAC and are dropped), its `sops_*` keys unflattened into a `sops` block.
fn dotenv_tree(text: &str) -> Option<Value> {
    let mut data = Map::new();
    let mut meta = Value::Object(Map::new());
    for line in text.split('\n') {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once('=')?;
        let value = value.replace("\\n", "\n");
        match key.strip_prefix("sops_") {
            Some(flat) => unflatten(&mut meta, flat, value)?,
            None => {
                data.insert(key.to_string(), Value::String(value));
            }
        }
    }
    if meta.as_object().is_some_and(|m| !m.is_empty()) {
        data.insert(METADATA_KEY.into(), meta);
    }
    Some(Value::Object(data))
}

/// Put `value` at a flattened metadata key (`age__list_0__map_enc`, sops's stores/flatten.go).
fn unflatten(root: &mut Value, flat: &str, value: String) -> Option<()> {
    let mut steps: Vec<(bool, String)> = Vec::new(); // (is list index, name)
    let mut rest = flat;
    let mut is_list = false;
    loop {
        let next = [("__list_", true), ("__map_", false)]
            .iter()
            .filter_map(|(sep, list)| rest.find(sep).map(|i| (i, *sep, *list)))
            .min_by_key(|(i, _, _)| *i);
        match next {
            Some((i, sep, list)) => {
                steps.push((is_list, rest[..i].to_string()));
                rest = &rest[i + sep.len()..];
                is_list = list;
            }
            None => {
                steps.push((is_list, rest.to_string()));
                break;
            }
        }
    }
    let mut node = root;
    let last = steps.len() - 1;
    for (n, (list, name)) in steps.iter().enumerate() {
        let next_is_list = steps.get(n + 1).is_some_and(|(l, _)| *l);
        let fresh = || {
            if next_is_list {
                Value::Array(Vec::new())
            } else {
                Value::Object(Map::new())
            }
        };
        let leaf = Value::String(value.clone());
        node = if *list {
            let index: usize = name.parse().ok()?;
            let items = node.as_array_mut()?;
            while items.len() <= index {
                items.push(Value::Null);
            }
            if n == last {
                items[index] = leaf;
                return Some(());
            }
            if items[index].is_null() {
                items[index] = fresh();
            }
            &mut items[index]
        } else {
            let map = node.as_object_mut()?;
            if n == last {
                map.insert(name.clone(), leaf);
                return Some(());
            }
            map.entry(name.clone()).or_insert_with(fresh)
        };
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dotenv_metadata_unflattens_as_sops_flattens_it() {
        let tree = dotenv_tree(
            "#c\nA=x\\ny\nsops_pgp__list_1__map_fp=F2\nsops_pgp__list_0__map_fp=F1\nsops_mac=M\nsops_lastmodified=L\n",
        )
        .unwrap();
        assert_eq!(
            tree,
            json!({"A": "x\ny", "sops": {"pgp": [{"fp": "F1"}, {"fp": "F2"}], "mac": "M", "lastmodified": "L"}})
        );
    }

    #[test]
    fn formats_follow_the_extension() {
        assert_eq!(Format::of(Path::new("a/s.env")), Format::Dotenv);
        assert_eq!(Format::of(Path::new("s.yml")), Format::Yaml);
        assert_eq!(Format::of(Path::new("s.bin")), Format::Binary);
        assert_eq!(Format::of(Path::new("README")), Format::Binary);
    }
}
