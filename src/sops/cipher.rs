//! One sealed value: `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]`, AES-256-GCM with the data
//! key, a 32-byte nonce (sops's), and the value's tree path as additional data.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::aes::Aes256;
use aes_gcm::AesGcm;
use base64::Engine as _;
use serde_json::Value;
use zeroize::Zeroizing;

/// AES-256-GCM with sops's 32-byte nonces.
type SopsGcm = AesGcm<Aes256, aes_gcm::aead::consts::U32>;

/// What is wrong with one sealed value (never its content).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("is not in sops's format `ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]`")]
    Format,
    #[error("has a {0} that is not valid base64")]
    Base64(&'static str),
    #[error("has an iv of {0} bytes; sops writes 32")]
    IvLength(usize),
    #[error("has a tag of {0} bytes; sops writes 16")]
    TagLength(usize),
    #[error(
        "does not open with the data key (changed after encryption, or moved to another path)"
    )]
    Authentication,
    #[error("has an unknown type `{0}` (sops writes str, int, float, bool, bytes, comment)")]
    Type(String),
    #[error("does not hold the {0} its type says")]
    Content(&'static str),
}

/// A decrypted value, typed as sops types it.
#[derive(Debug, Clone, PartialEq)]
pub enum Plain {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Bytes(Vec<u8>),
    Comment(String),
}

impl Plain {
    /// The bytes sops feeds the MAC for this value (`ToBytes` in sops.go).
    pub fn mac_bytes(&self) -> Vec<u8> {
        match self {
            Plain::Str(s) | Plain::Comment(s) => s.as_bytes().to_vec(),
            Plain::Int(i) => i.to_string().into_bytes(),
            Plain::Float(f) => format_float(*f).into_bytes(),
            Plain::Bool(true) => b"True".to_vec(),
            Plain::Bool(false) => b"False".to_vec(),
            Plain::Bytes(b) => b.clone(),
        }
    }

    /// As a JSON value in the document tree.
    pub fn into_value(self) -> Value {
        match self {
            Plain::Str(s) | Plain::Comment(s) => Value::String(s),
            Plain::Int(i) => Value::from(i),
            Plain::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
            Plain::Bool(b) => Value::Bool(b),
            Plain::Bytes(b) => Value::String(String::from_utf8_lossy(&b).into_owned()),
        }
    }
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`: shortest round-trip digits, no exponent.
/// Rust's `Display` for f64 prints the same (`1`, `0.1`, `1000000000000000000000`).
pub fn format_float(f: f64) -> String {
    format!("{f}")
}

/// Whether a string is a sealed value as sops recognises one (its `^ENC\[AES256_GCM,…\]`).
#[cfg(test)]
pub fn is_sealed(s: &str) -> bool {
    parse(s).is_ok()
}

struct Sealed {
    data: Vec<u8>,
    iv: Vec<u8>,
    tag: Vec<u8>,
    kind: String,
}

fn parse(s: &str) -> Result<Sealed, ValueError> {
    let body = s
        .strip_prefix("ENC[AES256_GCM,")
        .and_then(|rest| rest.strip_suffix(']'))
        .ok_or(ValueError::Format)?;
    let mut fields = [None; 4];
    for part in body.split(',') {
        let (name, value) = part.split_once(':').ok_or(ValueError::Format)?;
        let slot = match name {
            "data" => 0,
            "iv" => 1,
            "tag" => 2,
            "type" => 3,
            _ => return Err(ValueError::Format),
        };
        fields[slot] = Some(value);
    }
    let [Some(data), Some(iv), Some(tag), Some(kind)] = fields else {
        return Err(ValueError::Format);
    };
    let b64 = |what: &'static str, text: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|_| ValueError::Base64(what))
    };
    Ok(Sealed {
        data: b64("data", data)?,
        iv: b64("iv", iv)?,
        tag: b64("tag", tag)?,
        kind: kind.to_string(),
    })
}

/// A data key made ready to open values (its AES key schedule), once per file, not per value.
pub struct DataKey(SopsGcm);

impl DataKey {
    pub fn new(key: &[u8; 32]) -> DataKey {
        DataKey(SopsGcm::new(key.into()))
    }
}

/// Open a sealed value with the data key; `aad` is its path joined and ended by `:`.
#[cfg(test)]
pub fn decrypt(sealed: &str, key: &[u8; 32], aad: &str) -> Result<Plain, ValueError> {
    open(sealed, &DataKey::new(key), aad)
}

/// [`decrypt`] with a prepared [`DataKey`].
pub fn open(sealed: &str, key: &DataKey, aad: &str) -> Result<Plain, ValueError> {
    // sops leaves empty values as they are (its cipher.go `isEmpty`).
    if sealed.is_empty() {
        return Ok(Plain::Str(String::new()));
    }
    let sealed = parse(sealed)?;
    if sealed.iv.len() != 32 {
        return Err(ValueError::IvLength(sealed.iv.len()));
    }
    if sealed.tag.len() != 16 {
        return Err(ValueError::TagLength(sealed.tag.len()));
    }
    let cipher = &key.0;
    let mut message = sealed.data;
    message.extend_from_slice(&sealed.tag);
    let nonce = aes_gcm::Nonce::<aes_gcm::aead::consts::U32>::try_from(&sealed.iv[..])
        .map_err(|_| ValueError::IvLength(sealed.iv.len()))?;
    let plain = Zeroizing::new(
        cipher
            .decrypt(
                &nonce,
                Payload {
                    msg: &message,
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| ValueError::Authentication)?,
    );
    let text = || std::str::from_utf8(&plain).map_err(|_| ValueError::Content("text"));
    Ok(match sealed.kind.as_str() {
        "str" => Plain::Str(text()?.to_string()),
        "int" | "int64" => Plain::Int(
            text()?
                .parse()
                .map_err(|_| ValueError::Content("integer"))?,
        ),
        "float" => Plain::Float(text()?.parse().map_err(|_| ValueError::Content("number"))?),
        // Go's strconv.ParseBool.
        "bool" => Plain::Bool(match text()? {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => true,
            "0" | "f" | "F" | "FALSE" | "false" | "False" => false,
            _ => return Err(ValueError::Content("boolean")),
        }),
        "bytes" => Plain::Bytes(plain.to_vec()),
        "comment" => Plain::Comment(text()?.to_string()),
        other => return Err(ValueError::Type(other.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_go_does() {
        assert_eq!(format_float(1.0), "1");
        assert_eq!(format_float(0.1), "0.1");
        assert_eq!(format_float(1e21), "1000000000000000000000");
        assert_eq!(format_float(-2.5), "-2.5");
    }

    #[test]
    fn sealed_values_are_recognised_strictly() {
        assert!(!is_sealed("ENC[AES256_GCM,data:abc]"));
        assert!(!is_sealed("plain"));
        assert!(is_sealed(
            "ENC[AES256_GCM,data:AAAA,iv:AAAA,tag:AAAA,type:str]"
        ));
        assert!(matches!(
            decrypt(
                "ENC[AES256_GCM,data:!!,iv:AAAA,tag:AAAA,type:str]",
                &[0; 32],
                "a:"
            ),
            Err(ValueError::Base64("data"))
        ));
    }
}
