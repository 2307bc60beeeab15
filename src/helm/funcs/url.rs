//! Sprig's `urlParse` and `urlJoin`, over Go's `net/url` rules: `url.Parse` (scheme, opaque
//! part, authority with userinfo and host, path and fragment unescaped, the query kept raw),
//! `URL.Hostname`, `Userinfo.String` and `URL.String`, each escaping as Go's `shouldEscape`
//! decides for its part of the URL. An error is Sprig's panic text, as Helm reports it.

use super::conv::want_str;
use crate::helm::template::builtins::exact;
use crate::helm::template::{Engine, Value};
use std::collections::BTreeMap;

pub fn register(engine: &mut Engine) {
    engine.register("urlParse", |_, args| {
        let [v] = exact::<1>(args, "urlParse")?;
        let text = want_str(&v)?;
        let url = parse(text).map_err(|e| format!("unable to parse url: {e}"))?;
        let mut dict = BTreeMap::new();
        let user = url.user.as_ref().map(Userinfo::to_go_string);
        for (key, value) in [
            ("scheme", url.scheme.clone()),
            ("host", url.host.clone()),
            ("hostname", url.hostname()),
            ("path", url.path.clone()),
            ("query", url.raw_query.clone()),
            ("opaque", url.opaque.clone()),
            ("fragment", url.fragment.clone()),
            ("userinfo", user.unwrap_or_default()),
        ] {
            dict.insert(key.to_string(), Value::str(value));
        }
        Ok(Value::map(dict))
    });
    engine.register("urlJoin", |_, args| {
        let [v] = exact::<1>(args, "urlJoin")?;
        let Value::Map(dict) = &v else {
            return Err(format!(
                "wrong type for value; expected map[string]interface {{}}; got {}",
                v.type_name()
            )
            .into());
        };
        let dict = dict.borrow();
        let field = |key: &str| -> Result<String, String> {
            match dict.get(key) {
                None => Ok(String::new()),
                Some(Value::Str(text)) => Ok(text.to_string()),
                Some(Value::Nil) => {
                    Err("runtime error: invalid memory address or nil pointer dereference".into())
                }
                Some(other) => Err(format!(
                    "unable to parse {key} key, must be of type string, but {} found",
                    super::collections::kind_of(other)
                )),
            }
        };
        let userinfo = field("userinfo")?;
        let user = match userinfo.is_empty() {
            true => None,
            false => {
                parse(&format!("proto://{userinfo}@host"))
                    .map_err(|e| format!("unable to parse userinfo in dict: {e}"))?
                    .user
            }
        };
        let url = Url {
            scheme: field("scheme")?,
            host: field("host")?,
            path: field("path")?,
            raw_query: field("query")?,
            opaque: field("opaque")?,
            fragment: field("fragment")?,
            user,
        };
        Ok(Value::str(url.to_go_string()))
    });
}

/// The parts of a URL `urlParse` and `urlJoin` use (Go's `url.URL`; `RawPath`,
/// `RawFragment`, `ForceQuery` and `OmitHost` matter only to a parsed URL printed again,
/// which neither function does).
#[derive(Debug, Default, PartialEq)]
pub struct Url {
    pub scheme: String,
    pub opaque: String,
    pub user: Option<Userinfo>,
    pub host: String,
    pub path: String,
    pub raw_query: String,
    pub fragment: String,
}

#[derive(Debug, PartialEq)]
pub struct Userinfo {
    pub username: String,
    pub password: Option<String>,
}

impl Userinfo {
    /// Go's `Userinfo.String`.
    pub fn to_go_string(&self) -> String {
        let mut out = escape(&self.username, Mode::UserPassword);
        if let Some(password) = &self.password {
            out.push(':');
            out.push_str(&escape(password, Mode::UserPassword));
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Path,
    UserPassword,
    Host,
    Zone,
    Fragment,
}

/// Go's `url.Parse`, its error as Go prints it (`parse "URL": why`).
pub fn parse(raw: &str) -> Result<Url, String> {
    let (rest, fragment) = match raw.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (raw, None),
    };
    let mut url = parse_without_fragment(rest).map_err(|e| format!("parse {rest:?}: {e}"))?;
    if let Some(fragment) = fragment.filter(|f| !f.is_empty()) {
        url.fragment =
            unescape(fragment, Mode::Fragment).map_err(|e| format!("parse {raw:?}: {e}"))?;
    }
    Ok(url)
}

fn parse_without_fragment(raw: &str) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = "*".into();
        return Ok(url);
    }
    let (scheme, mut rest) = scheme_of(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    if let Some((before, query)) = rest.split_once('?') {
        url.raw_query = query.to_string();
        rest = before;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // A rootless path after a scheme is opaque (RFC 3986).
            url.opaque = rest.to_string();
            return Ok(url);
        }
        let segment = rest.split('/').next().unwrap_or_default();
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!url.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let authority = &rest[2..];
        let (authority, path) = match authority.find('/') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        };
        let (user, host) = parse_authority(authority)?;
        url.user = user;
        url.host = host;
        rest = path;
    }
    url.path = unescape(rest, Mode::Path)?;
    Ok(url)
}

