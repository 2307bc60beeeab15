//! What verifying says: who signed ([`Signer`]), why a signature is refused ([`Refusal`]),
//! and the errors of the module; below every other file of it.

use std::fmt;

/// A problem with the trusted keys themselves: a local mistake, reported before any fetch.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct KeyFileError {
    /// The file (`path:line`) or Secret entry the key came from.
    pub origin: String,
    pub message: String,
}

/// Who signed: shown in every report and recorded on the ApplySet parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    /// `OpenPGP` or `SSH`.
    pub scheme: &'static str,
    /// The key's fingerprint (`SHA256:...` for SSH).
    pub fingerprint: String,
    /// The key's first user ID, or the principal of the `allowed_signers` line.
    pub identity: String,
}

impl fmt::Display for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} key {})",
            self.identity, self.scheme, self.fingerprint
        )
    }
}

/// Why a signature is not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Unsigned,
    /// Signed by a key none of the trusted keys is (its id or fingerprint).
    UntrustedKey(String),
    /// The signature does not match the content (altered after signing, or forged).
    BadSignature(String),
    /// The key had expired when it signed, or has expired since.
    Expired(String),
    Revoked(String),
    /// A signature tend cannot check (an X.509/S/MIME signature of gitsign or gpgsm).
    Unsupported(String),
    /// A work tree read as it is, with changes (these files) that no commit signs.
    Uncommitted(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Unsigned => f.write_str("it is not signed"),
            Refusal::UntrustedKey(key) => {
                write!(f, "it is signed by {key}, which is not a trusted key")
            }
            Refusal::BadSignature(key) => write!(
                f,
                "its signature by {key} does not match its content (altered after signing?)"
            ),
            Refusal::Expired(why) => write!(f, "it is signed by an expired key: {why}"),
            Refusal::Revoked(key) => write!(f, "it is signed by a revoked key: {key}"),
            Refusal::Unsupported(what) => {
                write!(f, "its signature is {what}, which tend cannot check")
            }
            Refusal::Uncommitted(files) => write!(
                f,
                "it has changes that no commit signs ({files}); commit them, or pass --ref to \
                 read the commit instead of the work tree"
            ),
        }
    }
}

/// A verified checkout: who signed the commit and the tag, as checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verified {
    pub commit: Option<Signer>,
    pub tag: Option<Signer>,
}

impl Verified {
    /// One line for reports and the ApplySet parent: the tag's signer, then the commit's.
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(signer) = &self.tag {
            parts.push(format!("tag signed by {signer}"));
        }
        if let Some(signer) = &self.commit {
            parts.push(format!("commit signed by {signer}"));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// A checkout that may not be applied, or could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("--verify-signatures: {what} is refused: {reason}")]
    Refused { what: String, reason: Refusal },
    #[error("--verify-signatures {mode}: {message}")]
    Usage { mode: &'static str, message: String },
    #[error("--verify-signatures: cannot read {what}: {message}")]
    Read { what: String, message: String },
}

impl std::error::Error for Refusal {}

/// RFC 3339 UTC of Unix seconds, for messages.
pub(super) fn utc(seconds: i64) -> String {
    match k8s_openapi::jiff::Timestamp::from_second(seconds) {
        Ok(time) => time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        Err(_) => format!("{seconds} (Unix time)"),
    }
}
