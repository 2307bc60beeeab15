//! X.509 certificates as Sprig's `getBaseCertTemplate` and Go's `x509.CreateCertificate`
//! build them: v3, a 128-bit random serial, subject CN only, NotBefore now and NotAfter `days`
//! later, key usages digitalSignature and keyEncipherment (plus keyCertSign for a CA),
//! extended usages serverAuth and clientAuth, basic constraints (critical), a SHA-1 subject
//! key id on CAs, the CA's key id as authority key id, SANs (DNS names, then IPs), in Go's
//! order of extensions.

use std::net::IpAddr;
use std::time::Duration;

use x509_cert::attr::AttributeTypeAndValue;
use x509_cert::der::asn1::{
    Any, BitString, GeneralizedTime, Ia5String, ObjectIdentifier, OctetString, SetOfVec, UtcTime,
};
use x509_cert::der::{DateTime, Decode, Encode, Tag};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, SubjectAltName,
    SubjectKeyIdentifier,
};
use x509_cert::ext::Extension;
use x509_cert::name::{Name, RdnSequence, RelativeDistinguishedName};
use x509_cert::serial_number::SerialNumber;
use x509_cert::time::{Time, Validity};
use x509_cert::{Certificate, TbsCertificate};

use super::keys::{self, Key};

const COMMON_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.3");
const KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.15");
const EXT_KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.37");
const BASIC_CONSTRAINTS: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.19");
const SUBJECT_KEY_ID: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.14");
const AUTHORITY_KEY_ID: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.35");
const SUBJECT_ALT_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");
const SERVER_AUTH: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.1");
const CLIENT_AUTH: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.2");

/// Go's `x509.KeyUsage` bits Sprig sets.
const DIGITAL_SIGNATURE: u16 = 1;
const KEY_ENCIPHERMENT: u16 = 1 << 2;
const CERT_SIGN: u16 = 1 << 5;

/// What a Sprig certificate says besides its keys.
pub struct Template {
    pub cn: String,
    pub ips: Vec<IpAddr>,
    pub dns_names: Vec<String>,
    pub days: i64,
    pub is_ca: bool,
    /// 16 random bytes: `rand.Int(rand.Reader, 2^128)`.
    pub serial: [u8; 16],
    /// Unix seconds (the render's `now`).
    pub now: i64,
}

/// The certificate that signs: its parsed form and its key.
pub struct Parent<'a> {
    pub cert: &'a Certificate,
    pub key: &'a Key,
}

/// Go's `x509.ParseCertificate` of a certificate's DER bytes.
pub fn parse_cert_der(der: &[u8]) -> Result<Certificate, String> {
    Certificate::from_der(der).map_err(|e| e.to_string())
}

/// Go's `CreateCertificate(template, parent, signee's public key, signing key)`, as PEM; the
/// parent is the template itself (self-signed) when `parent` is `None`.
pub fn create(template: &Template, signee: &Key, parent: Option<Parent>) -> Result<String, String> {
    let signing_key = parent.as_ref().map_or(signee, |p| p.key);
    let signature = keys::signature_algorithm(signing_key)?;
    let spki = keys::public_key_info(signee)?;
    let subject = name_of(&template.cn)?;
    let (issuer, parent_key_id) = match &parent {
        Some(p) => {
            let signer_public = keys::public_key_info(p.key)?;
            if signer_public != p.cert.tbs_certificate.subject_public_key_info {
                return Err("x509: provided PrivateKey doesn't match parent's PublicKey".into());
            }
            (
                p.cert.tbs_certificate.subject.clone(),
                subject_key_id(p.cert),
            )
        }
        None => (subject.clone(), None),
    };
    // Go: a CA without an explicit key id gets the SHA-1 of its public key bits.
    let own_key_id = template.is_ca.then(|| {
        use sha1::Digest as _;
        sha1::Sha1::digest(spki.subject_public_key.raw_bytes()).to_vec()
    });
    let authority_key_id = parent_key_id.filter(|_| issuer != subject);

    let mut extensions = vec![
        extension(KEY_USAGE, true, key_usage(template.is_ca))?,
        extension(
            EXT_KEY_USAGE,
            false,
            der(&ExtendedKeyUsage(vec![SERVER_AUTH, CLIENT_AUTH]))?,
        )?,
        extension(
            BASIC_CONSTRAINTS,
            true,
            der(&BasicConstraints {
                ca: template.is_ca,
                path_len_constraint: None,
            })?,
        )?,
    ];
    if let Some(id) = own_key_id {
        let id = OctetString::new(id).map_err(|e| e.to_string())?;
        extensions.push(extension(
            SUBJECT_KEY_ID,
            false,
            der(&SubjectKeyIdentifier(id))?,
        )?);
    }
    if let Some(id) = authority_key_id {
        let aki = AuthorityKeyIdentifier {
            key_identifier: Some(OctetString::new(id).map_err(|e| e.to_string())?),
            authority_cert_issuer: None,
            authority_cert_serial_number: None,
        };
        extensions.push(extension(AUTHORITY_KEY_ID, false, der(&aki)?)?);
    }
    if !template.dns_names.is_empty() || !template.ips.is_empty() {
        let mut names = Vec::new();
        for dns in &template.dns_names {
            let name = Ia5String::new(dns)
                .map_err(|_| format!("x509: {dns:?} cannot be encoded as an IA5String"))?;
            names.push(GeneralName::DnsName(name));
        }
        for ip in &template.ips {
            let bytes = match ip {
                IpAddr::V4(v4) => v4.octets().to_vec(),
                IpAddr::V6(v6) => v6.octets().to_vec(),
            };
            let bytes = OctetString::new(bytes).map_err(|e| e.to_string())?;
            names.push(GeneralName::IpAddress(bytes));
        }
        // Critical only when the subject is empty (RFC 5280 4.2.1.6).
        let critical = template.cn.is_empty();
        extensions.push(extension(
            SUBJECT_ALT_NAME,
            critical,
            der(&SubjectAltName(names))?,
        )?);
    }

    let not_after = template
        .now
        .checked_add(template.days.saturating_mul(86_400))
        .ok_or("x509: validity out of range")?;
    let tbs = TbsCertificate {
        version: x509_cert::certificate::Version::V3,
        serial_number: SerialNumber::new(&template.serial).map_err(|e| e.to_string())?,
        signature: signature.clone(),
        issuer,
        validity: Validity {
            not_before: go_time(template.now)?,
            not_after: go_time(not_after)?,
        },
        subject,
        subject_public_key_info: spki,
        issuer_unique_id: None,
        subject_unique_id: None,
        extensions: Some(extensions),
    };
    let tbs_der = der(&tbs)?;
    let signature_bits = keys::sign(signing_key, &tbs_der)?;
    let cert = Certificate {
        tbs_certificate: tbs,
        signature_algorithm: signature,
        signature: BitString::from_bytes(&signature_bits).map_err(|e| e.to_string())?,
    };
    Ok(keys::pem_encode("CERTIFICATE", &der(&cert)?))
}

