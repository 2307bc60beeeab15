//! The parser of Go's `text/template`: tokens into a tree of nodes, with the named templates
//! (`define`, `block`) collected apart. Unknown functions are parse errors, as in Go.

use super::lex::{lex, Lexed, Token};
use super::limits::{stack_nearly_full, MAX_NESTING};
use std::rc::Rc;

#[derive(Debug, Clone)]
pub enum Node {
    Text(String),
    Action(Pipe),
    If(Control),
    With(Control),
    Range(Control),
    Template {
        line: usize,
        name: String,
        pipe: Option<Pipe>,
    },
    Break,
    Continue,
}

/// `if`, `with` and `range`: a pipeline, a body, and what `else` runs.
#[derive(Debug, Clone)]
pub struct Control {
    pub pipe: Pipe,
    pub body: Vec<Node>,
    pub otherwise: Vec<Node>,
}

#[derive(Debug, Clone)]
pub struct Pipe {
    pub line: usize,
    /// Variables declared (`:=`) or assigned (`=`) by the pipeline.
    pub decl: Vec<String>,
    pub assign: bool,
    pub cmds: Vec<Command>,
}

#[derive(Debug, Clone)]
pub struct Command {
    pub args: Vec<Operand>,
}

#[derive(Debug, Clone)]
pub enum Operand {
    Dot,
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    /// `.A.B`: fields of dot.
    Field(Vec<String>),
    /// `$x.A.B`.
    Variable(String, Vec<String>),
    Function(String),
    /// `(pipeline).A.B`.
    Chain(Box<Pipe>, Vec<String>),
    Pipe(Box<Pipe>),
}

/// A parsed file: its body and the templates it defines.
#[derive(Debug, Default)]
pub struct Tree {
    pub root: Vec<Node>,
    pub defines: Vec<(String, Rc<Vec<Node>>)>,
}

pub fn parse(src: &str, is_function: &dyn Fn(&str) -> bool) -> Result<Tree, (usize, String)> {
    let tokens = lex(src)?;
    let mut parser = Parser {
        tokens,
        pos: 0,
        is_function,
        defines: Vec::new(),
        range_depth: 0,
        depth: 0,
    };
    let (root, end) = parser.list(true)?;
    if let Some((line, word)) = end {
        return Err((line, format!("unexpected {{{{{word}}}}}")));
    }
    Ok(Tree {
        root,
        defines: parser.defines,
    })
}

struct Parser<'f> {
    tokens: Vec<Lexed>,
    pos: usize,
    is_function: &'f dyn Fn(&str) -> bool,
    defines: Vec<(String, Rc<Vec<Node>>)>,
    range_depth: usize,
    /// How deep the control structures and parentheses being parsed nest.
    depth: usize,
}

type Res<T> = Result<T, (usize, String)>;

