//! A Flux Kustomization's `spec.decryption` (kustomize-controller `internal/decryptor`):
//! with `provider: sops`, the keys of the Secret `secretRef` names (its `*.agekey` entries age
//! identities, `*.asc` entries armored PGP keys; from the desired state or the cluster) join
//! the run's own, which stand for the controller's (`SOPS_AGE_KEY_FILE` and the like). The
//! build's encrypted inputs are decrypted into its private copy as the walk decrypts a
//! kustomization's ([`crate::source::encrypted::decrypt_for_build`]); then, as the
//! controller's `DecryptResource` does, a Secret's `data` value that is itself a SOPS
//! document (dotenv, INI, YAML, JSON or binary, told by sops's markers) is decrypted into
//! the format its key's extension names. Decrypted values may only be Secret data: found
//! anywhere else in the build, the unit is refused (tend masks Secret data only).

use super::lookup::{self, Blocked, Lookup};
use super::model::{Context, Found, Sources};
use crate::problem::Problem;
use crate::sops::formats::Format;
use crate::sops::Keys;
use crate::source::SourceFile;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::Value;
use std::path::Path;

/// kustomize-controller's per-object opt-out.
const OPT_OUT: &str = "kustomize.toolkit.fluxcd.io/decrypt";

/// The keys a unit decrypts with, `None` when it has no `spec.decryption`.
pub fn keys(unit: &Found, sources: &Sources, ctx: &Context) -> Result<Option<Keys>, Blocked> {
    let Some(decryption) = unit.spec().get("decryption") else {
        return Ok(None);
    };
    let provider = decryption
        .get("provider")
        .and_then(Value::as_str)
        .unwrap_or("");
    if provider != "sops" {
        return Err(unit
            .problem(
                &["spec", "decryption", "provider"],
                format!("decryption provider {provider:?} is not one Flux or tend reads; write provider: sops"),
            )
            .into());
    }
    let mut keys = ctx.kustomize.keys.without_cache();
    let Some(name) = decryption
        .pointer("/secretRef/name")
        .and_then(Value::as_str)
    else {
        return Ok(Some(keys));
    };
    let namespace = &unit.id.namespace;
    let at = |message: String| unit.problem(&["spec", "decryption", "secretRef"], message);
    let entries = match lookup::lookup(sources, ctx, "Secret", namespace, name)
        .map_err(at)?
    {
        Lookup::Pending => return Err(Blocked::Pending),
        Lookup::Absent => {
            return Err(at(format!(
                "decryption.secretRef names Secret {namespace}/{name}, which {}; create it with the keys that open the unit's files (kubectl create secret generic {name} -n {namespace} --from-file=identity.agekey=KEYFILE)",
                lookup::looked_in(ctx)
            ))
            .into())
        }
        found => found.entries().unwrap_or_default(),
    };
    let mut used = 0;
    for (entry, text) in &entries {
        if !(entry.ends_with(".agekey") || entry.ends_with(".asc")) {
            continue;
        }
        let text = zeroize::Zeroizing::new(text.clone());
        keys.add_text(&format!("Secret {namespace}/{name} key {entry}"), &text)
            .map_err(|e| at(format!("Secret {namespace}/{name} entry {entry}: {e}")))?;
        used += 1;
    }
    if used == 0 {
        keys.note(format!(
            "Secret {namespace}/{name} (no *.agekey or *.asc entries)"
        ));
    }
    Ok(Some(keys))
}

