//! A small blocking HTTP/1.1 GET for chart repositories (`index.yaml`, chart archives) and
//! OCI registries: plain HTTP or HTTPS (rustls, the platform's trust store), redirects followed, chunked bodies
//! read, sizes bounded, through the proxy the environment names (`proxy.rs`). The source stage runs before anything async, and a chart
//! repository needs nothing more.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

/// Largest body tend reads (an index of a big repository is a few MiB).
const MAX_BODY: usize = 64 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(30);
const MAX_REDIRECTS: usize = 5;

/// An HTTP response: status, headers, body.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

/// The body of `url` (status 200), or why it could not be read (never including
/// credentials). `headers` as in [`send`].
pub fn get(url: &str, headers: &[(&str, String)]) -> Result<Vec<u8>, String> {
    let reply = send(url, headers)?;
    match reply.status {
        200 => Ok(reply.body),
        status => Err(format!("HTTP {status} from {}", redact(url))),
    }
}

/// GET `url` with `headers`, redirects followed, whatever the final status. The headers go
/// to `url`'s host only: a registry's token or a repository's password must not reach the
/// storage a download redirects to.
pub fn send(url: &str, headers: &[(&str, String)]) -> Result<Reply, String> {
    let first_host = authority(url);
    let mut url = url.to_string();
    for _ in 0..=MAX_REDIRECTS {
        let same_host = authority(&url) == first_host;
        let (status, response_headers, body) =
            request(&url, if same_host { headers } else { &[] })?;
        match status {
            301 | 302 | 303 | 307 | 308 => {
                let location = header(&response_headers, "location")
                    .ok_or_else(|| format!("HTTP {status} without a Location"))?;
                url = resolve(&url, location);
            }
            _ => {
                return Ok(Reply {
                    status,
                    headers: response_headers,
                    body,
                })
            }
        }
    }
    Err(format!(
        "more than {MAX_REDIRECTS} redirects from {}",
        redact(&url)
    ))
}

/// The `host[:port]` of `url` (credentials left out), lower-cased.
pub fn authority(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    authority
        .rsplit('@')
        .next()
        .unwrap_or(authority)
        .to_ascii_lowercase()
}

/// `url` with any `user:password@` removed, for messages.
pub fn redact(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_string(),
    }
}

/// `reference` (absolute, or relative to the directory of `base`) as an absolute URL.
pub fn resolve(base: &str, reference: &str) -> String {
    if reference.contains("://") {
        return reference.to_string();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
    let host_end = rest.find('/').unwrap_or(rest.len());
    if let Some(absolute) = reference.strip_prefix('/') {
        return format!("{scheme}://{}/{absolute}", &rest[..host_end]);
    }
    let dir = match base.rfind('/') {
        Some(i) if i > scheme.len() + 2 + host_end => &base[..i],
        _ => base,
    };
    format!("{}/{}", dir.trim_end_matches('/'), reference)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

type Response = (u16, Vec<(String, String)>, Vec<u8>);

fn request(url: &str, extra: &[(&str, String)]) -> Result<Response, String> {
    let shown = redact(url);
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("{shown} is not an http(s) URL"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let tls = match scheme {
        "https" => true,
        "http" => false,
        _ => {
            return Err(format!(
                "{shown}: only http:// and https:// repositories are supported"
            ))
        }
    };
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) if !host_port.ends_with(']') => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("{shown}: bad port {p:?}"))?,
        ),
        _ => (host_port, if tls { 443 } else { 80 }),
    };
    let host_name = host.trim_start_matches('[').trim_end_matches(']');
    let proxy = super::proxy::Settings::from_env().proxy_for(tls, host_name, port)?;
    // Through a proxy, plain http asks for the absolute URL; https tunnels with CONNECT.
    let target = match (&proxy, tls) {
        (Some(_), false) => format!("http://{host_port}{path}"),
        _ => path.to_string(),
    };
    let mut head = format!(
        "GET {target} HTTP/1.1\r\nHost: {host_port}\r\nUser-Agent: tend/{}\r\nAccept-Encoding: identity\r\nConnection: close\r\n",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(userinfo) = userinfo {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(userinfo);
        head.push_str(&format!("Authorization: Basic {token}\r\n"));
    }
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let (Some(proxy), false) = (&proxy, tls) {
        if let Some(auth) = &proxy.authorization {
            head.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
        }
    }
    head.push_str("\r\n");
    let stream = match &proxy {
        None => TcpStream::connect((host_name, port))
            .map_err(|e| format!("cannot connect to {shown}: {e}"))?,
        Some(proxy) => {
            let stream = TcpStream::connect((proxy.host.as_str(), proxy.port)).map_err(|e| {
                format!(
                    "cannot connect to the proxy {} for {shown}: {e}",
                    proxy.shown
                )
            })?;
            if tls {
                tunnel(&stream, proxy, host_name, port, &shown)?;
            }
            stream
        }
    };
    stream.set_read_timeout(Some(TIMEOUT)).ok();
    stream.set_write_timeout(Some(TIMEOUT)).ok();
    let raw = if tls {
        let config = tls_config().map_err(|e| format!("TLS set-up for {shown}: {e}"))?;
        let name = rustls::pki_types::ServerName::try_from(host_name.to_string())
            .map_err(|e| format!("{shown}: {e}"))?;
        let conn = rustls::ClientConnection::new(config, name)
            .map_err(|e| format!("TLS to {shown}: {e}"))?;
        exchange(rustls::StreamOwned::new(conn, stream), &head, &shown)?
    } else {
        exchange(stream, &head, &shown)?
    };
    parse(&raw, &shown)
}

