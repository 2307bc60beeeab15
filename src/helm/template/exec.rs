//! Executing a parsed template with Go's semantics: variables and `$`, pipelines, control
//! structures with `break`/`continue`, named templates, and the built-in functions whose
//! behaviour is part of the language (`and`/`or` short-circuit, comparisons, `index`, ...).

use super::gofmt;
use super::limits::{self, stack_nearly_full};
use super::parse::{Command, Node, Operand, Pipe};
use super::value::Value;
use super::{Engine, TemplateError};
use std::collections::HashMap;
use std::rc::Rc;

/// How deep `template`/`include`/`tpl` may nest; Helm stops recursion the same way.
const MAX_DEPTH: usize = 1000;

enum Flow {
    Normal,
    Break,
    Continue,
}

/// One execution: the engine's templates, the variables in scope, where we are.
pub struct Exec<'e> {
    engine: &'e Engine,
    vars: Vec<Binding>,
    /// Whether dot, when nil, is a nil `interface{}` (see [`Binding::nil_interface`]): an
    /// element `range` gave, never unwrapped by a pipeline.
    dot_nil_interface: bool,
    /// The template being executed and the line of the action being evaluated, for errors.
    name: Rc<str>,
    line: usize,
    depth: usize,
    /// Templates defined by `tpl` text, visible while it runs.
    overlay: Vec<HashMap<String, Rc<Vec<Node>>>>,
    /// Whether the last field chain evaluated ended in a nil it looked up (Go's valid nil
    /// `interface{}`), not a nil it started from (Go's invalid value).
    looked_up_nil: bool,
    /// For the function being called, which arguments are such looked-up nils (see
    /// [`Exec::nil_interface_arg`]).
    nil_interface_args: Vec<bool>,
}

type Res<T> = Result<T, TemplateError>;

/// A variable in scope.
struct Binding {
    name: String,
    value: Value,
    /// Whether a nil value is Go's nil `interface{}` rather than its invalid value. A
    /// pipeline unwraps the interface of what it gives (`$x := .missing` holds the invalid
    /// value, so `$x.y` is empty), but `range` binds each element as the slice or map holds
    /// it, so of a nil element `$v.y` is "nil pointer evaluating interface {}.y" and a map
    /// parameter refuses `$v` (Go's exec.go: walkRange, evalPipeline, evalField).
    nil_interface: bool,
}

impl Binding {
    fn new(name: &str, value: Value) -> Self {
        Binding {
            name: name.to_string(),
            value,
            nil_interface: false,
        }
    }
}

impl<'e> Exec<'e> {
    pub(super) fn new(engine: &'e Engine, name: &str) -> Self {
        Exec {
            engine,
            vars: Vec::new(),
            dot_nil_interface: false,
            name: name.into(),
            line: 0,
            depth: 0,
            overlay: Vec::new(),
            looked_up_nil: false,
            nil_interface_args: Vec::new(),
        }
    }

    /// What this render draws on (random stream, clock, the cluster's answers).
    pub fn context(&self) -> &super::RenderContext {
        self.engine.context()
    }

    /// Whether argument `i` of the function being called is a nil that a field lookup gave
    /// (`.Values.missing`, `$x.y`): Go passes it as a nil `interface{}`, which a parameter of
    /// a map type refuses ("wrong type for value"). A nil from a pipeline, a function or the
    /// piped value is Go's invalid value instead, which such a parameter takes as the nil
    /// map.
    pub fn nil_interface_arg(&self, i: usize) -> bool {
        self.nil_interface_args.get(i).copied().unwrap_or(false)
    }

    pub(super) fn error(&self, message: impl Into<String>) -> TemplateError {
        TemplateError {
            template: self.name.to_string(),
            line: self.line,
            message: message.into(),
        }
    }

    /// Spends `n` steps of the render's work budget.
    pub fn spend_steps(&self, n: u64) -> Res<()> {
        self.context().spend_steps(n).map_err(|m| self.error(m))
    }

    /// Spends `n` bytes of the render's memory budget: called before a function makes a
    /// large string or list, so the budget stops it before the memory is taken.
    pub fn spend_bytes(&self, n: u64) -> Res<()> {
        self.context().spend_bytes(n).map_err(|m| self.error(m))
    }

