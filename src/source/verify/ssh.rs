//! SSH signatures (`git config gpg.format ssh`): the SSHSIG format with the `git` namespace,
//! trusted through an `allowed_signers` file as `ssh-keygen -Y verify` reads it (man
//! ssh-keygen, "ALLOWED SIGNERS"): `principals [options] keytype key [comment]`, with the
//! options `namespaces="..."`, `valid-after="..."` and `valid-before="..."`.

use super::outcome::{KeyFileError, Refusal, Signer};
use ssh_key::{HashAlg, PublicKey, SshSig};

/// The namespace git signs commits and tags in.
const GIT_NAMESPACE: &str = "git";

/// One line of an `allowed_signers` file.
#[derive(Clone)]
pub struct AllowedSigner {
    principals: String,
    key: PublicKey,
    namespaces: Option<Vec<String>>,
    valid_after: Option<i64>,
    valid_before: Option<i64>,
}

/// The lines of an `allowed_signers` text.
pub fn read_allowed_signers(origin: &str, text: &str) -> Result<Vec<AllowedSigner>, KeyFileError> {
    let mut signers = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let signer = parse_line(line).map_err(|message| KeyFileError {
            origin: format!("{origin}:{}", index + 1),
            message: format!(
                "{message}; an allowed_signers line is `PRINCIPALS [OPTIONS] KEYTYPE KEY` \
                 (man ssh-keygen, ALLOWED SIGNERS)"
            ),
        })?;
        signers.push(signer);
    }
    if signers.is_empty() {
        return Err(KeyFileError {
            origin: origin.to_string(),
            message: "holds neither an OpenPGP public key nor an allowed_signers line".into(),
        });
    }
    Ok(signers)
}

fn is_key_type(word: &str) -> bool {
    ["ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-", "rsa-sha2-"]
        .iter()
        .any(|prefix| word.starts_with(prefix))
}

fn parse_line(line: &str) -> Result<AllowedSigner, String> {
    let words = split_words(line);
    let (principals, rest) = words.split_first().ok_or("empty line")?;
    let (options, key_words) = match rest.first() {
        Some(word) if is_key_type(word) => ("", rest),
        Some(word) => (word.as_str(), &rest[1..]),
        None => return Err("no key".into()),
    };
    if key_words.len() < 2 {
        return Err("no key after the principals".into());
    }
    let key = PublicKey::from_openssh(&format!("{} {}", key_words[0], key_words[1]))
        .map_err(|e| format!("not an SSH public key: {e}"))?;
    let mut signer = AllowedSigner {
        principals: principals.trim_matches('"').to_string(),
        key,
        namespaces: None,
        valid_after: None,
        valid_before: None,
    };
    for option in split_options(options) {
        let (name, value) = option.split_once('=').unwrap_or((option.as_str(), ""));
        let value = value.trim_matches('"');
        match name.to_ascii_lowercase().as_str() {
            "namespaces" => {
                signer.namespaces = Some(value.split(',').map(str::to_string).collect());
            }
            "valid-after" => signer.valid_after = Some(parse_time(value)?),
            "valid-before" => signer.valid_before = Some(parse_time(value)?),
            "cert-authority" => {
                return Err("cert-authority lines (SSH certificates) are not supported".into())
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(signer)
}

/// Whitespace-separated words, a double-quoted stretch kept whole.
fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                word.push(c);
            }
            c if c.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Comma-separated options, commas inside quotes kept.
fn split_options(options: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut quoted = false;
    for c in options.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                part.push(c);
            }
            ',' if !quoted => parts.push(std::mem::take(&mut part)),
            c => part.push(c),
        }
    }
    if !part.is_empty() {
        parts.push(part);
    }
    parts
}

/// `YYYYMMDD[HHMM[SS]][Z]`, read as UTC (ssh-keygen reads it as local time without `Z`;
/// tend runs in containers, whose local time is UTC).
fn parse_time(text: &str) -> Result<i64, String> {
    let digits = text.trim_end_matches(['Z', 'z']);
    let bad = || format!("time {text:?} is not YYYYMMDD[HHMM[SS]][Z]");
    if !digits.bytes().all(|b| b.is_ascii_digit()) || ![8, 12, 14].contains(&digits.len()) {
        return Err(bad());
    }
    let field = |range: std::ops::Range<usize>| -> i64 {
        digits.get(range).and_then(|s| s.parse().ok()).unwrap_or(0)
    };
    let civil = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        field(0..4),
        field(4..6),
        field(6..8),
        field(8..10),
        field(10..12),
        field(12..14)
    );
    civil
        .parse::<k8s_openapi::jiff::Timestamp>()
        .map(|t| t.as_second())
        .map_err(|_| bad())
}

/// Checks an armored SSHSIG over `signed`.
pub fn check(
    armored: &str,
    signed: &[u8],
    signers: &[AllowedSigner],
    now: i64,
) -> Result<Signer, Refusal> {
    let signature = SshSig::from_pem(armored.trim())
        .map_err(|e| Refusal::Unsupported(format!("an unreadable SSH signature ({e})")))?;
    let key = PublicKey::from(signature.public_key().clone());
    let fingerprint = key.fingerprint(HashAlg::Sha256).to_string();
    let allowed = signers
        .iter()
        .filter(|s| s.key.key_data() == key.key_data())
        .find(|s| {
            s.namespaces
                .as_ref()
                .is_none_or(|ns| ns.iter().any(|n| n == GIT_NAMESPACE))
        });
    let Some(signer) = allowed else {
        return Err(Refusal::UntrustedKey(format!("SSH key {fingerprint}")));
    };
    if signature.namespace() != GIT_NAMESPACE {
        return Err(Refusal::BadSignature(format!(
            "SSH key {fingerprint} (made for namespace {:?}, not \"git\")",
            signature.namespace()
        )));
    }
    if let Some(before) = signer.valid_before.filter(|before| *before <= now) {
        return Err(Refusal::Expired(format!(
            "SSH key {fingerprint} is valid before {} only",
            super::outcome::utc(before)
        )));
    }
    if let Some(after) = signer.valid_after.filter(|after| *after > now) {
        return Err(Refusal::Expired(format!(
            "SSH key {fingerprint} is valid after {} only",
            super::outcome::utc(after)
        )));
    }
    match key.verify(GIT_NAMESPACE, signed, &signature) {
        Ok(()) => Ok(Signer {
            scheme: "SSH",
            fingerprint,
            identity: signer.principals.clone(),
        }),
        Err(_) => Err(Refusal::BadSignature(format!("SSH key {fingerprint}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_signers_lines_with_and_without_options() {
        let key =
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHQ0s8rVwNzyeRz3AqDb3aOh9Ct6aC5VmvH6m1pNFsbm";
        let text = format!(
            "# team\nalice@example.com {key} alice\n\
             bob@example.com,carol@example.com namespaces=\"git,file\",valid-before=\"20300101\" {key}\n"
        );
        let signers = read_allowed_signers("signers", &text).expect("parses");
        assert_eq!(signers.len(), 2);
        assert_eq!(signers[0].principals, "alice@example.com");
        assert!(signers[0].namespaces.is_none());
        assert_eq!(
            signers[1].namespaces.as_deref(),
            Some(&["git".to_string(), "file".to_string()][..])
        );
        assert_eq!(signers[1].valid_before, Some(1_893_456_000));
    }

    #[test]
    fn a_bad_line_names_its_line() {
        let err = read_allowed_signers("signers", "\nalice ssh-ed25519\n")
            .err()
            .expect("refused");
        assert!(err.origin.ends_with("signers:2"), "{err}");
    }
}
