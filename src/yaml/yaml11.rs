//! Manifests as Kubernetes tools read them. kubectl, Helm's kube client, Flux and Argo CD
//! all decode YAML with sigs.k8s.io/yaml, that is go-yaml v2's YAML 1.1 rules: a plain `yes`,
//! `on` or `y` is true, `no`/`off`/`n` false, `0644` the octal 420, `1_000` 1000. serde_yaml
//! reads YAML 1.2, where those are strings. Few documents hold such a scalar, so each is
//! scanned for one (cheap, on the text) and only those are read again by
//! [`super::parse_helm_yaml`], the YAML 1.1 reader that follows go-yaml v2.

/// Whether `text` may hold a plain scalar that YAML 1.1 resolves differently from YAML 1.2: a
/// whole key or value (after `key:`, `- `, in a flow collection) that is one of YAML 1.1's
/// booleans beyond true/false, or a number with a leading zero or underscores. Words inside
/// prose do not count; a false alarm only costs a second read.
pub fn may_differ(text: &str) -> bool {
    text.lines().any(line_may_differ)
}

fn line_may_differ(line: &str) -> bool {
    let bytes = line.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        if !is_word(bytes[start]) {
            start += 1;
            continue;
        }
        let mut end = start;
        while end < bytes.len() && is_word(bytes[end]) {
            end += 1;
        }
        let token = &line[start..end];
        if is_suspect(token) && stands_alone(bytes, start, end) {
            return true;
        }
        start = end;
    }
    false
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'-' | b'.')
}

/// The token is a whole scalar: what precedes it is the line's start, `:`, `-` (a list
/// item), `[`, `{`, `,` or `?` (spaces aside), and what follows is the line's end, `:`, `,`,
/// `]`, `}` or a comment.
fn stands_alone(bytes: &[u8], start: usize, end: usize) -> bool {
    let before = bytes[..start]
        .iter()
        .rev()
        .find(|b| **b != b' ' && **b != b'\t');
    let opens = match before {
        None => true,
        Some(b) => matches!(b, b':' | b'-' | b'[' | b'{' | b',' | b'?'),
    };
    let rest = &bytes[end..];
    let after = rest.iter().position(|b| *b != b' ' && *b != b'\t');
    let closes = match after {
        None => true,
        Some(i) => matches!(rest[i], b':' | b',' | b']' | b'}') || (rest[i] == b'#' && i > 0),
    };
    opens && closes
}

pub(super) fn is_suspect(token: &str) -> bool {
    if matches!(
        token,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    ) {
        return true;
    }
    let digits = token.trim_start_matches(['+', '-']);
    let numeric = digits.starts_with(|c: char| c.is_ascii_digit())
        && digits
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
    if !numeric {
        return false;
    }
    // A leading zero (octal in YAML 1.1: 0644, and 08 a float) or underscores (1_000).
    let leading_zero =
        digits.len() > 1 && digits.starts_with('0') && digits.as_bytes()[1].is_ascii_digit();
    leading_zero || digits.contains('_') || digits.starts_with("0b")
}

/// `text` (serde_yaml's block-style output) with every plain scalar that YAML 1.1 would not
/// read as a string single-quoted, so kubectl, and tend itself, read back the string that
/// was written. serde_yaml prints booleans as `true`/`false` and integers without leading
/// zeros or underscores, so a plain `yes` or `0644` in its output is always a string.
pub fn quote_for_yaml_1_1(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    // The indentation of the line that opened a block scalar (`|`, `>`): lines indented
    // deeper are its text, never touched.
    let mut block: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches('\n');
        let indent = content.len() - content.trim_start_matches(' ').len();
        if let Some(opener) = block {
            if content.trim().is_empty() || indent > opener {
                out.push_str(line);
                continue;
            }
            block = None;
        }
        let (fixed, opens_block) = quote_line(content, indent);
        if opens_block {
            block = Some(indent);
        }
        out.push_str(&fixed);
        if line.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Where a quoted key at the start of `rest` ends (after its closing quote), when `rest` is
/// `'key': ...`, `"key": ...` or `'key':`; `None` for anything else, a quoted value included.
fn quoted_key_end(rest: &str) -> Option<usize> {
    let bytes = rest.as_bytes();
    let quote = *bytes.first().filter(|b| matches!(b, b'\'' | b'"'))?;
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == b'"' => i += 2,
            b'\'' if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b if b == quote => {
                let end = i + 1;
                let after = &rest[end..];
                return (after.starts_with(": ") || after == ":").then_some(end);
            }
            _ => i += 1,
        }
    }
    None
}