    /// Bytes of the render's memory budget left.
    pub fn bytes_left(&self) -> u64 {
        self.context().bytes_left()
    }

    /// Refuses a value that cannot be walked whole (a cycle, too deep, too large written
    /// out), before a function that walks it (`toYaml`, `print`, `deepCopy`, `eq`) does.
    pub fn check_walk(&self, value: &Value) -> Res<()> {
        limits::expanded_size(value, self.bytes_left())
            .map(|_| ())
            .map_err(|e| self.error(e.message(&self.context().limits())))
    }

    /// Refuses to go deeper when this thread's stack is nearly full.
    fn check_stack(&self) -> Res<()> {
        if stack_nearly_full() {
            return Err(self.error(
                "nested too deep: the template's actions, or the templates it includes, nest deeper than this thread's stack allows",
            ));
        }
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<Rc<Vec<Node>>> {
        self.overlay
            .iter()
            .rev()
            .find_map(|o| o.get(name).cloned())
            .or_else(|| self.engine.templates.get(name).cloned())
    }

    /// Runs the named template with `dot` (and `$` = `dot`) and returns its text: Go's
    /// `{{template}}` and Helm's `include`.
    pub fn execute_named(&mut self, name: &str, dot: Value) -> Res<String> {
        let Some(body) = self.lookup(name) else {
            return Err(self.error(format!(
                "no template {name:?} associated with template {:?}",
                self.name
            )));
        };
        let mut out = String::new();
        self.nested(name, dot, &body, &mut out)?;
        Ok(out)
    }

    /// Parses `text` and runs it with `dot`: Helm's `tpl`. Templates it defines are visible
    /// to it only.
    pub fn execute_text(&mut self, text: &str, dot: Value) -> Res<String> {
        let tree = super::parse::parse(text, &|f| self.engine.has_function(f)).map_err(
            |(line, message)| TemplateError {
                template: self.name.to_string(),
                line,
                message: format!("in tpl text: {message}"),
            },
        )?;
        self.overlay.push(tree.defines.into_iter().collect());
        let mut out = String::new();
        let name = self.name.clone();
        let result = self.nested(&name, dot, &tree.root, &mut out);
        self.overlay.pop();
        result.map(|_| out)
    }

    fn nested(&mut self, name: &str, dot: Value, body: &[Node], out: &mut String) -> Res<()> {
        if self.depth >= MAX_DEPTH || stack_nearly_full() {
            return Err(self.error(format!(
                "exceeded max template depth ({MAX_DEPTH}) executing {name:?}"
            )));
        }
        let saved_vars = std::mem::replace(&mut self.vars, vec![Binding::new("$", dot.clone())]);
        let saved_name = std::mem::replace(&mut self.name, name.into());
        let saved_line = self.line;
        // A template's data comes unwrapped from a pipeline or a function argument.
        let saved_dot_nil = std::mem::replace(&mut self.dot_nil_interface, false);
        self.depth += 1;
        let result = self.walk_list(&dot, body, out);
        self.depth -= 1;
        self.dot_nil_interface = saved_dot_nil;
        self.vars = saved_vars;
        self.name = saved_name;
        self.line = saved_line;
        result.map(|_| ())
    }

    pub(super) fn run(&mut self, dot: Value, body: &[Node], out: &mut String) -> Res<()> {
        self.vars = vec![Binding::new("$", dot.clone())];
        self.dot_nil_interface = false;
        self.walk_list(&dot, body, out).map(|_| ())
    }

    fn walk_list(&mut self, dot: &Value, nodes: &[Node], out: &mut String) -> Res<Flow> {
        for node in nodes {
            match self.walk(dot, node, out)? {
                Flow::Normal => {}
                flow => return Ok(flow),
            }
        }
        Ok(Flow::Normal)
    }

    fn walk(&mut self, dot: &Value, node: &Node, out: &mut String) -> Res<Flow> {
        self.spend_steps(1)?;
        match node {
            Node::Text(text) => {
                self.spend_bytes(text.len() as u64)?;
                out.push_str(text)
            }
            Node::Action(pipe) => {
                let value = self.pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    let before = out.len();
                    if matches!(value, Value::List(_) | Value::Map(_)) {
                        self.check_walk(&value)?;
                    }
                    if let Value::Struct(st) = &value {
                        if crate::helm::funcs::is_binary_text(&value) {
                            return Err(self.error(
                                "tend cannot print a chart file that is not UTF-8 text (from .Files.Get); encode it (b64enc) or read it as text".to_string(),
                            ));
                        }
                        if st.text.is_none() {
                            return Err(self.error(format!(
                                "tend cannot print a {} as Go's fmt does (its fields in declaration order); print its fields instead",
                                st.type_name
                            )));
                        }
                    }
                    match &value {
                        // Go prints an invalid (nil) result as "<no value>".
                        Value::Nil => out.push_str("<no value>"),
                        Value::Str(s) => out.push_str(s),
                        // An action prints a struct by its String (checked above).
                        Value::Struct(st) => out.push_str(st.text.as_deref().unwrap_or("")),
                        v => out.push_str(&gofmt::display(v)),
                    }
                    self.spend_bytes((out.len() - before) as u64)?;
                }
            }
            Node::If(c) | Node::With(c) => {
                self.check_stack()?;
                let mark = self.vars.len();
                let value = self.pipeline(dot, &c.pipe)?;
                let flow = if value.truthy() {
                    let inner = if matches!(node, Node::With(_)) {
                        &value
                    } else {
                        dot
                    };
                    self.walk_list(inner, &c.body, out)?
                } else {
                    self.walk_list(dot, &c.otherwise, out)?
                };
                self.vars.truncate(mark);
                return Ok(flow);
            }
            Node::Range(c) => {
                self.check_stack()?;
                return self.range(dot, c, out);
            }
            Node::Template { line, name, pipe } => {
                self.line = *line;
                let value = match pipe {
                    Some(p) => self.pipeline(dot, p)?,
                    None => Value::Nil,
                };
                let text = self.execute_named(name, value)?;
                out.push_str(&text);
            }
            Node::Break => return Ok(Flow::Break),
            Node::Continue => return Ok(Flow::Continue),
        }
        Ok(Flow::Normal)
    }

