//! Content negotiation for resource requests: the full object, or its metadata only
//! (`PartialObjectMetadata` / `PartialObjectMetadataList`, as kube's metadata API asks).

use crate::errors::ApiError;
use serde_json::{json, Value};

/// The representation a client asked for in `Accept`: the object itself, or its metadata
/// only (`as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`, as kube's metadata API asks).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Representation {
    Full,
    Partial { list: bool, version: &'static str },
}

/// Picks the first media range of `Accept` this server can produce. Ranges asking for
/// another transformation (`as=Table`) are skipped; 406 when nothing else is acceptable.
pub fn negotiate(accept: &str) -> Result<Representation, ApiError> {
    if accept.trim().is_empty() {
        return Ok(Representation::Full);
    }
    let mut refused = false;
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let (mut as_, mut g, mut v) = (None, None, None);
        for p in parts {
            match p.split_once('=') {
                Some(("as", x)) => as_ = Some(x.to_string()),
                Some(("g", x)) => g = Some(x.to_string()),
                Some(("v", x)) => v = Some(x.to_string()),
                _ => {}
            }
        }
        if !matches!(
            media.as_str(),
            "application/json" | "application/*" | "*/*" | "application/yaml"
        ) {
            continue;
        }
        match as_.as_deref() {
            None => return Ok(Representation::Full),
            Some(kind @ ("PartialObjectMetadata" | "PartialObjectMetadataList"))
                if g.as_deref() == Some("meta.k8s.io") =>
            {
                let version = match v.as_deref() {
                    Some("v1") => "v1",
                    Some("v1beta1") => "v1beta1",
                    _ => {
                        refused = true;
                        continue;
                    }
                };
                return Ok(Representation::Partial {
                    list: kind.ends_with("List"),
                    version,
                });
            }
            Some(_) => refused = true,
        }
    }
    if refused {
        return Err(ApiError::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        ));
    }
    Ok(Representation::Full)
}

/// An object reduced to its metadata, as kube-apiserver's asPartialObjectMetadata does.
pub fn partial(obj: &Value, version: &str) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": format!("meta.k8s.io/{version}"),
           "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({}))})
}

/// Applies the requested representation to a successful body; Status bodies pass as they
/// are. A list asked for as an object (or the reverse) is 406, as on a real server.
pub fn represent(body: Value, rep: Representation) -> Result<Value, ApiError> {
    let Representation::Partial { list, version } = rep else {
        return Ok(body);
    };
    if body.get("kind").and_then(Value::as_str) == Some("Status") {
        return Ok(body);
    }
    let is_list = body.get("items").is_some_and(Value::is_array);
    match (list, is_list) {
        (true, true) => {
            let items: Vec<Value> = body["items"]
                .as_array()
                .map(|a| a.iter().map(|i| partial(i, version)).collect())
                .unwrap_or_default();
            // kube-apiserver 1.36 answers an empty metadata list with `"items": null` (a nil
            // Go slice), while full lists say `[]`; clients must read both as empty.
            let items = if items.is_empty() {
                Value::Null
            } else {
                Value::Array(items)
            };
            Ok(json!({"kind": "PartialObjectMetadataList",
                      "apiVersion": format!("meta.k8s.io/{version}"),
                      "metadata": body.get("metadata").cloned().unwrap_or_else(|| json!({})),
                      "items": items}))
        }
        (false, false) => Ok(partial(&body, version)),
        (true, false) => Err(ApiError::new(
            406,
            "NotAcceptable",
            "you requested PartialObjectMetadataList, but the requested object is not a list",
        )),
        (false, true) => Err(ApiError::new(
            406,
            "NotAcceptable",
            "you requested PartialObjectMetadata, but the requested object is a list",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_first_servable_media_range() {
        assert_eq!(negotiate("").unwrap(), Representation::Full);
        assert_eq!(negotiate("application/json").unwrap(), Representation::Full);
        assert_eq!(
            negotiate(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            )
            .unwrap(),
            Representation::Partial {
                list: true,
                version: "v1"
            }
        );
        assert_eq!(
            negotiate("application/json;as=Table;g=meta.k8s.io;v=v1,application/json").unwrap(),
            Representation::Full
        );
        assert_eq!(
            negotiate("application/json;as=Table;g=meta.k8s.io;v=v1")
                .unwrap_err()
                .code,
            406
        );
    }

    #[test]
    fn lists_and_objects_must_match_the_request() {
        let list = json!({"kind": "ConfigMapList", "metadata": {"resourceVersion": "5"},
                          "items": [{"metadata": {"name": "a"}, "data": {"k": "v"}}]});
        let rep = Representation::Partial {
            list: true,
            version: "v1",
        };
        let p = represent(list.clone(), rep).unwrap();
        assert_eq!(p["kind"], "PartialObjectMetadataList");
        assert_eq!(
            p["items"][0],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a"}})
        );
        let one = Representation::Partial {
            list: false,
            version: "v1",
        };
        assert_eq!(represent(list, one).unwrap_err().code, 406);
        let status = json!({"kind": "Status", "status": "Success"});
        assert_eq!(represent(status.clone(), one).unwrap(), status);
    }
}
