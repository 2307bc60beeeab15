//! Server errors cut to their cause for text output (README "What `diff` and `apply` print"): a 422 about a Job whose message
//! embeds a 3 KB Go struct dump becomes `spec.template: field is immutable`. The full text
//! stays in `-o json` and at `-v`. Pure string work: errors reach the report as text.
//!
//! kube-apiserver builds an Invalid message from the Status `details.causes` (`<Kind> "<name>"
//! is invalid: <field>: <body>`, several as `[a, b]`), where a body is `Invalid value: <value>:
//! <detail>`, `Forbidden: <detail>`, `Required value`, …; [`cut`] reads the causes back from
//! that text and drops the values. Other messages keep the text before any struct dump.

/// Longest cut message; longer text is elided with a pointer to the full one.
pub const MAX_CAUSE: usize = 300;

/// The cause of an error message: its field causes without the offending values when it is an
/// Invalid error, else the message before any Go struct dump, at most [`MAX_CAUSE`]
/// characters. Short messages without a dump come back unchanged.
pub fn cut(message: &str) -> String {
    if let Some((line, _server)) = message.split_once(crate::problem::SERVER_SAID) {
        return elide(line);
    }
    if let Some(causes) = invalid_causes(message) {
        return elide(&causes);
    }
    let head = match dump_start(message) {
        Some(i) => message[..i]
            .trim_end()
            .trim_end_matches("Invalid value:")
            .trim_end_matches(':')
            .trim_end()
            .to_string(),
        None => message.to_string(),
    };
    elide(&head)
}

/// `field: detail` for each cause of an Invalid message, joined by `; `.
fn invalid_causes(message: &str) -> Option<String> {
    let (_, rest) = message.split_once(" is invalid: ")?;
    let rest = strip_status_suffix(rest.trim_end());
    let items = match rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        Some(list) => split_top_level(list, ", "),
        None => vec![rest],
    };
    let causes: Vec<String> = items.iter().map(|item| cause_of(item)).collect();
    Some(causes.join("; "))
}

/// Drop tend's ` (422 Invalid)` suffix (see `api_message`).
fn strip_status_suffix(s: &str) -> &str {
    if let Some(open) = s.rfind(" (") {
        let inner = &s[open + 2..];
        if inner.ends_with(')') && inner.chars().take(3).all(|c| c.is_ascii_digit()) {
            return &s[..open];
        }
    }
    s
}

/// `spec.template: Invalid value: core.PodTemplateSpec{…}: field is immutable` →
/// `spec.template: field is immutable`.
fn cause_of(item: &str) -> String {
    let Some((field, body)) = item.split_once(": ") else {
        return item.to_string();
    };
    match body.strip_prefix("Invalid value: ") {
        Some(value_and_detail) => {
            let end = value_end(value_and_detail);
            let detail = value_and_detail[end..].trim_start_matches(": ").trim();
            if detail.is_empty() {
                format!("{field}: invalid value")
            } else {
                format!("{field}: {detail}")
            }
        }
        None => format!("{field}: {}", body.trim()),
    }
}

/// Byte offset where a printed value ends: the first `: ` outside brackets and quotes.
fn value_end(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut depth = 0usize;
    let mut quoted = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if quoted {
            match b {
                b'\\' => i += 1,
                b'"' => quoted = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => quoted = true,
                b'{' | b'[' | b'(' => depth += 1,
                b'}' | b']' | b')' => depth = depth.saturating_sub(1),
                b':' if depth == 0 && bytes.get(i + 1) == Some(&b' ') => return i,
                _ => {}
            }
        }
        i += 1;
    }
    s.len()
}

/// Split on `sep` outside brackets and quotes.
fn split_top_level<'a>(s: &'a str, sep: &str) -> Vec<&'a str> {
    let bytes = s.as_bytes();
    let mut parts = Vec::new();
    let (mut depth, mut quoted, mut start, mut i) = (0usize, false, 0, 0);
    while i < bytes.len() {
        let b = bytes[i];
        if quoted {
            match b {
                b'\\' => i += 1,
                b'"' => quoted = false,
                _ => {}
            }
        } else if depth == 0 && s[i..].starts_with(sep) {
            parts.push(&s[start..i]);
            i += sep.len();
            start = i;
            continue;
        } else {
            match b {
                b'"' => quoted = true,
                b'{' | b'[' | b'(' => depth += 1,
                b'}' | b']' | b')' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        i += 1;
    }
    parts.push(&s[start..]);
    parts
}

/// Where a Go `%#v` dump starts: a qualified type name followed by `{` (`core.PodSpec{`,
/// `&v1.LabelSelector{`) or `map[`.
fn dump_start(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    for (i, _) in s.match_indices('{') {
        // Walk back over the type name; it must contain a dot and start after a space.
        let mut j = i;
        while j > 0 && (bytes[j - 1].is_ascii_alphanumeric() || bytes[j - 1] == b'.') {
            j -= 1;
        }
        let name = &s[j..i];
        if name.contains('.')
            && !name.starts_with('.')
            && (j == 0 || matches!(bytes[j - 1], b' ' | b'&' | b'*' | b'('))
        {
            return Some(j);
        }
    }
    s.find("map[")
}

fn elide(s: &str) -> String {
    match s.char_indices().nth(MAX_CAUSE) {
        Some((cut, _)) => format!(
            "{}… ({} more characters; the full text with -v or in -o json)",
            &s[..cut],
            s.len() - cut
        ),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump(len: usize) -> String {
        format!(
            "core.PodTemplateSpec{{ObjectMeta:v1.ObjectMeta{{Name:\"\", Labels:map[string]string{{\"job\":\"x\"}}}}, Spec:core.PodSpec{{Containers:[]core.Container{{core.Container{{Name:\"run\", Command:[]string{{\"{}\"}}}}}}}}}}",
            "a: b, c".repeat(len / 7)
        )
    }

    #[test]
    fn job_template_dump_cut_to_cause() {
        let message = format!(
            "apply batch/v1 Job web/migrate: Job.batch \"migrate\" is invalid: spec.template: Invalid value: {}: field is immutable (422 Invalid)",
            dump(3000)
        );
        assert!(message.len() > 3000);
        assert_eq!(cut(&message), "spec.template: field is immutable");
    }

    #[test]
    fn several_causes() {
        let message = format!(
            "Job.batch \"m\" is invalid: [spec.selector: Invalid value: v1.LabelSelector{{MatchLabels:map[string]string{{\"a\":\"b\"}}}}: field is immutable, spec.template: Invalid value: {}: field is immutable]",
            dump(500)
        );
        assert_eq!(
            cut(&message),
            "spec.selector: field is immutable; spec.template: field is immutable"
        );
        // JSON values (as some servers print) and forbidden bodies.
        let m = "ConfigMap \"c\" is invalid: [data: Forbidden: field is immutable when `immutable` is set, spec.x: Invalid value: {\"a\": \"b: c\"}: must be a string]";
        assert_eq!(
            cut(m),
            "data: Forbidden: field is immutable when `immutable` is set; spec.x: must be a string"
        );
    }

    #[test]
    fn other_messages() {
        assert_eq!(
            cut("namespaces \"x\" not found (404 NotFound)"),
            "namespaces \"x\" not found (404 NotFound)"
        );
        let m = format!(
            "admission webhook denied: bad object core.Pod{{{}}}",
            "x".repeat(4000)
        );
        assert_eq!(cut(&m), "admission webhook denied: bad object");
        let long = "y".repeat(1000);
        let c = cut(&long);
        assert!(c.len() < 400 && c.contains("-v"), "{c}");
    }
}