    fn range(&mut self, dot: &Value, c: &super::parse::Control, out: &mut String) -> Res<Flow> {
        let mark = self.vars.len();
        // The pipeline's own declarations are the loop variables, not the value's.
        let pipe = Pipe {
            decl: Vec::new(),
            ..c.pipe.clone()
        };
        let value = self.pipeline(dot, &pipe)?;
        // Items are taken one at a time (a range over a large int makes no list first).
        let count = match &value {
            Value::Nil => 0,
            Value::List(l) => l.len(),
            Value::Map(m) => m.borrow().len(),
            Value::Int(n, _) => {
                if c.pipe.decl.len() > 1 {
                    return Err(self.error("can't use two iteration variables with range over int"));
                }
                usize::try_from(*n).unwrap_or(0)
            }
            other => {
                return Err(self.error(format!(
                    "range can't iterate over {}",
                    gofmt::display(other)
                )));
            }
        };
        if count == 0 {
            let flow = self.walk_list(dot, &c.otherwise, out)?;
            self.vars.truncate(mark);
            return Ok(flow);
        }
        // A map's entries as they are when the range starts, sorted by key.
        let entries: Vec<(String, Value)> = match &value {
            Value::Map(m) => m
                .borrow()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            _ => Vec::new(),
        };
        // (An error ends the whole execution: nothing to restore then.)
        let saved_dot_nil = self.dot_nil_interface;
        for i in 0..count {
            self.spend_steps(1)?;
            let (key, item) = match &value {
                Value::List(l) => (Value::int(i as i64), l[i].clone()),
                Value::Map(_) => (Value::str(entries[i].0.as_str()), entries[i].1.clone()),
                _ => (Value::int(i as i64), Value::int(i as i64)),
            };
            // The element as the list or map holds it: a nil one is a nil interface.
            let element = Binding {
                nil_interface: matches!(value, Value::List(_) | Value::Map(_)),
                ..Binding::new("", item.clone())
            };
            match c.pipe.decl.as_slice() {
                [] => {}
                [elem] => self.vars.push(Binding {
                    name: elem.clone(),
                    ..element
                }),
                [k, elem, ..] => {
                    self.vars.push(Binding::new(k, key));
                    self.vars.push(Binding {
                        name: elem.clone(),
                        ..element
                    });
                }
            }
            self.dot_nil_interface = matches!(value, Value::List(_) | Value::Map(_));
            let flow = self.walk_list(&item, &c.body, out)?;
            self.vars.truncate(mark);
            if let Flow::Break = flow {
                break;
            }
        }
        self.dot_nil_interface = saved_dot_nil;
        Ok(Flow::Normal)
    }

