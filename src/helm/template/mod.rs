//! Go's `text/template`, as Helm runs it: lexer (`lex`), parser ([`parse`]), executor
//! ([`exec`]), Go's `fmt` ([`gofmt`]) and the language's built-in functions ([`builtins`]).
//! Pure: text and values in, text or a [`TemplateError`] out. Helm's and Sprig's functions
//! are added by the caller through [`Engine::register`].

pub mod builtins;
mod context;
pub mod exec;
pub mod gofmt;
mod lex;
pub mod limits;
pub mod parse;
pub mod value;

pub use context::RenderContext;
pub use exec::Exec;
pub use limits::RenderLimits;
pub use value::{IntType, Value};

use parse::Node;
use std::collections::HashMap;
use std::rc::Rc;

/// A template function: Go's `func(args...) (any, error)`, with the execution for
/// functions that run templates (`include`, `tpl`).
pub type Func = fn(&mut Exec, Vec<Value>) -> Result<Value, CallError>;

/// Why a function call failed.
#[derive(Debug)]
pub enum CallError {
    /// Go's `error calling <func>: <message>`.
    Message(String),
    /// An error of a template the function ran, passed through as it is.
    Template(TemplateError),
}

impl From<String> for CallError {
    fn from(m: String) -> Self {
        CallError::Message(m)
    }
}

impl From<&str> for CallError {
    fn from(m: &str) -> Self {
        CallError::Message(m.to_string())
    }
}

impl From<TemplateError> for CallError {
    fn from(e: TemplateError) -> Self {
        CallError::Template(e)
    }
}

/// A parse or execution error: the template (file) name, the line, what went wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("template: {template}:{line}: {message}")]
pub struct TemplateError {
    pub template: String,
    pub line: usize,
    pub message: String,
}

/// Parsed templates kept per thread, by (functions known, methods known, text).
type Parsed = (Vec<(String, Rc<Vec<Node>>)>, Rc<Vec<Node>>);

/// At most this many parsed texts are kept per thread (a few charts' worth).
const MAX_PARSED: usize = 4096;

thread_local! {
    static PARSED: std::cell::RefCell<HashMap<(usize, usize, Text), Parsed>> =
        std::cell::RefCell::new(HashMap::new());
}

/// A template's text as a key of `PARSED`: keys are compared whole, but only the length
/// and the first and last bytes are hashed, as SipHash over every byte of a big chart's
/// templates (kube-prometheus-stack: 1.7 MB) cost more than the lookups it served.
#[derive(PartialEq, Eq)]
struct Text(String);

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        const ENDS: usize = 256;
        let bytes = self.0.as_bytes();
        state.write_usize(bytes.len());
        state.write(&bytes[..bytes.len().min(ENDS)]);
        state.write(&bytes[bytes.len().saturating_sub(ENDS)..]);
    }
}

/// Forget the templates this thread parsed: a big chart's parse trees are megabytes
/// (kube-prometheus-stack's some 10 MB), which a finished render no longer needs.
pub fn forget_parsed() {
    PARSED.with(|parsed| *parsed.borrow_mut() = HashMap::new());
}

/// A set of templates sharing one namespace of `define`d names, and the functions they may
/// call.
#[derive(Default)]
pub struct Engine {
    templates: HashMap<String, Rc<Vec<Node>>>,
    functions: HashMap<&'static str, Func>,
    /// Methods of Helm's types, called with the receiver first.
    methods: HashMap<&'static str, Func>,
    /// The random stream, the clock and the cluster's answers of this engine's renders.
    context: RenderContext,
    /// Go's `missingkey=error`: a map's missing key is an error, not nil. Helm never sets
    /// it; Argo CD's ApplicationSets do through `goTemplateOptions`.
    missing_key_error: bool,
}

impl Engine {
    /// An engine with Go's built-in functions.
    pub fn new() -> Engine {
        let mut engine = Engine::default();
        builtins::register(&mut engine);
        engine
    }

    /// What the renders of this engine draw on, and what they used of it.
    pub fn context(&self) -> &RenderContext {
        &self.context
    }

    /// Go's `Option("missingkey=error")`.
    pub fn set_missing_key_error(&mut self, on: bool) {
        self.missing_key_error = on;
    }

    pub fn register(&mut self, name: &'static str, func: Func) {
        self.functions.insert(name, func);
    }

    /// A method of Helm's types (`Has` of `.Capabilities.APIVersions`, `Get` of `.Files`):
    /// `.X.Name args` on a list or map without a key `Name` calls it with the receiver
    /// first.
    pub fn register_method(&mut self, name: &'static str, func: Func) {
        self.methods.insert(name, func);
    }

    fn method(&self, name: &str) -> Option<Func> {
        self.methods.get(name).copied()
    }

    pub fn has_function(&self, name: &str) -> bool {
        self.functions.contains_key(name) || name == "and" || name == "or"
    }

    fn function(&self, name: &str) -> Option<Func> {
        self.functions.get(name).copied()
    }

    /// Parses `src` as the template `name`; its `define`s join the shared set, replacing
    /// earlier ones of the same name (as Go's `AddParseTree` does).
    pub fn add(&mut self, name: &str, src: &str) -> Result<(), TemplateError> {
        // Parse trees are immutable: a text parsed before with the same functions known is
        // not parsed again (a chart's templates, once per release otherwise).
        let key = (
            self.functions.len(),
            self.methods.len(),
            Text(src.to_string()),
        );
        let cached = PARSED.with(|parsed| parsed.borrow().get(&key).cloned());
        let (defines, root) = match cached {
            Some(parsed) => parsed,
            None => {
                let tree =
                    parse::parse(src, &|f| self.has_function(f)).map_err(|(line, message)| {
                        TemplateError {
                            template: name.to_string(),
                            line,
                            message,
                        }
                    })?;
                let parsed = (tree.defines, Rc::new(tree.root));
                PARSED.with(|cache| {
                    let mut cache = cache.borrow_mut();
                    if cache.len() >= MAX_PARSED {
                        cache.clear();
                    }
                    cache.insert(key, parsed.clone());
                });
                parsed
            }
        };
        for (define, body) in defines {
            self.templates.insert(define, body);
        }
        self.templates.insert(name.to_string(), root);
        Ok(())
    }

    /// Runs the template `name` with `dot`.
    pub fn execute(&self, name: &str, dot: Value) -> Result<String, TemplateError> {
        let mut exec = Exec::new(self, name);
        let Some(body) = self.templates.get(name).cloned() else {
            return Err(exec.error(format!("no template {name:?}")));
        };
        let mut out = String::new();
        exec.run(dot, &body, &mut out)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