/// Go's `getScheme`: letters, then letters, digits, `+`, `-`, `.`, up to a colon.
fn scheme_of(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn parse_authority(authority: &str) -> Result<(Option<Userinfo>, String), String> {
    let at = authority.rfind('@');
    let host = parse_host(match at {
        Some(i) => &authority[i + 1..],
        None => authority,
    })?;
    let Some(at) = at else {
        return Ok((None, host));
    };
    let userinfo = &authority[..at];
    if !userinfo.bytes().all(valid_userinfo_byte) {
        return Err("net/url: invalid userinfo".into());
    }
    let user = match userinfo.split_once(':') {
        None => Userinfo {
            username: unescape(userinfo, Mode::UserPassword)?,
            password: None,
        },
        Some((name, password)) => Userinfo {
            username: unescape(name, Mode::UserPassword)?,
            password: Some(unescape(password, Mode::UserPassword)?),
        },
    };
    Ok((Some(user), host))
}

fn valid_userinfo_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"-._:~!$&'()*+,;=%@".contains(&c)
}

fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let close = host
            .rfind(']')
            .ok_or_else(|| "missing ']' in host".to_string())?;
        let port = &host[close + 1..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {port:?} after host"));
        }
        // RFC 6874: a zone identifier is `%25` then the zone, escaped its own way.
        if let Some(zone) = host[..close].find("%25") {
            let first = unescape(&host[..zone], Mode::Host)?;
            let second = unescape(&host[zone..close], Mode::Zone)?;
            let third = unescape(&host[close..], Mode::Host)?;
            return Ok(first + &second + &third);
        }
    } else if let Some(colon) = host.rfind(':') {
        let port = &host[colon..];
        if !valid_optional_port(port) {
            return Err(format!("invalid port {port:?} after host"));
        }
    }
    unescape(host, Mode::Host)
}

/// Empty, or a colon and digits.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

impl Url {
    /// Go's `URL.Hostname`: the host without its port and without IPv6 brackets.
    pub fn hostname(&self) -> String {
        let mut host = self.host.as_str();
        if let Some(colon) = host.rfind(':') {
            if valid_optional_port(&host[colon..]) {
                host = &host[..colon];
            }
        }
        if host.starts_with('[') && host.ends_with(']') {
            host = &host[1..host.len() - 1];
        }
        host.to_string()
    }

    /// Go's `URL.String`.
    pub fn to_go_string(&self) -> String {
        let mut out = String::new();
        if !self.scheme.is_empty() {
            out.push_str(&self.scheme);
            out.push(':');
        }
        if !self.opaque.is_empty() {
            out.push_str(&self.opaque);
        } else {
            if !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some() {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    out.push_str("//");
                }
                if let Some(user) = &self.user {
                    out.push_str(&user.to_go_string());
                    out.push('@');
                }
                out.push_str(&escape(&self.host, Mode::Host));
            }
            let path = match self.path.as_str() {
                "*" => "*".to_string(),
                path => escape(path, Mode::Path),
            };
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                out.push('/');
            }
            if out.is_empty() {
                // A first segment with a colon would read as a scheme.
                let segment = path.split('/').next().unwrap_or_default();
                if segment.contains(':') {
                    out.push_str("./");
                }
            }
            out.push_str(&path);
        }
        if !self.raw_query.is_empty() {
            out.push('?');
            out.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            out.push('#');
            out.push_str(&escape(&self.fragment, Mode::Fragment));
        }
        out
    }
}

/// Go's `shouldEscape`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone) && b"!$&'()*+,;=:[]<>\"".contains(&c) {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => {
            return match mode {
                Mode::Path => c == b'?',
                Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
                Mode::Fragment => false,
                // Host and zone fall through to escaping, as in Go.
                Mode::Host | Mode::Zone => true,
            };
        }
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

