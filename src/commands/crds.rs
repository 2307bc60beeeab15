//! `tend crds`: the CustomResourceDefinitions of tend's kinds, generated from the Rust types.
//! Install them with `tend crds | kubectl apply -f -`.

use crate::cli::{GlobalArgs, OutputFormat};
use crate::render::object::{Object, Origin};
use crate::report::objects::{format_objects, StreamFormat};
use crate::Error;
use std::process::ExitCode;

pub fn run(global: &GlobalArgs) -> Result<ExitCode, Error> {
    let format = match global.output {
        Some(OutputFormat::Json) => StreamFormat::Json,
        _ => StreamFormat::Yaml,
    };
    let objects: Vec<Object> = crate::kinds::crds()
        .into_iter()
        .map(|crd| {
            Object::new(
                serde_json::to_value(crd).unwrap_or_default(),
                Origin {
                    file: "tend crds".into(),
                    line: 1,
                    generated_by: None,
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
    Ok(ExitCode::SUCCESS)
}
