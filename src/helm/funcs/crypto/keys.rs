//! Private keys as Sprig makes, reads and writes them: generated from the render's seeded
//! stream, PEM-encoded as Go's `pemBlockForKey` does (RSA as PKCS#1 `RSA PRIVATE KEY`, ECDSA
//! P-256 as SEC 1 `EC PRIVATE KEY`, Ed25519 as PKCS#8 `PRIVATE KEY`, DSA as OpenSSL's
//! `DSA PRIVATE KEY`), read back as Go's `parsePrivateKeyPEM` does, and signing as Go's
//! `x509.CreateCertificate` does (SHA256-RSA PKCS#1 v1.5, ECDSA-SHA256, pure Ed25519).

use base64::Engine as _;
use ed25519_dalek::pkcs8::EncodePublicKey as _;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::pkcs8::DecodePrivateKey;
use x509_cert::der::asn1::{ObjectIdentifier, UintRef};
use x509_cert::der::{Decode, Encode};
use x509_cert::spki::{AlgorithmIdentifierOwned, SubjectPublicKeyInfoOwned};

use crate::helm::template::RenderContext;

/// A CSPRNG for one function call, seeded from the render's stream (so it marks the render as
/// random). Keys drawn from it are as secret as the cluster's seed (64 bits), which lives
/// only in the cluster (Secret `tend-helm-seed`), never in git: deriving them from it is as
/// safe as keeping that Secret. A fixed number of draws per call keeps later random functions
/// of the template where they were.
pub fn seeded_rng(context: &RenderContext) -> ChaCha20Rng {
    let mut seed = [0u8; 32];
    for chunk in seed.chunks_mut(8) {
        chunk.copy_from_slice(&context.next_random().to_le_bytes());
    }
    ChaCha20Rng::from_seed(seed)
}

/// `n` bytes from `rng`.
pub fn random_bytes<const N: usize>(rng: &mut ChaCha20Rng) -> [u8; N] {
    let mut out = [0u8; N];
    rng.fill_bytes(&mut out);
    out
}

/// A private key of a kind Sprig handles. DSA keys can be made and read, not used in
/// certificates (Go's x509 refuses them too).
pub enum Key {
    Rsa(Box<rsa::RsaPrivateKey>),
    Ecdsa(p256::SecretKey),
    Ed25519(ed25519_dalek::SigningKey),
    Dsa,
}

pub fn generate_rsa(rng: &mut ChaCha20Rng, bits: usize) -> Result<Key, String> {
    rsa::RsaPrivateKey::new(rng, bits)
        .map(|k| Key::Rsa(Box::new(k)))
        .map_err(|e| e.to_string())
}

pub fn generate_ecdsa(rng: &mut ChaCha20Rng) -> Key {
    Key::Ecdsa(p256::SecretKey::random(rng))
}

pub fn generate_ed25519(rng: &mut ChaCha20Rng) -> Key {
    Key::Ed25519(ed25519_dalek::SigningKey::from_bytes(&random_bytes(rng)))
}

/// A DSA key (L2048N256, as Sprig) in OpenSSL's `DSA PRIVATE KEY` form: Go's `DSAKeyFormat`,
/// a sequence of version 0, P, Q, G, Y and X.
pub fn generate_dsa_pem(rng: &mut ChaCha20Rng) -> Result<String, String> {
    let components = dsa::Components::generate(rng, dsa::KeySize::DSA_2048_256);
    let key = dsa::SigningKey::generate(rng, components);
    let public = key.verifying_key();
    let parts = [
        public.components().p().to_bytes_be(),
        public.components().q().to_bytes_be(),
        public.components().g().to_bytes_be(),
        public.y().to_bytes_be(),
        key.x().to_bytes_be(),
    ];
    let mut body = Vec::new();
    UintRef::new(&[0])
        .and_then(|v| v.encode_to_vec(&mut body))
        .map_err(|e| e.to_string())?;
    for part in &parts {
        UintRef::new(part)
            .and_then(|v| v.encode_to_vec(&mut body))
            .map_err(|e| e.to_string())?;
    }
    Ok(pem_encode("DSA PRIVATE KEY", &der_sequence(&body)))
}

