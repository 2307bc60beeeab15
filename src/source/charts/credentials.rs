//! Credentials for chart repositories and OCI registries
//! (README "HelmChart — a Helm chart rendered by tend itself"), in the docker-config format
//! that `helm registry login` writes and a `kubernetes.io/dockerconfigjson` Secret holds:
//! `{"auths": {"host[:port]": {"auth": base64("user:pass")}}}` or `username`/`password`.
//! Passwords never leave this file but as an `Authorization` header: `Debug` and every
//! message show hosts and where they came from only.

use super::http;
use base64::Engine as _;
use zeroize::Zeroizing;

/// The logins of a run, and the places looked for them (for messages).
#[derive(Default, Clone)]
pub struct Credentials {
    entries: Vec<Entry>,
    looked: Vec<String>,
}

#[derive(Clone)]
struct Entry {
    host: String,
    username: String,
    password: Zeroizing<String>,
    origin: String,
}

/// A login for one host.
pub struct Login<'a> {
    entry: &'a Entry,
}

impl Login<'_> {
    /// The `Authorization` header value of HTTP basic authentication.
    pub fn basic(&self) -> String {
        let pair = Zeroizing::new(format!("{}:{}", self.entry.username, *self.entry.password));
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair.as_bytes())
        )
    }

    /// Where this login came from (a file or a Secret), for messages.
    pub fn origin(&self) -> &str {
        &self.entry.origin
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hosts: Vec<String> = self
            .entries
            .iter()
            .map(|e| format!("{} ({})", e.host, e.origin))
            .collect();
        f.debug_struct("Credentials")
            .field("hosts", &hosts)
            .field("looked", &self.looked)
            .finish()
    }
}

impl Credentials {
    /// Note a place looked in that gave nothing, e.g. `~/.config/helm/registry/config.json
    /// (not found)`.
    pub fn note(&mut self, place: String) {
        self.looked.push(place);
    }

    /// Add the logins of a docker config (`origin` names it in messages); later sources win.
    /// The error never quotes the text.
    pub fn add_docker_config(&mut self, origin: &str, text: &[u8]) -> Result<(), String> {
        let config: serde_json::Value = serde_json::from_slice(text).map_err(|e| {
            format!(
                "not a docker config JSON (line {}, column {}); expected {{\"auths\": {{\"host\": {{\"auth\": ...}}}}}}",
                e.line(),
                e.column()
            )
        })?;
        let auths = config
            .get("auths")
            .and_then(|a| a.as_object())
            .ok_or("no \"auths\" map; expected {\"auths\": {\"host\": {\"auth\": ...}}}")?;
        let mut added = Vec::new();
        for (key, login) in auths {
            let host = host_of(key);
            let field = |k: &str| login.get(k).and_then(|v| v.as_str()).unwrap_or("");
            let (username, password) = if !field("auth").is_empty() {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(field("auth").trim())
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .map(Zeroizing::new)
                    .ok_or_else(|| {
                        format!("the \"auth\" of {host} is not base64 of user:password")
                    })?;
                let (user, pass) = decoded.split_once(':').ok_or_else(|| {
                    format!("the \"auth\" of {host} is not base64 of user:password")
                })?;
                (user.to_string(), Zeroizing::new(pass.to_string()))
            } else if !field("username").is_empty() || !field("password").is_empty() {
                (
                    field("username").to_string(),
                    Zeroizing::new(field("password").to_string()),
                )
            } else {
                continue; // an identity token or a credential helper's entry: not supported
            };
            added.push(host.clone());
            self.entries.push(Entry {
                host,
                username,
                password,
                origin: origin.to_string(),
            });
        }
        if added.is_empty() {
            self.looked.push(format!("{origin} (no logins)"));
        } else {
            self.looked.push(format!("{origin} ({})", added.join(", ")));
        }
        Ok(())
    }

    /// Add the login of one repository (`url`'s host), e.g. the Secret a Flux
    /// HelmRepository's `secretRef` names; later sources win.
    pub fn add_login(&mut self, origin: &str, url: &str, username: &str, password: &str) {
        let host = host_of(url);
        self.looked.push(format!("{origin} ({host})"));
        self.entries.push(Entry {
            host,
            username: username.to_string(),
            password: Zeroizing::new(password.to_string()),
            origin: origin.to_string(),
        });
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The logins of `other` after these (they win).
    pub fn extend(&mut self, other: &Credentials) {
        self.entries.extend(other.entries.iter().cloned());
        self.looked.extend(other.looked.iter().cloned());
    }

    /// The login for `host` (`host[:port]`, as in a URL), the last source's if several.
    pub fn for_host(&self, host: &str) -> Option<Login<'_>> {
        let host = host.to_ascii_lowercase();
        let bare = host.strip_suffix(":443").unwrap_or(&host);
        self.entries
            .iter()
            .rev()
            .find(|e| e.host == host || e.host == bare)
            .map(|entry| Login { entry })
    }

    /// Why a repository answered 401 or 403: no login for it (and where tend looked), or its
    /// login refused (and where that came from). Never the login itself.
    pub fn refused(&self, url: &str, status: u16) -> String {
        let host = http::authority(url);
        match self.for_host(&host) {
            Some(login) => format!(
                "{host} refused the credentials for it from {} (HTTP {status} from {}); check them, and that they may read this chart",
                login.origin(),
                http::redact(url)
            ),
            None => format!(
                "{host} requires credentials (HTTP {status} from {}) and tend has none for {host}; it looked in: {}. Add a login for {host} with `helm registry login {host}`, --helm-credentials FILE or --helm-credentials-secret NAMESPACE/NAME (a docker config JSON)",
                http::redact(url),
                self.places()
            ),
        }
    }

    /// The places looked in, for a message: `a (x.example), b (not found)`.
    pub fn places(&self) -> String {
        if self.looked.is_empty() {
            "nowhere".to_string()
        } else {
            self.looked.join(", ")
        }
    }
}

/// A docker config key (`host`, `host:port`, `https://host/v1/`) as `host[:port]`.
fn host_of(key: &str) -> String {
    let rest = key.split_once("://").map_or(key, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_forms_and_never_shows_a_password() {
        let mut c = Credentials::default();
        let auth = base64::engine::general_purpose::STANDARD.encode("ann:s3cret-canary");
        let text = format!(
            r#"{{"auths": {{"https://Reg.example:5000/v1/": {{"auth": "{auth}"}}, "other.example": {{"username": "bob", "password": "p4ss-canary"}}, "helper.example": {{}}}}}}"#
        );
        c.add_docker_config("file.json", text.as_bytes()).unwrap();
        let login = c.for_host("reg.example:5000").expect("found");
        assert_eq!(
            login.basic(),
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("ann:s3cret-canary")
            )
        );
        assert_eq!(login.origin(), "file.json");
        assert!(c.for_host("other.example:443").is_some());
        assert!(c.for_host("helper.example").is_none());
        let shown = format!("{c:?} {}", c.places());
        assert!(
            !shown.contains("canary") && !shown.contains(&auth),
            "{shown}"
        );
        assert!(shown.contains("reg.example:5000"), "{shown}");
        let bad = br#"{"auths": {"x": {"auth": "bm9jb2xvbg=="}}}"#;
        let err = c.add_docker_config("f", bad).unwrap_err();
        assert!(!err.contains("bm9jb2xvbg"), "{err}");
        assert!(c.add_docker_config("f", b"{\"auth\": 1").is_err());
    }
}
