//! `ignoreDifferences[].jqPathExpressions`: as Argo CD's ignore normalizer
//! (argo-cd `util/argo/normalizers/diff_normalizer.go`), each expression `E` becomes the jq
//! program `del(E)`, run on the object; it must give exactly one object back. An expression
//! that does not parse is an error of the Application; one that fails on an object (a path
//! into a string, say) leaves that object as it was, as Argo CD skips a failed patch.
//! Evaluated with jaq (`jaq-core`, `jaq-std`, `jaq-json`), a maintained Rust jq. Pure.

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{data, unwrap_valr, Compiler, Ctx, Vars};
use jaq_json::Val;
use serde_json::Value;

type Filter = jaq_core::compile::Filter<jaq_core::Native<data::JustLut<Val>>>;

/// `del(expression)`, compiled; why not, when it does not parse or compile.
fn compile(expression: &str) -> Result<Filter, String> {
    let code = format!("del({expression})");
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let modules = loader
        .load(
            &arena,
            File {
                code: code.as_str(),
                path: (),
            },
        )
        .map_err(|errors| format!("jq cannot parse it ({} error(s))", errors.len()))?;
    Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errors| {
            let names: Vec<String> = errors
                .into_iter()
                .flat_map(|(_, errs)| errs.into_iter().map(|(name, _)| name.to_string()))
                .collect();
            format!("jq cannot compile it (unknown: {})", names.join(", "))
        })
}

/// Whether `expression` is a jq path expression tend can run.
pub fn check(expression: &str) -> Result<(), String> {
    compile(expression).map(|_| ())
}

/// `object` with what `expression` selects deleted; unchanged when the program fails on it
/// or does not give exactly one object.
pub fn delete(object: &mut Value, expression: &str) {
    let Ok(filter) = compile(expression) else {
        return;
    };
    let Ok(bytes) = serde_json::to_vec(object) else {
        return;
    };
    let Ok(input) = jaq_json::read::parse_single(&bytes) else {
        return;
    };
    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
    let mut out = filter.id.run((ctx, input)).map(unwrap_valr);
    let (Some(Ok(first)), None) = (out.next(), out.next()) else {
        tracing::debug!("jqPathExpressions {expression:?} gave no single object; left as it is");
        return;
    };
    match serde_json::from_str::<Value>(&first.to_string()) {
        Ok(value) if value.is_object() => *object = value,
        _ => tracing::debug!("jqPathExpressions {expression:?} gave no object; left as it is"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deletes_what_the_path_expression_selects() {
        let mut object = json!({
            "kind": "Deployment",
            "spec": {"template": {"spec": {"containers": [
                {"name": "app", "image": "app:1", "resources": {"limits": {"cpu": "1"}}},
                {"name": "sidecar", "image": "injected:2"},
            ]}}},
        });
        delete(
            &mut object,
            ".spec.template.spec.containers[] | select(.name == \"sidecar\")",
        );
        delete(&mut object, ".spec.template.spec.containers[].resources");
        assert_eq!(
            object["spec"]["template"]["spec"]["containers"],
            json!([{"name": "app", "image": "app:1"}])
        );
        // A failing program leaves the object as it is.
        let before = object.clone();
        delete(&mut object, ".kind.nested");
        assert_eq!(object, before);
        assert!(check(".spec[").is_err());
        assert!(check(".metadata.labels | nosuchfunction").is_err());
        assert!(check(".spec.replicas").is_ok());
    }
}