/// A DER SEQUENCE around already-encoded `body`.
fn der_sequence(body: &[u8]) -> Vec<u8> {
    let mut out = vec![0x30];
    let len = body.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(body);
    out
}

/// Go's `pemBlockForKey` then `pem.EncodeToMemory`.
pub fn key_pem(key: &Key) -> Result<String, String> {
    let (kind, der) = match key {
        Key::Rsa(k) => (
            "RSA PRIVATE KEY",
            k.to_pkcs1_der()
                .map_err(|e| e.to_string())?
                .as_bytes()
                .to_vec(),
        ),
        Key::Ecdsa(k) => ("EC PRIVATE KEY", ec_private_key_der(k)),
        // Go's PKCS#8 of an Ed25519 key: version 0, the algorithm, the 32-byte seed (no
        // public key, unlike ed25519-dalek's own encoding).
        Key::Ed25519(k) => {
            let mut der = vec![
                0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
                0x04, 0x20,
            ];
            der.extend_from_slice(&k.to_bytes());
            ("PRIVATE KEY", der)
        }
        Key::Dsa => return Err("x509: unknown key type while marshaling PKCS#8: DSA".into()),
    };
    Ok(pem_encode(kind, &der))
}

/// Go's `MarshalECPrivateKey` of a P-256 key: SEC 1 version 1, the scalar, the curve (which
/// the `p256` crate's own encoding leaves out) and the uncompressed public point.
fn ec_private_key_der(key: &p256::SecretKey) -> Vec<u8> {
    use p256::elliptic_curve::sec1::ToEncodedPoint as _;
    let mut der = vec![0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20];
    der.extend_from_slice(&key.to_bytes());
    // [0] prime256v1, then [1] the BIT STRING of the point.
    der.extend_from_slice(&[
        0xa0, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0xa1, 0x44, 0x03,
        0x42, 0x00,
    ]);
    der.extend_from_slice(key.public_key().to_encoded_point(false).as_bytes());
    der
}

/// Go's `pem.EncodeToMemory` of a block without headers: 64-character lines.
pub fn pem_encode(kind: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {kind}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {kind}-----\n"));
    out
}

/// Go's `pem.Decode`, for the first block of `text`: its type and bytes.
pub fn pem_decode(text: &str) -> Option<(String, Vec<u8>)> {
    let begin = text.find("-----BEGIN ")?;
    let rest = &text[begin + "-----BEGIN ".len()..];
    let (kind, rest) = rest.split_once("-----")?;
    let end = rest.find(&format!("-----END {kind}-----"))?;
    // Headers (`Proc-Type: ...`) come before the data, which has no colon.
    let body: String = rest[..end]
        .lines()
        .filter(|line| !line.contains(':'))
        .flat_map(|line| line.chars().filter(|c| !c.is_whitespace()))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .ok()?;
    Some((kind.to_string(), der))
}

/// Go's `parsePrivateKeyPEM` (Sprig), with its messages; of EC keys only P-256, the curve
/// `genPrivateKey` makes.
pub fn parse_key_pem(text: &str) -> Result<Key, String> {
    let (kind, der) = pem_decode(text).ok_or("no PEM data in input")?;
    if kind == "PRIVATE KEY" {
        return parse_pkcs8(&der).map_err(|e| format!("decoding PEM as PKCS#8: {e}"));
    }
    let Some(algorithm) = kind.strip_suffix(" PRIVATE KEY") else {
        return Err(format!("no private key data in PEM block of type {kind}"));
    };
    match algorithm {
        "RSA" => rsa::RsaPrivateKey::from_pkcs1_der(&der)
            .map(|k| Key::Rsa(Box::new(k)))
            .map_err(|e| format!("parsing RSA private key from PEM: {e}")),
        "EC" => p256::SecretKey::from_sec1_der(&der)
            .map(Key::Ecdsa)
            .map_err(|e| format!("parsing EC private key from PEM: {e}")),
        "DSA" => x509_cert::der::asn1::Any::from_der(&der)
            .map(|_| Key::Dsa)
            .map_err(|e| format!("parsing DSA private key from PEM: {e}")),
        _ => Err(format!("invalid private key type {kind}")),
    }
}

