//! GET and LIST (selectors, pagination with continue tokens).

use super::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

impl State {
    pub(super) fn get(&self, c: &Call) -> Res {
        let name = c.name.as_deref().unwrap_or("");
        let ns = c.namespace.as_deref().unwrap_or("");
        match self.get_obj(&c.def, ns, name) {
            Some(v) => ok(200, Self::present(&c.def, v)),
            None => Err(ApiError::not_found(&c.def.group, &c.def.plural, name)),
        }
    }

    pub(super) fn list(&self, c: &Call) -> Res {
        let labels = LabelSelector::parse(c.query.get("labelSelector").unwrap_or(""))
            .map_err(ApiError::bad_request)?;
        let fields = FieldSelector::parse(c.query.get("fieldSelector").unwrap_or(""), &c.def)
            .map_err(ApiError::bad_request)?;
        let limit: usize = match c.query.get("limit").filter(|l| !l.is_empty()) {
            Some(l) => l
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
            None => 0,
        };
        let start_after = match c.query.get("continue").filter(|s| !s.is_empty()) {
            Some(tok) => Some(self.continue_from(tok, c.query.get("resourceVersion"))?),
            None => None,
        };
        let mut items = Vec::new();
        let mut last_key = None;
        let mut remaining = 0usize;
        if let Some(bucket) = self.bucket(&c.def) {
            for (key, v) in bucket {
                if c.namespace.as_deref().is_some_and(|ns| ns != key.0) {
                    continue;
                }
                if start_after.as_ref().is_some_and(|s| key <= s) {
                    continue;
                }
                if !labels.matches(v) || !fields.matches(v) {
                    continue;
                }
                if limit > 0 && items.len() == limit {
                    remaining += 1;
                    continue;
                }
                items.push(v);
                last_key = Some(key.clone());
            }
        }
        let mut md = Map::new();
        md.insert("resourceVersion".into(), self.rv.to_string().into());
        if remaining > 0 {
            if let Some(k) = last_key {
                md.insert("continue".into(), encode_continue(self.rv, &k).into());
                if labels.is_empty() && fields.is_empty() {
                    md.insert("remainingItemCount".into(), remaining.into());
                }
            }
        }
        // Typed (built-in) lists omit apiVersion/kind on items; unstructured keep them.
        let typed = c.def.crd.is_none();
        let body = |items: Value| json!({"kind": c.def.list_kind(), "apiVersion": c.def.api_version(), "metadata": md, "items": items});
        if !c.full_json {
            let items = items
                .into_iter()
                .map(|v| {
                    let mut item = Self::present(&c.def, v);
                    if typed {
                        if let Some(m) = item.as_object_mut() {
                            m.shift_remove("apiVersion");
                            m.shift_remove("kind");
                        }
                    }
                    item
                })
                .collect();
            return ok(200, body(Value::Array(items)));
        }
        // Written straight from the store: the same bytes, without copying the objects.
        let mut written = serde_json::to_vec(&body(Value::Array(Vec::new()))).unwrap_or_default();
        written.truncate(written.len().saturating_sub(2));
        for (i, v) in items.into_iter().enumerate() {
            if i > 0 {
                written.push(b',');
            }
            let presented = Presented {
                def: &c.def,
                object: v,
                typed,
            };
            let _ = serde_json::to_writer(&mut written, &presented);
        }
        written.extend_from_slice(b"]}");
        Ok(Reply {
            code: 200,
            body: Value::Null,
            written: Some(written),
        })
    }
}

/// A stored object as [`State::present`] (and, in a typed list, without apiVersion and
/// kind) would give it, written without copying it.
struct Presented<'a> {
    def: &'a ResourceDef,
    object: &'a Value,
    typed: bool,
}

impl serde::Serialize for Presented<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(m) = self.object else {
            return self.object.serialize(s);
        };
        let mut out = s.serialize_map(None)?;
        if !self.typed {
            out.serialize_entry("apiVersion", &self.def.api_version())?;
            out.serialize_entry("kind", &self.def.kind)?;
        }
        if let Some(Value::Object(md)) = m.get("metadata") {
            out.serialize_key("metadata")?;
            out.serialize_value(&InOrder(md))?;
        }
        for (k, v) in m {
            if !matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "status") {
                out.serialize_entry(k, v)?;
            }
        }
        if let Some(status) = m.get("status") {
            out.serialize_entry("status", status)?;
        }
        out.end()
    }
}

/// Metadata in the order `normalize` gives it.
struct InOrder<'a>(&'a Map<String, Value>);

impl serde::Serialize for InOrder<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut out = s.serialize_map(Some(self.0.len()))?;
        for k in META_ORDER {
            if let Some(v) = self.0.get(*k) {
                out.serialize_entry(k, v)?;
            }
        }
        for (k, v) in self.0 {
            if !META_ORDER.contains(&k.as_str()) {
                out.serialize_entry(k, v)?;
            }
        }
        out.end()
    }
}

