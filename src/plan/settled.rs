//! Objects an earlier run settled: found live exactly as desired (the fast path,
//! [`super::fast_path`]), recorded as which version of which object it was (uid,
//! resourceVersion, the apiVersion it was listed in) and a digest of the desired object.
//!
//! The API server gives an object a new resourceVersion on every write, and a new uid when it
//! is created again, so a LIST item with the same uid and resourceVersion is the same object,
//! byte for byte, as the one settled then. If what is desired of it is also the same (same
//! digest), the fast path would decide the same again: the item need not be parsed. Every
//! doubt (another version, another digest, a key never settled) reads the item in full.
//!
//! The record holds digests only: nothing of an object's content (a Secret's data) can be
//! read back from it. Reading and writing it is the run's (`run/settled_cache.rs`).

use crate::object::{Identity, Object, ObjectKey};
use serde_json::Value;
use sha2::Digest as _;
use std::collections::HashMap;
use std::sync::Mutex;

/// A digest of a desired object as the fast path compares it.
pub type DesiredDigest = [u8; 32];

/// One settled object, as kept between runs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    pub group: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    /// The apiVersion the object was listed in (the same object reads differently in
    /// another version).
    pub api_version: String,
    /// [`digest`] of the desired object, in hex.
    pub desired: String,
}

/// What earlier runs settled, and what this run settles.
#[derive(Default)]
pub struct Settled {
    earlier: HashMap<ObjectKey, (String, String, String, DesiredDigest)>,
    now: Mutex<Vec<Record>>,
}

impl std::fmt::Debug for Settled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Settled({} earlier)", self.earlier.len())
    }
}

/// Whether a desired object may be noted at all. Not a Secret, nor an object holding values
/// decrypted from SOPS: a digest of its content would let whoever reads the cache directory
/// test guesses of those values.
pub fn may_note(desired: &Object) -> bool {
    let secret = desired.group().is_empty() && desired.kind() == "Secret";
    !secret && desired.origin.sealed.is_empty()
}

