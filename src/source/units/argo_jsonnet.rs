//! Jsonnet files of an Argo CD directory source, evaluated as the repo-server's
//! `makeJsonnetVM` sets go-jsonnet up: `jsonnet.extVars` and `jsonnet.tlas` (strings, or code
//! with `code: true`), imports found next to the importing file, then in the application's
//! path, then in `jsonnet.libs` (relative to the repository root). Evaluated by
//! `rsjsonnet-lang`, a maintained Rust implementation of the language.

use rsjsonnet_lang::arena::Arena;
use rsjsonnet_lang::interner::InternedStr;
use rsjsonnet_lang::program::{
    Callbacks, EvalError, EvalStackTraceItem, ImportError, NativeError, Program, Thunk, Value,
};
use rsjsonnet_lang::span::{SpanContextId, SpanId};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One `extVars` or `tlas` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    pub name: String,
    pub value: String,
    /// `code: true`: the value is Jsonnet code, not a string.
    pub code: bool,
}

/// A directory source's `jsonnet` options, paths resolved.
#[derive(Debug, Clone, Default)]
pub struct JsonnetOptions {
    pub ext_vars: Vec<Variable>,
    pub tlas: Vec<Variable>,
    /// Where imports are looked for after the importing file's directory: the application's
    /// path, then each of `libs`.
    pub jpaths: Vec<PathBuf>,
}

impl JsonnetOptions {
    /// `directory.jsonnet` of a source whose path is `app_dir` in a tree rooted at `root`.
    pub fn of(
        jsonnet: Option<&Json>,
        app_dir: &Path,
        root: &Path,
    ) -> Result<JsonnetOptions, String> {
        let vars = |key: &str| -> Result<Vec<Variable>, String> {
            jsonnet
                .and_then(|j| j.get(key))
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .map(|v| {
                    let name = v.get("name").and_then(Json::as_str);
                    let value = v.get("value").and_then(Json::as_str).unwrap_or("");
                    let code = v.get("code").and_then(Json::as_bool).unwrap_or(false);
                    match name {
                        Some(name) if !name.is_empty() => Ok(Variable {
                            name: name.into(),
                            value: value.into(),
                            code,
                        }),
                        _ => Err(format!("directory.jsonnet.{key}: every entry needs a name")),
                    }
                })
                .collect()
        };
        let mut jpaths = vec![app_dir.to_path_buf()];
        for lib in jsonnet
            .and_then(|j| j.get("libs"))
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
            .filter_map(Json::as_str)
        {
            let rel = crate::source::paths::normalize(Path::new(lib.trim_start_matches('/')));
            if crate::source::paths::leaves_root(&rel) {
                return Err(format!(
                    "directory.jsonnet.libs: {lib} leaves the repository; write a path relative to its root"
                ));
            }
            jpaths.push(root.join(rel));
        }
        Ok(JsonnetOptions {
            ext_vars: vars("extVars")?,
            tlas: vars("tlas")?,
            jpaths,
        })
    }
}

/// The objects a `.jsonnet` file evaluates to: a list of objects, or one.
pub fn evaluate(file: &Path, options: &JsonnetOptions) -> Result<Vec<Json>, String> {
    let source = std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let arena = Arena::new();
    let mut program = Program::new(&arena);
    let mut importer = Importer {
        files: HashMap::new(),
        jpaths: options.jpaths.clone(),
        cache: HashMap::new(),
        failure: None,
    };
    for var in &options.ext_vars {
        let thunk = variable(&mut program, &mut importer, var)?;
        let name = program.intern_str(&var.name);
        program.add_ext_var(name, &thunk);
    }
    let root = importer.load(&mut program, file, &source)?;
    let mut value = program
        .eval_value(&root, &mut importer)
        .map_err(|e| importer.eval_message(&program, &e))?;
    if value.is_function() {
        let mut named: Vec<(InternedStr<'_>, Thunk<'_>)> = Vec::new();
        for var in &options.tlas {
            let thunk = variable(&mut program, &mut importer, var)?;
            named.push((program.intern_str(&var.name), thunk));
        }
        let func = program.value_to_thunk(&value);
        value = program
            .eval_call(&func, &[], &named, &mut importer)
            .map_err(|e| importer.eval_message(&program, &e))?;
    }
    let text = program
        .manifest_json(&value, false)
        .map_err(|e| importer.eval_message(&program, &e))?;
    let json: Json = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    match json {
        Json::Array(items) => Ok(items),
        Json::Object(_) => Ok(vec![json]),
        other => Err(format!(
            "evaluates to {}, not an object or a list of objects",
            match other {
                Json::Null => "null",
                Json::Bool(_) => "a boolean",
                Json::Number(_) => "a number",
                _ => "a string",
            }
        )),
    }
}

