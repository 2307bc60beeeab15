//! OpenPGP signatures (`git commit -S` with gpg): which trusted key, primary or signing
//! subkey, made the signature, and whether that key was valid: not revoked, not expired.

use super::outcome::{KeyFileError, Refusal, Signer};
use pgp::composed::{Deserializable, DetachedSignature, SignedPublicKey};
use pgp::types::{KeyDetails, PublicKeyTrait};

/// A trusted OpenPGP key and where it came from.
#[derive(Clone)]
pub struct TrustedKey {
    key: SignedPublicKey,
    identity: String,
}

/// The public keys of one armored text (a file may hold several).
pub fn read_keys(origin: &str, text: &str) -> Result<Vec<TrustedKey>, KeyFileError> {
    let error = |message: String| KeyFileError {
        origin: origin.to_string(),
        message,
    };
    let (keys, _) = SignedPublicKey::from_string_many(text)
        .map_err(|e| error(format!("not an armored OpenPGP public key: {e}")))?;
    let mut trusted = Vec::new();
    for key in keys {
        let key = key.map_err(|e| error(format!("not an armored OpenPGP public key: {e}")))?;
        // A key whose own binding signatures fail was altered; trusting it would trust
        // whatever subkey someone attached.
        key.verify().map_err(|e| {
            error(format!(
                "key {:X} has invalid self-signatures ({e}); export it again",
                key.fingerprint()
            ))
        })?;
        let identity = key
            .details
            .users
            .first()
            .map(|user| String::from_utf8_lossy(user.id.id()).into_owned())
            .unwrap_or_else(|| "(no user ID)".to_string());
        trusted.push(TrustedKey { key, identity });
    }
    if trusted.is_empty() {
        return Err(error("holds no OpenPGP public key".to_string()));
    }
    Ok(trusted)
}

/// Checks an armored detached signature over `signed`.
pub fn check(
    armored: &str,
    signed: &[u8],
    keys: &[TrustedKey],
    now: i64,
) -> Result<Signer, Refusal> {
    let (signature, _) = DetachedSignature::from_string(armored)
        .map_err(|e| Refusal::Unsupported(format!("an unreadable OpenPGP signature ({e})")))?;
    let signature = signature.signature;
    let issuers: Vec<String> = signature
        .issuer_fingerprint()
        .iter()
        .map(|f| format!("{f:X}"))
        .chain(
            signature
                .issuer()
                .iter()
                .map(|id| hex::encode_upper(id.as_ref())),
        )
        .collect();
    let named = |fingerprint: &str, key_id: &[u8]| {
        let key_id = hex::encode_upper(key_id);
        issuers.iter().any(|i| i == fingerprint || *i == key_id)
    };
    for trusted in keys {
        let primary = &trusted.key.primary_key;
        let signer = |fingerprint: String| Signer {
            scheme: "OpenPGP",
            fingerprint,
            identity: trusted.identity.clone(),
        };
        let primary_fpr = format!("{:X}", primary.fingerprint());
        let revoked = !trusted.key.details.revocation_signatures.is_empty();
        if named(&primary_fpr, primary.key_id().as_ref()) {
            if revoked {
                return Err(Refusal::Revoked(primary_fpr));
            }
            if let Some(expired) = expired(trusted.key.expires_at().map(|t| t.timestamp()), now) {
                return Err(Refusal::Expired(format!("{primary_fpr} {expired}")));
            }
            return match signature.verify(primary, signed) {
                Ok(()) => Ok(signer(primary_fpr)),
                Err(_) => Err(Refusal::BadSignature(primary_fpr)),
            };
        }
        for subkey in &trusted.key.public_subkeys {
            let fpr = format!("{:X}", subkey.key.fingerprint());
            if !named(&fpr, subkey.key.key_id().as_ref()) {
                continue;
            }
            let subkey_revoked = subkey
                .signatures
                .iter()
                .any(|s| s.typ() == Some(pgp::packet::SignatureType::SubkeyRevocation));
            if revoked || subkey_revoked {
                return Err(Refusal::Revoked(format!("{fpr} (subkey of {primary_fpr})")));
            }
            let binding = subkey.signatures.iter().find(|s| s.key_flags().sign());
            let Some(binding) = binding else {
                return Err(Refusal::BadSignature(format!(
                    "{fpr} (a subkey of {primary_fpr} not bound for signing)"
                )));
            };
            let expires = trusted
                .key
                .expires_at()
                .map(|t| t.timestamp())
                .into_iter()
                .chain(
                    binding
                        .key_expiration_time()
                        .map(|d| subkey.key.created_at().timestamp() + d.num_seconds()),
                );
            if let Some(expired) = expired(expires.min(), now) {
                return Err(Refusal::Expired(format!("{fpr} {expired}")));
            }
            return match signature.verify(&subkey.key, signed) {
                Ok(()) => Ok(signer(fpr)),
                Err(_) => Err(Refusal::BadSignature(fpr)),
            };
        }
    }
    match issuers.first() {
        Some(issuer) => Err(Refusal::UntrustedKey(format!("OpenPGP key {issuer}"))),
        None => Err(Refusal::UntrustedKey(
            "an OpenPGP key that names no issuer".into(),
        )),
    }
}

/// `expired at <time>` when `expires_at` (Unix seconds) is not after `now`.
fn expired(expires_at: Option<i64>, now: i64) -> Option<String> {
    let at = expires_at.filter(|at| *at <= now)?;
    Some(format!("expired at {}", super::outcome::utc(at)))
}
