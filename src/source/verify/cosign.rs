//! cosign signatures made with a key pair (`cosign sign --key cosign.key`): the registry holds
//! them beside the artifact under the tag `sha256-<manifest digest>.sig`, one layer per
//! signature whose blob is the "simple signing" payload (naming the signed manifest's digest)
//! and whose annotation `dev.cosignproject.cosign/signature` is the base64 ECDSA P-256 /
//! SHA-256 signature of that payload. Keyless signatures (a Fulcio certificate, a Rekor
//! entry) need the network and are not checked.

use super::outcome::{KeyFileError, Refusal, Signer};
use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;

/// The annotation of a signature layer holding the signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The annotation of a keyless signature's certificate.
pub const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
/// The media type of a signature layer.
pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// A cosign public key (`cosign.pub`).
#[derive(Clone)]
pub struct CosignKey {
    key: VerifyingKey,
    /// `SHA256:<hex>` of the key's DER encoding, as messages name it.
    fingerprint: String,
    origin: String,
}

/// The public keys of one PEM text.
pub fn read_keys(origin: &str, text: &str) -> Result<Vec<CosignKey>, KeyFileError> {
    let mut keys = Vec::new();
    let begin = "-----BEGIN PUBLIC KEY-----";
    let end = "-----END PUBLIC KEY-----";
    let mut rest = text;
    while let Some(start) = rest.find(begin) {
        let Some(stop) = rest[start..].find(end).map(|i| start + i + end.len()) else {
            break;
        };
        let pem = &rest[start..stop];
        let key = VerifyingKey::from_public_key_pem(pem).map_err(|e| KeyFileError {
            origin: origin.to_string(),
            message: format!(
                "not a cosign ECDSA P-256 public key ({e}); tend checks the keys `cosign \
                 generate-key-pair` makes"
            ),
        })?;
        let der = key.to_encoded_point(false);
        let digest = <sha2::Sha256 as sha2::Digest>::digest(der.as_bytes());
        keys.push(CosignKey {
            key,
            fingerprint: format!("SHA256:{}", hex::encode(&digest[..16])),
            origin: origin.to_string(),
        });
        rest = &rest[stop..];
    }
    Ok(keys)
}

/// One signature as the registry holds it.
pub struct CosignSignature {
    pub payload: Vec<u8>,
    /// The base64 signature, when the layer has one.
    pub signature: Option<String>,
    /// Whether it carries a Fulcio certificate (made keyless).
    pub keyless: bool,
}

/// Checks the signatures of the artifact whose manifest digest is `manifest_digest`
/// (`sha256:<hex>`): one made by a trusted key over a payload naming that digest is enough.
pub fn check(
    manifest_digest: &str,
    signatures: &[CosignSignature],
    keys: &[CosignKey],
) -> Result<Signer, Refusal> {
    if signatures.is_empty() {
        return Err(Refusal::Unsigned);
    }
    let mut refusal = Refusal::Unsigned;
    for signature in signatures {
        let Some(encoded) = &signature.signature else {
            continue;
        };
        let names_it = payload_digest(&signature.payload).as_deref() == Some(manifest_digest);
        let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, encoded)
            .ok()
            .and_then(|der| Signature::from_der(&der).ok());
        for key in keys {
            let Some(bytes) = &bytes else { continue };
            if key.key.verify(&signature.payload, bytes).is_ok() {
                if !names_it {
                    // A good signature of another artifact, copied here.
                    refusal = Refusal::BadSignature(format!(
                        "cosign key {} (its payload names another digest)",
                        key.fingerprint
                    ));
                    continue;
                }
                return Ok(Signer {
                    scheme: "cosign",
                    fingerprint: key.fingerprint.clone(),
                    identity: key.origin.clone(),
                });
            }
        }
        if matches!(refusal, Refusal::Unsigned) {
            refusal = if signature.keyless {
                Refusal::Unsupported(
                    "keyless (a Fulcio certificate, checked against Rekor: that needs the \
                     network); sign with a key pair (cosign sign --key) and trust its public \
                     key with --trusted-keys"
                        .to_string(),
                )
            } else {
                Refusal::UntrustedKey("a cosign key".to_string())
            };
        }
    }
    Err(refusal)
}

/// The manifest digest a simple-signing payload names.
fn payload_digest(payload: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(payload).ok()?;
    let critical = value.get("critical")?;
    if critical.get("type")?.as_str()? != "cosign container image signature" {
        return None;
    }
    Some(
        critical
            .get("image")?
            .get("docker-manifest-digest")?
            .as_str()?
            .to_string(),
    )
}
