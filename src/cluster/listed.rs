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
        let identity = match head_of(text.get()) {
            Some(identity) => identity,
            // Only `metadata`'s four fields are kept; the rest is skipped without allocating.
            None => {
                serde_json::from_str::<Head>(text.get())
                    .map_err(D::Error::custom)?
                    .metadata
            }
        };
        Ok(Listed { identity, text })
    }
}

/// The identity read from the start of an item, stopping as soon as it is known: the API
/// server writes `metadata` first and in it name, namespace, uid and resourceVersion before
/// the bulk (managedFields), so most of the item is never looked at a second time. `None`
/// when the item is laid out otherwise (or is cluster-scoped: only its end says there is no
/// namespace); the caller then reads the whole item.
fn head_of(text: &str) -> Option<Identity> {
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
    use std::borrow::Cow;
    use std::fmt;

    /// What is read so far, and whether it is all: the reader is then stopped with an
    /// error nobody sees.
    struct Found {
        identity: Identity,
        complete: bool,
    }
    struct Item<'a>(&'a mut Found);
    struct Metadata<'a>(&'a mut Found);

    impl<'de> Visitor<'de> for Item<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                if key == "metadata" {
                    return map.next_value_seed(Metadata(self.0));
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }

    impl<'de> DeserializeSeed<'de> for Metadata<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de> Visitor<'de> for Metadata<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let (mut name, mut namespace, mut uid, mut version) = (false, false, false, false);
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                let (slot, seen) = match &*key {
                    "name" => (&mut self.0.identity.name, &mut name),
                    "uid" => (&mut self.0.identity.uid, &mut uid),
                    "resourceVersion" => (&mut self.0.identity.resource_version, &mut version),
                    "namespace" => {
                        self.0.identity.namespace = Some(map.next_value()?);
                        namespace = true;
                        if name && uid && version {
                            self.0.complete = true;
                            return Err(A::Error::custom("enough"));
                        }
                        continue;
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                };
                *slot = map.next_value()?;
                *seen = true;
                if name && namespace && uid && version {
                    self.0.complete = true;
                    return Err(A::Error::custom("enough"));
                }
            }
            Err(A::Error::custom("incomplete"))
        }
    }

    let mut found = Found {
        identity: Identity::default(),
        complete: false,
    };
    let mut reader = serde_json::Deserializer::from_str(text);
    let _stopped = serde::Deserializer::deserialize_map(&mut reader, Item(&mut found));
    found.complete.then_some(found.identity)
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
        name_kind(&mut item, resource);
        Ok(item)
    }
}

/// Give a LIST item the resource's apiVersion and kind, which LIST items lack.
pub(super) fn name_kind(item: &mut Value, resource: &Resource) {
    if let Some(map) = item.as_object_mut() {
        map.insert(
            "apiVersion".into(),
            Value::String(resource.api.api_version.clone()),
        );
        map.insert("kind".into(), Value::String(resource.api.kind.clone()));
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

    /// ConfigMap `web/a` in this version.
    fn identity(uid: &str, resource_version: &str) -> Identity {
        Identity {
            name: "a".into(),
            namespace: Some("web".into()),
            uid: uid.into(),
            resource_version: resource_version.into(),
        }
    }

    #[test]
    fn an_item_reads_as_its_identity_and_parses_to_the_same_value() {
        let text = r#"{"metadata":{"name":"a","namespace":"web","uid":"u-1","resourceVersion":"42",
            "managedFields":[{"manager":"tend","fieldsV1":{"f:data":{}}}]},"data":{"k":"v\u00e9"}}"#;
        let listed: Listed = serde_json::from_str(text).expect("an item");
        assert_eq!(listed.identity, identity("u-1", "42"));
        let resource = configmaps();
        let key = listed.key(&resource);
        let value = listed.into_value(&resource).expect("valid JSON");
        assert_eq!(key, ObjectKey::of_value(&value));
        assert_eq!(value["data"]["k"], "vé");
        assert_eq!(value["apiVersion"], "v1");
        assert_eq!(value["kind"], "ConfigMap");
    }

    #[test]
    fn the_identity_is_the_same_however_the_item_is_laid_out() {
        let items = [
            // As the API server writes it: read no further than resourceVersion.
            r#"{"metadata":{"name":"a","namespace":"web","uid":"u","resourceVersion":"7","managedFields":[]},"data":{}}"#,
            // metadata after the body, namespace last, escapes in a name.
            r#"{"data":{"metadata":{"name":"decoy"}},"metadata":{"uid":"u","resourceVersion":"7","name":"\u0061","namespace":"web"}}"#,
            // namespace missing from the front: the whole item is read.
            r#"{"metadata":{"name":"a","uid":"u","resourceVersion":"7","labels":{"namespace":"x"},"namespace":"web"}}"#,
        ];
        for text in items {
            let listed: Listed = serde_json::from_str(text).expect("an item");
            assert_eq!(listed.identity, identity("u", "7"), "{text}");
        }
    }

    #[test]
    fn a_cluster_scoped_item_has_no_namespace() {
        let listed: Listed =
            serde_json::from_str(r#"{"metadata":{"name":"n","namespace":""}}"#).expect("an item");
        assert_eq!(listed.key(&configmaps()).namespace, None);
        assert!(listed.identity.uid.is_empty());
    }
}