/// A continue token as kube-apiserver encodes it (apiserver/pkg/storage/continue.go):
/// unpadded URL-safe base64 of `{"v":"meta.k8s.io/v1","rv":RV,"start":"KEY\u0000"}`.
pub(super) fn encode_continue(rv: u64, key: &ObjKey) -> String {
    let start = if key.0.is_empty() {
        format!("{}\u{0}", key.1)
    } else {
        format!("{}/{}\u{0}", key.0, key.1)
    };
    let doc = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start});
    URL_SAFE_NO_PAD.encode(doc.to_string())
}

/// Decodes a continue token into the key to resume after and its resourceVersion (negative:
/// "the latest"), or the reason it is invalid, worded as storage.DecodeContinue words it.
pub(super) fn decode_continue(tok: &str) -> Result<(ObjKey, i64), String> {
    const INVALID: &str = "continue key is not valid";
    let raw = URL_SAFE_NO_PAD.decode(tok).map_err(|e| match e {
        base64::DecodeError::InvalidByte(at, _)
        | base64::DecodeError::InvalidLastSymbol { offset: at, .. } => {
            format!("{INVALID}: illegal base64 data at input byte {at}")
        }
        other => format!("{INVALID}: {other}"),
    })?;
    let doc: Value = serde_json::from_slice(&raw).map_err(|e| format!("{INVALID}: {e}"))?;
    let version = doc.get("v").and_then(Value::as_str).unwrap_or("");
    if version != "meta.k8s.io/v1" {
        return Err(format!(
            "{INVALID}: server does not recognize this encoded version {version}"
        ));
    }
    let rv = doc.get("rv").and_then(Value::as_i64).unwrap_or(0);
    if rv == 0 {
        return Err(format!(
            "{INVALID}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        ));
    }
    let start = doc.get("start").and_then(Value::as_str).unwrap_or("");
    if start.is_empty() {
        return Err(format!(
            "{INVALID}: encoded start key empty (version meta.k8s.io/v1)"
        ));
    }
    // kube-apiserver refuses keys that path.Clean would change (no "..", "//", ...).
    let key = start.trim_end_matches('\u{0}');
    if key
        .split('/')
        .any(|seg| seg.is_empty() || seg == "." || seg == "..")
    {
        return Err(format!("{INVALID}: {start}"));
    }
    let key = match key.split_once('/') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (String::new(), key.to_string()),
    };
    Ok((key, rv))
}

impl State {
    /// Where a LIST with `continue` resumes: 400 for a token that is not one, 410 when its
    /// resourceVersion is older than the history kept (as etcd compaction makes it on a real
    /// server), with a fresh token to carry on inconsistently, as kube-apiserver offers.
    fn continue_from(&self, tok: &str, rv: Option<&str>) -> Result<ObjKey, ApiError> {
        let (key, token_rv) = decode_continue(tok)
            .map_err(|e| ApiError::bad_request(format!("invalid continue token: {e}")))?;
        if rv.is_some_and(|rv| !rv.is_empty() && rv != "0") {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let oldest = self.history.front().map(|e| e.rv).unwrap_or(self.rv);
        if token_rv > 0 && (token_rv as u64) + 1 < oldest {
            let mut gone = ApiError::new(410, "Expired", "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.");
            let start = if key.0.is_empty() {
                format!("{}\u{0}", key.1)
            } else {
                format!("{}/{}\u{0}", key.0, key.1)
            };
            let fresh = json!({"v": "meta.k8s.io/v1", "rv": -1, "start": start});
            gone.metadata = Some(json!({"continue": URL_SAFE_NO_PAD.encode(fresh.to_string())}));
            return Err(gone);
        }
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::qualified;

    #[test]
    fn continue_tokens_roundtrip() {
        let k = ("ns".to_string(), "name".to_string());
        assert_eq!(decode_continue(&encode_continue(5, &k)), Ok((k, 5)));
        assert!(decode_continue("garbage!")
            .unwrap_err()
            .starts_with("continue key is not valid: illegal base64 data at input byte 7"));
        assert!(decode_continue("e30").is_err(), "{{}} has no version");
    }

    #[test]
    fn a_list_written_from_the_store_is_what_presenting_each_object_gives() {
        let stored = json!({"spec": {"b": 1}, "status": {"ready": true}, "kind": "stale",
            "metadata": {"labels": {"a": "b"}, "uid": "u", "name": "n", "managedFields": [], "namespace": "ns"},
            "data": {"k": "v"}, "apiVersion": "stale/v0"});
        for def in [
            discovery::builtin_resources()
                .into_iter()
                .find(|d| d.plural == "configmaps"),
            Some(ResourceDef {
                crd: Some("widgets.example.com".into()),
                ..discovery::builtin_resources()
                    .into_iter()
                    .find(|d| d.plural == "configmaps")
                    .unwrap()
            }),
        ] {
            let def = def.expect("a definition");
            let typed = def.crd.is_none();
            let mut expected = State::present(&def, &stored);
            if typed {
                let m = expected.as_object_mut().unwrap();
                m.shift_remove("apiVersion");
                m.shift_remove("kind");
            }
            let written = serde_json::to_string(&Presented {
                def: &def,
                object: &stored,
                typed,
            })
            .unwrap();
            assert_eq!(written, serde_json::to_string(&expected).unwrap());
        }
    }

    #[test]
    fn qualified_names() {
        assert_eq!(qualified("apps", "deployments"), "deployments.apps");
    }
}
