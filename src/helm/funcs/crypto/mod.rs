//! Sprig's crypto functions with its argument lists, results and messages: `genPrivateKey`,
//! `genCA`, `genSelfSignedCert`, `genSignedCert` (and their `WithKey` forms),
//! `buildCustomCert`, `bcrypt`, `htpasswd`, `derivePassword`, `encryptAES`/`decryptAES`,
//! `sha512sum`. Every random draw (keys, serials, salts, IVs) comes from the render's seeded
//! stream and every time from its `now`, so a cluster gets the same text on every run.

mod certs;
mod keys;

use std::collections::BTreeMap;
use std::net::IpAddr;

use base64::Engine as _;

use super::conv::{want_int, want_str};
use crate::helm::template::builtins::exact;
use crate::helm::template::{CallError, Engine, RenderContext, Value};
use keys::Key;

/// The functions that draw nothing random.
pub fn register(engine: &mut Engine) {
    engine.register("derivePassword", |_, args| {
        let [counter, kind, password, user, site] = exact::<5>(args, "derivePassword")?;
        Ok(Value::str(derive_password(
            want_int(&counter)? as u32,
            want_str(&kind)?,
            want_str(&password)?,
            want_str(&user)?,
            want_str(&site)?,
        )))
    });
    engine.register("decryptAES", |_, args| {
        let [key, text] = exact::<2>(args, "decryptAES")?;
        Ok(Value::str(decrypt_aes(want_str(&key)?, want_str(&text)?)?))
    });
    engine.register("buildCustomCert", |_, args| {
        let [cert, key] = exact::<2>(args, "buildCustomCert")?;
        build_custom_cert(want_str(&cert)?, want_str(&key)?)
    });
    engine.register("sha512sum", |_, args| {
        use sha2::Digest as _;
        let [v] = exact::<1>(args, "sha512sum")?;
        Ok(Value::str(hex::encode(sha2::Sha512::digest(
            want_str(&v)?.as_bytes(),
        ))))
    });
}

/// The functions that draw from the render's seeded stream (`register_random`).
pub fn register_random(engine: &mut Engine) {
    engine.register("genPrivateKey", |exec, args| {
        let [kind] = exact::<1>(args, "genPrivateKey")?;
        Ok(Value::str(generate_private_key(
            exec.context(),
            want_str(&kind)?,
        )))
    });
    engine.register("genCA", |exec, args| {
        let [cn, days] = exact::<2>(args, "genCA")?;
        let mut rng = keys::seeded_rng(exec.context());
        let key = new_rsa_key(&mut rng)?;
        let template = template(exec.context(), &cn, None, None, &days, true, &mut rng)?;
        certificate(&template, &key, None)
    });
    engine.register("genCAWithKey", |exec, args| {
        let [cn, days, key] = exact::<3>(args, "genCAWithKey")?;
        let key = parse_key(&key)?;
        let template = template(
            exec.context(),
            &cn,
            None,
            None,
            &days,
            true,
            &mut keys::seeded_rng(exec.context()),
        )?;
        certificate(&template, &key, None)
    });
    engine.register("genSelfSignedCert", |exec, args| {
        let [cn, ips, dns, days] = exact::<4>(args, "genSelfSignedCert")?;
        let mut rng = keys::seeded_rng(exec.context());
        let key = new_rsa_key(&mut rng)?;
        let template = template(
            exec.context(),
            &cn,
            Some(&ips),
            Some(&dns),
            &days,
            false,
            &mut rng,
        )?;
        certificate(&template, &key, None)
    });
    engine.register("genSelfSignedCertWithKey", |exec, args| {
        let [cn, ips, dns, days, key] = exact::<5>(args, "genSelfSignedCertWithKey")?;
        let key = parse_key(&key)?;
        let mut rng = keys::seeded_rng(exec.context());
        let template = template(
            exec.context(),
            &cn,
            Some(&ips),
            Some(&dns),
            &days,
            false,
            &mut rng,
        )?;
        certificate(&template, &key, None)
    });
    engine.register("genSignedCert", |exec, args| {
        let [cn, ips, dns, days, ca] = exact::<5>(args, "genSignedCert")?;
        let mut rng = keys::seeded_rng(exec.context());
        let key = new_rsa_key(&mut rng)?;
        signed_certificate(
            exec.context(),
            (&cn, &ips, &dns, &days),
            &ca,
            &key,
            &mut rng,
        )
    });
    engine.register("genSignedCertWithKey", |exec, args| {
        let [cn, ips, dns, days, ca, key] = exact::<6>(args, "genSignedCertWithKey")?;
        let key = parse_key(&key)?;
        let mut rng = keys::seeded_rng(exec.context());
        signed_certificate(
            exec.context(),
            (&cn, &ips, &dns, &days),
            &ca,
            &key,
            &mut rng,
        )
    });
    engine.register("bcrypt", |exec, args| {
        let [input] = exact::<1>(args, "bcrypt")?;
        Ok(Value::str(bcrypt(exec.context(), want_str(&input)?)))
    });
    // Helm's Sprig (v3.3) takes two arguments; the `sha` form came after it.
    engine.register("htpasswd", |exec, args| {
        let [user, password] = exact::<2>(args, "htpasswd")?;
        let user = want_str(&user)?;
        if user.contains(':') {
            return Ok(Value::str(format!("invalid username: {user}")));
        }
        Ok(Value::str(format!(
            "{user}:{}",
            bcrypt(exec.context(), want_str(&password)?)
        )))
    });
    engine.register("encryptAES", |exec, args| {
        let [key, text] = exact::<2>(args, "encryptAES")?;
        Ok(Value::str(encrypt_aes(
            exec.context(),
            want_str(&key)?,
            want_str(&text)?,
        )))
    });
}