/// An `extVars` or `tlas` value as a thunk: a string, or code evaluated lazily.
fn variable<'p>(
    program: &mut Program<'p>,
    importer: &mut Importer<'p>,
    var: &Variable,
) -> Result<Thunk<'p>, String> {
    if !var.code {
        return Ok(program.value_to_thunk(&Value::string(&var.value)));
    }
    let path = PathBuf::from(format!("<{}>", var.name));
    importer.load(program, &path, var.value.as_bytes())
}

struct Importer<'p> {
    files: HashMap<SpanContextId, PathBuf>,
    jpaths: Vec<PathBuf>,
    cache: HashMap<PathBuf, Thunk<'p>>,
    /// Why the last import failed (the library's error carries nothing).
    failure: Option<String>,
}

impl<'p> Importer<'p> {
    fn load(
        &mut self,
        program: &mut Program<'p>,
        path: &Path,
        source: &[u8],
    ) -> Result<Thunk<'p>, String> {
        let (ctx, _) = program
            .span_manager_mut()
            .insert_source_context(source.len());
        self.files.insert(ctx, path.to_path_buf());
        program
            .load_source(ctx, source, true, &path.to_string_lossy())
            .map_err(|e| format!("{}: {}", path.display(), short_debug(&format!("{e:?}"))))
    }

    /// `path` as imported from the file of span `from`: next to it, then in the jpaths.
    fn resolve(
        &mut self,
        program: &Program<'p>,
        from: SpanId,
        path: &str,
    ) -> Result<PathBuf, ImportError> {
        let (ctx, _, _) = program.span_manager().get_span(from);
        let dir = self
            .files
            .get(&ctx)
            .and_then(|f| f.parent())
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let found = std::iter::once(dir)
            .chain(self.jpaths.iter().cloned())
            .map(|d| d.join(path))
            .find(|p| p.is_file());
        found.ok_or_else(|| {
            self.failure = Some(format!(
                "couldn't open import {path:?}: no match locally or in the Jsonnet library paths"
            ));
            ImportError
        })
    }

    fn read(&mut self, path: &Path) -> Result<Vec<u8>, ImportError> {
        std::fs::read(path).map_err(|e| {
            self.failure = Some(format!("cannot read {}: {e}", path.display()));
            ImportError
        })
    }

    fn eval_message(&self, program: &Program<'p>, e: &EvalError) -> String {
        if let Some(failure) = &self.failure {
            return failure.clone();
        }
        let at = e
            .stack_trace
            .iter()
            .find_map(|item| match item {
                EvalStackTraceItem::Expr { span } => Some(*span),
                _ => None,
            })
            .map(|span| self.location(program, span))
            .unwrap_or_default();
        format!("{}{at}", short_debug(&format!("{:?}", e.kind)))
    }

    /// ` (file:line)` of a span.
    fn location(&self, program: &Program<'p>, span: SpanId) -> String {
        let (ctx, start, _) = program.span_manager().get_span(span);
        let Some(file) = self.files.get(&ctx) else {
            return String::new();
        };
        let line = std::fs::read(file)
            .map(|bytes| 1 + bytes.iter().take(start).filter(|&&b| b == b'\n').count())
            .unwrap_or(0);
        format!(" at {}:{line}", file.display())
    }
}

/// The library's errors are enums without a Display: their Debug text without span ids.
fn short_debug(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("span: SpanId(") {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let end = after.find(')').map_or(after.len(), |e| e + 1);
        rest = after[end..].trim_start_matches(", ");
    }
    out.push_str(rest);
    out
}