/// Decrypt the Secret `data` values of `files` that are SOPS documents, in place; a problem
/// at the Secret for a value that does not open, or at the object that shows a decrypted
/// value outside a Secret's data.
pub fn decrypt_secret_values(
    files: &mut [SourceFile],
    keys: &Keys,
    unit: &Found,
) -> Result<(), Problem> {
    let mut plaintexts = Vec::new();
    for file in files.iter_mut() {
        // Data values are base64: only a file holding a Secret may hold one.
        if !file.text.contains("Secret") {
            continue;
        }
        let (mut docs, problems) = crate::yaml::parse_file(&file.path, &file.text);
        if !problems.is_empty() {
            continue; // reported by render
        }
        let mut changed = false;
        for doc in &mut docs {
            let line = doc.line;
            let opened = decrypt_values(&mut doc.value, keys).map_err(|(key, message)| {
                Problem::new(
                    &file.path,
                    line,
                    format!(
                        "Secret field {key:?}: {message} (spec.decryption of Flux {})",
                        unit.id
                    ),
                )
            })?;
            changed |= !opened.is_empty();
            plaintexts.extend(opened);
        }
        if changed {
            let texts: Vec<String> = docs
                .iter()
                .map(|d| crate::yaml::to_yaml(&d.value))
                .collect();
            file.text = format!("---\n{}", texts.join("---\n"));
        }
    }
    plaintexts.retain(|p| p.chars().count() >= crate::sops::leaks::MIN_TRACKED_CHARS);
    if plaintexts.is_empty() {
        return Ok(());
    }
    let forms = crate::sops::leaks::all_forms(&plaintexts);
    match crate::source::encrypted::exposed_in_build(files, &forms)
        .into_iter()
        .next()
    {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

/// The values of a core Secret's `data` that are SOPS documents, decrypted in place;
/// returns the plaintext strings they held (for leak tracking), or the key and why one
/// did not open.
fn decrypt_values(object: &mut Value, keys: &Keys) -> Result<Vec<String>, (String, String)> {
    if !crate::sops::leaks::is_core_secret(object) || opted_out(object) {
        return Ok(Vec::new());
    }
    let Some(Value::Object(data)) = object.get_mut("data") else {
        return Ok(Vec::new());
    };
    let mut plaintexts = Vec::new();
    for (key, value) in data.iter_mut() {
        let Some(encoded) = value.as_str() else {
            continue;
        };
        // Not base64: left for the API server to refuse, as the controller leaves it.
        let Ok(bytes) = BASE64.decode(encoded.trim()) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let Some(input) = encrypted_format(&text) else {
            continue;
        };
        let output = Format::of(Path::new(key));
        // The controller writes the key's format; tend writes that when it is the input's
        // own (or the binary file a JSON envelope holds), else the input's.
        let path = match (input, output) {
            (Format::Json, Format::Binary) => "value.bin",
            (Format::Yaml, _) => "value.yaml",
            (Format::Json, _) => "value.json",
            (Format::Dotenv, _) => "value.env",
            (Format::Ini, _) => "value.ini",
            (Format::Binary, _) => "value.bin",
        };
        let plain = crate::sops::formats::decrypt_file(Path::new(path), &text, keys)
            .map_err(|e| (key.clone(), e.to_string()))?;
        let plain_text = String::from_utf8_lossy(&plain);
        plaintexts.extend(leaves(input, path, &plain_text));
        *value = Value::String(BASE64.encode(&plain[..]));
    }
    Ok(plaintexts)
}

/// sops's marker of an encrypted document in `text` (kustomize-controller's
/// `detectFormatFromMarkerBytes`): JSON and binary share theirs, and read alike.
fn encrypted_format(text: &str) -> Option<Format> {
    if text.contains("sops_mac=ENC[") {
        Some(Format::Dotenv)
    } else if text.contains("\"mac\": \"ENC[") {
        Some(Format::Json)
    } else if text.contains("mac: ENC[") {
        Some(Format::Yaml)
    } else if text.contains("[sops]") {
        Some(Format::Ini)
    } else {
        None
    }
}

/// The strings a decrypted document holds: its values (dotenv, INI, YAML, JSON), or the
/// whole of it (binary).
fn leaves(input: Format, path: &str, plain: &str) -> Vec<String> {
    fn strings(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::String(s) => out.push(s.clone()),
            Value::Number(n) => out.push(n.to_string()),
            Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
            Value::Object(map) => map.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    match (input, path) {
        (_, "value.bin") => out.push(plain.trim().to_string()),
        (Format::Dotenv | Format::Ini, _) => out.extend(plain.lines().filter_map(|l| {
            l.split_once('=')
                .map(|(_, v)| v.trim().trim_matches('"').to_string())
        })),
        _ => {
            let (docs, _) = crate::yaml::parse_file(Path::new(path), plain);
            docs.iter().for_each(|d| strings(&d.value, &mut out));
        }
    }
    out
}

fn opted_out(object: &Value) -> bool {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(OPT_OUT))
        .and_then(Value::as_str)
        .is_some_and(|v| v.eq_ignore_ascii_case("disabled"))
}
