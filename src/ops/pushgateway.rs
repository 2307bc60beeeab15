//! `--pushgateway URL`: the run's metrics pushed to a Prometheus Pushgateway, one group per
//! cluster and ApplySet (`POST /metrics/job/tend/cluster/<name>/applyset/<name>`). A POST
//! replaces only the metrics it sends, so a failed run, which sends no last-success time,
//! leaves the previous one in place. Plain `http://` (a Pushgateway inside the cluster or
//! beside the runner, as Prometheus documents it).

use crate::report::metrics::PushGroup;
use crate::Error;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Push every group; the first refusal is the error.
pub fn push(url: &str, groups: &[PushGroup]) -> Result<(), Error> {
    let (host, prefix) = split_url(url)?;
    for group in groups {
        let mut path = format!("{prefix}/metrics/job/tend");
        for (name, value) in &group.labels {
            path.push_str(&segment(name, value));
        }
        post(&host, &path, &group.body)
            .map_err(|why| Error::Usage(format!("--pushgateway {url}: POST {path}: {why}")))?;
    }
    Ok(())
}

/// `host:port` and the path prefix of an `http://` URL.
fn split_url(url: &str) -> Result<(String, String), Error> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        Error::Usage(format!(
            "--pushgateway {url}: expected an http:// URL, e.g. http://pushgateway:9091"
        ))
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return Err(Error::Usage(format!("--pushgateway {url}: no host")));
    }
    let host = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    Ok((host, path.to_string()))
}

/// `/name/value`, or `/name@base64/…` when the value is not a plain path segment (the
/// Pushgateway's encoding for any other value).
fn segment(name: &str, value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b));
    if plain {
        format!("/{name}/{value}")
    } else {
        use base64::Engine;
        let encoded = base64::engine::general_purpose::URL_SAFE.encode(value);
        format!(
            "/{name}@base64/{}",
            if encoded.is_empty() {
                "=".into()
            } else {
                encoded
            }
        )
    }
}

/// One HTTP/1.1 POST, answered 2xx or an error with the status line and body.
fn post(host: &str, path: &str, body: &str) -> Result<(), String> {
    let mut stream =
        TcpStream::connect(host).map_err(|e| format!("cannot connect to {host}: {e}"))?;
    let timeout = Some(Duration::from_secs(30));
    let _ = stream.set_read_timeout(timeout);
    let _ = stream.set_write_timeout(timeout);
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("cannot send: {e}"))?;
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .map_err(|e| format!("no answer: {e}"))?;
    let answer = String::from_utf8_lossy(&answer);
    let status_line = answer.lines().next().unwrap_or_default();
    let code = status_line.split_whitespace().nth(1).unwrap_or_default();
    if code.starts_with('2') {
        return Ok(());
    }
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b).trim();
    let body: String = body.chars().take(500).collect();
    Err(format!(
        "{status_line}: {}",
        body.replace(['\r', '\n'], " ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_outside_a_path_segment_are_base64() {
        assert_eq!(segment("cluster", "prod-eu"), "/cluster/prod-eu");
        assert_eq!(segment("cluster", "a/b"), "/cluster@base64/YS9i");
        assert_eq!(segment("cluster", ""), "/cluster@base64/=");
        assert_eq!(
            split_url("http://gw:9091/").ok(),
            Some(("gw:9091".into(), String::new()))
        );
        assert!(split_url("https://gw").is_err());
    }
}
