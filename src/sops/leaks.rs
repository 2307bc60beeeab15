//! Decrypted values found by their content where tend would print them (issue 38): the
//! plaintext itself and the forms a chart or a build commonly turns it into, so that a value
//! put through `b64enc`, `upper` or `printf "%x"` is still recognised.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::Value;
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha512};

/// Shorter values are not tracked: they would be found everywhere.
pub const MIN_TRACKED_CHARS: usize = 4;

/// Shorter values are tracked as they are only: a short word in another case or encoding
/// would be found in unrelated text.
const MIN_TRANSFORMED_CHARS: usize = 8;

/// Values of this many characters or more, on one line, are also found by any part of
/// them this long (`trunc`, `substr`): shorter parts of words would be found in unrelated
/// text, and a multi-line value (a PEM block) shares its frame with every other one.
const MIN_PART_CHARS: usize = 12;

/// The texts that betray `plain`: itself, upper and lower case, hex of its bytes (either
/// case), its base64 and base32 as they show inside a longer encoded text at each
/// alignment (the characters that depend only on its bytes), so `b64enc (cat "user:"
/// $password)` is caught too; its `urlquery` escaping; its SHA-1, SHA-256 and SHA-512
/// (`sha1sum`, `sha256sum`, `sha512sum`: a digest of a password is enough to guess it
/// offline); and, for a one-line value, each of its parts of [`MIN_PART_CHARS`].
pub fn forms(plain: &str) -> Vec<String> {
    if plain.chars().count() < MIN_TRANSFORMED_CHARS {
        return vec![plain.to_string()];
    }
    let mut out = vec![
        plain.to_string(),
        plain.to_uppercase(),
        plain.to_lowercase(),
    ];
    let hex = hex::encode(plain.as_bytes());
    out.push(hex.to_uppercase());
    out.push(hex);
    out.extend(aligned(plain.as_bytes(), 3, 4, |b| BASE64.encode(b)));
    out.extend(aligned(
        plain.as_bytes(),
        5,
        8,
        crate::helm::funcs::base32_encode,
    ));
    out.push(crate::helm::template::builtins::query_escape(plain));
    out.push(hex::encode(Sha1::digest(plain.as_bytes())));
    out.push(hex::encode(Sha256::digest(plain.as_bytes())));
    out.push(hex::encode(Sha512::digest(plain.as_bytes())));
    let chars: Vec<char> = plain.chars().collect();
    if chars.len() > MIN_PART_CHARS && !plain.contains('\n') {
        out.extend(
            chars
                .windows(MIN_PART_CHARS)
                .map(|part| part.iter().collect::<String>()),
        );
    }
    out.retain(|f| f.chars().count() >= MIN_TRACKED_CHARS);
    out.sort();
    out.dedup();
    out
}

/// `bytes` encoded as a group code (`group` bytes to `chars` characters: base64 3 to 4,
/// base32 5 to 8) inside a longer text at each alignment: the characters that depend only
/// on `bytes`. The group holding the bytes before the value, and a last group that the
/// bytes after the value share, depend on more than the value.
fn aligned(
    bytes: &[u8],
    group: usize,
    chars: usize,
    encode: impl Fn(&[u8]) -> String,
) -> Vec<String> {
    let mut out = Vec::new();
    for shift in 0..group {
        let mut shifted = vec![0u8; shift];
        shifted.extend_from_slice(bytes);
        let encoded = encode(&shifted);
        let head = if shift == 0 { 0 } else { chars };
        let whole = shifted.len() / group * chars;
        if whole >= head + 2 * MIN_TRACKED_CHARS {
            out.push(encoded[head..whole].to_string());
        }
    }
    out
}

/// Every form of every value in `plain`.
pub fn all_forms(plain: &[String]) -> Vec<String> {
    let mut out: Vec<String> = plain.iter().flat_map(|p| forms(p)).collect();
    out.sort();
    out.dedup();
    out
}

/// The path (keys and indexes) of the first string or map key in `value` that holds one of
/// `forms`; `None` if none does.
pub fn find(value: &Value, forms: &[String]) -> Option<Vec<crate::yaml::Step>> {
    use crate::yaml::Step;
    let holds = |s: &str| forms.iter().any(|f| s.contains(f.as_str()));
    match value {
        Value::String(s) => holds(s).then(Vec::new),
        Value::Number(n) => holds(&n.to_string()).then(Vec::new),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
            let mut path = find(v, forms)?;
            path.insert(0, Step::Index(i));
            Some(path)
        }),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            if holds(k) {
                return Some(vec![Step::Key(k.clone())]);
            }
            let mut path = find(v, forms)?;
            path.insert(0, Step::Key(k.clone()));
            Some(path)
        }),
        _ => None,
    }
}

/// Whether `value` is a core Secret (`apiVersion: v1`): only its `data` and `stringData`
/// are masked in every report.
pub fn is_core_secret(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("Secret")
        && value.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transformed_values_are_found_inside_longer_text() {
        let secret = "s3cret-Value-42";
        let forms = forms(secret);
        let found = |text: &str| forms.iter().any(|f| text.contains(f.as_str()));
        assert!(found(&format!("password={secret}")));
        assert!(found(&secret.to_uppercase()));
        assert!(found(&hex::encode(secret)));
        for prefix in ["", "u:", "us:", "user:"] {
            let encoded = BASE64.encode(format!("{prefix}{secret}\n"));
            assert!(found(&encoded), "{prefix:?}: {encoded}");
        }
        assert!(!found("nothing of it here"));
    }
}