/// Sprig's `generatePrivateKey`: failures are its text, not errors.
fn generate_private_key(context: &RenderContext, kind: &str) -> String {
    let mut rng = keys::seeded_rng(context);
    let key = match kind {
        "" | "rsa" => keys::generate_rsa(&mut rng, 4096),
        "dsa" => {
            return keys::generate_dsa_pem(&mut rng)
                .unwrap_or_else(|e| format!("failed to generate private key: {e}"))
        }
        "ecdsa" => Ok(keys::generate_ecdsa(&mut rng)),
        "ed25519" => Ok(keys::generate_ed25519(&mut rng)),
        other => return format!("Unknown type {other}"),
    };
    match key.and_then(|k| keys::key_pem(&k)) {
        Ok(pem) => pem,
        Err(e) => format!("failed to generate private key: {e}"),
    }
}

fn new_rsa_key(rng: &mut rand_chacha::ChaCha20Rng) -> Result<Key, CallError> {
    keys::generate_rsa(rng, 2048)
        .map_err(|e| CallError::from(format!("error generating rsa key: {e}")))
}

fn parse_key(pem: &Value) -> Result<Key, CallError> {
    keys::parse_key_pem(want_str(pem)?)
        .map_err(|e| CallError::from(format!("parsing private key: {e}")))
}

/// Sprig's `getBaseCertTemplate` (with its messages) and a CA's overrides.
fn template(
    context: &RenderContext,
    cn: &Value,
    ips: Option<&Value>,
    dns: Option<&Value>,
    days: &Value,
    is_ca: bool,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Result<certs::Template, CallError> {
    let cn = want_str(cn)?.to_string();
    let days = want_int(days)?;
    let mut addresses = Vec::new();
    for ip in list_arg(ips)? {
        let Value::Str(text) = ip else {
            return Err(format!(
                "error parsing ip: {} is not a string",
                super::conv::strval(ip)
            )
            .into());
        };
        addresses.push(parse_ip(text).ok_or_else(|| format!("error parsing ip: {text}"))?);
    }
    let mut dns_names = Vec::new();
    for name in list_arg(dns)? {
        let Value::Str(text) = name else {
            return Err(format!(
                "error processing alternate dns name: {} is not a string",
                super::conv::strval(name)
            )
            .into());
        };
        dns_names.push(text.to_string());
    }
    Ok(certs::Template {
        cn,
        ips: addresses,
        dns_names,
        days,
        is_ca,
        serial: keys::random_bytes(rng),
        now: context.now(),
    })
}

/// A `[]interface{}` parameter: a list, or nil for none.
fn list_arg(v: Option<&Value>) -> Result<&[Value], CallError> {
    match v {
        None | Some(Value::Nil) => Ok(&[]),
        Some(Value::List(items)) => Ok(items),
        Some(other) => Err(format!(
            "wrong type for value; expected []interface {{}}; got {}",
            other.type_name()
        )
        .into()),
    }
}

/// Go's `net.ParseIP`, IPv4-mapped IPv6 addresses being IPv4 (`To4` in `marshalSANs`).
fn parse_ip(text: &str) -> Option<IpAddr> {
    match text.parse::<IpAddr>().ok()? {
        IpAddr::V6(v6) => Some(v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)),
        v4 => Some(v4),
    }
}