/// What ended a list: `{{end}}` or `{{else}}`, and its line.
type End = (usize, &'static str);

impl Parser<'_> {
    /// One level deeper: refused past [`MAX_NESTING`] or when the stack is nearly full (the
    /// parser and the executor recurse once per level).
    fn enter(&mut self, line: usize) -> Res<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING || stack_nearly_full() {
            return Err((
                line,
                format!("nested too deep: actions and parentheses nest more than {MAX_NESTING} levels (or deeper than the stack allows)"),
            ));
        }
        Ok(())
    }

    fn line(&self) -> usize {
        self.tokens
            .get(self.pos)
            .or(self.tokens.last())
            .map_or(1, |t| t.line)
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos).map(|t| &t.token)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).map(|t| t.token.clone());
        self.pos += 1;
        t
    }

    fn skip_space(&mut self) {
        while self.peek() == Some(&Token::Space) {
            self.pos += 1;
        }
    }

    fn expect_close(&mut self, context: &str) -> Res<()> {
        self.skip_space();
        let line = self.line();
        match self.next() {
            Some(Token::Close) => Ok(()),
            other => Err((
                line,
                format!("unexpected {} in {context}", describe(other.as_ref())),
            )),
        }
    }

    /// Nodes up to `{{end}}` or `{{else}}` (returned with its line), or the end of input when
    /// `top`.
    fn list(&mut self, top: bool) -> Res<(Vec<Node>, Option<End>)> {
        let mut nodes = Vec::new();
        loop {
            let line = self.line();
            match self.next() {
                None if top => return Ok((fitted(nodes), None)),
                None => return Err((line, "unexpected EOF".into())),
                Some(Token::Text(t)) => nodes.push(Node::Text(t)),
                Some(Token::Open) => {
                    self.skip_space();
                    let line = self.line();
                    let keyword = match self.peek() {
                        Some(Token::Ident(word)) => word.clone(),
                        _ => String::new(),
                    };
                    match keyword.as_str() {
                        "end" | "else" => {
                            self.pos += 1;
                            if keyword == "end" {
                                self.expect_close("end")?;
                                return Ok((fitted(nodes), Some((line, "end"))));
                            }
                            return Ok((fitted(nodes), Some((line, "else"))));
                        }
                        "if" | "with" | "range" => {
                            self.pos += 1;
                            nodes.push(self.control(&keyword)?);
                        }
                        "define" => {
                            self.pos += 1;
                            if !top || self.range_depth > 0 {
                                return Err((line, "unexpected <define> in command".into()));
                            }
                            self.define(line)?;
                        }
                        "template" | "block" => {
                            self.pos += 1;
                            nodes.push(self.template(line, keyword == "block")?);
                        }
                        "break" | "continue" => {
                            self.pos += 1;
                            if self.range_depth == 0 {
                                return Err((
                                    line,
                                    format!("{{{{{keyword}}}}} outside {{{{range}}}}"),
                                ));
                            }
                            self.expect_close(&keyword)?;
                            nodes.push(if keyword == "break" {
                                Node::Break
                            } else {
                                Node::Continue
                            });
                        }
                        _ => {
                            let pipe = self.pipeline("command", true)?;
                            if pipe.cmds.is_empty() {
                                return Err((line, "missing value for command".into()));
                            }
                            nodes.push(Node::Action(pipe));
                        }
                    }
                }
                Some(other) => {
                    return Err((line, format!("unexpected {}", describe(Some(&other)))));
                }
            }
        }
    }

    fn control(&mut self, keyword: &str) -> Res<Node> {
        let line = self.line();
        self.enter(line)?;
        let pipe = self.pipeline(keyword, true)?;
        if pipe.cmds.is_empty() {
            return Err((line, format!("missing value for {keyword}")));
        }
        if keyword == "range" {
            self.range_depth += 1;
        }
        let (body, end) = self.list(false)?;
        if keyword == "range" {
            self.range_depth -= 1;
        }
        let mut otherwise = Vec::new();
        if let Some((else_line, "else")) = end {
            self.skip_space();
            match self.peek() {
                // `{{else if x}}` is `{{else}}{{if x}}...{{end}}{{end}}`; the nested
                // control consumes the one `{{end}}`.
                Some(Token::Ident(word)) if word == "if" || word == "with" => {
                    let word = word.clone();
                    if keyword != "range" && word != keyword && word == "with" {
                        return Err((else_line, "expected end; found with".into()));
                    }
                    self.pos += 1;
                    otherwise = vec![self.control(&word)?];
                }
                _ => {
                    self.expect_close("else")?;
                    let (nodes, end) = self.list(false)?;
                    if let Some((line, "else")) = end {
                        return Err((
                            line,
                            format!("expected end; found {{{{else}}}} in {keyword}"),
                        ));
                    }
                    otherwise = nodes;
                }
            }
        }
        let control = Control {
            pipe,
            body,
            otherwise,
        };
        self.depth -= 1;
        Ok(match keyword {
            "if" => Node::If(control),
            "with" => Node::With(control),
            _ => Node::Range(control),
        })
    }

    fn template_name(&mut self, context: &str) -> Res<String> {
        self.skip_space();
        let line = self.line();
        match self.next() {
            Some(Token::Str(name)) => Ok(name),
            other => Err((
                line,
                format!(
                    "unexpected {} in {context} clause",
                    describe(other.as_ref())
                ),
            )),
        }
    }

    fn define(&mut self, line: usize) -> Res<()> {
        let name = self.template_name("define")?;
        self.expect_close("define")?;
        self.enter(line)?;
        let (body, end) = self.list(false)?;
        self.depth -= 1;
        if end.map(|e| e.1) != Some("end") {
            return Err((line, format!("unexpected {{{{else}}}} in define {name:?}")));
        }
        self.defines.push((name, Rc::new(body)));
        Ok(())
    }

    fn template(&mut self, line: usize, block: bool) -> Res<Node> {
        let context = if block { "block" } else { "template" };
        let name = self.template_name(context)?;
        self.skip_space();
        let pipe = if self.peek() == Some(&Token::Close) {
            self.pos += 1;
            None
        } else {
            Some(self.pipeline(context, false)?)
        };
        if block {
            self.enter(line)?;
            let (body, end) = self.list(false)?;
            self.depth -= 1;
            if end.map(|e| e.1) != Some("end") {
                return Err((line, "unexpected {{else}} in block".into()));
            }
            self.defines.push((name.clone(), Rc::new(body)));
        }
        Ok(Node::Template { line, name, pipe })
    }

    /// A pipeline up to `}}` (consumed); declarations allowed when `decl`.
    fn pipeline(&mut self, context: &str, decl: bool) -> Res<Pipe> {
        self.skip_space();
        let line = self.line();
        let mut pipe = Pipe {
            line,
            decl: Vec::new(),
            assign: false,
            cmds: Vec::new(),
        };
        if decl {
            self.declarations(&mut pipe, context)?;
        }
        self.commands(&mut pipe, Token::Close, context)?;
        Ok(pipe)
    }

    /// `$x :=`, `$x =`, or `$i, $e :=` (range only).
    fn declarations(&mut self, pipe: &mut Pipe, context: &str) -> Res<()> {
        let start = self.pos;
        let mut names = Vec::new();
        while let Some(Token::Variable(name)) = self.peek().cloned() {
            self.pos += 1;
            self.skip_space();
            match self.peek() {
                Some(Token::Declare) | Some(Token::Assign) => {
                    names.push(name);
                    pipe.assign = self.peek() == Some(&Token::Assign);
                    self.pos += 1;
                    pipe.decl = names;
                    return Ok(());
                }
                Some(Token::Comma) if context == "range" && names.is_empty() => {
                    self.pos += 1;
                    self.skip_space();
                    names.push(name);
                }
                _ => break,
            }
        }
        if !names.is_empty() {
            return Err((pipe.line, format!("too many declarations in {context}")));
        }
        self.pos = start;
        Ok(())
    }

    fn commands(&mut self, pipe: &mut Pipe, end: Token, context: &str) -> Res<()> {
        loop {
            self.skip_space();
            let line = self.line();
            match self.peek() {
                Some(t) if *t == end => {
                    self.pos += 1;
                    if pipe.cmds.is_empty() && end == Token::RParen {
                        return Err((line, "missing value for parenthesized pipeline".into()));
                    }
                    pipe.cmds.shrink_to_fit();
                    return Ok(());
                }
                None => return Err((line, format!("unclosed action in {context}"))),
                _ => {}
            }
            let cmd = self.command()?;
            if cmd.args.is_empty() {
                return Err((line, "missing value for command".into()));
            }
            // Only the first command of a pipeline may be a non-function with arguments
            // piped in; Go checks that at execution, as do we.
            pipe.cmds.push(cmd);
            self.skip_space();
            match self.peek() {
                Some(Token::Pipe) => {
                    self.pos += 1;
                }
                Some(t) if *t == end => {}
                other => {
                    return Err((line, format!("unexpected {} in operand", describe(other))));
                }
            }
        }
    }

    fn command(&mut self) -> Res<Command> {
        let mut args = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                None | Some(Token::Pipe | Token::Close | Token::RParen) => break,
                _ => args.push(self.operand()?),
            }
        }
        Ok(Command { args: fitted(args) })
    }

    fn fields(&mut self) -> Vec<String> {
        let mut fields = Vec::new();
        while let Some(Token::Field(name)) = self.peek() {
            fields.push(name.clone());
            self.pos += 1;
        }
        fitted(fields)
    }

    fn operand(&mut self) -> Res<Operand> {
        let line = self.line();
        let token = self.next();
        let operand = match token {
            Some(Token::Dot) => Operand::Dot,
            Some(Token::Nil) => Operand::Nil,
            Some(Token::Bool(b)) => Operand::Bool(b),
            Some(Token::Str(s)) => Operand::Str(s.into()),
            Some(Token::Char(c)) => Operand::Int(c),
            Some(Token::Number(n)) => {
                number(&n).ok_or((line, format!("bad number syntax: {n:?}")))?
            }
            Some(Token::Field(first)) => {
                let mut fields = vec![first];
                fields.extend(self.fields());
                return Ok(Operand::Field(fitted(fields)));
            }
            Some(Token::Variable(name)) => {
                let fields = self.fields();
                return Ok(Operand::Variable(name, fields));
            }
            Some(Token::Ident(name)) => {
                if !(self.is_function)(&name) {
                    return Err((line, format!("function {name:?} not defined")));
                }
                Operand::Function(name)
            }
            Some(Token::LParen) => {
                self.enter(line)?;
                let mut pipe = Pipe {
                    line,
                    decl: Vec::new(),
                    assign: false,
                    cmds: Vec::new(),
                };
                self.skip_space();
                self.declarations(&mut pipe, "parenthesized pipeline")?;
                self.commands(&mut pipe, Token::RParen, "parenthesized pipeline")?;
                self.depth -= 1;
                let fields = self.fields();
                if fields.is_empty() {
                    Operand::Pipe(Box::new(pipe))
                } else {
                    Operand::Chain(Box::new(pipe), fields)
                }
            }
            other => {
                return Err((
                    line,
                    format!("unexpected {} in operand", describe(other.as_ref())),
                ));
            }
        };
        if let Some(Token::Field(name)) = self.peek() {
            // Go chains fields onto a function's result too (`now.Year`): the function is
            // called without arguments when the chain is evaluated, so an error it gives
            // (`merge.Values.x`: merge wants arguments) stops only a branch that runs.
            if let Operand::Function(_) = operand {
                let pipe = Pipe {
                    line,
                    decl: Vec::new(),
                    assign: false,
                    cmds: vec![Command {
                        args: vec![operand],
                    }],
                };
                return Ok(Operand::Chain(Box::new(pipe), self.fields()));
            }
            if !matches!(operand, Operand::Chain(..) | Operand::Pipe(_)) {
                return Err((line, format!("unexpected .{name} after a constant")));
            }
        }
        Ok(operand)
    }
}

