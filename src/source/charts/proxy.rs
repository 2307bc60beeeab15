//! Which proxy a chart repository or registry request goes through, read from the environment
//! as Go's `net/http.ProxyFromEnvironment` reads it (golang.org/x/net/http/httpproxy), so tend
//! reaches the same hosts Helm and Flux's source-controller reach behind a corporate proxy:
//! `HTTPS_PROXY` for https URLs, `HTTP_PROXY` for http ones (upper case first), `NO_PROXY`
//! naming hosts, domains, IPs and CIDRs reached directly, and localhost never proxied.

use std::net::IpAddr;

/// A forward proxy: where to connect and the `Proxy-Authorization` to send, if any.
#[derive(Debug, PartialEq)]
pub struct Proxy {
    pub host: String,
    pub port: u16,
    /// The proxy URL without credentials, for messages.
    pub shown: String,
    pub authorization: Option<String>,
}

/// The environment's proxy settings, read once per request (cheap, and a test may set them).
pub struct Settings {
    http: Option<String>,
    https: Option<String>,
    no_proxy: String,
}

impl Settings {
    pub fn from_env() -> Settings {
        let var = |names: [&str; 2]| {
            names
                .iter()
                .find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()))
        };
        // Go ignores HTTP_PROXY under CGI (REQUEST_METHOD set): a client could set it (httpoxy).
        let cgi = std::env::var_os("REQUEST_METHOD").is_some();
        Settings {
            http: var(["HTTP_PROXY", "http_proxy"]).filter(|_| !cgi),
            https: var(["HTTPS_PROXY", "https_proxy"]),
            no_proxy: var(["NO_PROXY", "no_proxy"]).unwrap_or_default(),
        }
    }

    /// The proxy for a request to `host:port` over https (`tls`) or http; an error when the
    /// setting names a proxy tend cannot speak to.
    pub fn proxy_for(&self, tls: bool, host: &str, port: u16) -> Result<Option<Proxy>, String> {
        let setting = if tls { &self.https } else { &self.http };
        let Some(setting) = setting else {
            return Ok(None);
        };
        if !use_proxy(&self.no_proxy, host, port) {
            return Ok(None);
        }
        parse_proxy(setting).map(Some)
    }
}

/// Go's `useProxy`: false for localhost, loopback addresses and whatever `NO_PROXY` names.
fn use_proxy(no_proxy: &str, host: &str, port: u16) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let ip = host.parse::<IpAddr>().ok();
    if host == "localhost" || ip.is_some_and(|ip| ip.is_loopback()) {
        return false;
    }
    let port = port.to_string();
    for entry in no_proxy.split(',') {
        let entry = entry.trim().to_ascii_lowercase();
        if entry.is_empty() {
            continue;
        }
        if entry == "*" {
            return false;
        }
        if let Some((net, bits)) = entry.split_once('/') {
            if let (Some(ip), Ok(net), Ok(bits)) = (ip, net.parse::<IpAddr>(), bits.parse()) {
                if in_cidr(ip, net, bits) {
                    return false;
                }
            }
            continue;
        }
        let (entry_host, entry_port) = split_host_port(&entry);
        let entry_host = entry_host.trim_start_matches('[').trim_end_matches(']');
        let port_matches = entry_port.is_none_or(|p| p == port);
        if let Ok(entry_ip) = entry_host.parse::<IpAddr>() {
            if ip == Some(entry_ip) && port_matches {
                return false;
            }
            continue;
        }
        // `*.example.com` and `.example.com` match subdomains only; `example.com` the host too.
        let domain = entry_host.strip_prefix('*').filter(|d| d.starts_with('.'));
        let domain = domain.unwrap_or(entry_host);
        let (suffix, match_host) = match domain.starts_with('.') {
            true => (domain.to_string(), false),
            false => (format!(".{domain}"), true),
        };
        let hit = host.ends_with(&suffix) || (match_host && host == suffix[1..]);
        if hit && port_matches {
            return false;
        }
    }
    true
}

