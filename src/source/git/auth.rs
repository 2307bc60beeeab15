//! Authentication callbacks for one connection: token, SSH agent and key files, host key checks.

use super::*;

/// State shared by the callbacks of one connection: which credential types were already
/// offered (libgit2 asks again after a rejection; asking forever would hang the run), and
/// the structured error a callback failed with (libgit2 only carries a string back).
pub(super) struct Auth<'a> {
    pub(super) ctx: &'a Ctx<'a>,
    pub(super) tried: Cell<CredentialType>,
    pub(super) failure: RefCell<Option<GitError>>,
}

impl<'a> Auth<'a> {
    pub(super) fn new(ctx: &'a Ctx<'a>) -> Self {
        // Every network operation starts here: the CA bundle a TLS handshake needs.
        super::trust::load_ca_bundle();
        Auth {
            ctx,
            tried: Cell::new(CredentialType::empty()),
            failure: RefCell::new(None),
        }
    }

    /// A new connection may legitimately ask for every credential again.
    pub(super) fn reset(&self) {
        self.tried.set(CredentialType::empty());
    }

    pub(super) fn take_failure(&self) -> Option<GitError> {
        self.failure.borrow_mut().take()
    }

    /// Remember `err` and hand libgit2 an error with the same text.
    pub(super) fn fail(&self, err: GitError) -> git2::Error {
        let text = err.to_string();
        *self.failure.borrow_mut() = Some(err);
        git2::Error::from_str(&text)
    }

    pub(super) fn auth_failed(&self, reason: String) -> git2::Error {
        self.fail(GitError::AuthFailed {
            url: self.ctx.url.clone(),
            reason,
        })
    }

    /// The error for a failed connection or transfer.
    pub(super) fn network_error(&self, err: &git2::Error) -> GitError {
        if let Some(failure) = self.take_failure() {
            return failure;
        }
        let source = self.ctx.libgit(err);
        // libssh2 reports a missing or unusable agent as a plain SSH error.
        let agent_trouble = !self.ctx.http
            && self.ctx.spec.ssh_key.is_none()
            && err.class() == git2::ErrorClass::Ssh
            && source.message.contains("agent");
        if agent_trouble {
            return GitError::AuthFailed {
                url: self.ctx.url.clone(),
                reason: format!(
                    "no --ssh-key given and ssh-agent is not usable: {}",
                    source.message
                ),
            };
        }
        if err.code() == git2::ErrorCode::Auth {
            return GitError::AuthFailed {
                url: self.ctx.url.clone(),
                reason: source.message,
            };
        }
        GitError::Unreachable {
            url: self.ctx.url.clone(),
            source,
        }
    }

    pub(super) fn callbacks(&self) -> RemoteCallbacks<'_> {
        let mut cbs = RemoteCallbacks::new();
        cbs.credentials(|_url, username, allowed| self.credentials(username, allowed));
        cbs.certificate_check(|cert, host| self.certificate_check(cert, host));
        cbs
    }

    pub(super) fn credentials(
        &self,
        username: Option<&str>,
        allowed: CredentialType,
    ) -> Result<Cred, git2::Error> {
        let spec = self.ctx.spec;
        let tried = self.tried.get();
        let first_try = |kind: CredentialType| {
            let fresh = !tried.contains(kind);
            self.tried.set(tried | kind);
            fresh
        };
        if allowed.contains(CredentialType::USERNAME) {
            if !first_try(CredentialType::USERNAME) {
                return Err(self.auth_failed("the server rejected the SSH username".into()));
            }
            return Cred::username(username.unwrap_or(DEFAULT_SSH_USER));
        }
        if allowed.contains(CredentialType::SSH_KEY) {
            let user = username.unwrap_or(DEFAULT_SSH_USER);
            if !first_try(CredentialType::SSH_KEY) {
                let reason = match &spec.ssh_key {
                    Some(key) => format!(
                        "the server rejected the SSH key {} for user `{user}`",
                        key.display()
                    ),
                    None => format!(
                        "no --ssh-key given and ssh-agent offered no key the server accepts \
                         for user `{user}`"
                    ),
                };
                return Err(self.auth_failed(reason));
            }
            return match &spec.ssh_key {
                Some(key) => Cred::ssh_key(user, None, key, None),
                None => Cred::ssh_key_from_agent(user).map_err(|e| {
                    self.auth_failed(format!(
                        "no --ssh-key given and ssh-agent is not usable: {}",
                        self.ctx.libgit(&e)
                    ))
                }),
            };
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) && !self.ctx.http {
            // An HTTPS token is never sent as an SSH (or other) password.
            return Err(self.auth_failed(
                "the server asks for a password; tend authenticates SSH with keys only \
                 (--ssh-key or ssh-agent)"
                    .into(),
            ));
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
            let login = spec.login.as_ref();
            let Some(token) = self.ctx.token() else {
                return Err(self.auth_failed(match login {
                    Some((_, origin)) => format!("the remote asks for credentials {origin} does not hold (or the repository does not exist)"),
                    None => "the remote asks for credentials (or the repository does not exist); set \
                     TEND_GIT_TOKEN to a token with read access"
                        .into(),
                }));
            };
            if !first_try(CredentialType::USER_PASS_PLAINTEXT) {
                return Err(self.auth_failed(match login {
                    Some((_, origin)) => format!("the remote rejected the login of {origin}"),
                    None => {
                        "the remote rejected the token in TEND_GIT_TOKEN (expired, revoked, or \
                     without read access to this repository?)"
                            .into()
                    }
                }));
            }
            let user = match login {
                Some((user, _)) => user.as_str(),
                None => username.unwrap_or(TOKEN_USERNAME),
            };
            return Cred::userpass_plaintext(user, token);
        }
        if allowed.contains(CredentialType::DEFAULT) && first_try(CredentialType::DEFAULT) {
            return Cred::default();
        }
        Err(self.auth_failed(format!(
            "the remote asks for an authentication method tend does not support ({allowed:?})"
        )))
    }

    pub(super) fn certificate_check(
        &self,
        cert: &git2::cert::Cert<'_>,
        host: &str,
    ) -> Result<CertificateCheckStatus, git2::Error> {
        // TLS certificates are checked by libgit2 against the system's CA store.
        let Some(hostkey) = cert.as_hostkey() else {
            return Ok(CertificateCheckStatus::CertificatePassthrough);
        };
        let Some(key) = hostkey.hostkey() else {
            return Err(self.fail(GitError::Unreachable {
                url: self.ctx.url.clone(),
                source: LibgitError {
                    message: "the SSH library did not provide the server's host key".into(),
                    code: git2::ErrorCode::Certificate,
                    class: git2::ErrorClass::Ssh,
                },
            }));
        };
        match verify_host_key(
            self.ctx.spec.known_hosts.as_deref(),
            host,
            self.ctx.ssh_port,
            key,
        ) {
            Ok(()) => Ok(CertificateCheckStatus::CertificateOk),
            Err(err) => Err(self.fail(err)),
        }
    }
}