/// Sprig's `certificate` struct: `.Cert` and `.Key`, PEM.
fn certificate_value(cert: String, key: String) -> Value {
    Value::map(BTreeMap::from([
        ("Cert".to_string(), Value::str(cert)),
        ("Key".to_string(), Value::str(key)),
    ]))
}

/// Sprig's `getCertAndKey`: the certificate and the signee's key, re-encoded as
/// `genPrivateKey` writes it.
fn certificate(
    template: &certs::Template,
    key: &Key,
    parent: Option<certs::Parent>,
) -> Result<Value, CallError> {
    let cert = certs::create(template, key, parent)
        .map_err(|e| CallError::from(format!("error creating certificate: {e}")))?;
    let key =
        keys::key_pem(key).map_err(|e| CallError::from(format!("error pem-encoding key: {e}")))?;
    Ok(certificate_value(cert, key))
}

/// A `certificate` argument: what `genCA` or `buildCustomCert` returned.
fn certificate_arg(ca: &Value) -> Result<(String, String), CallError> {
    let Value::Map(fields) = ca else {
        return Err(format!(
            "wrong type for value; expected sprig.certificate; got {}",
            ca.type_name()
        )
        .into());
    };
    let fields = fields.borrow();
    let field = |name: &str| match fields.get(name) {
        Some(Value::Str(s)) => s.to_string(),
        _ => String::new(),
    };
    Ok((field("Cert"), field("Key")))
}

