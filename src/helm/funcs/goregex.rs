//! Go's regular expressions (RE2 syntax, as Go's `regexp/syntax` parses it with the Perl
//! flags `regexp.Compile` uses) for Sprig's `regex*` functions, translated to the `regex`
//! crate's syntax. The two differ where a chart notices: in a class a `-` after `\w` is a
//! literal (`^[\w-\.]+$`), `[` is a literal, `&&`/`--`/`~~` are plain characters; `\d`,
//! `\w`, `\s` and `\b` are ASCII; `\<`/`\>` are literal `<`/`>`; `{` that does not start a
//! repeat is a literal; `\Q...\E` quotes; octal escapes (`\012`) exist.

use std::cell::RefCell;
use std::collections::HashMap;

/// Why a pattern gives no regex.
#[derive(Debug, Clone, PartialEq)]
pub enum RegexError {
    /// Go's parser refuses it too: `error parsing regexp: ...` (what `regexMatch`
    /// swallows, returning false, as Sprig does).
    Go(String),
    /// Valid Go syntax that tend cannot run (the translation failed to compile): always an
    /// error, never a different match.
    Unsupported(String),
}

impl std::fmt::Display for RegexError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            RegexError::Go(m) => write!(f, "error parsing regexp: {m}"),
            RegexError::Unsupported(m) => write!(f, "{m}"),
        }
    }
}

/// At most this many compiled patterns are kept per thread (charts match in loops).
const MAX_CACHED: usize = 512;

thread_local! {
    static COMPILED: RefCell<HashMap<String, Result<regex::Regex, RegexError>>> =
        RefCell::new(HashMap::new());
}

/// Go's `regexp.Compile(pattern)`, as a `regex::Regex` that matches what Go's would.
pub fn compile(pattern: &str) -> Result<regex::Regex, RegexError> {
    if let Some(found) = COMPILED.with(|c| c.borrow().get(pattern).cloned()) {
        return found;
    }
    let result = translate(pattern).and_then(|rust| {
        regex::Regex::new(&rust).map_err(|e| {
            RegexError::Unsupported(format!(
                "the Go regular expression {pattern:?} is valid Go syntax that tend cannot run: {e}"
            ))
        })
    });
    COMPILED.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= MAX_CACHED {
            c.clear();
        }
        c.insert(pattern.to_string(), result.clone());
    });
    result
}

const ASCII_DIGIT: &str = "0-9";
const ASCII_SPACE: &str = r"\t\n\x0C\r ";
const ASCII_WORD: &str = "0-9A-Za-z_";

/// What the regex crate must escape to read a character literally, inside a class or out.
fn push_literal(out: &mut String, c: char, in_class: bool) {
    let special = if in_class {
        matches!(c, '[' | ']' | '\\' | '^' | '-' | '&' | '~')
    } else {
        regex_syntax_meta(c)
    };
    if special {
        out.push('\\');
        out.push(c);
    } else if c.is_control() || c == ' ' || c == '#' {
        // Written as hex so no mode of the regex crate can read them differently.
        out.push_str(&format!("\\x{{{:X}}}", c as u32));
    } else {
        out.push(c);
    }
}

fn regex_syntax_meta(c: char) -> bool {
    matches!(
        c,
        '\\' | '.'
            | '+'
            | '*'
            | '?'
            | '('
            | ')'
            | '|'
            | '['
            | ']'
            | '{'
            | '}'
            | '^'
            | '$'
            | '#'
            | '&'
            | '-'
            | '~'
    )
}

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    pattern: &'a str,
}