    fn pipeline(&mut self, dot: &Value, pipe: &Pipe) -> Res<Value> {
        self.line = pipe.line;
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            value = Some(self.command(dot, cmd, value)?);
        }
        let value = value.unwrap_or_default();
        for name in &pipe.decl {
            if pipe.assign {
                match self.vars.iter_mut().rev().find(|b| &b.name == name) {
                    Some(slot) => *slot = Binding::new(name, value.clone()),
                    None => return Err(self.error(format!("undefined variable: {name}"))),
                }
            } else {
                self.vars.push(Binding::new(name, value.clone()));
            }
        }
        Ok(value)
    }

    /// A variable's value, and whether a nil one is a nil interface.
    fn variable(&self, name: &str) -> Res<(Value, bool)> {
        self.vars
            .iter()
            .rev()
            .find(|b| b.name == name)
            .map(|b| (b.value.clone(), b.nil_interface))
            .ok_or_else(|| self.error(format!("undefined variable: {name}")))
    }

    /// Follows `.A.B` from `value`; the last step gets `args` (only a method takes them).
    /// A map key wins over a method of the same name, as a Go map has no methods; methods
    /// are those of Helm's types (`.Capabilities.APIVersions.Has`, `.Files.Get`).
    ///
    /// A nil start (a nil variable, `(pipeline)` or dot) gives nil, as Go's invalid
    /// `reflect.Value` does, so `((.Values.global).x).y` is safe; a nil a map lookup gave is
    /// a nil interface, and a field of it is Go's "nil pointer" error. So is a nil start
    /// that `range` bound (`nil_interface`: a nil element as dot or `$v`).
    fn fields(
        &mut self,
        (value, nil_interface): (Value, bool),
        fields: &[String],
        args: Vec<Value>,
    ) -> Res<Value> {
        let mut invalid = !nil_interface;
        let result = self.follow(value, fields, args, &mut invalid);
        self.looked_up_nil = !invalid && matches!(result, Ok(Value::Nil));
        result
    }

    fn follow(
        &mut self,
        mut value: Value,
        fields: &[String],
        args: Vec<Value>,
        invalid: &mut bool,
    ) -> Res<Value> {
        let mut args = Some(args);
        for (i, field) in fields.iter().enumerate() {
            if *invalid && matches!(value, Value::Nil) {
                continue;
            }
            *invalid = false;
            let last = i + 1 == fields.len();
            let method = self.engine.method(field);
            value = match &value {
                Value::Map(m) if m.borrow().contains_key(field) || method.is_none() => {
                    if last && args.as_ref().is_some_and(|a| !a.is_empty()) {
                        return Err(
                            self.error(format!("{field} is not a method but has arguments"))
                        );
                    }
                    match m.borrow().get(field) {
                        Some(v) => v.clone(),
                        None if self.engine.missing_key_error => {
                            return Err(self.error(format!("map has no entry for key {field:?}")));
                        }
                        None => Value::Nil,
                    }
                }
                // A struct's fields, and the results of its methods without arguments.
                Value::Struct(st) if st.fields.contains_key(field) => {
                    if last && args.as_ref().is_some_and(|a| !a.is_empty()) {
                        return Err(
                            self.error(format!("{field} has arguments but cannot take any"))
                        );
                    }
                    st.fields.get(field).cloned().unwrap_or(Value::Nil)
                }
                Value::Map(_) | Value::List(_) | Value::Struct(_) if method.is_some() => {
                    let mut call = vec![value.clone()];
                    if last {
                        call.extend(args.take().unwrap_or_default());
                    }
                    let func = method.expect("checked");
                    func(self, call).map_err(|e| match e {
                        super::CallError::Message(m) => {
                            self.error(format!("error calling {field}: {m}"))
                        }
                        super::CallError::Template(t) => t,
                    })?
                }
                Value::Nil => {
                    return Err(
                        self.error(format!("nil pointer evaluating interface {{}}.{field}"))
                    );
                }
                other => {
                    return Err(self.error(format!(
                        "can't evaluate field {field} in type {}",
                        other.type_name()
                    )));
                }
            };
        }
        Ok(value)
    }

    fn args(&mut self, dot: &Value, operands: &[Operand], fin: Option<Value>) -> Res<Vec<Value>> {
        let mut values = Vec::with_capacity(operands.len() + 1);
        for operand in operands {
            values.push(self.arg(dot, operand)?);
        }
        values.extend(fin);
        Ok(values)
    }

    fn command(&mut self, dot: &Value, cmd: &Command, fin: Option<Value>) -> Res<Value> {
        let first = &cmd.args[0];
        let has_args = cmd.args.len() > 1 || fin.is_some();
        match first {
            Operand::Function(name) => return self.call(dot, name, &cmd.args[1..], fin),
            Operand::Field(fields) => {
                let args = self.args(dot, &cmd.args[1..], fin)?;
                return self.fields((dot.clone(), self.dot_nil_interface), fields, args);
            }
            Operand::Variable(name, fields) => {
                let value = self.variable(name)?;
                let args = self.args(dot, &cmd.args[1..], fin)?;
                return self.fields(value, fields, args);
            }
            Operand::Chain(pipe, fields) => {
                self.check_stack()?;
                let value = self.pipeline(dot, pipe)?;
                let args = self.args(dot, &cmd.args[1..], fin)?;
                return self.fields((value, false), fields, args);
            }
            _ => {}
        }
        if has_args {
            return Err(self.error(format!(
                "can't give argument to non-function {}",
                operand_text(first)
            )));
        }
        self.operand(dot, first)
    }

    fn operand(&mut self, dot: &Value, operand: &Operand) -> Res<Value> {
        Ok(match operand {
            Operand::Dot => dot.clone(),
            Operand::Nil => return Err(self.error("nil is not a command")),
            Operand::Bool(b) => Value::Bool(*b),
            Operand::Int(i) => Value::int(*i),
            Operand::Float(f) => Value::Float(*f),
            Operand::Str(s) => Value::Str(s.clone()),
            Operand::Field(fields) => {
                self.fields((dot.clone(), self.dot_nil_interface), fields, Vec::new())?
            }
            Operand::Variable(name, fields) => {
                let value = self.variable(name)?;
                self.fields(value, fields, Vec::new())?
            }
            Operand::Chain(pipe, fields) => {
                self.check_stack()?;
                let value = self.pipeline(dot, pipe)?;
                self.fields((value, false), fields, Vec::new())?
            }
            Operand::Pipe(pipe) => {
                self.check_stack()?;
                let mark = self.vars.len();
                let value = self.pipeline(dot, pipe)?;
                self.vars.truncate(mark);
                value
            }
            // A function used as an argument is called without arguments.
            Operand::Function(name) => self.call(dot, name, &[], None)?,
        })
    }

    fn arg(&mut self, dot: &Value, operand: &Operand) -> Res<Value> {
        match operand {
            Operand::Nil => Ok(Value::Nil),
            other => self.operand(dot, other),
        }
    }

    fn call(
        &mut self,
        dot: &Value,
        name: &str,
        args: &[Operand],
        fin: Option<Value>,
    ) -> Res<Value> {
        let line = self.line;
        // `and` and `or` stop at the first argument that decides the result.
        if name == "and" || name == "or" {
            let count = args.len() + usize::from(fin.is_some());
            if count == 0 {
                return Err(self.error(format!(
                    "wrong number of args for {name}: want at least 1 got 0"
                )));
            }
            let mut last = Value::Nil;
            for operand in args {
                last = self.arg(dot, operand)?;
                if last.truthy() != (name == "and") {
                    return Ok(last);
                }
            }
            return Ok(fin.unwrap_or(last));
        }
        let mut values = Vec::with_capacity(args.len() + 1);
        let mut nil_interfaces = Vec::with_capacity(args.len() + 1);
        for operand in args {
            self.looked_up_nil = false;
            values.push(self.arg(dot, operand)?);
            let nil_interface = match operand {
                Operand::Field(f) | Operand::Chain(_, f) => !f.is_empty() && self.looked_up_nil,
                // A variable `range` bound to a nil element, or a field chain from one.
                Operand::Variable(..) => self.looked_up_nil,
                Operand::Dot => self.dot_nil_interface && matches!(values.last(), Some(Value::Nil)),
                _ => false,
            };
            nil_interfaces.push(nil_interface);
        }
        // The piped value was unwrapped by its pipeline: never a nil interface.
        values.extend(fin);
        self.nil_interface_args = nil_interfaces;
        self.line = line;
        let Some(func) = self.engine.function(name) else {
            return Err(self.error(format!("function {name:?} not defined")));
        };
        // A chart file's bytes that are not UTF-8 text go only where tend keeps them exact.
        if values.iter().any(crate::helm::funcs::is_binary_text)
            && !crate::helm::funcs::BINARY_TEXT_FUNCTIONS.contains(&name)
        {
            return Err(self.error(format!(
                "error calling {name}: its argument is a chart file that is not UTF-8 text (from .Files.Get); tend passes such bytes to {} only",
                crate::helm::funcs::BINARY_TEXT_FUNCTIONS.join(", ")
            )));
        }
        self.spend_steps(call_cost(&values))?;
        let walks = !SHALLOW_FUNCTIONS.contains(&name);
        if walks {
            for value in &values {
                if matches!(value, Value::List(_) | Value::Map(_)) {
                    self.check_walk(value)
                        .map_err(|e| self.error(format!("error calling {name}: {}", e.message)))?;
                }
            }
        }
        // Values handed back are not made again; what a function makes counts once.
        let kept: Vec<Value> = values
            .iter()
            .filter(|v| matches!(v, Value::Str(_) | Value::List(_) | Value::Map(_)))
            .cloned()
            .collect();
        let made = func(self, values).map_err(|e| match e {
            super::CallError::Message(m) => self.error(format!("error calling {name}: {m}")),
            super::CallError::Template(t) => t,
        })?;
        if !limits::is_one_of(&made, &kept) {
            self.spend_bytes(limits::shallow_size(&made))?;
        }
        Ok(made)
    }
}

