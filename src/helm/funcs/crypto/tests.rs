//! Sprig's crypto functions: what they make parses back with the RustCrypto crates, says what
//! Sprig's certificates say, and is the same text for the same seed and time.

use rsa::pkcs8::DecodePublicKey as _;
use rsa::signature::Verifier as _;
use x509_cert::der::{Decode, Encode};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{
    AuthorityKeyIdentifier, BasicConstraints, KeyUsage, SubjectAltName, SubjectKeyIdentifier,
};
use x509_cert::Certificate;

use super::keys;
use crate::helm::funcs;
use crate::helm::template::{Engine, Value};

/// 2024-02-29T12:34:56Z.
const NOW: i64 = 1_709_210_096;

fn render_at(seed: u64, now: i64, src: &str) -> Result<String, String> {
    render_drawing(seed, now, src).0
}

/// The text, and whether the render drew from the random stream.
fn render_drawing(seed: u64, now: i64, src: &str) -> (Result<String, String>, bool) {
    let mut engine = Engine::new();
    funcs::register(&mut engine);
    funcs::register_random(&mut engine, seed);
    engine.context().set_now(now);
    let text = engine
        .add("t", src)
        .map_err(|e| e.to_string())
        .and_then(|()| engine.execute("t", Value::Nil).map_err(|e| e.to_string()));
    (text, engine.context().random_used())
}

fn render(seed: u64, src: &str) -> String {
    render_at(seed, NOW, src).unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn cert_of(pem: &str) -> Certificate {
    let (kind, der) = keys::pem_decode(pem).expect("a PEM block");
    assert_eq!(kind, "CERTIFICATE");
    Certificate::from_der(&der).expect("a certificate")
}

fn extension<'a>(cert: &'a Certificate, oid: &str) -> Option<&'a [u8]> {
    cert.tbs_certificate
        .extensions
        .as_ref()?
        .iter()
        .find(|e| e.extn_id.to_string() == oid)
        .map(|e| e.extn_value.as_bytes())
}

fn common_name(cert: &Certificate) -> String {
    cert.tbs_certificate.subject.to_string()
}

fn is_ca(cert: &Certificate) -> bool {
    let bc = extension(cert, "2.5.29.19").expect("basic constraints");
    BasicConstraints::from_der(bc).expect("decodes").ca
}

fn seconds(t: x509_cert::time::Time) -> i64 {
    t.to_unix_duration().as_secs() as i64
}

/// Whether `cert` carries a valid signature of the key in `signer`.
fn signed_by(cert: &Certificate, signer: &Certificate) -> bool {
    let tbs = cert.tbs_certificate.to_der().expect("encodes");
    let signature = cert.signature.raw_bytes();
    let spki = signer
        .tbs_certificate
        .subject_public_key_info
        .to_der()
        .expect("encodes");
    match signer
        .tbs_certificate
        .subject_public_key_info
        .algorithm
        .oid
        .to_string()
        .as_str()
    {
        "1.2.840.113549.1.1.1" => {
            let key = rsa::RsaPublicKey::from_public_key_der(&spki).expect("an RSA key");
            let verifier = rsa::pkcs1v15::VerifyingKey::<rsa::sha2::Sha256>::new(key);
            rsa::pkcs1v15::Signature::try_from(signature)
                .is_ok_and(|s| verifier.verify(&tbs, &s).is_ok())
        }
        "1.2.840.10045.2.1" => {
            let key = p256::ecdsa::VerifyingKey::from_public_key_der(&spki).expect("a P-256 key");
            p256::ecdsa::DerSignature::try_from(signature)
                .is_ok_and(|s| key.verify(&tbs, &s).is_ok())
        }
        "1.3.101.112" => {
            use ed25519_dalek::pkcs8::DecodePublicKey as _;
            let key =
                ed25519_dalek::VerifyingKey::from_public_key_der(&spki).expect("an Ed25519 key");
            ed25519_dalek::Signature::from_slice(signature)
                .is_ok_and(|s| key.verify(&tbs, &s).is_ok())
        }
        other => panic!("unexpected key algorithm {other}"),
    }
}

