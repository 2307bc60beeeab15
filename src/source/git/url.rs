//! Remote URLs: cache keys, userinfo redaction, scp-like and ssh forms.

use super::*;

/// Name of the cache directory of a remote: a short hash of the URL (without userinfo, so a
/// rotated password does not start a new clone) and its last path segment, for humans.
pub(super) fn cache_key(url: &str) -> String {
    let without_userinfo = strip_userinfo(url.trim());
    let after_scheme =
        scheme_len(&without_userinfo).map_or(without_userinfo.as_str(), |n| &without_userinfo[n..]);
    let normalized = without_userinfo.trim_end_matches('/');
    let digest = sha2::Sha256::digest(normalized.as_bytes());
    let hash = hex::encode(&digest[..6]);
    let last = after_scheme
        .rsplit(['/', ':', '\\'])
        .find(|s| !s.is_empty() && *s != "." && *s != "..")
        .unwrap_or("");
    let last = last.strip_suffix(".git").unwrap_or(last);
    let mut name: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    name = name.trim_start_matches('.').to_string();
    if name.is_empty() {
        name = "repo".to_string();
    }
    format!("{hash}-{name}")
}

/// `scheme://` prefix length of a URL with a syntactically valid scheme, if any.
pub(super) fn scheme_len(s: &str) -> Option<usize> {
    let idx = s.find("://")?;
    let scheme = &s[..idx];
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(idx + 3)
}

pub(super) fn strip_userinfo(url: &str) -> String {
    if let Some(start) = scheme_len(url) {
        let rest = &url[start..];
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..end].rfind('@') {
            return format!("{}{}", &url[..start], &rest[at + 1..]);
        }
    }
    url.to_string()
}

pub(super) fn is_ssh_scheme(scheme: &str) -> bool {
    matches!(
        scheme.to_ascii_lowercase().as_str(),
        "ssh" | "git+ssh" | "ssh+git"
    )
}

/// Is `s` a scp-like SSH address, `user@host:path`?
pub(super) fn is_scp_like(s: &str) -> bool {
    if s.contains("://") {
        return false;
    }
    let Some((before, path)) = s.split_once(':') else {
        return false;
    };
    let Some((user, host)) = before.rsplit_once('@') else {
        return false;
    };
    !user.is_empty()
        && !host.is_empty()
        && !path.is_empty()
        && !before.contains(['/', '\\'])
        && !host.contains(char::is_whitespace)
}

/// True for URLs git would treat as remote addresses (`https://`, `http://`, `ssh://`,
/// `git://`, `file://`, `git+ssh://`, and scp-like `user@host:path`); false for plain local
/// paths.
pub fn looks_like_git_url(s: &str) -> bool {
    let lower = s.trim().to_ascii_lowercase();
    const SCHEMES: [&str; 7] = [
        "https://",
        "http://",
        "ssh://",
        "git://",
        "file://",
        "git+ssh://",
        "ssh+git://",
    ];
    SCHEMES.iter().any(|p| lower.starts_with(p)) || is_scp_like(s.trim())
}

/// Hide the userinfo of a URL: `https://user:token@host/x` → `https://***@host/x`. An SSH
/// username alone (`ssh://git@host/x`, `git@host:x`) is not a secret and is kept, but a
/// password next to it is hidden. Text that is not a URL is returned unchanged.
pub fn redact_url(s: &str) -> String {
    if let Some(start) = scheme_len(s) {
        let scheme = &s[..start - 3];
        let rest = &s[start..];
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..end].rfind('@') {
            let userinfo = &rest[..at];
            let shown = match userinfo.split_once(':') {
                None if is_ssh_scheme(scheme) => userinfo.to_string(),
                Some((user, _)) if is_ssh_scheme(scheme) => format!("{user}:***"),
                _ => "***".to_string(),
            };
            return format!("{}{shown}@{}", &s[..start], &rest[at + 1..]);
        }
        return s.to_string();
    }
    // scp-like `user:password@host:path` is not valid for ssh, but never echo a password.
    if let Some((userinfo, rest)) = s.split_once('@') {
        if userinfo.contains(':') && !userinfo.contains(['/', '\\']) && !s.contains("://") {
            return format!("***@{rest}");
        }
    }
    s.to_string()
}

/// Scrub a free text (a libgit2 message) for display: redact every URL in it and replace
/// the token wherever it appears.
pub fn sanitize(text: &str, token: Option<&str>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(idx) = rest.find("://") {
        // The URL starts after the last delimiter before `://` and ends at the next one.
        let is_delim = |c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '<' | '>' | '`');
        let start = rest[..idx]
            .rfind(is_delim)
            .map(|i| i + rest[i..].chars().next().map_or(1, char::len_utf8))
            .unwrap_or(0);
        let end = rest[idx..].find(is_delim).map_or(rest.len(), |i| idx + i);
        out.push_str(&rest[..start]);
        out.push_str(&redact_url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    match token {
        Some(token) if !token.is_empty() => out.replace(token, "***"),
        _ => out,
    }
}

/// The port of an SSH URL (`ssh://host:2222/x`); `None` for other URLs or no port.
pub(super) fn ssh_port(url: &str) -> Option<u16> {
    let start = scheme_len(url)?;
    if !is_ssh_scheme(&url[..start - 3]) {
        return None;
    }
    let rest = &url[start..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once("]:").map(|(_, p)| p),
        None => host_port.rsplit_once(':').map(|(_, p)| p),
    };
    port.and_then(|p| p.parse().ok())
}

pub(super) fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}