/// Go's error text for a pattern.
fn go_error(code: &str, expr: &str) -> String {
    format!("{code}: `{expr}`")
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn rest(&self, from: usize) -> String {
        self.chars[from..].iter().collect()
    }

    /// An escape after `\` (at `self.pos`, the `\` already consumed) that stands for one
    /// character: Go's `parseEscape` (octal, `\x`, `\a\f\n\r\t\v`, escaped punctuation).
    fn escape_char(&mut self, start: usize) -> Result<char, String> {
        let invalid = |p: &Parser, end: usize| {
            let end = end.min(p.chars.len());
            go_error(
                "invalid escape sequence",
                &p.chars[start..end].iter().collect::<String>(),
            )
        };
        let Some(c) = self.peek() else {
            return Err("trailing backslash at end of expression: ``".into());
        };
        self.pos += 1;
        match c {
            '1'..='7' if !matches!(self.peek(), Some('0'..='7')) => Err(invalid(self, self.pos)),
            '0'..='7' => {
                // Up to two more octal digits.
                let mut value = c.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match self.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            self.pos += 1;
                        }
                        None => break,
                    }
                }
                char::from_u32(value).ok_or_else(|| invalid(self, self.pos))
            }
            'x' => {
                let hex: String = if self.peek() == Some('{') {
                    self.pos += 1;
                    let close = self.chars[self.pos..]
                        .iter()
                        .position(|&c| c == '}')
                        .ok_or_else(|| invalid(self, self.chars.len()))?;
                    let digits: String = self.chars[self.pos..self.pos + close].iter().collect();
                    self.pos += close + 1;
                    digits
                } else {
                    let digits: String = self.chars[self.pos..].iter().take(2).collect();
                    self.pos += digits.chars().count();
                    if digits.chars().count() < 2 {
                        return Err(invalid(self, self.pos));
                    }
                    digits
                };
                let ok = !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit());
                u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| ok)
                    .and_then(char::from_u32)
                    .ok_or_else(|| invalid(self, self.pos))
            }
            'a' => Ok('\x07'),
            'f' => Ok('\x0C'),
            'n' => Ok('\n'),
            'r' => Ok('\r'),
            't' => Ok('\t'),
            'v' => Ok('\x0B'),
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok(c),
            _ => Err(invalid(self, self.pos)),
        }
    }

    /// `\pL`, `\p{Greek}`, `\P{^Greek}` after the `\`: the regex crate's spelling.
    fn unicode_class(&mut self, start: usize) -> Result<String, String> {
        let negated = self.chars[self.pos] == 'P';
        self.pos += 1;
        let name: String = match self.peek() {
            Some('{') => {
                let close = self.chars[self.pos..]
                    .iter()
                    .position(|&c| c == '}')
                    .ok_or_else(|| go_error("invalid character class range", &self.rest(start)))?;
                let name = self.chars[self.pos + 1..self.pos + close].iter().collect();
                self.pos += close + 1;
                name
            }
            Some(c) => {
                self.pos += 1;
                c.to_string()
            }
            None => return Err(go_error("invalid character class range", &self.rest(start))),
        };
        let (negated, name) = match name.strip_prefix('^') {
            Some(n) => (!negated, n.to_string()),
            None => (negated, name),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(go_error(
                "invalid character class range",
                &self.chars[start..self.pos].iter().collect::<String>(),
            ));
        }
        Ok(format!("\\{}{{{name}}}", if negated { 'P' } else { 'p' }))
    }

    /// A class from after its `[` to its `]`, as the regex crate's class text.
    fn class(&mut self, start: usize) -> Result<String, String> {
        let missing = |p: &Parser| go_error("missing closing ]", &p.rest(start));
        let mut out = String::from("[");
        if self.peek() == Some('^') {
            self.pos += 1;
            out.push('^');
        }
        let mut first = true;
        loop {
            let Some(c) = self.peek() else {
                return Err(missing(self));
            };
            if c == ']' && !first {
                self.pos += 1;
                break;
            }
            first = false;
            // POSIX [:alpha:] (Go checks the name; so does the regex crate).
            if c == '[' && self.chars.get(self.pos + 1) == Some(&':') {
                let tail: String = self.rest(self.pos + 2);
                if let Some(end) = tail.find(":]") {
                    let name = &tail[..end];
                    out.push_str(&format!("[:{name}:]"));
                    self.pos += 2 + name.chars().count() + 2;
                    continue;
                }
            }
            if c == '\\' {
                match self.chars.get(self.pos + 1) {
                    Some(&e @ ('d' | 'D' | 's' | 'S' | 'w' | 'W')) => {
                        self.pos += 2;
                        let set = match e.to_ascii_lowercase() {
                            'd' => ASCII_DIGIT,
                            's' => ASCII_SPACE,
                            _ => ASCII_WORD,
                        };
                        if e.is_ascii_uppercase() {
                            out.push_str(&format!("[^{set}]"));
                        } else {
                            out.push_str(set);
                        }
                        continue;
                    }
                    Some('p' | 'P') => {
                        let at = self.pos;
                        self.pos += 1;
                        out.push_str(&self.unicode_class(at)?);
                        continue;
                    }
                    _ => {}
                }
            }
            let range_start = self.pos;
            let lo = self.class_char(start)?;
            // `a-` before `]` is `a` and `-`; otherwise `-` makes a range.
            if self.peek() == Some('-') && self.chars.get(self.pos + 1).is_some_and(|&n| n != ']') {
                self.pos += 1;
                let hi = self.class_char(start)?;
                if hi < lo {
                    return Err(go_error(
                        "invalid character class range",
                        &self.chars[range_start..self.pos].iter().collect::<String>(),
                    ));
                }
                push_literal(&mut out, lo, true);
                out.push('-');
                push_literal(&mut out, hi, true);
            } else {
                push_literal(&mut out, lo, true);
            }
        }
        out.push(']');
        Ok(out)
    }

    /// One character of a class: a literal or an escape standing for one character.
    fn class_char(&mut self, class_start: usize) -> Result<char, String> {
        let Some(c) = self.peek() else {
            return Err(go_error("missing closing ]", &self.rest(class_start)));
        };
        self.pos += 1;
        if c == '\\' {
            let at = self.pos - 1;
            return self.escape_char(at);
        }
        Ok(c)
    }

    /// `{n}`, `{n,}` or `{n,m}` at `self.pos` (on the `{`): its length in chars, when it is
    /// a repeat (Go reads any other `{` as a literal).
    fn repeat_len(&self) -> Option<(usize, u32, Option<u32>)> {
        let tail: String = self.chars[self.pos..].iter().take(32).collect();
        let close = tail.find('}')?;
        let inner = &tail[1..close];
        let number = |t: &str| {
            (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse().ok())?
        };
        let (min, max) = match inner.split_once(',') {
            None => {
                let n = number(inner)?;
                (n, Some(n))
            }
            Some((lo, "")) => (number(lo)?, None),
            Some((lo, hi)) => (number(lo)?, Some(number(hi)?)),
        };
        Some((close + 1, min, max))
    }
}