/// Asks `proxy` for a tunnel to `host:port` (HTTP CONNECT) and reads its answer, leaving
/// `stream` at the start of the tunnel.
fn tunnel(
    mut stream: &TcpStream,
    proxy: &super::proxy::Proxy,
    host: &str,
    port: u16,
    shown: &str,
) -> Result<(), String> {
    let target = match host.contains(':') {
        true => format!("[{host}]:{port}"),
        false => format!("{host}:{port}"),
    };
    let mut head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(auth) = &proxy.authorization {
        head.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
    }
    head.push_str("\r\n");
    let via = &proxy.shown;
    stream.set_read_timeout(Some(TIMEOUT)).ok();
    stream
        .write_all(head.as_bytes())
        .map_err(|e| format!("cannot ask the proxy {via} for {shown}: {e}"))?;
    // Byte by byte: what follows the proxy's answer is the tunnel, and must stay unread.
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    while !answer.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) if answer.len() < 64 * 1024 => answer.push(byte[0]),
            Ok(_) => return Err(format!("the proxy {via} closed the tunnel to {shown}")),
            Err(e) => {
                return Err(format!(
                    "cannot read the proxy {via}'s answer for {shown}: {e}"
                ))
            }
        }
    }
    let status_line = String::from_utf8_lossy(&answer);
    let status_line = status_line.lines().next().unwrap_or("");
    match status_line.split_whitespace().nth(1) {
        Some(code) if code.starts_with('2') => Ok(()),
        _ => Err(format!(
            "the proxy {via} refused a tunnel to {shown}: {status_line}; check HTTPS_PROXY and NO_PROXY"
        )),
    }
}

fn tls_config() -> Result<Arc<rustls::ClientConfig>, rustls::Error> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_platform_verifier()?
        .with_no_client_auth();
    Ok(Arc::new(config))
}

fn exchange(mut stream: impl Read + Write, head: &str, shown: &str) -> Result<Vec<u8>, String> {
    stream
        .write_all(head.as_bytes())
        .map_err(|e| format!("cannot send a request to {shown}: {e}"))?;
    let mut raw = Vec::new();
    let read = stream
        .take((MAX_BODY + 64 * 1024) as u64)
        .read_to_end(&mut raw);
    // A TLS server that closes without close_notify still sent the whole response.
    if let Err(e) = read {
        if raw.is_empty() {
            return Err(format!("cannot read the response of {shown}: {e}"));
        }
    }
    Ok(raw)
}

fn parse(raw: &[u8], shown: &str) -> Result<Response, String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("{shown} sent no complete HTTP response"))?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{shown} sent a malformed status line"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    if header(&headers, "transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        body = dechunk(&body).ok_or_else(|| format!("{shown} sent a malformed chunked body"))?;
    } else if let Some(len) =
        header(&headers, "content-length").and_then(|l| l.parse::<usize>().ok())
    {
        if body.len() < len {
            return Err(format!("the response of {shown} was cut short"));
        }
        body.truncate(len);
    }
    if body.len() > MAX_BODY {
        return Err(format!("{shown} is larger than {MAX_BODY} bytes"));
    }
    Ok((status, headers, body))
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            resolve(
                "https://charts.example.com/stable/index.yaml",
                "podinfo-1.0.0.tgz"
            ),
            "https://charts.example.com/stable/podinfo-1.0.0.tgz"
        );
        assert_eq!(
            resolve("https://charts.example.com/stable/index.yaml", "/x/a.tgz"),
            "https://charts.example.com/x/a.tgz"
        );
        assert_eq!(
            resolve("http://h/index.yaml", "https://o/a.tgz"),
            "https://o/a.tgz"
        );
        assert_eq!(redact("https://u:p@h/x"), "https://h/x");
        assert_eq!(
            authority("https://u:p@Reg.example:5000/v2/x"),
            "reg.example:5000"
        );
    }

    #[test]
    fn bodies() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse(raw, "x").unwrap().2, b"abcde");
        let raw = b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno";
        assert_eq!(parse(raw, "x").unwrap().0, 404);
    }
}