impl<'p> Callbacks<'p> for Importer<'p> {
    fn import(
        &mut self,
        program: &mut Program<'p>,
        from: SpanId,
        path: &str,
    ) -> Result<Thunk<'p>, ImportError> {
        let resolved = self.resolve(program, from, path)?;
        if let Some(thunk) = self.cache.get(&resolved) {
            return Ok(thunk.clone());
        }
        let source = self.read(&resolved)?;
        let thunk = self.load(program, &resolved, &source).map_err(|e| {
            self.failure = Some(e);
            ImportError
        })?;
        self.cache.insert(resolved, thunk.clone());
        Ok(thunk)
    }

    fn import_str(
        &mut self,
        program: &mut Program<'p>,
        from: SpanId,
        path: &str,
    ) -> Result<String, ImportError> {
        let resolved = self.resolve(program, from, path)?;
        let bytes = self.read(&resolved)?;
        String::from_utf8(bytes).map_err(|_| {
            self.failure = Some(format!("{} is not UTF-8 text", resolved.display()));
            ImportError
        })
    }

    fn import_bin(
        &mut self,
        program: &mut Program<'p>,
        from: SpanId,
        path: &str,
    ) -> Result<Vec<u8>, ImportError> {
        let resolved = self.resolve(program, from, path)?;
        self.read(&resolved)
    }

    fn trace(&mut self, _: &mut Program<'p>, _: &str, _: &[EvalStackTraceItem]) {}

    fn native_call(
        &mut self,
        _: &mut Program<'p>,
        name: InternedStr<'p>,
        _: &[Value<'p>],
    ) -> Result<Value<'p>, NativeError> {
        self.failure = Some(format!("std.native({:?}) is not available", name.value()));
        Err(NativeError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap_or(dir)).ok();
        std::fs::write(&path, text).ok();
        path
    }

    #[test]
    fn files_evaluate_with_imports_ext_vars_and_tlas() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        write(root, "lib/labels.libsonnet", "{ team: 'a' }");
        write(root, "app/helper.libsonnet", "{ name(n):: 'cm-' + n }");
        let main = write(
            root,
            "app/main.jsonnet",
            r#"local labels = import 'labels.libsonnet';
               local h = import 'helper.libsonnet';
               function(replicas=1) [
                 { apiVersion: 'v1', kind: 'ConfigMap',
                   metadata: { name: h.name(std.extVar('env')), labels: labels },
                   data: { replicas: std.toString(replicas), code: std.toString(std.extVar('n') + 1) } },
               ]"#,
        );
        let options = JsonnetOptions::of(
            Some(&serde_json::json!({
                "extVars": [{"name": "env", "value": "dev"}, {"name": "n", "value": "41", "code": true}],
                "tlas": [{"name": "replicas", "value": "3", "code": true}],
                "libs": ["lib"],
            })),
            &root.join("app"),
            root,
        )
        .expect("options");
        let objects = evaluate(&main, &options).expect("evaluates");
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0]["metadata"]["name"], "cm-dev");
        assert_eq!(objects[0]["metadata"]["labels"]["team"], "a");
        assert_eq!(objects[0]["data"]["replicas"], "3");
        assert_eq!(objects[0]["data"]["code"], "42");
    }

    #[test]
    fn errors_name_the_problem() {
        let dir = tempfile::tempdir().expect("temp dir");
        let bad = write(
            dir.path(),
            "bad.jsonnet",
            "local x = import 'missing.libsonnet'; x",
        );
        let err = evaluate(&bad, &JsonnetOptions::default()).unwrap_err();
        assert!(err.contains("missing.libsonnet"), "{err}");
        let bad = write(dir.path(), "err.jsonnet", "\n\nerror 'boom'");
        let err = evaluate(&bad, &JsonnetOptions::default()).unwrap_err();
        assert!(err.contains("boom"), "{err}");
        let scalar = write(dir.path(), "n.jsonnet", "1");
        assert!(evaluate(&scalar, &JsonnetOptions::default()).is_err());
    }
}