/// Sprig's `generateSignedCertificateWithKeyInternal`.
fn signed_certificate(
    context: &RenderContext,
    (cn, ips, dns, days): (&Value, &Value, &Value, &Value),
    ca: &Value,
    key: &Key,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Result<Value, CallError> {
    let (ca_cert, ca_key) = certificate_arg(ca)?;
    let (_, der) = keys::pem_decode(&ca_cert).ok_or("unable to decode certificate")?;
    let signer = certs::parse_cert_der(&der).map_err(|e| {
        CallError::from(format!(
            "error parsing certificate: decodedSignerCert.Bytes: {e}"
        ))
    })?;
    let signer_key = keys::parse_key_pem(&ca_key)
        .map_err(|e| CallError::from(format!("error parsing private key: {e}")))?;
    let template = template(context, cn, Some(ips), Some(dns), days, false, rng)?;
    let parent = certs::Parent {
        cert: &signer,
        key: &signer_key,
    };
    certificate(&template, key, Some(parent))
}

/// Sprig's `buildCustomCertificate`: checks both, returns them as given.
fn build_custom_cert(b64_cert: &str, b64_key: &str) -> Result<Value, CallError> {
    let cert = go_base64(b64_cert).ok_or("unable to decode base64 certificate")?;
    let key = go_base64(b64_key).ok_or("unable to decode base64 private key")?;
    let cert = String::from_utf8_lossy(&cert).into_owned();
    let key = String::from_utf8_lossy(&key).into_owned();
    let (_, der) = keys::pem_decode(&cert).ok_or("unable to decode certificate")?;
    certs::parse_cert_der(&der).map_err(|e| {
        CallError::from(format!("error parsing certificate: decodedCert.Bytes: {e}"))
    })?;
    keys::parse_key_pem(&key)
        .map_err(|e| CallError::from(format!("error parsing private key: {e}")))?;
    Ok(certificate_value(cert, key))
}

/// Go's `base64.StdEncoding.DecodeString`, which skips line breaks.
fn go_base64(text: &str) -> Option<Vec<u8>> {
    let text: String = text.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// Go's bcrypt at its default cost (10), `$2a$`, with a salt from the seeded stream.
fn bcrypt(context: &RenderContext, input: &str) -> String {
    let salt = keys::random_bytes(&mut keys::seeded_rng(context));
    if input.len() > 72 {
        return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
            .into();
    }
    match ::bcrypt::hash_with_salt(input, 10, salt) {
        Ok(parts) => parts.format_for_version(::bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

const MASTER_PASSWORD_SEED: &str = "com.lyndir.masterpassword";

/// Master Password's templates, by password type.
fn password_templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

fn template_characters(class: u8) -> &'static [u8] {
    match class {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        _ => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
    }
}

/// Master Password's algorithm as Sprig runs it: scrypt(N=32768, r=8, p=2) of the password
/// salted with the user, HMAC-SHA256 of the site and counter, characters from a template.
fn derive_password(counter: u32, kind: &str, password: &str, user: &str, site: &str) -> String {
    use hmac::{KeyInit as _, Mac as _};
    let Some(templates) = password_templates(kind) else {
        return format!("cannot find password template {kind}");
    };
    let mut salt = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    salt.extend((user.len() as u32).to_be_bytes());
    salt.extend(user.as_bytes());
    let mut key = [0u8; 64];
    let derived = scrypt::Params::new(15, 8, 2, 64)
        .map_err(|e| e.to_string())
        .and_then(|params| {
            scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key).map_err(|e| e.to_string())
        });
    if let Err(e) = derived {
        return format!("failed to derive password: {e}");
    }
    let mut message = MASTER_PASSWORD_SEED.as_bytes().to_vec();
    message.extend((site.len() as u32).to_be_bytes());
    message.extend(site.as_bytes());
    message.extend(counter.to_be_bytes());
    let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key) else {
        return "failed to derive password: bad key".into();
    };
    mac.update(&message);
    let seed = mac.finalize().into_bytes();
    let template = templates[seed[0] as usize % templates.len()];
    template
        .bytes()
        .enumerate()
        .map(|(i, class)| {
            let chars = template_characters(class);
            chars[seed[i + 1] as usize % chars.len()] as char
        })
        .collect()
}

/// Sprig's AES key: the text's bytes in 32 zero bytes (AES-256), cut if longer.
fn aes_key(password: &str) -> [u8; 32] {
    let mut key = [0u8; 32];
    let n = password.len().min(32);
    key[..n].copy_from_slice(&password.as_bytes()[..n]);
    key
}

/// Sprig's `encryptAES`: AES-256-CBC with PKCS#7 padding, base64 of IV then ciphertext.
fn encrypt_aes(context: &RenderContext, password: &str, text: &str) -> String {
    use cbc::cipher::{BlockModeEncrypt as _, KeyIvInit as _};
    if text.is_empty() {
        return String::new();
    }
    let iv: [u8; 16] = keys::random_bytes(&mut keys::seeded_rng(context));
    let encryptor = cbc::Encryptor::<aes::Aes256>::new(&aes_key(password).into(), &iv.into());
    // Room for the IV, the text and a block of padding.
    let mut out = iv.to_vec();
    out.extend(text.as_bytes());
    out.resize(16 + (text.len() / 16 + 1) * 16, 0);
    let sealed_len = encryptor
        .encrypt_padded::<cbc::cipher::block_padding::Pkcs7>(&mut out[16..], text.len())
        .map(<[u8]>::len)
        .unwrap_or(0);
    out.truncate(16 + sealed_len);
    base64::engine::general_purpose::STANDARD.encode(out)
}

/// Sprig's `decryptAES`; it trusts the last byte as the padding length, so a wrong key gives
/// garbage rather than an error. Where Go panics (too short, not whole blocks), an error.
fn decrypt_aes(password: &str, text: &str) -> Result<String, CallError> {
    use cbc::cipher::{BlockModeDecrypt as _, KeyIvInit as _};
    if text.is_empty() {
        return Ok(String::new());
    }
    let data = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| CallError::from(format!("illegal base64 data: {e}")))?;
    if data.len() < 32 || data.len() % 16 != 0 {
        return Err("crypto/cipher: input not full blocks".into());
    }
    let (iv, sealed) = data.split_at(16);
    let mut iv16 = [0u8; 16];
    iv16.copy_from_slice(iv);
    let decryptor = cbc::Decryptor::<aes::Aes256>::new(&aes_key(password).into(), &iv16.into());
    let mut plain = sealed.to_vec();
    let plain = decryptor
        .decrypt_padded::<cbc::cipher::block_padding::NoPadding>(&mut plain)
        .map_err(|e| CallError::from(e.to_string()))?;
    let pad = plain.last().copied().unwrap_or(0) as usize;
    if pad > plain.len() {
        return Err("runtime error: slice bounds out of range".into());
    }
    Ok(String::from_utf8_lossy(&plain[..plain.len() - pad]).into_owned())
}

#[cfg(test)]
mod tests;
