//! Whole files in sops's stores, decrypted back to plaintext in the same format (what a
//! kustomize unit reads): YAML, JSON, dotenv (metadata flattened into `sops_*` keys), INI
//! (sections; metadata flattened into a `[sops]` section) and binary (a JSON wrapper whose
//! `data` holds the file). The format follows the extension, as sops chooses it.

use super::{decrypt_documents, Keys, SopsError, METADATA_KEY};
use serde_json::{Map, Value};
use std::path::Path;
use zeroize::Zeroizing;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
    Dotenv,
    Ini,
    Binary,
}

impl Format {
    /// sops's choice by extension: `.yaml`/`.yml`, `.json`, `.env`, `.ini`; anything else is
    /// binary.
    pub fn of(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some("yaml" | "yml") => Format::Yaml,
            Some("json") => Format::Json,
            Some("env") => Format::Dotenv,
            Some("ini") => Format::Ini,
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
        Format::Ini => {
            let mut value = ini_tree(text).ok_or_else(|| unreadable("an INI file"))?;
            decrypt_documents(std::slice::from_mut(&mut value), keys)?;
            Ok(Zeroizing::new(ini_text(&value).into_bytes()))
        }
    }
}

/// The section go-ini puts keys before the first `[section]` in, first in every file.
const INI_DEFAULT: &str = "DEFAULT";

/// An INI file as sops reads it (go-ini's rules: `key = value` or `key: value`, an inline
/// `;`/`#` comment cut off, surrounding quotes dropped; comments, which are never in the MAC,
/// dropped), as a tree of sections (paths `section:key:`, the default section first), its
/// `[sops]` section unflattened into a `sops` block.
fn ini_tree(text: &str) -> Option<Value> {
    let mut sections = Map::new();
    sections.insert(INI_DEFAULT.into(), Value::Object(Map::new()));
    let mut current = INI_DEFAULT.to_string();
    let mut meta = Value::Object(Map::new());
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[') {
            current = name.strip_suffix(']')?.trim().to_string();
            if current != super::METADATA_KEY {
                sections
                    .entry(current.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
            }
            continue;
        }
        let split = line.find(['=', ':']);
        let (key, value) = match split {
            Some(i) => (line[..i].trim(), line[i + 1..].trim()),
            None => (line, ""),
        };
        let value = match value.find(['#', ';']) {
            Some(i) => value[..i].trim(),
            None => value,
        };
        let value = ["\"", "'"]
            .iter()
            .find_map(|q| {
                value
                    .strip_prefix(q)
                    .and_then(|v| v.strip_suffix(q))
                    .filter(|_| value.len() >= 2)
            })
            .unwrap_or(value);
        if current == super::METADATA_KEY {
            unflatten(&mut meta, key, value.replace("\\n", "\n"))?;
        } else if let Some(Value::Object(section)) = sections.get_mut(&current) {
            section.insert(key.to_string(), Value::String(value.to_string()));
        }
    }
    if meta.as_object().is_some_and(|m| !m.is_empty()) {
        sections.insert(METADATA_KEY.into(), meta);
    }
    Some(Value::Object(sections))
}

/// A decrypted INI tree as text: the default section's keys, then each `[section]`.
fn ini_text(tree: &Value) -> String {
    let mut out = String::new();
    for (name, section) in tree.as_object().into_iter().flatten() {
        let Some(keys) = section.as_object() else {
            continue;
        };
        if name != INI_DEFAULT {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("[{name}]\n"));
        } else if keys.is_empty() {
            continue;
        }
        for (key, v) in keys {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            out.push_str(&format!("{key} = {v}\n"));
        }
    }
    out
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
    fn ini_sections_and_metadata_read_as_sops_reads_them() {
        let tree = ini_tree(
            "; c\ntop = 1\n[a b]\nk = \"v\" ; note\nurl: x=y\n\n[sops]\nmac = M\nage__list_0__map_enc = L1\\nL2\n",
        )
        .unwrap();
        assert_eq!(
            tree,
            json!({"DEFAULT": {"top": "1"}, "a b": {"k": "v", "url": "x=y"},
                   "sops": {"mac": "M", "age": [{"enc": "L1\nL2"}]}})
        );
        let mut plain = tree.clone();
        plain.as_object_mut().unwrap().shift_remove("sops");
        assert_eq!(ini_text(&plain), "top = 1\n\n[a b]\nk = v\nurl = x=y\n");
    }

    #[test]
    fn formats_follow_the_extension() {
        assert_eq!(Format::of(Path::new("app.ini")), Format::Ini);
        assert_eq!(Format::of(Path::new("a/s.env")), Format::Dotenv);
        assert_eq!(Format::of(Path::new("s.yml")), Format::Yaml);
        assert_eq!(Format::of(Path::new("s.bin")), Format::Binary);
        assert_eq!(Format::of(Path::new("README")), Format::Binary);
    }
}