/// Go's `escape` (never in query mode here: no `+` for spaces).
fn escape(text: &str, mode: Mode) -> String {
    let mut out = String::with_capacity(text.len());
    for &c in text.as_bytes() {
        if should_escape(c, mode) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

/// Go's `unescape`, with its errors.
fn unescape(text: &str, mode: Mode) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let escape_error = || {
                    let end = (i + 3).min(bytes.len());
                    let written = String::from_utf8_lossy(&bytes[i..end]);
                    format!("invalid URL escape {written:?}")
                };
                let (Some(hi), Some(lo)) = (
                    bytes.get(i + 1).and_then(|b| (*b as char).to_digit(16)),
                    bytes.get(i + 2).and_then(|b| (*b as char).to_digit(16)),
                ) else {
                    return Err(escape_error());
                };
                // RFC 6874: in a host, %-escapes stand only for non-ASCII bytes (and %25).
                if mode == Mode::Host && hi < 8 && &text[i..i + 3] != "%25" {
                    return Err(escape_error());
                }
                let byte = (hi * 16 + lo) as u8;
                // A zone may escape only what it could write as it is (and spaces: Windows).
                let zone_refused = &text[i..i + 3] != "%25" && byte != b' ';
                if mode == Mode::Zone && zone_refused && should_escape(byte, Mode::Host) {
                    return Err(escape_error());
                }
                out.push(byte);
                i += 3;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {:?} in host name",
                        (c as char).to_string()
                    ));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    // Go strings hold any bytes; an invalid sequence is shown as the template would print it.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(
        raw: &str,
    ) -> (
        String,
        String,
        String,
        String,
        String,
        String,
        String,
        String,
    ) {
        let u = parse(raw).unwrap();
        let user = u
            .user
            .as_ref()
            .map(Userinfo::to_go_string)
            .unwrap_or_default();
        (
            u.scheme.clone(),
            u.host.clone(),
            u.hostname(),
            u.path.clone(),
            u.raw_query.clone(),
            u.opaque.clone(),
            u.fragment.clone(),
            user,
        )
    }

    fn s(v: &str) -> String {
        v.to_string()
    }

    /// Cases as Go's net/url gives them (url_test.go's table and Sprig's documented example).
    #[test]
    fn parse_splits_as_go_does() {
        assert_eq!(
            parts("http://admin:secret@server.com:8080/api?list=false#anchor"),
            (
                s("http"),
                s("server.com:8080"),
                s("server.com"),
                s("/api"),
                s("list=false"),
                s(""),
                s("anchor"),
                s("admin:secret")
            )
        );
        assert_eq!(
            parts("HTTPS://[fe80::1%25en0]:8443/a%20b?x=%20#f%2Fg"),
            (
                s("https"),
                s("[fe80::1%en0]:8443"),
                s("fe80::1%en0"),
                s("/a b"),
                s("x=%20"),
                s(""),
                s("f/g"),
                s("")
            )
        );
        assert_eq!(parts("mailto:someone@example.com").5, "someone@example.com");
        assert_eq!(parts("redis://:p%40ss@redis:6379/0").7, ":p%40ss");
        assert_eq!(parts("//example.com/x").1, "example.com");
        assert_eq!(parts("/just/a/path").3, "/just/a/path");
        assert_eq!(
            parts("example.com:8080").5,
            "8080",
            "a host:port reads as scheme and opaque"
        );
        assert_eq!(parts("http://example.com:").2, "example.com");
    }

    #[test]
    fn parse_errors_as_go_does() {
        for (raw, error) in [
            ("http://host:port/", "invalid port \":port\" after host"),
            (":foo", "missing protocol scheme"),
            ("a/b:c", ""),
            (
                "1http://x",
                "first path segment in URL cannot contain colon",
            ),
            ("http://x/%zz", "invalid URL escape \"%zz\""),
            ("http://[::1/", "missing ']' in host"),
            ("http://a b.com/", "invalid character \" \" in host name"),
            ("http://us\u{e9}r@x/", "net/url: invalid userinfo"),
            ("http://x/\n", "net/url: invalid control character in URL"),
        ] {
            match parse(raw) {
                Ok(url) => assert!(error.is_empty(), "{raw} parsed as {url:?}"),
                Err(e) => assert_eq!(e, format!("parse {raw:?}: {error}"), "{raw}"),
            }
        }
    }

    #[test]
    fn join_builds_as_go_url_string_does() {
        let url = Url {
            scheme: s("http"),
            host: s("host:80"),
            path: s("/path"),
            raw_query: s("query"),
            fragment: s("fragment"),
            ..Url::default()
        };
        assert_eq!(url.to_go_string(), "http://host:80/path?query#fragment");
        let url = Url {
            scheme: s("https"),
            host: s("h"),
            path: s("a b/c?d"),
            fragment: s("x y!"),
            user: Some(Userinfo {
                username: s("me@corp"),
                password: Some(s("p:w")),
            }),
            ..Url::default()
        };
        assert_eq!(
            url.to_go_string(),
            "https://me%40corp:p%3Aw@h/a%20b/c%3Fd#x%20y!"
        );
        let relative = Url {
            path: s("a:b/c"),
            ..Url::default()
        };
        assert_eq!(relative.to_go_string(), "./a:b/c");
        let round = parse("http://u:p@h:1/p%20q?x#y").unwrap();
        assert_eq!(round.to_go_string(), "http://u:p@h:1/p%20q?x#y");
    }
}
