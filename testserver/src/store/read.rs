//! GET and LIST (selectors, pagination with continue tokens).

use super::*;
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
        let fields = FieldSelector::parse(c.query.get("fieldSelector").unwrap_or(""), &c.def.kind)
            .map_err(ApiError::bad_request)?;
        let limit: usize = match c.query.get("limit").filter(|l| !l.is_empty()) {
            Some(l) => l
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
            None => 0,
        };
        let start_after: Option<ObjKey> = match c.query.get("continue").filter(|s| !s.is_empty()) {
            Some(tok) => Some(decode_continue(tok).ok_or_else(|| {
                ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
            })?),
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
                let mut item = Self::present(&c.def, v);
                // Typed (built-in) lists omit apiVersion/kind on items; unstructured keep them.
                if c.def.crd.is_none() {
                    if let Some(m) = item.as_object_mut() {
                        m.shift_remove("apiVersion");
                        m.shift_remove("kind");
                    }
                }
                items.push(item);
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
        ok(
            200,
            json!({"kind": c.def.list_kind(), "apiVersion": c.def.api_version(), "metadata": md, "items": items}),
        )
    }
}

pub(super) fn encode_continue(rv: u64, key: &ObjKey) -> String {
    let start = if key.0.is_empty() {
        format!("{}\u{0}", key.1)
    } else {
        format!("{}/{}\u{0}", key.0, key.1)
    };
    let doc = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start});
    base64::engine::general_purpose::URL_SAFE.encode(doc.to_string())
}

pub(super) fn decode_continue(tok: &str) -> Option<ObjKey> {
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(tok)
        .or_else(|_| base64::engine::general_purpose::STANDARD.decode(tok))
        .ok()?;
    let doc: Value = serde_json::from_slice(&raw).ok()?;
    let start = doc.get("start")?.as_str()?.trim_end_matches('\u{0}');
    Some(match start.split_once('/') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (String::new(), start.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::qualified;

    #[test]
    fn continue_tokens_roundtrip() {
        let k = ("ns".to_string(), "name".to_string());
        assert_eq!(decode_continue(&encode_continue(5, &k)), Some(k));
        assert_eq!(decode_continue("garbage!"), None);
    }

    #[test]
    fn qualified_names() {
        assert_eq!(qualified("apps", "deployments"), "deployments.apps");
    }
}
