//! The lexer of Go's `text/template`: text and actions between `{{` and `}}`, with `{{- `
//! and ` -}}` trimming the whitespace around them and `{{/* */}}` comments.

/// One token of an action (text outside actions is [`Token::Text`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Text(String),
    /// `{{`; the parser needs only the boundaries, trimming is already done.
    Open,
    Close,
    /// Whitespace separating arguments; fields chain only when none comes between.
    Space,
    Ident(String),
    /// `.Name` (a field or method, possibly chained after something).
    Field(String),
    /// `$` or `$name`.
    Variable(String),
    Dot,
    Str(String),
    Char(i64),
    Number(String),
    Bool(bool),
    Nil,
    Pipe,
    LParen,
    RParen,
    Assign,
    Declare,
    Comma,
}

/// A token and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Lexed {
    pub token: Token,
    pub line: usize,
}

pub fn lex(src: &str) -> Result<Vec<Lexed>, (usize, String)> {
    let mut lexer = Lexer {
        src,
        pos: 0,
        line: 1,
        out: Vec::new(),
    };
    lexer.run()?;
    Ok(lexer.out)
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: usize,
    out: Vec<Lexed>,
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl Lexer<'_> {
    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn push(&mut self, token: Token, line: usize) {
        self.out.push(Lexed { token, line });
    }

    fn advance(&mut self, n: usize) -> &str {
        let s = &self.src[self.pos..self.pos + n];
        // Bytes, not chars: a newline is one byte in UTF-8, and this count vectorises.
        self.line += s.bytes().filter(|&b| b == b'\n').count();
        self.pos += n;
        s
    }

    fn run(&mut self) -> Result<(), (usize, String)> {
        let mut trim_next_text = false;
        loop {
            let rest = self.rest();
            let (text_len, found) = match rest.find("{{") {
                Some(i) => (i, true),
                None => (rest.len(), false),
            };
            let after = &rest[text_len..];
            // `{{- ` trims the whitespace before it.
            let left_trim =
                found && after[2..].starts_with('-') && after[3..].starts_with(is_space);
            let mut text = &rest[..text_len];
            if trim_next_text {
                text = text.trim_start_matches(is_space);
            }
            if left_trim {
                text = text.trim_end_matches(is_space);
            }
            let line = self.line;
            if !text.is_empty() {
                self.push(Token::Text(text.to_string()), line);
            }
            self.advance(text_len);
            if !found {
                return Ok(());
            }
            self.advance(if left_trim { 4 } else { 2 });
            trim_next_text = self.action()?;
        }
    }

    /// Lexes one action after its `{{`; returns whether it ended with ` -}}`.
    fn action(&mut self) -> Result<bool, (usize, String)> {
        let start_line = self.line;
        if self.rest().starts_with("/*") {
            let Some(end) = self.rest().find("*/") else {
                return Err((start_line, "unclosed comment".into()));
            };
            self.advance(end + 2);
            return if self.rest().starts_with("}}") {
                self.advance(2);
                Ok(false)
            } else if self.rest().starts_with(" -}}") {
                self.advance(4);
                Ok(true)
            } else {
                Err((self.line, "comment ends before closing delimiter".into()))
            };
        }
        self.push(Token::Open, start_line);
        let mut parens = 0usize;
        loop {
            let rest = self.rest();
            let line = self.line;
            let Some(c) = rest.chars().next() else {
                return Err((start_line, "unclosed action".into()));
            };
            if rest.starts_with("}}") {
                self.advance(2);
                self.push(Token::Close, line);
                return Ok(false);
            }
            if is_space(c) {
                let n = rest.len() - rest.trim_start_matches(is_space).len();
                let after = &rest[n..];
                if after.starts_with("-}}") {
                    self.advance(n + 3);
                    self.push(Token::Close, line);
                    return Ok(true);
                }
                self.advance(n);
                self.push(Token::Space, line);
                continue;
            }
            match c {
                '|' => {
                    self.advance(1);
                    self.push(Token::Pipe, line);
                }
                '(' => {
                    parens += 1;
                    self.advance(1);
                    self.push(Token::LParen, line);
                }
                ')' => {
                    if parens == 0 {
                        return Err((line, "unexpected right paren".into()));
                    }
                    parens -= 1;
                    self.advance(1);
                    self.push(Token::RParen, line);
                }
                ',' => {
                    self.advance(1);
                    self.push(Token::Comma, line);
                }
                '=' => {
                    self.advance(1);
                    self.push(Token::Assign, line);
                }
                ':' => {
                    if !rest.starts_with(":=") {
                        return Err((line, "expected :=".into()));
                    }
                    self.advance(2);
                    self.push(Token::Declare, line);
                }
                '"' => {
                    let s = self.quoted()?;
                    self.push(Token::Str(s), line);
                }
                '`' => {
                    let Some(end) = rest[1..].find('`') else {
                        return Err((line, "unterminated raw quoted string".into()));
                    };
                    let s = rest[1..1 + end].to_string();
                    self.advance(end + 2);
                    self.push(Token::Str(s), line);
                }
                '\'' => {
                    let c = self.char_constant()?;
                    self.push(Token::Char(c), line);
                }
                '$' => {
                    let n = 1 + rest[1..].len() - rest[1..].trim_start_matches(is_alnum).len();
                    let name = self.advance(n).to_string();
                    self.push(Token::Variable(name), line);
                }
                '.' => {
                    let next = rest[1..].chars().next();
                    if next.is_some_and(|c| c.is_ascii_digit()) {
                        self.number()?;
                    } else if next.is_some_and(is_alnum) {
                        let n = 1 + rest[1..].len() - rest[1..].trim_start_matches(is_alnum).len();
                        let name = self.advance(n)[1..].to_string();
                        self.push(Token::Field(name), line);
                    } else {
                        self.advance(1);
                        self.push(Token::Dot, line);
                    }
                }
                '+' | '-' | '0'..='9' => self.number()?,
                c if is_alnum(c) => {
                    let n = rest.len() - rest.trim_start_matches(is_alnum).len();
                    let word = self.advance(n).to_string();
                    let token = match word.as_str() {
                        "true" => Token::Bool(true),
                        "false" => Token::Bool(false),
                        "nil" => Token::Nil,
                        _ => Token::Ident(word),
                    };
                    self.push(token, line);
                }
                c => return Err((line, format!("unrecognized character in action: {c:?}"))),
            }
        }
    }

    fn number(&mut self) -> Result<(), (usize, String)> {
        let line = self.line;
        let rest = self.rest();
        let n = rest
            .char_indices()
            .take_while(|(i, c)| {
                c.is_ascii_alphanumeric()
                    || matches!(c, '.' | '_')
                    || ((*c == '+' || *c == '-')
                        && (*i == 0 || matches!(rest.as_bytes()[i - 1], b'e' | b'E' | b'p' | b'P')))
            })
            .count();
        let text = self.advance(n).to_string();
        if text == "+" || text == "-" {
            return Err((line, format!("bad number syntax: {text:?}")));
        }
        self.push(Token::Number(text), line);
        Ok(())
    }

    fn escape(chars: &mut std::str::Chars, line: usize) -> Result<char, (usize, String)> {
        let bad = || (line, "invalid escape in quoted string".to_string());
        let c = chars.next().ok_or_else(bad)?;
        let hex = |chars: &mut std::str::Chars, n: usize| -> Result<char, (usize, String)> {
            let s: String = chars.take(n).collect();
            u32::from_str_radix(&s, 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(bad)
        };
        Ok(match c {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'v' => '\u{b}',
            '\\' => '\\',
            '"' => '"',
            '\'' => '\'',
            'x' => hex(chars, 2)?,
            'u' => hex(chars, 4)?,
            'U' => hex(chars, 8)?,
            '0'..='7' => {
                let s: String = std::iter::once(c).chain(chars.take(2)).collect();
                u32::from_str_radix(&s, 8)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(bad)?
            }
            _ => return Err(bad()),
        })
    }

    fn quoted(&mut self) -> Result<String, (usize, String)> {
        let line = self.line;
        let rest = self.rest();
        let mut out = String::new();
        let mut chars = rest[1..].chars();
        loop {
            match chars.next() {
                None | Some('\n') => return Err((line, "unterminated quoted string".into())),
                Some('"') => break,
                Some('\\') => out.push(Self::escape(&mut chars, line)?),
                Some(c) => out.push(c),
            }
        }
        let used = rest.len() - chars.as_str().len();
        self.advance(used);
        Ok(out)
    }

    fn char_constant(&mut self) -> Result<i64, (usize, String)> {
        let line = self.line;
        let rest = self.rest();
        let mut chars = rest[1..].chars();
        let c = match chars.next() {
            Some('\\') => Self::escape(&mut chars, line)?,
            Some(c) if c != '\'' && c != '\n' => c,
            _ => return Err((line, "malformed character constant".into())),
        };
        if chars.next() != Some('\'') {
            return Err((line, "unterminated character constant".into()));
        }
        let used = rest.len() - chars.as_str().len();
        self.advance(used);
        Ok(c as i64)
    }
}