/// Marks an error of Go syntax that tend does not translate (not a Go parse error).
const UNSUPPORTED: &str = "\u{1}";

/// Go's pattern in the regex crate's syntax, or why not.
pub fn translate(pattern: &str) -> Result<String, RegexError> {
    translate_go(pattern).map_err(|e| match e.strip_prefix(UNSUPPORTED) {
        Some(what) => RegexError::Unsupported(format!(
            "the Go regular expression {pattern:?} uses {what}, which tend does not support"
        )),
        None => RegexError::Go(e),
    })
}

fn translate_go(pattern: &str) -> Result<String, String> {
    let mut p = Parser {
        chars: pattern.chars().collect(),
        pos: 0,
        pattern,
    };
    let mut out = String::with_capacity(pattern.len() + 8);
    // Whether a repetition may follow (something to repeat, not already repeated).
    let mut operand = false;
    let mut repeated = false;
    let mut depth = 0usize;
    while let Some(c) = p.peek() {
        let start = p.pos;
        match c {
            '*' | '+' | '?' | '{' => {
                let len = if c == '{' {
                    match p.repeat_len() {
                        Some((len, min, max)) => {
                            if min > 1000 || max.is_some_and(|m| m > 1000 || m < min) {
                                return Err(go_error(
                                    "invalid repeat count",
                                    &p.rest(start).chars().take(len).collect::<String>(),
                                ));
                            }
                            len
                        }
                        None => {
                            // Not a repeat: a literal `{`.
                            p.pos += 1;
                            out.push_str("\\{");
                            operand = true;
                            repeated = false;
                            continue;
                        }
                    }
                } else {
                    1
                };
                let mut op: String = p.chars[start..start + len].iter().collect();
                p.pos += len;
                if p.peek() == Some('?') {
                    p.pos += 1;
                    op.push('?');
                }
                if repeated {
                    return Err(go_error("invalid nested repetition operator", &op));
                }
                if !operand {
                    return Err(go_error("missing argument to repetition operator", &op));
                }
                out.push_str(&op);
                repeated = true;
                continue;
            }
            '(' => {
                p.pos += 1;
                depth += 1;
                out.push('(');
                if p.peek() == Some('?') {
                    out.push_str(&group_flags(&mut p, start)?);
                }
                operand = false;
                repeated = false;
                // `(?i)` alone closes itself: a flag change, not a group.
                if out.ends_with(')') {
                    depth -= 1;
                }
                continue;
            }
            ')' => {
                if depth == 0 {
                    return Err(go_error("unexpected )", pattern));
                }
                depth -= 1;
                p.pos += 1;
                out.push(')');
            }
            '|' => {
                p.pos += 1;
                out.push('|');
                operand = false;
                repeated = false;
                continue;
            }
            '^' | '$' | '.' => {
                p.pos += 1;
                out.push(c);
            }
            '[' => {
                p.pos += 1;
                out.push_str(&p.class(start)?);
            }
            '\\' => {
                p.pos += 1;
                match p.peek() {
                    Some('A') | Some('z') => {
                        out.push('\\');
                        out.push(p.chars[p.pos]);
                        p.pos += 1;
                        // Assertions: nothing to repeat after them in Go either.
                    }
                    Some('b') | Some('B') => {
                        out.push_str(&format!("(?-u:\\{})", p.chars[p.pos]));
                        p.pos += 1;
                    }
                    Some(e @ ('d' | 'D' | 's' | 'S' | 'w' | 'W')) => {
                        p.pos += 1;
                        let set = match e.to_ascii_lowercase() {
                            'd' => ASCII_DIGIT,
                            's' => ASCII_SPACE,
                            _ => ASCII_WORD,
                        };
                        let neg = if e.is_ascii_uppercase() { "^" } else { "" };
                        out.push_str(&format!("[{neg}{set}]"));
                    }
                    Some('p' | 'P') => out.push_str(&p.unicode_class(start)?),
                    Some('Q') => {
                        p.pos += 1;
                        let tail = p.rest(p.pos);
                        let (quoted, skip) = match tail.find("\\E") {
                            Some(i) => (&tail[..i], i + 2),
                            None => (tail.as_str(), tail.len()),
                        };
                        for q in quoted.chars() {
                            push_literal(&mut out, q, false);
                        }
                        p.pos += tail[..skip].chars().count();
                    }
                    Some('C') => return Err(format!("{UNSUPPORTED}\\C (any byte)")),
                    _ => {
                        let ch = p.escape_char(start)?;
                        push_literal(&mut out, ch, false);
                    }
                }
            }
            '}' => {
                p.pos += 1;
                out.push_str("\\}");
            }
            other => {
                p.pos += 1;
                push_literal(&mut out, other, false);
            }
        }
        operand = true;
        repeated = false;
    }
    if depth > 0 {
        return Err(go_error("missing closing )", p.pattern));
    }
    Ok(out)
}