/// `items` without the room a `Vec` grown item by item keeps: parse trees live as long as
/// their engine (and the thread's cache of parsed texts), a big chart's some 100,000 nodes.
fn fitted<T>(mut items: Vec<T>) -> Vec<T> {
    items.shrink_to_fit();
    items
}

/// Go's number literals: ints (decimal, 0x, 0o, 0b, `_`) and floats; an integer-valued
/// literal is an int unless written with `.`, `e` or `p`.
fn number(text: &str) -> Option<Operand> {
    let clean = text.replace('_', "");
    let (neg, body) = match clean.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, clean.strip_prefix('+').unwrap_or(&clean)),
    };
    let lower = body.to_ascii_lowercase();
    let int = if let Some(hex) = lower.strip_prefix("0x") {
        if hex.contains('p') || hex.contains('.') {
            None
        } else {
            i64::from_str_radix(hex, 16).ok()
        }
    } else if let Some(oct) = lower.strip_prefix("0o") {
        i64::from_str_radix(oct, 8).ok()
    } else if let Some(bin) = lower.strip_prefix("0b") {
        i64::from_str_radix(bin, 2).ok()
    } else if lower.len() > 1 && lower.starts_with('0') && lower.bytes().all(|b| b.is_ascii_digit())
    {
        i64::from_str_radix(&lower[1..], 8).ok()
    } else if lower.bytes().all(|b| b.is_ascii_digit()) {
        lower.parse().ok()
    } else {
        None
    };
    if let Some(i) = int {
        return Some(Operand::Int(if neg { -i } else { i }));
    }
    let f: f64 = match lower.strip_prefix("0x") {
        Some(hex) => hex_float(hex)?,
        None => lower.parse().ok()?,
    };
    Some(Operand::Float(if neg { -f } else { f }))
}

/// A hex float after its `0x` (`1p60`, `1.8p-3`, `.8p1`): hex mantissa, binary exponent,
/// which Go's `strconv.ParseFloat` requires.
fn hex_float(hex: &str) -> Option<f64> {
    let (mantissa, exp) = hex.split_once('p')?;
    let exp: i32 = exp.parse().ok()?;
    let (whole, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && frac.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for c in whole.chars() {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        value += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(value * 2f64.powi(exp))
}

fn describe(token: Option<&Token>) -> String {
    match token {
        None => "EOF".into(),
        Some(Token::Close) => "\"}}\"".into(),
        Some(Token::RParen) => "\")\"".into(),
        Some(Token::Ident(w)) => format!("<{w}>"),
        Some(Token::Field(f)) => format!("<.{f}>"),
        Some(Token::Variable(v)) => format!("<{v}>"),
        Some(Token::Str(s)) => format!("{s:?}"),
        Some(Token::Number(n)) => n.clone(),
        Some(t) => format!("{t:?}"),
    }
}
