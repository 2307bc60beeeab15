//! `tend crds`: the CustomResourceDefinitions of tend's kinds, generated from the Rust types.
//! Install them with `tend crds | kubectl apply -f -`.

use super::{GlobalArgs, OutputFormat};
use crate::object::{Object, Origin};
use crate::ops::Verdict;
use crate::report::objects::{format_objects, StreamFormat};
use crate::Error;

pub fn run(global: &GlobalArgs) -> Result<Verdict, Error> {
    let format = match global.output {
        Some(OutputFormat::Json) => StreamFormat::Json,
        _ => StreamFormat::Yaml,
    };
    let objects: Vec<Object> = crate::kinds::crds()
        .into_iter()
        .map(|crd| {
            Object::new(
                integral_floats_as_integers(serde_json::to_value(crd).unwrap_or_default()),
                Origin {
                    file: "tend crds".into(),
                    line: 1,
                    generated_by: None,
                    sealed: Vec::new(),
                },
            )
        })
        .collect();
    let text = format_objects(&objects, format, false);
    // The `# Source:` comments help for rendered sites; here they would only be noise.
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("# Source: "))
        .map(|l| format!("{l}\n"))
        .collect();
    super::print(&text)?;
    Ok(Verdict::Success)
}

/// k8s-openapi types schema bounds as f64, so `maximum: 100` would print as `100.0`. The API
/// server treats both alike, but a printed CRD should read as written (and compare equal to
/// one applied by kubectl from a hand-written file).
fn integral_floats_as_integers(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => {
            Value::Array(items.into_iter().map(integral_floats_as_integers).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, integral_floats_as_integers(v)))
                .collect(),
        ),
        other => other,
    }
}
