//! Decrypted values found by their content where tend would print them (issue 38): the
//! plaintext itself and the forms a chart or a build commonly turns it into, so that a value
//! put through `b64enc`, `upper` or `printf "%x"` is still recognised.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::Value;

/// Shorter values are not tracked: they would be found everywhere.
pub const MIN_TRACKED_CHARS: usize = 4;

/// Shorter values are tracked as they are only: a short word in another case or encoding
/// would be found in unrelated text.
const MIN_TRANSFORMED_CHARS: usize = 8;

/// The texts that betray `plain`: itself, upper and lower case, hex of its bytes (either
/// case), and its base64 as it shows inside a longer base64 text at each of the three
/// alignments (the characters that depend only on its bytes), so `b64enc (cat "user:"
/// $password)` is caught too.
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
    for shift in 0..3 {
        let mut bytes = vec![0u8; shift];
        bytes.extend_from_slice(plain.as_bytes());
        let encoded = BASE64.encode(&bytes);
        let encoded = encoded.trim_end_matches('=');
        // The group holding the shift's padding, and a last group that the bytes after the
        // value share, depend on more than the value.
        let head = if shift == 0 { 0 } else { 4 };
        let tail = match bytes.len() % 3 {
            0 => 0,
            rest => rest + 1,
        };
        if encoded.len() >= head + tail + 2 * MIN_TRACKED_CHARS {
            out.push(encoded[head..encoded.len() - tail].to_string());
        }
    }
    out.retain(|f| f.chars().count() >= MIN_TRACKED_CHARS);
    out.sort();
    out.dedup();
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