/// Check that `path` holds a private key libssh2 can use without prompting.
pub fn check_private_key(path: &Path) -> Result<(), GitError> {
    let bad = |problem: &str, source: Option<io::Error>| GitError::BadKey {
        path: path.to_path_buf(),
        problem: problem.to_string(),
        source,
    };
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(bad("the file does not exist", Some(e)))
        }
        Err(e) => return Err(bad(&format!("cannot read it: {e}"), Some(e))),
    };
    if meta.is_dir() {
        return Err(bad("it is a directory, not a key file", None));
    }
    let bytes = fs::read(path).map_err(|e| bad(&format!("cannot read it: {e}"), Some(e)))?;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Err(bad(
            "it is not a private key (binary content; expected an OpenSSH or PEM key)",
            None,
        ));
    };
    let text = text.trim();
    let public_prefixes = ["ssh-", "ecdsa-", "sk-ssh-", "sk-ecdsa-"];
    if public_prefixes.iter().any(|p| text.starts_with(p)) {
        return Err(bad(
            "it is a public key; pass the private key (usually the same name without .pub)",
            None,
        ));
    }
    if text.starts_with("PuTTY-User-Key-File") {
        return Err(bad(
            "it is a PuTTY key; convert it with `puttygen KEY.ppk -O private-openssh -o KEY`",
            None,
        ));
    }
    let passphrase = "it is protected by a passphrase, which tend cannot ask for; load it into \
                      ssh-agent and omit --ssh-key, or use a deploy key without a passphrase";
    if text.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----") {
        let body: String = text
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .map(str::trim)
            .collect();
        let Ok(blob) = BASE64.decode(body) else {
            return Err(bad(
                "it is not a valid OpenSSH private key (damaged base64)",
                None,
            ));
        };
        let Some(rest) = blob.strip_prefix(b"openssh-key-v1\0") else {
            return Err(bad(
                "it is not a valid OpenSSH private key (bad header)",
                None,
            ));
        };
        return match ssh_key_type(rest) {
            Some("none") => Ok(()),
            Some(_) => Err(bad(passphrase, None)),
            None => Err(bad(
                "it is not a valid OpenSSH private key (truncated)",
                None,
            )),
        };
    }
    if text.starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----")
        || text.contains("Proc-Type: 4,ENCRYPTED")
    {
        return Err(bad(passphrase, None));
    }
    let pem = [
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----BEGIN EC PRIVATE KEY-----",
        "-----BEGIN DSA PRIVATE KEY-----",
        "-----BEGIN PRIVATE KEY-----",
    ];
    if pem.iter().any(|p| text.starts_with(p)) {
        return Ok(());
    }
    Err(bad(
        "it is not a private key (expected a file starting with `-----BEGIN OPENSSH PRIVATE \
         KEY-----` or another PEM private key header)",
        None,
    ))
}
