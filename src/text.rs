//! The words of tend's messages that every stage shares.

use std::fmt::Display;

/// `1 object`, `3 objects`: a number and its noun, plural unless the number is one (every
/// noun tend counts takes an `s`).
pub fn count<N: Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    let s = if n == N::from(1) { "" } else { "s" };
    format!("{n} {noun}{s}")
}

/// What stands for a value tend does not show (Secret data, decrypted fields).
pub const MASK: &str = "***";

/// `message` with each of `secrets` replaced by [`MASK`], as written and as Go's `%q` or JSON
/// quote it (escaped quotes and backslashes). Values shorter than 4 characters are left:
/// masking them would garble the message and hide little.
pub fn scrub(message: &str, secrets: &[String]) -> String {
    let mut secrets: Vec<&String> = secrets.iter().filter(|s| s.chars().count() >= 4).collect();
    // Longest first, so a value containing another is masked whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = message.to_string();
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), MASK);
        }
        let quoted = serde_json::to_string(secret).unwrap_or_default();
        let escaped = quoted
            .get(1..quoted.len().saturating_sub(1))
            .unwrap_or_default();
        if escaped != secret && !escaped.is_empty() && out.contains(escaped) {
            out = out.replace(escaped, MASK);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{count, scrub};

    #[test]
    fn secrets_are_masked_as_written_and_as_quoted() {
        let secrets = [
            "hunter2\"x".to_string(),
            "pin".to_string(),
            "hunter2".to_string(),
        ];
        assert_eq!(
            scrub(
                r#"a: "hunter2\"x", b: hunter2\"x, c: hunter2, pin"#,
                &secrets
            ),
            r#"a: "***", b: ***, c: ***, pin"#
        );
    }

    #[test]
    fn one_is_singular_and_the_rest_plural() {
        assert_eq!(count(0usize, "object"), "0 objects");
        assert_eq!(count(1usize, "object"), "1 object");
        assert_eq!(count(2i64, "extra replica"), "2 extra replicas");
        assert_eq!(count(-1i64, "replica"), "-1 replicas");
    }
}