/// The digest of a desired object: SHA-256 of its values, each written with its type and
/// length (so no two objects write the same bytes), in its fields' order. Walking the value
/// rather than writing its JSON spares the escaping, which was most of the cost; a fleet
/// digests every desired object once per cluster.
pub fn digest(desired: &Value) -> DesiredDigest {
    let mut bytes = Vec::with_capacity(4096);
    write_value(&mut bytes, desired);
    sha2::Sha256::digest(&bytes).into()
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.push(b'n'),
        Value::Bool(b) => out.extend_from_slice(if *b { b"t" } else { b"f" }),
        Value::Number(n) => {
            // The number's own text (`1`, `1.0`, `-2`): what the fast path compares.
            out.push(b'#');
            write_str(out, &n.to_string());
        }
        Value::String(s) => {
            out.push(b'"');
            write_str(out, s);
        }
        Value::Array(items) => {
            out.push(b'[');
            out.extend_from_slice(&(items.len() as u64).to_le_bytes());
            items.iter().for_each(|item| write_value(out, item));
        }
        Value::Object(fields) => {
            out.push(b'{');
            out.extend_from_slice(&(fields.len() as u64).to_le_bytes());
            for (key, value) in fields {
                write_str(out, key);
                write_value(out, value);
            }
        }
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

impl Settled {
    /// The records an earlier run left; those that do not read are dropped.
    pub fn new(records: Vec<Record>) -> Settled {
        let earlier = records
            .into_iter()
            .filter_map(|r| {
                let mut desired = [0u8; 32];
                hex::decode_to_slice(&r.desired, &mut desired).ok()?;
                let key = ObjectKey {
                    group: r.group,
                    kind: r.kind,
                    namespace: r.namespace,
                    name: r.name,
                };
                Some((key, (r.uid, r.resource_version, r.api_version, desired)))
            })
            .collect();
        Settled {
            earlier,
            now: Mutex::default(),
        }
    }

    /// Whether an earlier run settled this very version of `key` (listed in `api_version`)
    /// against a desired object of this digest. The uid must be known: a server that gives
    /// none cannot tell a recreated object from the old one.
    pub fn still(
        &self,
        key: &ObjectKey,
        live: &Identity,
        api_version: &str,
        desired: &DesiredDigest,
    ) -> bool {
        !live.uid.is_empty()
            && !live.resource_version.is_empty()
            && self.earlier.get(key).is_some_and(|(uid, rv, version, d)| {
                *uid == live.uid
                    && *rv == live.resource_version
                    && version == api_version
                    && d == desired
            })
    }

    /// Note that this run settled `key`, in this version, against this desired object.
    pub fn settle(
        &self,
        key: &ObjectKey,
        live: &Identity,
        api_version: &str,
        desired: &DesiredDigest,
    ) {
        if live.uid.is_empty() || live.resource_version.is_empty() {
            return;
        }
        let record = Record {
            group: key.group.clone(),
            kind: key.kind.clone(),
            namespace: key.namespace.clone(),
            name: key.name.clone(),
            uid: live.uid.clone(),
            resource_version: live.resource_version.clone(),
            api_version: api_version.to_string(),
            desired: hex::encode(desired),
        };
        if let Ok(mut now) = self.now.lock() {
            now.push(record);
        }
    }

    /// What this run settled, for the next run.
    pub fn settled_now(&self) -> Vec<Record> {
        self.now.lock().map(|now| now.clone()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> ObjectKey {
        ObjectKey {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: Some("web".into()),
            name: "a".into(),
        }
    }

    fn live(uid: &str, rv: &str) -> Identity {
        Identity {
            name: "a".into(),
            namespace: Some("web".into()),
            uid: uid.into(),
            resource_version: rv.into(),
        }
    }

    #[test]
    fn only_the_same_version_against_the_same_desired_object_is_still_settled() {
        let desired = digest(&json!({"data": {"k": "v"}}));
        let first = Settled::default();
        first.settle(&key(), &live("u1", "7"), "v1", &desired);
        let records = first.settled_now();
        let text = serde_json::to_string(&records).expect("records serialize");
        assert!(!text.contains("\"v\""), "no content in the record: {text}");
        let next = Settled::new(serde_json::from_str(&text).expect("records read back"));
        assert!(next.still(&key(), &live("u1", "7"), "v1", &desired));
        // Written since, created again, read in another version, desired otherwise.
        assert!(!next.still(&key(), &live("u1", "8"), "v1", &desired));
        assert!(!next.still(&key(), &live("u2", "7"), "v1", &desired));
        assert!(!next.still(&key(), &live("u1", "7"), "v2", &desired));
        let other = digest(&json!({"data": {"k": "w"}}));
        assert!(!next.still(&key(), &live("u1", "7"), "v1", &other));
        let mut elsewhere = key();
        elsewhere.namespace = Some("api".into());
        assert!(!next.still(&elsewhere, &live("u1", "7"), "v1", &desired));
    }

    #[test]
    fn an_object_without_uid_or_version_is_never_settled() {
        let desired = digest(&json!({}));
        let settled = Settled::default();
        settled.settle(&key(), &live("", "7"), "v1", &desired);
        settled.settle(&key(), &live("u1", ""), "v1", &desired);
        assert!(settled.settled_now().is_empty());
        let next = Settled::new(vec![Record {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: Some("web".into()),
            name: "a".into(),
            uid: String::new(),
            resource_version: String::new(),
            api_version: "v1".into(),
            desired: hex::encode(desired),
        }]);
        assert!(!next.still(&key(), &live("", ""), "v1", &desired));
    }

    #[test]
    fn a_damaged_digest_is_dropped() {
        let next = Settled::new(vec![Record {
            group: String::new(),
            kind: "ConfigMap".into(),
            namespace: Some("web".into()),
            name: "a".into(),
            uid: "u1".into(),
            resource_version: "7".into(),
            api_version: "v1".into(),
            desired: "not hex".into(),
        }]);
        assert_eq!(format!("{next:?}"), "Settled(0 earlier)");
    }

    #[test]
    fn the_digest_follows_the_fields_order_and_values() {
        let a = json!({"a": 1, "b": "x"});
        assert_eq!(digest(&a), digest(&json!({"a": 1, "b": "x"})));
        assert_ne!(digest(&a), digest(&json!({"a": 1, "b": "y"})));
        // Types and boundaries are part of what is written.
        assert_ne!(digest(&json!({"a": 1})), digest(&json!({"a": "1"})));
        assert_ne!(digest(&json!({"a": 1})), digest(&json!({"a": 1.0})));
        assert_ne!(digest(&json!(["ab", "c"])), digest(&json!(["a", "bc"])));
        assert_ne!(digest(&json!({"ab": "c"})), digest(&json!({"a": "bc"})));
        assert_ne!(digest(&json!([[], []])), digest(&json!([[[]]])));
        assert_ne!(digest(&json!(null)), digest(&json!(false)));
    }
}