const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const SHA256_WITH_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.11");
const ECDSA_WITH_SHA256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");

fn parse_pkcs8(der: &[u8]) -> Result<Key, String> {
    let info = rsa::pkcs8::PrivateKeyInfo::try_from(der).map_err(|e| e.to_string())?;
    match info.algorithm.oid {
        RSA_ENCRYPTION => rsa::RsaPrivateKey::from_pkcs8_der(der)
            .map(|k| Key::Rsa(Box::new(k)))
            .map_err(|e| e.to_string()),
        EC_PUBLIC_KEY => p256::SecretKey::from_pkcs8_der(der)
            .map(Key::Ecdsa)
            .map_err(|e| e.to_string()),
        ED25519 => ed25519_dalek::SigningKey::from_pkcs8_der(der)
            .map(Key::Ed25519)
            .map_err(|e| e.to_string()),
        other => Err(format!(
            "x509: PKCS#8 wrapping contained private key with unknown algorithm: {other}"
        )),
    }
}

/// The public half of `key` as a certificate holds it.
pub fn public_key_info(key: &Key) -> Result<SubjectPublicKeyInfoOwned, String> {
    let der = match key {
        Key::Rsa(k) => {
            use rsa::pkcs8::EncodePublicKey as _;
            k.to_public_key().to_public_key_der()
        }
        Key::Ecdsa(k) => {
            use p256::pkcs8::EncodePublicKey as _;
            k.public_key().to_public_key_der()
        }
        Key::Ed25519(k) => k.verifying_key().to_public_key_der(),
        Key::Dsa => return Err("x509: unsupported public key type: *dsa.PublicKey".into()),
    }
    .map_err(|e| e.to_string())?;
    SubjectPublicKeyInfoOwned::from_der(der.as_bytes()).map_err(|e| e.to_string())
}

/// The algorithm Go's `CreateCertificate` signs with for `key`.
pub fn signature_algorithm(key: &Key) -> Result<AlgorithmIdentifierOwned, String> {
    Ok(match key {
        // PKCS#1 signature algorithms carry an explicit NULL parameter.
        Key::Rsa(_) => AlgorithmIdentifierOwned {
            oid: SHA256_WITH_RSA,
            parameters: Some(x509_cert::der::asn1::Any::null()),
        },
        Key::Ecdsa(_) => AlgorithmIdentifierOwned {
            oid: ECDSA_WITH_SHA256,
            parameters: None,
        },
        Key::Ed25519(_) => AlgorithmIdentifierOwned {
            oid: ED25519,
            parameters: None,
        },
        Key::Dsa => {
            return Err("x509: certificate private key does not implement crypto.Signer".into())
        }
    })
}

/// Signs `message` with `key`. Each signature is a function of key and message alone (PKCS#1
/// v1.5, RFC 6979 ECDSA, Ed25519), so the same render gives the same certificate.
pub fn sign(key: &Key, message: &[u8]) -> Result<Vec<u8>, String> {
    use rsa::signature::{SignatureEncoding as _, Signer as _};
    match key {
        Key::Rsa(k) => {
            let signer = rsa::pkcs1v15::SigningKey::<rsa::sha2::Sha256>::new((**k).clone());
            signer
                .try_sign(message)
                .map(|s| s.to_vec())
                .map_err(|e| e.to_string())
        }
        Key::Ecdsa(k) => {
            let signer = p256::ecdsa::SigningKey::from(k);
            let signature: p256::ecdsa::Signature =
                signer.try_sign(message).map_err(|e| e.to_string())?;
            Ok(signature.to_der().as_bytes().to_vec())
        }
        Key::Ed25519(k) => Ok(k.sign(message).to_bytes().to_vec()),
        Key::Dsa => Err("x509: certificate private key does not implement crypto.Signer".into()),
    }
}
