//! Host key checking against known_hosts files (plain and hashed entries, patterns).

use super::*;

/// Result of looking a server's host key up in a known_hosts file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKeyStatus {
    /// Line `line` (1-based) lists this host with exactly this key.
    Known { line: usize },
    /// Line `line` lists this host with a different key of the same type.
    Changed { line: usize },
    /// Line `line` is a `@revoked` entry for this key.
    Revoked { line: usize },
    /// No entry for this host and key type; `other_types` are the key types that are listed
    /// for the host (the server offered a type the file does not know yet).
    Unknown { other_types: Vec<String> },
}

/// Look up `host`:`port` with the raw SSH host key `key` (wire format, as the server sends
/// it) in the text of a known_hosts file, with OpenSSH's rules: plain patterns
/// (comma-separated, `*`/`?` wildcards, `!` negation, `[host]:port` for ports other than 22,
/// case-insensitive), hashed entries (`|1|salt|hash`, HMAC-SHA1 of the name), `@revoked`
/// markers. `@cert-authority` lines are ignored (host certificates are not supported).
pub fn check_known_hosts(known_hosts: &str, host: &str, port: u16, key: &[u8]) -> HostKeyStatus {
    let host = host.to_ascii_lowercase();
    let name = host_display(&host, port);
    let server_type = ssh_key_type(key);
    let (mut known, mut changed, mut revoked) = (None, None, None);
    let mut other_types = BTreeSet::new();
    for (index, line) in known_hosts.lines().enumerate() {
        let line_no = index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let Some(mut hosts) = fields.next() else {
            continue;
        };
        let mut marker = None;
        if hosts.starts_with('@') {
            marker = Some(hosts);
            let Some(next) = fields.next() else { continue };
            hosts = next;
        }
        if marker == Some("@cert-authority") {
            continue;
        }
        let (Some(key_type), Some(key_b64)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !host_matches(hosts, &name) {
            continue;
        }
        let Ok(entry_key) = BASE64.decode(key_b64) else {
            continue;
        };
        let entry_type = ssh_key_type(&entry_key).unwrap_or(key_type);
        if marker == Some("@revoked") {
            if entry_key == key {
                revoked.get_or_insert(line_no);
            }
            continue;
        }
        if entry_key == key {
            known.get_or_insert(line_no);
        } else if Some(entry_type) == server_type {
            changed.get_or_insert(line_no);
        } else {
            other_types.insert(entry_type.to_string());
        }
    }
    if let Some(line) = revoked {
        HostKeyStatus::Revoked { line }
    } else if let Some(line) = known {
        HostKeyStatus::Known { line }
    } else if let Some(line) = changed {
        HostKeyStatus::Changed { line }
    } else {
        HostKeyStatus::Unknown {
            other_types: other_types.into_iter().collect(),
        }
    }
}

/// Does the host field of a known_hosts line match `name` (`host` or `[host]:port`)?
pub(super) fn host_matches(field: &str, name: &str) -> bool {
    if let Some(rest) = field.strip_prefix("|1|") {
        let Some((salt, hash)) = rest.split_once('|') else {
            return false;
        };
        let (Ok(salt), Ok(hash)) = (BASE64.decode(salt), BASE64.decode(hash)) else {
            return false;
        };
        return hashed_host(&salt, name).as_slice() == hash.as_slice();
    }
    let mut matched = false;
    for pattern in field.split(',') {
        let (negated, pattern) = match pattern.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, pattern),
        };
        if glob_match(pattern.to_ascii_lowercase().as_bytes(), name.as_bytes()) {
            if negated {
                // OpenSSH: a matching negated pattern rejects the line outright.
                return false;
            }
            matched = true;
        }
    }
    matched
}

/// HMAC-SHA1 of `name` keyed with `salt`: the hash in a `|1|salt|hash` known_hosts entry.
pub fn hashed_host(salt: &[u8], name: &str) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <hmac::Hmac<sha1::Sha1> as KeyInit>::new_from_slice(salt)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(name.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// Glob match with `*` (any run) and `?` (one byte).
pub(super) fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && (pattern[p] == b'?' || pattern[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == b'*' {
            backtrack = Some((p, t));
            p += 1;
        } else if let Some((bp, bt)) = backtrack {
            p = bp + 1;
            t = bt + 1;
            backtrack = Some((bp, bt + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// The key type inside an SSH wire-format public key blob (its first string).
pub(super) fn ssh_key_type(blob: &[u8]) -> Option<&str> {
    let len = u32::from_be_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    std::str::from_utf8(blob.get(4..4usize.checked_add(len)?)?).ok()
}

/// Check a server's host key against the configured known_hosts file(s).
pub(super) fn verify_host_key(
    known_hosts: Option<&Path>,
    host: &str,
    port: u16,
    key: &[u8],
) -> Result<(), GitError> {
    let user_file = match known_hosts {
        Some(path) => path.to_path_buf(),
        None => default_known_hosts(),
    };
    let mut files = vec![(user_file.clone(), true)];
    if known_hosts.is_none() {
        // Like OpenSSH's GlobalKnownHostsFile; only consulted for the default setup.
        files.push((PathBuf::from("/etc/ssh/ssh_known_hosts"), false));
    }
    let mut statuses = Vec::new();
    let mut user_file_missing = false;
    for (path, is_user_file) in &files {
        match fs::read_to_string(path) {
            Ok(text) => statuses.push((path.clone(), check_known_hosts(&text, host, port, key))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                user_file_missing |= *is_user_file;
            }
            Err(source) => {
                return Err(GitError::KnownHosts {
                    path: path.clone(),
                    source,
                })
            }
        }
    }
    for (path, status) in &statuses {
        if let HostKeyStatus::Revoked { line } = status {
            return Err(GitError::HostKeyRevoked {
                host: host.to_string(),
                port,
                known_hosts: path.clone(),
                line: *line,
            });
        }
    }
    if statuses
        .iter()
        .any(|(_, s)| matches!(s, HostKeyStatus::Known { .. }))
    {
        return Ok(());
    }
    for (path, status) in &statuses {
        if let HostKeyStatus::Changed { line } = status {
            return Err(GitError::HostKeyChanged {
                host: host.to_string(),
                port,
                known_hosts: path.clone(),
                line: *line,
            });
        }
    }
    let other: BTreeSet<&str> = statuses
        .iter()
        .flat_map(|(_, s)| match s {
            HostKeyStatus::Unknown { other_types } => other_types.as_slice(),
            _ => &[],
        })
        .map(String::as_str)
        .collect();
    let note = if user_file_missing {
        " (the file does not exist)".to_string()
    } else if !other.is_empty() {
        format!(
            " (it lists {} for this host, but the server offered {})",
            other.into_iter().collect::<Vec<_>>().join(", "),
            ssh_key_type(key).unwrap_or("another key type")
        )
    } else {
        String::new()
    };
    Err(GitError::UnknownHostKey {
        host: host.to_string(),
        port,
        known_hosts: user_file,
        note,
    })
}

pub(super) fn default_known_hosts() -> PathBuf {
    match std::env::var_os("HOME") {
        Some(home) if !home.is_empty() => PathBuf::from(home).join(".ssh").join("known_hosts"),
        _ => PathBuf::from("~/.ssh/known_hosts"),
    }
}