/// After `(` at `?`: Go's `(?P<name>`, `(?<name>`, `(?flags)` or `(?flags:`; anything
/// else (lookarounds, `(?x)`) is Go's "invalid or unsupported Perl syntax".
fn group_flags(p: &mut Parser, start: usize) -> Result<String, String> {
    let tail = p.rest(p.pos);
    let unsupported = |t: &str| {
        let shown: String = t.chars().take(3).collect();
        go_error("invalid or unsupported Perl syntax", &format!("({shown}"))
    };
    for prefix in ["?P<", "?<"] {
        if let Some(rest) = tail.strip_prefix(prefix) {
            if prefix == "?<" && (rest.starts_with('=') || rest.starts_with('!')) {
                return Err(unsupported(&tail));
            }
            let end = rest
                .find('>')
                .ok_or_else(|| go_error("invalid named capture", &p.rest(start)))?;
            let name = &rest[..end];
            if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return Err(go_error(
                    "invalid named capture",
                    &format!("({prefix}{name}>"),
                ));
            }
            p.pos += prefix.chars().count() + name.chars().count() + 1;
            return Ok(format!("?P<{name}>"));
        }
    }
    // Flags: i m s U, optionally negated after `-`, ending in `)` or `:`.
    let mut out = String::from("?");
    let mut seen_minus = false;
    let mut any = false;
    for c in tail.chars().skip(1) {
        match c {
            'i' | 'm' | 's' | 'U' => {
                out.push(c);
                any = true;
            }
            '-' if !seen_minus => {
                seen_minus = true;
                any = false;
                out.push('-');
            }
            ')' | ':' if any || !seen_minus => {
                if c == ')' && out.len() == 1 {
                    // `(?)`: Go refuses an empty flag group.
                    return Err(unsupported(&tail));
                }
                out.push(c);
                p.pos += out.chars().count();
                return Ok(out);
            }
            _ => return Err(unsupported(&tail)),
        }
    }
    Err(go_error("missing closing )", p.pattern))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_match(pattern: &str, text: &str) -> bool {
        compile(pattern)
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
            .is_match(text)
    }

    #[test]
    fn a_dash_after_a_class_escape_is_literal() {
        assert!(is_match(r"^[\w-\.]+$", "redis-ha.svc_1"));
        assert!(!is_match(r"^[\w-\.]+$", "a b"));
        assert!(is_match(r"^[\d-z]+$", "1-z"));
        assert!(!is_match(r"^[\d-z]+$", "y"), "not a range from \\d to z");
        assert!(is_match(r"^[a-]$", "-") && is_match(r"^[-a]$", "-"));
    }

    #[test]
    fn classes_read_brackets_and_set_operators_literally() {
        assert!(is_match(r"^[[]+$", "[["));
        assert!(is_match(r"^[a&&b]+$", "&a"));
        assert!(is_match(r"^[a~~b]$", "~"));
        assert!(is_match(r"^[]a]+$", "]a"));
        assert!(is_match(r"^[^]a]$", "b") && !is_match(r"^[^]a]$", "]"));
        assert!(is_match(r"^[[:alpha:]]+$", "abc"));
        assert!(is_match(r"^[\pL]+$", "été"));
    }

    #[test]
    fn perl_classes_and_word_boundaries_are_ascii() {
        assert!(!is_match(r"^\w$", "é"));
        assert!(!is_match(r"^\d$", "٣"), "Arabic-Indic digit");
        assert!(!is_match(r"^\s$", "\u{a0}"));
        assert!(is_match(r"^[^\w]$", "é"));
        assert!(is_match(r"a\b", "aé"), "é is not an ASCII word character");
    }

    #[test]
    fn go_only_syntax() {
        assert!(is_match(r"^a\<b\>$", "a<b>"));
        assert!(is_match(r"^a{$", "a{") && is_match(r"^{x}$", "{x}"));
        assert!(is_match(r"^a{2}$", "aa") && !is_match(r"^a{2}$", "a"));
        // Quoted text is single literals: `+` repeats the last one only, as in Go.
        assert!(is_match(r"^\Q.*\E+$", ".**") && !is_match(r"^\Q.*\E+$", ".*.*"));
        assert!(is_match(r"^\012$", "\n") && is_match(r"^\x41\x{42}$", "AB"));
        assert!(is_match(r"^(?i)ab$", "AB") && is_match(r"^(?P<n>a)(?<m>b)$", "ab"));
        assert!(is_match(r"^a # b$", "a # b"));
    }

    #[test]
    fn what_go_refuses_is_a_go_error() {
        for bad in [
            r"a**", r"*a", r"(?=a)", r"(?x)a", r"\1", r"[b-a]", r"a{1001}", r"a)", r"(a", r"[a",
            r"\y", r"a{2,1}",
        ] {
            assert!(
                matches!(compile(bad), Err(RegexError::Go(_))),
                "{bad}: {:?}",
                compile(bad)
            );
        }
        assert_eq!(
            translate(r"[b-a]").unwrap_err(),
            RegexError::Go("invalid character class range: `b-a`".into())
        );
        assert!(matches!(compile(r"a\Cb"), Err(RegexError::Unsupported(_))));
    }
}