/// `host:port` split as Go's `net.SplitHostPort` would, the whole entry a host when it has no
/// port (Go falls back the same way).
fn split_host_port(entry: &str) -> (&str, Option<&str>) {
    if let Some(rest) = entry.strip_prefix('[') {
        if let Some((h, p)) = rest.split_once("]:") {
            return (h, Some(p));
        }
        return (entry, None);
    }
    match entry.split_once(':') {
        Some((h, p)) if !p.contains(':') => (h, Some(p)),
        _ => (entry, None),
    }
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u32) -> bool {
    let (ip, net, width) = match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u32::from(a) as u128, u32::from(b) as u128, 32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128),
        _ => return false,
    };
    if bits > width {
        return false;
    }
    let shift = width - bits;
    shift >= width || (ip >> shift) == (net >> shift)
}

/// A proxy setting as Go parses it: a URL, or a bare `host:port` meaning `http://host:port`.
fn parse_proxy(setting: &str) -> Result<Proxy, String> {
    let (scheme, rest) = match setting.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        None => ("http".to_string(), setting),
    };
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let shown = format!("{scheme}://{host_port}");
    if scheme != "http" {
        return Err(format!(
            "the proxy {shown} (from HTTPS_PROXY or HTTP_PROXY) is not an http:// proxy; tend speaks to http:// proxies only: give one, or reach the host directly with NO_PROXY"
        ));
    }
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) if !host_port.ends_with(']') => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("the proxy {shown} has a bad port {p:?}"))?,
        ),
        _ => (host_port, 80),
    };
    if host.is_empty() {
        return Err(format!("the proxy setting {shown} names no host"));
    }
    let authorization = userinfo.map(|u| {
        use base64::Engine as _;
        let user_pass = percent_decode(u);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(user_pass)
        )
    });
    Ok(Proxy {
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
        shown,
        authorization,
    })
}

/// `%XX` escapes of a URL's userinfo decoded, as Go's url.UserPassword holds them.
fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(http: Option<&str>, https: Option<&str>, no_proxy: &str) -> Settings {
        Settings {
            http: http.map(String::from),
            https: https.map(String::from),
            no_proxy: no_proxy.into(),
        }
    }

    #[test]
    fn the_scheme_picks_the_setting_and_a_bare_host_port_means_http() {
        let s = settings(Some("proxy:3128"), None, "");
        let p = s
            .proxy_for(false, "charts.example.com", 80)
            .unwrap()
            .unwrap();
        assert_eq!((p.host.as_str(), p.port), ("proxy", 3128));
        assert_eq!(p.shown, "http://proxy:3128");
        assert!(s
            .proxy_for(true, "charts.example.com", 443)
            .unwrap()
            .is_none());
        let s = settings(None, Some("http://user:p%40ss@proxy.corp"), "");
        let p = s.proxy_for(true, "ghcr.io", 443).unwrap().unwrap();
        assert_eq!(p.port, 80);
        assert_eq!(p.shown, "http://proxy.corp");
        // "user:p@ss" in base64.
        assert_eq!(p.authorization.as_deref(), Some("Basic dXNlcjpwQHNz"));
    }

    #[test]
    fn no_proxy_follows_gos_rules() {
        let no = "example.com, .internal, *.svc:8443, 10.0.0.0/8, 192.168.1.5, [::2]:443";
        let direct = |host: &str, port| !use_proxy(no, host, port);
        assert!(direct("example.com", 443));
        assert!(direct("charts.example.com", 443));
        assert!(!direct("notexample.com", 443));
        // A leading dot matches subdomains, not the host itself.
        assert!(direct("a.internal", 80));
        assert!(!direct("internal", 80));
        assert!(direct("a.svc", 8443));
        assert!(!direct("a.svc", 443));
        assert!(direct("10.1.2.3", 80));
        assert!(!direct("11.1.2.3", 80));
        assert!(direct("192.168.1.5", 5000));
        assert!(direct("[::2]", 443));
        assert!(!direct("[::2]", 80));
        // Localhost and loopback are never proxied, as in Go.
        assert!(!use_proxy("", "localhost", 80));
        assert!(!use_proxy("", "127.0.0.1", 8080));
        assert!(!use_proxy("", "[::1]", 8080));
        assert!(use_proxy("", "registry.example", 5000));
        assert!(!use_proxy("*", "registry.example", 5000));
    }

    #[test]
    fn a_proxy_tend_cannot_speak_to_is_an_error_naming_it() {
        let s = settings(None, Some("socks5://u:secret@proxy:1080"), "");
        let err = s.proxy_for(true, "ghcr.io", 443).unwrap_err();
        assert!(err.contains("socks5://proxy:1080"), "{err}");
        assert!(!err.contains("secret"), "{err}");
    }
}
