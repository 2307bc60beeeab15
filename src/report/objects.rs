//! Object streams: `tend render` output as YAML documents or a JSON `List`.

use crate::object::Object;
use crate::plan::diff::{is_secret, mask_object};
use crate::yaml;
use serde_json::json;

/// Output formats of an object stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFormat {
    Yaml,
    Json,
}

/// Print objects as a YAML stream (each preceded by a `# Source:` comment naming its origin)
/// or as a JSON `v1/List`. Secret data and SOPS-sealed fields are masked unless `show_secrets`.
pub fn format_objects(objects: &[Object], format: StreamFormat, show_secrets: bool) -> String {
    let shown = |o: &Object| {
        if show_secrets {
            o.value.clone()
        } else {
            mask_object(&o.value, &o.origin.sealed)
        }
    };
    match format {
        StreamFormat::Yaml => {
            let mut out = String::new();
            for object in objects {
                push_object_yaml(&mut out, object, show_secrets);
            }
            out
        }
        StreamFormat::Json => {
            let list = json!({
                "apiVersion": "v1",
                "kind": "List",
                "metadata": {},
                "items": objects.iter().map(shown).collect::<Vec<_>>(),
            });
            let mut text = serde_json::to_string_pretty(&list).unwrap_or_default();
            text.push('\n');
            text
        }
    }
}

/// One object of a YAML stream (`---`, its `# Source:` comment, the object), appended to
/// `out`; masked as [`format_objects`] masks.
pub fn push_object_yaml(out: &mut String, object: &Object, show_secrets: bool) {
    use std::fmt::Write;
    let _ = write!(out, "---\n# Source: {}\n", object.origin);
    // Only what is masked is copied first.
    let masked = !show_secrets && (is_secret(&object.value) || !object.origin.sealed.is_empty());
    if masked {
        yaml::push_yaml(out, &mask_object(&object.value, &object.origin.sealed));
    } else {
        yaml::push_yaml(out, &object.value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::diff::mask_secret;

    #[test]
    fn secrets_are_masked() {
        let secret = json!({"apiVersion":"v1","kind":"Secret","metadata":{"name":"s",
            "annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"pw\":\"aHVudGVyMg==\"}}"}},
            "data":{"pw":"aHVudGVyMg=="},"stringData":{"x":"hunter2"}});
        let text = mask_secret(&secret).to_string();
        assert!(!text.contains("aHVudGVyMg"));
        assert!(!text.contains("hunter2"));
        let cm = json!({"apiVersion":"v1","kind":"ConfigMap","data":{"a":"b"}});
        assert_eq!(mask_secret(&cm), cm);
    }
}
