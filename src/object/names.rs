//! The syntax of Kubernetes names, as the apiserver checks it
//! (k8s.io/apimachinery/pkg/util/validation), so tend rejects offline what the cluster would
//! reject later. Each check returns why a value is not valid, without naming the field: the
//! caller says which field it is.

fn is_alnum_lower(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// RFC 1123 label: at most 63 characters, lowercase alphanumerics or '-', starting and
/// ending with an alphanumeric (namespace names, most object names).
pub fn dns1123_label(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.len() > 63 {
        return Err(format!("must be at most 63 characters, has {}", s.len()));
    }
    label_chars(s)
}

/// Lowercase alphanumerics or '-', starting and ending with an alphanumeric.
fn label_chars(s: &str) -> Result<(), String> {
    if !s.chars().all(|c| is_alnum_lower(c) || c == '-') {
        return Err("must consist of lowercase letters, digits and '-'".into());
    }
    if !s.starts_with(is_alnum_lower) || !s.ends_with(is_alnum_lower) {
        return Err("must start and end with a lowercase letter or digit".into());
    }
    Ok(())
}

/// RFC 1035 label: a DNS-1123 label that starts with a letter (Service names).
pub fn dns1035_label(s: &str) -> Result<(), String> {
    dns1123_label(s)?;
    if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err("must start with a lowercase letter".into());
    }
    Ok(())
}

/// RFC 1123 subdomain: at most 253 characters, dot-separated parts of lowercase
/// alphanumerics or '-' that start and end with an alphanumeric (most object names). As in
/// Kubernetes, a part may be longer than a label's 63 characters.
pub fn dns1123_subdomain(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    if s.len() > 253 {
        return Err(format!("must be at most 253 characters, has {}", s.len()));
    }
    s.split('.').try_for_each(|part| {
        if part.is_empty() {
            return Err("must not have empty parts between dots".into());
        }
        label_chars(part)
    })
}

/// A label value: empty, or at most 63 characters of letters, digits, '-', '_' and '.',
/// starting and ending with a letter or digit.
pub fn label_value(v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Ok(());
    }
    if v.len() > 63 {
        return Err(format!("must be at most 63 characters, has {}", v.len()));
    }
    qualified_part(v)
}

fn qualified_part(v: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if !v.chars().all(ok_char) {
        return Err("must consist of letters, digits, '-', '_' and '.'".into());
    }
    if !v.starts_with(|c: char| c.is_ascii_alphanumeric())
        || !v.ends_with(|c: char| c.is_ascii_alphanumeric())
    {
        return Err("must start and end with a letter or digit".into());
    }
    Ok(())
}

/// A label or annotation key, `[prefix/]name`: the prefix a DNS subdomain, the name 1 to 63
/// characters of letters, digits, '-', '_' and '.', starting and ending with a letter or digit.
pub fn qualified_name(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if dns1123_subdomain(prefix).is_err() {
            return Err(format!("the prefix {prefix:?} must be a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253 characters)"));
        }
    }
    if name.is_empty() || name.len() > 63 || qualified_part(name).is_err() {
        return Err("the name part must be 1 to 63 characters: letters, digits, '-', '_' and '.', starting and ending with a letter or digit".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains() {
        assert!(dns1123_label("kube-system").is_ok());
        assert!(dns1123_label("0abc").is_ok());
        assert!(dns1123_label("Default").is_err());
        assert!(dns1123_label("-a").is_err());
        assert!(dns1123_label("web.x").is_err());
        assert!(dns1123_label(&"a".repeat(64)).is_err());
        assert!(dns1035_label("web").is_ok());
        assert!(dns1035_label("0abc").is_err());
        assert!(dns1123_subdomain("a.b-c.d").is_ok());
        assert!(dns1123_subdomain("nginx.conf-1").is_ok());
        assert!(dns1123_subdomain("Nginx").is_err());
        assert!(dns1123_subdomain("a..b").is_err());
        assert!(dns1123_subdomain("").is_err());
        assert!(
            dns1123_subdomain(&"a".repeat(64)).is_ok(),
            "no per-part limit"
        );
        assert!(dns1123_subdomain(&"a".repeat(254)).is_err());
    }

    #[test]
    fn label_keys_and_values() {
        assert!(qualified_name("app.kubernetes.io/part-of").is_ok());
        assert!(qualified_name("tend.dev/config-hash").is_ok());
        assert!(qualified_name("Example.com/x").is_err());
        assert!(qualified_name("a/").is_err());
        assert!(qualified_name("a/b/c").is_err());
        assert!(qualified_name(&"a".repeat(64)).is_err());
        assert!(label_value("").is_ok());
        assert!(label_value("v1.2_3-x").is_ok());
        assert!(label_value("Foo_bar.1").is_ok());
        assert!(label_value("a b").is_err());
        assert!(label_value("-a").is_err());
        assert!(label_value(&"a".repeat(64)).is_err());
    }
}