/// Functions that only look at the top of their arguments (or hand them to a template):
/// their arguments are not walked before the call. Every other function may walk a value
/// whole, so a cycle, a value too deep or one too large written out is refused first.
const SHALLOW_FUNCTIONS: &[&str] = &[
    "include",
    "tpl",
    "default",
    "empty",
    "coalesce",
    "ternary",
    "required",
    "index",
    "get",
    "set",
    "unset",
    "hasKey",
    "dict",
    "list",
    "tuple",
    "append",
    "mustAppend",
    "prepend",
    "mustPrepend",
    "first",
    "mustFirst",
    "last",
    "mustLast",
    "rest",
    "mustRest",
    "initial",
    "mustInitial",
    "len",
    "keys",
    "pluck",
    "dig",
    "kindIs",
    "kindOf",
    "typeOf",
    "typeIs",
    "typeIsLike",
    "lookup",
    "not",
    "slice",
    "mustSlice",
    "concat",
    "pick",
    "omit",
    "values",
    "compact",
    "mustCompact",
    "fail",
    "isAbs",
    "reverse",
    "mustReverse",
];

/// The steps a call costs: one, and the length of the lists and strings it may work
/// through (`has` on a long list, `replace` in a long string).
fn call_cost(values: &[Value]) -> u64 {
    values.iter().fold(1u64, |cost, v| {
        cost.saturating_add(match v {
            Value::List(l) => l.len() as u64,
            Value::Str(s) => s.len() as u64 / 64,
            _ => 0,
        })
    })
}

fn operand_text(operand: &Operand) -> String {
    match operand {
        Operand::Dot => ".".into(),
        Operand::Bool(b) => b.to_string(),
        Operand::Int(i) => i.to_string(),
        Operand::Float(f) => gofmt::float_v(*f),
        Operand::Str(s) => gofmt::quote(s),
        _ => "operand".into(),
    }
}
