//! A LIST item read only as far as its identity (name, namespace, uid, resourceVersion), the
//! rest kept as the server's text until someone needs it. A no-op run's member LISTs are
//! mostly objects an earlier run already found as desired; for those the identity is all that
//! is read (see `plan::settled`), and parsing and freeing ~1 MB of JSON values per cluster
//! is skipped.

use super::Resource;
use crate::object::{Identity, ObjectKey};
use serde::de::{Deserialize, Deserializer, Error as _};
use serde_json::value::RawValue;
use serde_json::Value;

/// One LIST item: its identity, and its text.
#[derive(Debug)]
pub struct Listed {
    pub identity: Identity,
    text: Box<RawValue>,
}

#[derive(serde::Deserialize)]
struct Head {
    #[serde(default)]
    metadata: Identity,
}

impl<'de> Deserialize<'de> for Listed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Box::<RawValue>::deserialize(d)?;
        // Only `metadata`'s four fields are kept; the rest is skipped without allocating.
        let head: Head = serde_json::from_str(text.get()).map_err(D::Error::custom)?;
        Ok(Listed {
            identity: head.metadata,
            text,
        })
    }
}

impl Listed {
    /// The item's key, as [`ObjectKey::of_value`] gives it for the parsed item.
    pub fn key(&self, resource: &Resource) -> ObjectKey {
        ObjectKey {
            group: resource.api.group.clone(),
            kind: resource.api.kind.clone(),
            namespace: self.identity.namespace.clone().filter(|ns| !ns.is_empty()),
            name: self.identity.name.clone(),
        }
    }

    /// The whole item as a JSON value, with the resource's apiVersion and kind (which LIST
    /// items lack), as [`super::list_each`] hands it.
    pub fn into_value(self, resource: &Resource) -> Result<Value, serde_json::Error> {
        let mut item: Value = serde_json::from_str(self.text.get())?;
        super::verbs::name_kind(&mut item, resource);
        Ok(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::discovery::ApiResource;

    fn configmaps() -> Resource {
        Resource {
            api: ApiResource {
                group: String::new(),
                version: "v1".into(),
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                plural: "configmaps".into(),
            },
            namespaced: true,
        }
    }

    #[test]
    fn an_item_reads_as_its_identity_and_parses_to_the_same_value() {
        let text = r#"{"metadata":{"name":"a","namespace":"web","uid":"u-1","resourceVersion":"42",
            "managedFields":[{"manager":"tend","fieldsV1":{"f:data":{}}}]},"data":{"k":"v\u00e9"}}"#;
        let listed: Listed = serde_json::from_str(text).expect("an item");
        assert_eq!(
            listed.identity,
            Identity {
                name: "a".into(),
                namespace: Some("web".into()),
                uid: "u-1".into(),
                resource_version: "42".into(),
            }
        );
        let resource = configmaps();
        let key = listed.key(&resource);
        let value = listed.into_value(&resource).expect("valid JSON");
        assert_eq!(key, ObjectKey::of_value(&value));
        assert_eq!(value["data"]["k"], "vé");
        assert_eq!(value["apiVersion"], "v1");
        assert_eq!(value["kind"], "ConfigMap");
    }

    #[test]
    fn a_cluster_scoped_item_has_no_namespace() {
        let listed: Listed =
            serde_json::from_str(r#"{"metadata":{"name":"n","namespace":""}}"#).expect("an item");
        assert_eq!(listed.key(&configmaps()).namespace, None);
        assert!(listed.identity.uid.is_empty());
    }
}
