//! The methods of Helm's `.Files` (helm/helm `pkg/engine/files.go`): `Get`, `GetBytes`,
//! `Glob` (gobwas/glob with `/` as separator), `Lines`, `AsConfig`, `AsSecrets`. `.Files`
//! is a map of path to text; `GetBytes` gives the text too (tend's values have no byte
//! slices; `b64enc` and friends treat both alike). `Get` of a file that is not UTF-8 text
//! gives Go's string of its bytes ([`binary_text`]), which only the encodings and hashes
//! read (`.Files.Get "x.bz2" | b64enc` for a ConfigMap's binaryData).

use super::conv::{want_str, BINARY_TEXT};
use super::goyaml;
use crate::helm::template::builtins::exact;
use crate::helm::template::{CallError, Engine, Value};
use base64::Engine as _;
use std::collections::BTreeMap;

/// Go's name for a byte slice: what `.Files` holds for a file that is not UTF-8 text.
const BYTES: &str = "[]uint8";

/// `.Files`' value for a file that is not UTF-8 text: its bytes (base64 in the JSON form,
/// which only `AsSecrets` reads). tend's values have no byte slices, so every other read
/// of it is an error, never the lossy text.
pub fn binary_file(bytes: &[u8]) -> Value {
    Value::Struct(std::rc::Rc::new(crate::helm::template::value::Struct {
        type_name: BYTES,
        fields: BTreeMap::new(),
        text: None,
        fmt: None,
        json: serde_json::Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
    }))
}

/// What `.Files.Get` gives for a file that is not UTF-8 text: Go's `string(bytes)`. tend's
/// strings are UTF-8, so it is kept as its bytes, which `conv::want_bytes` hands to the functions
/// that only encode or hash them; any other use is an error naming it.
fn binary_text(file: &Value) -> Option<Value> {
    match file {
        Value::Struct(st) if st.type_name == BYTES => Some(Value::Struct(std::rc::Rc::new(
            crate::helm::template::value::Struct {
                type_name: BINARY_TEXT,
                fields: BTreeMap::new(),
                text: None,
                fmt: None,
                json: st.json.clone(),
            },
        ))),
        _ => None,
    }
}

/// A file's text, or the error for one that is not UTF-8 text.
fn text_of<'v>(path: &str, v: &'v Value) -> Result<&'v str, CallError> {
    match v {
        Value::Str(s) => Ok(s),
        _ => Err(format!(
            "the chart file {path} is not UTF-8 text; Helm passes its bytes to templates, which tend cannot (only .Files.AsSecrets encodes them)"
        )
        .into()),
    }
}

fn files_of(v: &Value, method: &str) -> Result<BTreeMap<String, Value>, CallError> {
    match v {
        Value::Map(m) => Ok(m.borrow().clone()),
        _ => Err(format!("{method} needs .Files").into()),
    }
}

/// Helm's `toYAML` of a map of base names to text, without the final newline.
fn as_yaml(files: BTreeMap<String, Value>, encode: bool) -> Result<Value, CallError> {
    let mut by_name = BTreeMap::new();
    for (path, value) in files {
        let base = path.rsplit('/').next().unwrap_or(&path).to_string();
        let text = match (&value, encode) {
            // A binary file's bytes, already base64.
            (Value::Struct(st), true) if st.type_name == BYTES => {
                st.json.as_str().unwrap_or("").to_string()
            }
            (_, true) => base64::engine::general_purpose::STANDARD.encode(text_of(&path, &value)?),
            (_, false) => text_of(&path, &value)?.to_string(),
        };
        by_name.insert(base, Value::str(text));
    }
    let text = goyaml::to_yaml(&Value::map(by_name));
    Ok(Value::str(text.strip_suffix('\n').unwrap_or(&text)))
}