/// One line: `[- ]*key: value`, `[- ]*value` or `[- ]*key:`; its key and value quoted where
/// suspect, and whether its value opens a block scalar.
fn quote_line(content: &str, indent: usize) -> (String, bool) {
    let mut prefix_end = indent;
    while content[prefix_end..].starts_with("- ") {
        prefix_end += 2;
    }
    let (prefix, rest) = content.split_at(prefix_end);
    let rest = if rest == "-" { "" } else { rest };
    let quote = |token: &str| match is_suspect(token) {
        true => format!("'{token}'"),
        false => token.to_string(),
    };
    let (key, value) = match quoted_key_end(rest) {
        // A quoted key stays as it is; its value is looked at all the same.
        Some(end) => match rest[end..].strip_prefix(": ") {
            Some(v) => (Some(&rest[..end]), v),
            None => (Some(&rest[..end]), ""),
        },
        None => match rest.split_once(": ") {
            Some((k, v)) => (Some(k), v),
            _ => match rest.strip_suffix(':') {
                Some(k) if !k.contains(' ') => (Some(k), ""),
                _ => (None, rest),
            },
        },
    };
    let opens_block = value.starts_with(['|', '>']);
    let fixed = match (key, rest.ends_with(':') && value.is_empty()) {
        (Some(k), true) => format!("{prefix}{}:", quote(k)),
        (Some(k), false) => format!("{prefix}{}: {}", quote(k), quote(value)),
        (None, _) => format!("{prefix}{}", quote(value)),
    };
    (fixed, opens_block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_yaml_1_1_scalars_are_found_and_words_in_prose_are_not() {
        for text in [
            "enabled: yes\n",
            "flags: [on, off]\n",
            "- n\n",
            "mode: 0644\n",
            "size: 1_000 # bytes\n",
            "{a: Y, b: 1}\n",
            "on: push\n",
            "  no:\n",
        ] {
            assert!(may_differ(text), "{text}");
        }
        for text in [
            "description: turn it on or off\n",
            "name: yes-man\n",
            "mode: '0644'\n",
            "mode: \"on\"\n",
            "replicas: 10\n",
            "version: 1.0.0\n",
            "image: nginx:1.25\n",
            "ip: 10.0.0.1\n",
            "zero: 0\n",
            "hex: 0x1F\n",
        ] {
            assert!(!may_differ(text), "{text}");
        }
    }

    #[test]
    fn strings_yaml_1_1_would_misread_are_quoted_and_nothing_else_changes() {
        let value = serde_json::json!({
            "data": {"a": "yes", "b": "on", "c": "0644", "on": "x", "n": 1, "t": true,
                     "0": "yes", "it's": "no", "q": "'yes'",
                     "text": "no\nyes\n", "list": ["off", "fine", {"y": "N"}]},
        });
        let text = serde_yaml::to_string(&value).unwrap();
        let quoted = quote_for_yaml_1_1(&text);
        assert_eq!(
            super::super::parse_helm_yaml(&quoted).unwrap(),
            value,
            "{quoted}"
        );
        assert!(
            quoted.contains("'on': x") && quoted.contains("a: 'yes'"),
            "{quoted}"
        );
        let plain = "a: b\nlist:\n- 1\n- two\nblock: |\n  yes\n  on\n";
        assert_eq!(quote_for_yaml_1_1(plain), plain);
    }
}