#[test]
fn gen_ca_is_a_ca_valid_from_now_for_its_days() {
    let out = render(
        7,
        r#"{{ $ca := genCA "foo-ca" 365 }}{{ $ca.Cert }}|{{ $ca.Key }}"#,
    );
    let (cert_pem, key_pem) = out.split_once('|').expect("two parts");
    assert!(cert_pem.starts_with("-----BEGIN CERTIFICATE-----\n"));
    assert!(cert_pem.ends_with("-----END CERTIFICATE-----\n"));
    assert!(cert_pem.lines().all(|l| l.len() <= 64), "{cert_pem}");
    assert!(key_pem.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    let cert = cert_of(cert_pem);
    assert_eq!(common_name(&cert), "CN=foo-ca");
    assert_eq!(cert.tbs_certificate.issuer, cert.tbs_certificate.subject);
    assert!(is_ca(&cert));
    let validity = cert.tbs_certificate.validity;
    assert_eq!(seconds(validity.not_before), NOW);
    assert_eq!(seconds(validity.not_after), NOW + 365 * 86_400);
    let usage = KeyUsage::from_der(extension(&cert, "2.5.29.15").expect("key usage")).expect("ku");
    assert!(usage.digital_signature() && usage.key_encipherment() && usage.key_cert_sign());
    assert!(extension(&cert, "2.5.29.14").is_some(), "a CA has a key id");
    assert!(signed_by(&cert, &cert));
    // The key is PKCS#1 RSA 2048 and the certificate's.
    let (_, der) = keys::pem_decode(key_pem).expect("PEM");
    let key = <rsa::RsaPrivateKey as rsa::pkcs1::DecodeRsaPrivateKey>::from_pkcs1_der(&der)
        .expect("PKCS#1");
    assert_eq!(rsa::traits::PublicKeyParts::size(&key), 256);
    let spki = rsa::pkcs8::EncodePublicKey::to_public_key_der(&key.to_public_key()).expect("der");
    assert_eq!(
        spki.as_bytes(),
        cert.tbs_certificate
            .subject_public_key_info
            .to_der()
            .expect("der")
    );
}

#[test]
fn gen_signed_cert_has_the_sans_and_verifies_against_its_ca() {
    let out = render(
        7,
        r#"{{- $ca := genCA "foo" 365 }}{{- $cert := genSignedCert "foo.com" (list "10.0.0.1" "::1") (list "bar.com" "bat.com") 30 $ca }}{{ $ca.Cert }}|{{ $cert.Cert }}|{{ $cert.Key }}"#,
    );
    let parts: Vec<&str> = out.split('|').collect();
    let (ca, cert) = (cert_of(parts[0]), cert_of(parts[1]));
    assert_eq!(common_name(&cert), "CN=foo.com");
    assert_eq!(cert.tbs_certificate.issuer, ca.tbs_certificate.subject);
    assert!(!is_ca(&cert));
    assert!(signed_by(&cert, &ca));
    assert!(!signed_by(&ca, &cert));
    assert_eq!(
        seconds(cert.tbs_certificate.validity.not_after),
        NOW + 30 * 86_400
    );
    let san = SubjectAltName::from_der(extension(&cert, "2.5.29.17").expect("SANs")).expect("san");
    let names: Vec<String> = san
        .0
        .iter()
        .map(|n| match n {
            GeneralName::DnsName(d) => d.to_string(),
            GeneralName::IpAddress(ip) => format!("{:?}", ip.as_bytes()),
            other => format!("{other:?}"),
        })
        .collect();
    let mut v6 = [0u8; 16];
    v6[15] = 1;
    assert_eq!(
        names,
        [
            "bar.com".to_string(),
            "bat.com".to_string(),
            format!("{:?}", [10u8, 0, 0, 1]),
            format!("{v6:?}")
        ]
    );
    // The authority key id is the CA's subject key id.
    let ca_id =
        SubjectKeyIdentifier::from_der(extension(&ca, "2.5.29.14").expect("ski")).expect("ski");
    let aki =
        AuthorityKeyIdentifier::from_der(extension(&cert, "2.5.29.35").expect("aki")).expect("aki");
    assert_eq!(aki.key_identifier, Some(ca_id.0));
    assert!(parts[2].starts_with("-----BEGIN RSA PRIVATE KEY-----"));
    assert_ne!(parts[2], "", "its own key");
}

#[test]
fn same_seed_and_time_give_the_same_text_and_mark_the_render_random() {
    let src = r#"{{- $ca := genCA "foo" 365 }}{{- $cert := genSelfSignedCert "x" nil nil 1 }}{{ $ca.Cert }}{{ $ca.Key }}{{ $cert.Cert }}{{ bcrypt "pw" }}{{ encryptAES "k" "text" }}"#;
    let (first, drew) = render_drawing(11, NOW, src);
    let first = first.expect("renders");
    assert!(drew);
    assert_eq!(render(11, src), first);
    let other = render(12, src);
    assert_ne!(other, first);
    // Every piece differs with the seed, each key among them.
    let keys_of = |text: &str| {
        text.split("-----BEGIN RSA PRIVATE KEY-----")
            .nth(1)
            .map(str::to_string)
    };
    assert_ne!(keys_of(&other), keys_of(&first));
    // The time shows in the certificates.
    assert_ne!(
        render_at(11, NOW + 1, src).unwrap_or_default(),
        first,
        "NotBefore moves with now"
    );
    // Pure functions draw nothing.
    let pure = r#"{{ derivePassword 1 "pin" "p" "u" "s" }}{{ decryptAES "k" "" }}"#;
    let (text, drew) = render_drawing(11, NOW, pure);
    assert!(text.is_ok() && !drew);
}

#[test]
fn with_key_forms_use_the_given_ecdsa_and_ed25519_keys() {
    for (ca_kind, cert_kind) in [("ecdsa", "ed25519"), ("ed25519", "ecdsa")] {
        let src = format!(
            r#"{{{{- $ca := genPrivateKey "{ca_kind}" | genCAWithKey "foo" 365 }}}}{{{{- $key := genPrivateKey "{cert_kind}" }}}}{{{{- $cert := genSignedCertWithKey "foo.com" nil (list "a.b") 365 $ca $key }}}}{{{{- $self := genSelfSignedCertWithKey "s" (list "10.0.0.2") nil 3 $key }}}}{{{{ $ca.Cert }}}}|{{{{ $cert.Cert }}}}|{{{{ $cert.Key }}}}|{{{{ $key }}}}|{{{{ $self.Cert }}}}"#
        );
        let out = render(3, &src);
        let parts: Vec<&str> = out.split('|').collect();
        let (ca, cert, own) = (cert_of(parts[0]), cert_of(parts[1]), cert_of(parts[4]));
        assert!(is_ca(&ca) && !is_ca(&cert) && !is_ca(&own));
        assert!(signed_by(&ca, &ca), "{ca_kind}");
        assert!(signed_by(&cert, &ca), "{ca_kind} signs {cert_kind}");
        assert!(signed_by(&own, &own), "{cert_kind}");
        assert_eq!(
            parts[2], parts[3],
            "the key comes back as genPrivateKey wrote it"
        );
        assert_eq!(
            own.tbs_certificate.subject_public_key_info,
            cert.tbs_certificate.subject_public_key_info
        );
    }
    // A CA key that is not the CA certificate's: Go's CreateCertificate refuses it.
    let err = render_at(
        3,
        NOW,
        r#"{{- $ca := genPrivateKey "ed25519" | genCAWithKey "foo" 365 }}{{- $other := genPrivateKey "ed25519" | genCAWithKey "bar" 365 }}{{ (genSignedCert "x" nil nil 1 (dict "Cert" $ca.Cert "Key" $other.Key)).Cert }}"#,
    )
    .expect_err("mismatched key");
    assert!(
        err.contains("provided PrivateKey doesn't match parent's PublicKey"),
        "{err}"
    );
}

#[test]
fn gen_private_key_writes_what_sprig_writes() {
    let ec = render(5, r#"{{ genPrivateKey "ecdsa" }}"#);
    let (kind, der) = keys::pem_decode(&ec).expect("PEM");
    assert_eq!(kind, "EC PRIVATE KEY");
    assert_eq!(
        der.len(),
        121,
        "SEC 1 with the curve and the public key, as Go writes it"
    );
    p256::SecretKey::from_sec1_der(&der).expect("a P-256 key");

    let ed = render(5, r#"{{ genPrivateKey "ed25519" }}"#);
    let (kind, der) = keys::pem_decode(&ed).expect("PEM");
    assert_eq!(kind, "PRIVATE KEY");
    assert_eq!(der.len(), 48, "PKCS#8 v1, seed only, as Go writes it");
    <ed25519_dalek::SigningKey as ed25519_dalek::pkcs8::DecodePrivateKey>::from_pkcs8_der(&der)
        .expect("an Ed25519 key");

    assert_eq!(
        render(5, r#"{{ genPrivateKey "bad" }}"#),
        "Unknown type bad"
    );
    assert_ne!(
        render(5, r#"{{ genPrivateKey "ecdsa" }}"#),
        render(6, r#"{{ genPrivateKey "ecdsa" }}"#)
    );
}

#[test]
fn gen_private_key_rsa_is_4096_bits_and_dsa_is_openssl_form() {
    let started = std::time::Instant::now();
    let rsa_pem = render(5, r#"{{ genPrivateKey "rsa" }}"#);
    eprintln!("genPrivateKey rsa: {:?}", started.elapsed());
    let (kind, der) = keys::pem_decode(&rsa_pem).expect("PEM");
    assert_eq!(kind, "RSA PRIVATE KEY");
    let key = <rsa::RsaPrivateKey as rsa::pkcs1::DecodeRsaPrivateKey>::from_pkcs1_der(&der)
        .expect("PKCS#1");
    assert_eq!(rsa::traits::PublicKeyParts::size(&key), 512);

    let started = std::time::Instant::now();
    let dsa_pem = render(5, r#"{{ genPrivateKey "dsa" }}"#);
    eprintln!("genPrivateKey dsa: {:?}", started.elapsed());
    let (kind, der) = keys::pem_decode(&dsa_pem).expect("PEM");
    assert_eq!(kind, "DSA PRIVATE KEY");
    let any = x509_cert::der::asn1::Any::from_der(&der).expect("DER");
    let ints: Vec<x509_cert::der::asn1::Uint> = any.decode_as().expect("a sequence of integers");
    assert_eq!(ints.len(), 6);
    assert_eq!(ints[0].as_bytes(), [0]);
    assert_eq!(ints[1].as_bytes().len(), 256, "P has 2048 bits");
    assert_eq!(ints[2].as_bytes().len(), 32, "Q has 256 bits");
}

#[test]
fn bcrypt_and_htpasswd_verify_with_the_bcrypt_crate() {
    let hash = render(1, r#"{{ bcrypt "abc" }}"#);
    assert!(hash.starts_with("$2a$10$"), "{hash}");
    assert!(bcrypt::verify("abc", &hash).expect("a bcrypt hash"));
    assert_eq!(
        render(1, r#"{{ bcrypt "abc" }}"#),
        hash,
        "the salt comes from the seed"
    );
    assert_ne!(render(2, r#"{{ bcrypt "abc" }}"#), hash);

    let line = render(1, r#"{{ htpasswd "myUser" "myPassword" }}"#);
    let (user, hash) = line.split_once(':').expect("user:hash");
    assert_eq!(user, "myUser");
    assert!(bcrypt::verify("myPassword", hash).expect("a bcrypt hash"));
    assert_eq!(
        render(1, r#"{{ htpasswd "wrongus:er" "x" }}"#),
        "invalid username: wrongus:er"
    );
    assert_eq!(
        render(1, &format!(r#"{{{{ bcrypt "{}" }}}}"#, "x".repeat(73))),
        "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
    );
    let err = render_at(1, NOW, r#"{{ htpasswd "u" "p" "sha" }}"#).expect_err("two arguments");
    assert!(
        err.contains("wrong number of args for htpasswd: want 2 got 3"),
        "{err}"
    );
}

#[test]
fn derive_password_matches_sprigs_vectors() {
    // Sprig's crypto_test.go.
    for (src, want) in [
        (
            r#"{{derivePassword 1 "long" "password" "user" "example.com"}}"#,
            "ZedaFaxcZaso9*",
        ),
        (
            r#"{{derivePassword 2 "long" "password" "user" "example.com"}}"#,
            "Fovi2@JifpTupx",
        ),
        (
            r#"{{derivePassword 1 "maximum" "password" "user" "example.com"}}"#,
            "pf4zS1LjCg&LjhsZ7T2~",
        ),
        (
            r#"{{derivePassword 1 "medium" "password" "user" "example.com"}}"#,
            "ZedJuz8$",
        ),
        (
            r#"{{derivePassword 1 "basic" "password" "user" "example.com"}}"#,
            "pIS54PLs",
        ),
        (
            r#"{{derivePassword 1 "short" "password" "user" "example.com"}}"#,
            "Zed5",
        ),
        (
            r#"{{derivePassword 1 "pin" "password" "user" "example.com"}}"#,
            "6685",
        ),
        (
            r#"{{derivePassword 1 "nope" "password" "user" "example.com"}}"#,
            "cannot find password template nope",
        ),
    ] {
        assert_eq!(render(1, src), want, "{src}");
    }
}

#[test]
fn aes_round_trips_and_reads_an_openssl_ciphertext() {
    assert_eq!(
        render(
            1,
            r#"{{ "plaintext" | encryptAES "secretkey" | decryptAES "secretkey" }}"#
        ),
        "plaintext"
    );
    let sealed = render(1, r#"{{ encryptAES "secretkey" "0123456789abcdef" }}"#);
    assert_eq!(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, &sealed)
            .map(|b| b.len())
            .unwrap_or(0),
        48,
        "IV, the block of text, a block of padding"
    );
    assert_ne!(
        render(2, r#"{{ encryptAES "secretkey" "0123456789abcdef" }}"#),
        sealed
    );
    assert_eq!(
        render(1, r#"{{ encryptAES "k" "" }}|{{ decryptAES "k" "" }}"#),
        "|"
    );
    // Sprig's algorithm run by `openssl enc -aes-256-cbc` (its tests keep no ciphertext):
    // the key "secretkey" zero-padded to 32 bytes, IV 00..0f, PKCS#7 padding.
    let openssl =
        "AAECAwQFBgcICQoLDA0OD+yXverhL/+UbIvkz4DPEDoEQ5VkbwoOVM/cddu2hGWX6GyazAoE9Qm4yheUg6gVWA==";
    assert_eq!(
        render(
            1,
            &format!(r#"{{{{ decryptAES "secretkey" "{openssl}" }}}}"#)
        ),
        "a secret message, longer than a block"
    );
    let err = render_at(1, NOW, r#"{{ decryptAES "k" "AAEC" }}"#).expect_err("too short");
    assert!(err.contains("error calling decryptAES"), "{err}");
}

#[test]
fn build_custom_cert_returns_what_it_was_given_and_signs() {
    let ca = render(
        4,
        r#"{{ $ca := genPrivateKey "ecdsa" | genCAWithKey "custom" 10 }}{{ $ca.Cert | b64enc }}|{{ $ca.Key | b64enc }}"#,
    );
    let (cert, key) = ca.split_once('|').expect("two parts");
    let src = format!(
        r#"{{{{- $ca := buildCustomCert "{cert}" "{key}" }}}}{{{{ $ca.Cert | b64enc }}}}|{{{{ (genSignedCert "leaf" nil nil 1 $ca).Cert }}}}"#
    );
    let out = render(4, &src);
    let (same, leaf) = out.split_once('|').expect("two parts");
    assert_eq!(same, cert);
    let ca_pem = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, cert)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    assert!(signed_by(&cert_of(leaf), &cert_of(&ca_pem)));

    let bad = format!(r#"{{{{ buildCustomCert "{}" "{key}" }}}}"#, "ZmFpbA==");
    let err = render_at(4, NOW, &bad).expect_err("not a certificate");
    assert!(err.contains("unable to decode certificate"), "{err}");
    let err = render_at(4, NOW, r#"{{ buildCustomCert "%%" "" }}"#).expect_err("not base64");
    assert!(err.contains("unable to decode base64 certificate"), "{err}");
}

#[test]
fn bad_arguments_get_sprigs_messages() {
    for (src, message) in [
        (
            r#"{{ genSelfSignedCertWithKey "x" (list "nope") nil 1 "" }}"#,
            "parsing private key: no PEM data in input",
        ),
        (
            r#"{{ genSignedCert "x" nil nil 1 (dict "Cert" "" "Key" "") }}"#,
            "unable to decode certificate",
        ),
        (
            r#"{{ genCAWithKey "x" 1 "-----BEGIN FOO-----\nAA==\n-----END FOO-----\n" }}"#,
            "no private key data in PEM block of type FOO",
        ),
    ] {
        let err = render_at(1, NOW, src).expect_err(src);
        assert!(err.contains(message), "{src}: {err}");
    }
    for (args, message) in [
        (r#"(list 1) nil"#, "error parsing ip: 1 is not a string"),
        (r#"(list "10.0.0.300") nil"#, "error parsing ip: 10.0.0.300"),
        (
            r#"nil (list 2)"#,
            "error processing alternate dns name: 2 is not a string",
        ),
        (
            r#""10.0.0.1" nil"#,
            "wrong type for value; expected []interface {}; got string",
        ),
    ] {
        let src = format!(
            r#"{{{{ $key := genPrivateKey "ed25519" }}}}{{{{ genSelfSignedCertWithKey "x" {args} 1 $key }}}}"#
        );
        let err = render_at(1, NOW, &src).expect_err(&src);
        assert!(err.contains(message), "{src}: {err}");
    }
}

#[test]
fn far_dates_are_generalized_time_and_ipv4_mapped_addresses_are_ipv4() {
    let out = render(
        1,
        r#"{{ $key := genPrivateKey "ed25519" }}{{ (genSelfSignedCertWithKey "" (list "::ffff:10.1.2.3") nil 36500 $key).Cert }}"#,
    );
    let cert = cert_of(&out);
    assert!(matches!(
        cert.tbs_certificate.validity.not_after,
        x509_cert::time::Time::GeneralTime(_)
    ));
    assert!(matches!(
        cert.tbs_certificate.validity.not_before,
        x509_cert::time::Time::UtcTime(_)
    ));
    let ext = cert
        .tbs_certificate
        .extensions
        .as_ref()
        .and_then(|e| e.iter().find(|e| e.extn_id.to_string() == "2.5.29.17"))
        .expect("SANs");
    assert!(ext.critical, "critical when the subject is empty");
    let san = SubjectAltName::from_der(ext.extn_value.as_bytes()).expect("san");
    assert!(matches!(&san.0[..], [GeneralName::IpAddress(ip)] if ip.as_bytes() == [10, 1, 2, 3]));
}