pub fn register(engine: &mut Engine) {
    // A file's text, "" when the chart has no such file.
    engine.register_method("Get", |_, args| {
        let [files, path] = exact::<2>(args, "Get")?;
        let path = want_str(&path)?;
        match files_of(&files, "Get")?.get(path) {
            Some(v) => match binary_text(v) {
                Some(bytes) => Ok(bytes),
                None => Ok(Value::str(text_of(path, v)?)),
            },
            None => Ok(Value::str("")),
        }
    });
    engine.register_method("GetBytes", |_, args| {
        let [files, path] = exact::<2>(args, "GetBytes")?;
        let path = want_str(&path)?;
        match files_of(&files, "GetBytes")?.get(path) {
            Some(v) => Ok(Value::str(text_of(path, v)?)),
            None => Ok(Value::str("")),
        }
    });
    engine.register_method("Glob", |_, args| {
        let [files, pattern] = exact::<2>(args, "Glob")?;
        let pattern = want_str(&pattern)?.to_string();
        let matched = files_of(&files, "Glob")?
            .into_iter()
            .filter(|(path, _)| glob(&pattern, path))
            .collect();
        Ok(Value::map(matched))
    });
    engine.register_method("Lines", |_, args| {
        let [files, path] = exact::<2>(args, "Lines")?;
        let files = files_of(&files, "Lines")?;
        let path = want_str(&path)?;
        let Some(value) = files.get(path) else {
            return Ok(Value::list(Vec::new()));
        };
        let text = text_of(path, value)?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        Ok(Value::list(text.split('\n').map(Value::str).collect()))
    });
    engine.register_method("AsConfig", |_, args| {
        let [files] = exact::<1>(args, "AsConfig")?;
        as_yaml(files_of(&files, "AsConfig")?, false)
    });
    engine.register_method("AsSecrets", |_, args| {
        let [files] = exact::<1>(args, "AsSecrets")?;
        as_yaml(files_of(&files, "AsSecrets")?, true)
    });
}

/// gobwas/glob compiled with `/` as separator: `*` and `?` stay within a path element,
/// `**` crosses them, `[...]`/`[!...]` classes, `{a,b}` alternatives, `\\` escapes.
pub fn glob(pattern: &str, path: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = path.chars().collect();
    matches(&p, &n)
}

fn matches(p: &[char], n: &[char]) -> bool {
    match p.first() {
        None => n.is_empty(),
        Some('*') if p.get(1) == Some(&'*') => (0..=n.len()).any(|i| matches(&p[2..], &n[i..])),
        Some('*') => {
            for i in 0..=n.len() {
                if matches(&p[1..], &n[i..]) {
                    return true;
                }
                if i < n.len() && n[i] == '/' {
                    return false;
                }
            }
            false
        }
        Some('?') => !n.is_empty() && n[0] != '/' && matches(&p[1..], &n[1..]),
        Some('{') => {
            let Some(close) = p.iter().position(|&c| c == '}') else {
                return !n.is_empty() && n[0] == '{' && matches(&p[1..], &n[1..]);
            };
            let rest = &p[close + 1..];
            p[1..close].split(|&c| c == ',').any(|alt| {
                let mut whole = alt.to_vec();
                whole.extend_from_slice(rest);
                matches(&whole, n)
            })
        }
        Some('[') => {
            let Some(close) = p.iter().skip(1).position(|&c| c == ']').map(|i| i + 1) else {
                return !n.is_empty() && n[0] == '[' && matches(&p[1..], &n[1..]);
            };
            let Some(&c) = n.first() else { return false };
            let class = &p[1..close];
            let (negated, class) = match class.first() {
                Some('!') => (true, &class[1..]),
                _ => (false, class),
            };
            let mut found = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == '-' {
                    found |= class[i] <= c && c <= class[i + 2];
                    i += 3;
                } else {
                    found |= class[i] == c;
                    i += 1;
                }
            }
            found != negated && c != '/' && matches(&p[close + 1..], &n[1..])
        }
        Some('\\') if p.len() > 1 => !n.is_empty() && n[0] == p[1] && matches(&p[2..], &n[1..]),
        Some(&c) => !n.is_empty() && n[0] == c && matches(&p[1..], &n[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::glob;

    #[test]
    fn globs_as_helm_matches_files() {
        assert!(glob("files/*", "files/a.conf"));
        assert!(!glob("files/*", "files/sub/a.conf"));
        assert!(glob("files/**", "files/sub/a.conf"));
        assert!(glob("**.conf", "files/sub/a.conf"));
        assert!(glob("files/*.{conf,ini}", "files/a.ini"));
        assert!(glob("files/[a-c].txt", "files/b.txt"));
        assert!(!glob("files/[!a-c].txt", "files/b.txt"));
        assert!(glob("files/?.txt", "files/x.txt"));
    }
}
