//! Flux's `postBuild` variable substitution (fluxcd/pkg `kustomize/kustomize_varsub.go` and
//! `envsubst`): variables from `substituteFrom` (ConfigMaps and Secrets, in order, later
//! ones winning) under `substitute`, newlines removed from values; `${var}` and the bash
//! forms Flux's envsubst supports, `$${var}` for a literal `${var}`; an unset variable is
//! empty (the controller's default, non-strict mode); an object labelled or annotated
//! `kustomize.toolkit.fluxcd.io/substitute: disabled` is left alone. A variable read from a
//! Secret may only land in a Secret: tend masks Secret data, not what other kinds hold.

use super::lookup::{self as objects, Blocked, Lookup};
use super::model::{Context, Found, Sources};
use crate::problem::Problem;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const OPT_OUT: &str = "kustomize.toolkit.fluxcd.io/substitute";

/// The unit's variables, `None` when it substitutes nothing (the controller then leaves
/// `${...}` alone).
/// A unit's variables, with the names whose values came from a Secret.
pub struct Variables {
    pub values: BTreeMap<String, String>,
    pub from_secrets: BTreeSet<String>,
}

pub fn variables(
    unit: &Found,
    sources: &Sources,
    ctx: &Context,
) -> Result<Option<Variables>, Blocked> {
    let post_build = unit.spec().get("postBuild");
    let mut vars = BTreeMap::new();
    let mut from_secrets = BTreeSet::new();
    let from = post_build.and_then(|p| p.get("substituteFrom"));
    for (i, reference) in from
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let field = |k: &str| reference.get(k).and_then(Value::as_str).unwrap_or("");
        let (kind, name) = (field("kind"), field("name"));
        let optional = reference.get("optional").and_then(Value::as_bool) == Some(true);
        let at = |message: String| {
            Problem::new(
                &unit.file,
                unit.doc.line_at(&[
                    crate::yaml::Step::Key("spec".into()),
                    crate::yaml::Step::Key("postBuild".into()),
                    crate::yaml::Step::Key("substituteFrom".into()),
                    crate::yaml::Step::Index(i),
                ]),
                message,
            )
        };
        if !matches!(kind, "ConfigMap" | "Secret") {
            return Err(at(format!(
                "substituteFrom kind {kind:?} is neither ConfigMap nor Secret"
            ))
            .into());
        }
        let found = objects::lookup(sources, ctx, kind, &unit.id.namespace, name).map_err(&at)?;
        if matches!(found, Lookup::Pending) {
            return Err(Blocked::Pending);
        }
        match found.entries() {
            Some(data) => {
                for (k, v) in data {
                    if kind == "Secret" {
                        from_secrets.insert(k.clone());
                    } else {
                        from_secrets.remove(&k);
                    }
                    vars.insert(k, v);
                }
            }
            None if optional => {}
            None => {
                return Err(at(format!(
                    "substituteFrom names {kind} {}/{name}, which {}; create it, or mark it optional: true",
                    unit.id.namespace,
                    objects::looked_in(ctx)
                ))
                .into())
            }
        }
    }
    if let Some(Value::Object(map)) = post_build.and_then(|p| p.get("substitute")) {
        for (k, v) in map {
            let v = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            from_secrets.remove(k);
            vars.insert(k.clone(), v);
        }
    }
    for value in vars.values_mut() {
        *value = value.replace('\n', "");
    }
    if let Some(bad) = vars.keys().find(|k| !is_name(k)) {
        return Err(unit
            .problem(
                &["spec", "postBuild"],
                format!(
                    "{bad:?} is not a valid variable name: a letter or _, then letters, digits or _"
                ),
            )
            .into());
    }
    Ok((!vars.is_empty()).then_some(Variables {
        values: vars,
        from_secrets,
    }))
}

/// The variables of `names` that `text` refers to.
pub fn referenced<'n>(text: &str, names: &'n BTreeSet<String>) -> Vec<&'n str> {
    names
        .iter()
        .filter(|name| {
            text.match_indices(&format!("${{{name}"))
                .any(|(at, found)| {
                    let next = text[at + found.len()..].chars().next();
                    !next.is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
                })
        })
        .map(String::as_str)
        .collect()
}

/// Whether an object opted out of substitution.
pub fn disabled(value: &Value) -> bool {
    ["labels", "annotations"].iter().any(|field| {
        value
            .pointer(&format!("/metadata/{field}"))
            .and_then(|m| m.get(OPT_OUT))
            .and_then(Value::as_str)
            == Some("disabled")
    })
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// `text` with its `${...}` expressions evaluated.
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some(body) = tail.strip_prefix("${") {
            let end = closing_brace(body).ok_or("missing closing brace")?;
            out.push_str(&evaluate(&body[..end], vars)?);
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The `}` closing an expression (defaults may hold `${...}` themselves).
fn closing_brace(body: &str) -> Option<usize> {
    let mut depth = 0usize;
    let bytes = body.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'{' if i > 0 && bytes[i - 1] == b'$' => depth += 1,
            b'}' if depth == 0 => return Some(i),
            b'}' => depth -= 1,
            _ => {}
        }
    }
    None
}

fn evaluate(expr: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    if let Some(name) = expr.strip_prefix('#') {
        return Ok(lookup(name, vars)?.chars().count().to_string());
    }
    let end = expr
        .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
        .unwrap_or(expr.len());
    let (name, op) = expr.split_at(end);
    if name.is_empty() {
        return Err(format!("bad substitution ${{{expr}}}"));
    }
    let value = vars.get(name);
    let set = value.is_some();
    let value = value.cloned().unwrap_or_default();
    let default = |d: &str| substitute(d, vars);
    Ok(match op {
        "" => value,
        "^" => upper_first(&value),
        "^^" => value.to_uppercase(),
        "," => lower_first(&value),
        ",," => value.to_lowercase(),
        _ if op.starts_with(":=") || op.starts_with(":-") => {
            if value.is_empty() {
                default(&op[2..])?
            } else {
                value
            }
        }
        _ if op.starts_with('=') || op.starts_with('-') => {
            if set {
                value
            } else {
                default(&op[1..])?
            }
        }
        _ => {
            return Err(format!(
                "${{{expr}}}: this form of substitution is not supported by tend; use ${{var}} or ${{var:=default}}"
            ))
        }
    })
}

fn lookup(name: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    if name.is_empty() {
        return Err("bad substitution ${#}".into());
    }
    Ok(vars.get(name).cloned().unwrap_or_default())
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_as_flux_envsubst_does() {
        let vars: BTreeMap<String, String> = [("CLUSTER", "staging"), ("EMPTY", "")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let cases = [
            ("name: ${CLUSTER}-x", "name: staging-x"),
            ("a: ${MISSING}", "a: "),
            ("a: ${MISSING:=def}", "a: def"),
            ("a: ${EMPTY:-def}", "a: def"),
            ("a: ${EMPTY=def}", "a: "),
            ("a: ${MISSING=${CLUSTER}}", "a: staging"),
            ("a: $${CLUSTER} $HOME", "a: ${CLUSTER} $HOME"),
            ("a: ${CLUSTER^^} ${#CLUSTER}", "a: STAGING 7"),
        ];
        for (text, want) in cases {
            assert_eq!(substitute(text, &vars).unwrap(), want, "{text}");
        }
        assert!(substitute("a: ${CLUSTER", &vars).is_err());
        assert!(substitute("a: ${CLUSTER/s/t}", &vars).is_err());
    }
}