fn der(value: &impl Encode) -> Result<Vec<u8>, String> {
    value.to_der().map_err(|e| e.to_string())
}

fn extension(id: ObjectIdentifier, critical: bool, value: Vec<u8>) -> Result<Extension, String> {
    Ok(Extension {
        extn_id: id,
        critical,
        extn_value: OctetString::new(value).map_err(|e| e.to_string())?,
    })
}

/// Go's `marshalKeyUsage`: the usage bits as a BIT STRING without trailing zero bits.
fn key_usage(is_ca: bool) -> Vec<u8> {
    let bits = if is_ca {
        DIGITAL_SIGNATURE | KEY_ENCIPHERMENT | CERT_SIGN
    } else {
        DIGITAL_SIGNATURE | KEY_ENCIPHERMENT
    };
    // Bit 0 of the usage is the first (most significant) bit of the string.
    let byte = (bits as u8).reverse_bits();
    let unused = byte.trailing_zeros() as u8;
    vec![0x03, 0x02, unused, byte]
}

/// `pkix.Name{CommonName: cn}` as Go marshals it: no attribute for an empty CN; a
/// PrintableString when every character is in its set, else a UTF8String.
fn name_of(cn: &str) -> Result<Name, String> {
    if cn.is_empty() {
        return Ok(RdnSequence(Vec::new()));
    }
    let printable = cn
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b" '()+,-./:=?".contains(&b));
    let tag = if printable {
        Tag::PrintableString
    } else {
        Tag::Utf8String
    };
    let value = Any::new(tag, cn.as_bytes()).map_err(|e| e.to_string())?;
    let atv = AttributeTypeAndValue {
        oid: COMMON_NAME,
        value,
    };
    let set = SetOfVec::try_from(vec![atv]).map_err(|e| e.to_string())?;
    Ok(RdnSequence(vec![RelativeDistinguishedName(set)]))
}

/// Go's time encoding in certificates: UTCTime for 1950 to 2049, GeneralizedTime otherwise.
fn go_time(unix: i64) -> Result<Time, String> {
    let seconds = u64::try_from(unix).map_err(|_| "x509: times before 1970 are not supported")?;
    let at =
        DateTime::from_unix_duration(Duration::from_secs(seconds)).map_err(|e| e.to_string())?;
    if at.year() < 2050 {
        UtcTime::from_date_time(at)
            .map(Time::UtcTime)
            .map_err(|e| e.to_string())
    } else {
        Ok(Time::GeneralTime(GeneralizedTime::from_date_time(at)))
    }
}

/// The subject key id a certificate carries, if any.
fn subject_key_id(cert: &Certificate) -> Option<Vec<u8>> {
    let ext = cert
        .tbs_certificate
        .extensions
        .as_ref()?
        .iter()
        .find(|e| e.extn_id == SUBJECT_KEY_ID)?;
    let id = SubjectKeyIdentifier::from_der(ext.extn_value.as_bytes()).ok()?;
    Some(id.0.as_bytes().to_vec())
}
