//! Go's `fmt` as templates see it: `%v` of every value, `print`/`println` spacing and the
//! `printf` verbs charts use (`%s %d %v %q %t %f %g %e %x`, width, precision and flags).
//! Exact text matters: a rendered object must equal what `helm template` writes.

use super::value::Value;
use std::fmt::Write;

/// `fmt.Sprint(v)`: the `%v` text of one value.
pub fn display(v: &Value) -> String {
    let mut out = String::new();
    write_verb(&mut out, v, 'v', &Spec::default());
    out
}

/// `fmt.Sprint(args...)`: spaces between operands when neither side is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, arg) in args.iter().enumerate() {
        let is_str = matches!(arg, Value::Str(_));
        if i > 0 && !is_str && !matches!(args[i - 1], Value::Str(_)) {
            out.push(' ');
        }
        out.push_str(&display(arg));
    }
    out
}

/// `fmt.Sprintln(args...)`: always spaces, and a newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut out: Vec<String> = args.iter().map(display).collect::<Vec<_>>();
    out.push(String::new());
    let mut text = out[..out.len() - 1].join(" ");
    text.push('\n');
    text
}

/// Go's shortest `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`); see `format_g`.
/// That is why Helm prints `1e+06` for a value of 1000000 (values are float64).
pub fn float_v(f: f64) -> String {
    format_g(f, None)
}

fn special(f: f64) -> Option<String> {
    if f.is_nan() {
        Some("NaN".into())
    } else if f.is_infinite() {
        Some(if f > 0.0 { "+Inf" } else { "-Inf" }.into())
    } else {
        None
    }
}

/// More digits than any float64 has in its exact decimal expansion (at most 767
/// significant, 1074 after the point): formatting stops here and pads with zeros, since
/// Rust's formatter refuses precisions past 65,535 and Go's has no such limit.
const EXACT_DIGITS: usize = 1100;

/// `f` with `precision` digits after the point (Go's `%.Nf`), for any precision.
fn fixed(f: f64, precision: usize) -> String {
    let mut text = format!("{:.*}", precision.min(EXACT_DIGITS), f);
    text.extend(std::iter::repeat_n(
        '0',
        precision.saturating_sub(EXACT_DIGITS),
    ));
    text
}

/// Decimal digits and exponent of `f` (shortest when `precision` is None, else `precision`
/// significant digits): `(negative, digits, exp)` with value `0.digits * 10^(exp+1)`.
fn digits(f: f64, precision: Option<usize>) -> (bool, String, i32) {
    let text = match precision {
        None => format!("{:e}", f.abs()),
        Some(p) => format!("{:.*e}", p.saturating_sub(1).min(EXACT_DIGITS), f.abs()),
    };
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let mut digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if let Some(p) = precision {
        // Past the exact expansion every digit is a zero.
        digits.extend(std::iter::repeat_n('0', p.saturating_sub(digits.len())));
    }
    (
        f.is_sign_negative() && f != 0.0,
        digits,
        exp.parse().unwrap_or(0),
    )
}

fn exp_form(neg: bool, digits: &str, exp: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let _ = write!(
        out,
        "e{}{:02}",
        if exp < 0 { '-' } else { '+' },
        exp.unsigned_abs()
    );
    out
}

fn plain_form(neg: bool, digits: &str, exp: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if exp < 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-exp - 1) as usize));
        out.push_str(digits);
    } else {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.push_str(digits);
            out.push_str(&"0".repeat(int_len - digits.len()));
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    }
    out
}

/// strconv's `'g'` format: `%e` when the exponent is < -4 or >= the precision (6 for the
/// shortest representation), else `%f`, without trailing zeros.
fn format_g(f: f64, precision: Option<usize>) -> String {
    if let Some(s) = special(f) {
        return s;
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let (neg, mut digs, exp) = digits(f, precision.map(|p| p.max(1)));
    while digs.len() > 1 && digs.ends_with('0') {
        digs.pop();
    }
    let eprec = match precision {
        None => 6,
        Some(p) => {
            let p = p.max(1) as i32;
            if p > digs.len() as i32 && digs.len() as i32 > exp {
                digs.len() as i32
            } else {
                p
            }
        }
    };
    if exp < -4 || exp >= eprec {
        exp_form(neg, &digs, exp)
    } else {
        plain_form(neg, &digs, exp)
    }
}

/// strconv's `'e'` format with `precision` digits after the point.
fn format_e(f: f64, precision: usize) -> String {
    if let Some(s) = special(f) {
        return s;
    }
    let (neg, digs, exp) = digits(f, Some(precision + 1));
    let exp = if f == 0.0 { 0 } else { exp };
    exp_form(neg, &digs, exp)
}

/// Go's `strconv.Quote`: a double-quoted string with Go escapes.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Flags, width and precision of one verb.
#[derive(Default, Clone)]
struct Spec {
    minus: bool,
    plus: bool,
    zero: bool,
    space: bool,
    sharp: bool,
    width: Option<usize>,
    precision: Option<usize>,
}

impl Spec {
    fn pad(&self, out: &mut String, text: &str, numeric: bool) {
        let len = text.chars().count();
        let width = self.width.unwrap_or(0);
        if len >= width {
            out.push_str(text);
        } else if self.minus {
            out.push_str(text);
            out.push_str(&" ".repeat(width - len));
        } else if self.zero && numeric {
            let (sign, rest) = match text.strip_prefix(['-', '+']) {
                Some(rest) => (&text[..1], rest),
                None => ("", text),
            };
            out.push_str(sign);
            out.push_str(&"0".repeat(width - len));
            out.push_str(rest);
        } else {
            out.push_str(&" ".repeat(width - len));
            out.push_str(text);
        }
    }
}

fn bad_verb(out: &mut String, verb: char, v: &Value) {
    match v {
        Value::Nil => {
            let _ = write!(out, "%!{verb}(<nil>)");
        }
        _ => {
            let _ = write!(out, "%!{verb}({}={})", v.type_name(), display(v));
        }
    }
}

fn sign(spec: &Spec, text: String) -> String {
    if !text.starts_with('-') && spec.plus {
        format!("+{text}")
    } else if !text.starts_with('-') && spec.space {
        format!(" {text}")
    } else {
        text
    }
}

fn write_verb(out: &mut String, v: &Value, verb: char, spec: &Spec) {
    match (v, verb) {
        (Value::List(_) | Value::Map(_) | Value::Str(_), 'v') if spec.sharp => {
            spec.pad(out, &go_syntax(v, false), false)
        }
        (Value::Int(i, _), 'U') => {
            let mut text = format!("U+{i:04X}");
            if spec.sharp {
                if let Some(c) = char::from_u32(*i as u32).filter(|c| !c.is_control()) {
                    text = format!("{text} '{c}'");
                }
            }
            spec.pad(out, &text, false)
        }
        (Value::List(items), _) if verb != 'T' => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_verb(out, item, verb, spec);
            }
            out.push(']');
        }
        (Value::Map(map), _) if verb != 'T' => {
            out.push_str("map[");
            for (i, (k, item)) in map.borrow().iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_verb(out, &Value::str(k.as_str()), verb, spec);
                out.push(':');
                write_verb(out, item, verb, spec);
            }
            out.push(']');
        }
        (_, 'T') => spec.pad(out, v.type_name(), false),
        // `%v` of a struct argument as Go's fmt writes it; for the few whose text holds
        // pointers (`.Chart`), tend writes `{type}` (an action printing one is an error).
        (Value::Struct(st), 'v' | 's') => {
            let text = st
                .fmt
                .clone()
                .unwrap_or_else(|| format!("{{{}}}", st.type_name));
            write_verb(out, &Value::str(text), verb, spec)
        }
        (Value::Nil, 'v') => spec.pad(out, "<nil>", false),
        (Value::Bool(b), 'v' | 't') => spec.pad(out, if *b { "true" } else { "false" }, false),
        (Value::Int(i, _), 'v' | 'd') => spec.pad(out, &sign(spec, i.to_string()), true),
        (Value::Int(i, _), 'x') => spec.pad(out, &format!("{i:x}"), true),
        (Value::Int(i, _), 'X') => spec.pad(out, &format!("{i:X}"), true),
        (Value::Int(i, _), 'o') => spec.pad(out, &format!("{i:o}"), true),
        (Value::Int(i, _), 'b') => spec.pad(out, &format!("{i:b}"), true),
        (Value::Int(i, _), 'c') => spec.pad(
            out,
            &char::from_u32(*i as u32).unwrap_or('\u{fffd}').to_string(),
            false,
        ),
        (Value::Int(i, _), 'q') => {
            let c = char::from_u32(*i as u32).unwrap_or('\u{fffd}');
            let quoted = quote(&c.to_string());
            let inner = &quoted[1..quoted.len() - 1];
            let inner = if c == '"' {
                "\""
            } else if c == '\'' {
                "\\'"
            } else {
                inner
            };
            spec.pad(out, &format!("'{inner}'"), false)
        }
        (Value::Float(f), 'v') => {
            let text = match spec.precision {
                Some(p) => format_g(*f, Some(p)),
                None => float_v(*f),
            };
            spec.pad(out, &sign(spec, text), true)
        }
        (Value::Float(f), 'g') => spec.pad(out, &sign(spec, format_g(*f, spec.precision)), true),
        (Value::Float(f), 'f' | 'F') => {
            let text = special(*f).unwrap_or_else(|| fixed(*f, spec.precision.unwrap_or(6)));
            spec.pad(out, &sign(spec, text), true)
        }
        (Value::Float(f), 'e') => spec.pad(
            out,
            &sign(spec, format_e(*f, spec.precision.unwrap_or(6))),
            true,
        ),
        (Value::Str(s), 'v' | 's') => {
            let text = match spec.precision {
                Some(p) => s.chars().take(p).collect(),
                None => s.to_string(),
            };
            spec.pad(out, &text, false)
        }
        (Value::Str(s), 'q') => {
            let text = if spec.sharp && !s.contains('`') {
                format!("`{s}`")
            } else {
                quote(s)
            };
            spec.pad(out, &text, false)
        }
        (Value::Str(s), 'x') => spec.pad(out, &hex::encode(s.as_bytes()), false),
        (Value::Str(s), 'X') => spec.pad(out, &hex::encode_upper(s.as_bytes()), false),
        _ => bad_verb(out, verb, v),
    }
}

/// `%#v`: the value in Go syntax, as its Go type is (`map[string]interface {}{"a":1}`,
/// `[]interface {}{1, "x"}`, a quoted string); nil inside a container is the
/// interface's nil.
fn go_syntax(v: &Value, nested: bool) -> String {
    match v {
        Value::Str(s) => quote(s),
        Value::Nil if nested => "interface {}(nil)".into(),
        Value::List(items) => {
            let items: Vec<String> = items.iter().map(|i| go_syntax(i, true)).collect();
            format!("[]interface {{}}{{{}}}", items.join(", "))
        }
        Value::Map(map) => {
            let items: Vec<String> = map
                .borrow()
                .iter()
                .map(|(k, i)| format!("{}:{}", quote(k), go_syntax(i, true)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", items.join(", "))
        }
        other => display(other),
    }
}

/// `fmt.Sprintf(format, args...)`, with Go's `%!verb(MISSING)` and `%!(EXTRA ...)` for
/// mismatched arguments.
#[cfg(test)]
pub fn sprintf(format: &str, args: &[Value]) -> String {
    sprintf_within(format, args, usize::MAX).unwrap_or_default()
}

/// Go's largest width or precision (`fmt`'s `tooLarge`): a longer number in the format
/// ends the verb (`%!(NOVERB)`), a larger `*` argument is `%!(BADWIDTH)`/`%!(BADPREC)`.
const MAX_WIDTH: usize = 1_000_000;

/// [`sprintf`], or `None` as soon as the text would pass `limit` bytes (a render's budget).
pub fn sprintf_within(format: &str, args: &[Value], limit: usize) -> Option<String> {
    let mut out = String::new();
    let mut next = 0;
    let mut chars = format.chars().peekable();
    'verbs: while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&flag) = chars.peek() {
            match flag {
                '-' => {
                    spec.minus = true;
                    spec.zero = false;
                }
                '+' => spec.plus = true,
                '0' => spec.zero = !spec.minus,
                ' ' => spec.space = true,
                '#' => spec.sharp = true,
                _ => break,
            }
            chars.next();
        }
        // Go's parsenum: a number too large to be a width gives up on the whole rest.
        let number = |chars: &mut std::iter::Peekable<std::str::Chars>| {
            let mut n: Option<usize> = None;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                if n.is_some_and(|n| n > MAX_WIDTH) {
                    return Err(());
                }
                n = Some(n.unwrap_or(0) * 10 + d as usize);
                chars.next();
            }
            Ok(n)
        };
        // Go's intFromArg: an int argument for `*`, within the limit.
        let star = |next: &mut usize| -> Option<i64> {
            let arg = args.get(*next)?;
            *next += 1;
            match arg {
                Value::Int(n, _) if n.unsigned_abs() <= MAX_WIDTH as u64 => Some(*n),
                _ => None,
            }
        };
        if chars.peek() == Some(&'*') {
            chars.next();
            match star(&mut next) {
                Some(w) => {
                    if w < 0 {
                        spec.minus = true;
                        spec.zero = false;
                    }
                    spec.width = Some(w.unsigned_abs() as usize);
                }
                None => out.push_str("%!(BADWIDTH)"),
            }
        } else {
            match number(&mut chars) {
                Ok(n) => spec.width = n,
                Err(()) => {
                    out.push_str("%!(NOVERB)");
                    break 'verbs;
                }
            }
        }
        if chars.peek() == Some(&'.') {
            chars.next();
            if chars.peek() == Some(&'*') {
                chars.next();
                match star(&mut next) {
                    Some(p) if p >= 0 => spec.precision = Some(p as usize),
                    _ => out.push_str("%!(BADPREC)"),
                }
            } else {
                match number(&mut chars) {
                    Ok(n) => spec.precision = Some(n.unwrap_or(0)),
                    Err(()) => {
                        out.push_str("%!(NOVERB)");
                        break 'verbs;
                    }
                }
            }
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let room = limit.saturating_sub(out.len());
        if spec.width.unwrap_or(0).max(spec.precision.unwrap_or(0)) > room {
            return None;
        }
        match args.get(next) {
            Some(arg) => write_verb(&mut out, arg, verb, &spec),
            None => {
                let _ = write!(out, "%!{verb}(MISSING)");
            }
        }
        if out.len() > limit {
            return None;
        }
        next += 1;
    }
    if next < args.len() {
        out.push_str("%!(EXTRA ");
        let extra: Vec<String> = args[next..]
            .iter()
            .map(|a| match a {
                Value::Nil => "<nil>".to_string(),
                a => format!("{}={}", a.type_name(), display(a)),
            })
            .collect();
        out.push_str(&extra.join(", "));
        out.push(')');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected texts are what Go 1.24's fmt prints.
    #[test]
    fn floats_print_like_go() {
        assert_eq!(float_v(3.0), "3");
        assert_eq!(float_v(1.5), "1.5");
        assert_eq!(float_v(1e6), "1e+06");
        assert_eq!(float_v(100000.0), "100000");
        assert_eq!(float_v(1234567.0), "1.234567e+06");
        assert_eq!(float_v(0.0001), "0.0001");
        assert_eq!(float_v(0.00001), "1e-05");
        assert_eq!(float_v(-2.5), "-2.5");
        assert_eq!(sprintf("%.2f", &[Value::Float(1.23456)]), "1.23");
        assert_eq!(sprintf("%f", &[Value::Float(1.0)]), "1.000000");
        assert_eq!(sprintf("%e", &[Value::Float(1234.5)]), "1.234500e+03");
        assert_eq!(sprintf("%g", &[Value::Float(0.5)]), "0.5");
    }

    #[test]
    fn verbs_and_mismatches() {
        let s = Value::str;
        assert_eq!(sprintf("%s-%d", &[s("a"), Value::int(3)]), "a-3");
        assert_eq!(sprintf("%q", &[s("a\"b\n")]), "\"a\\\"b\\n\"");
        assert_eq!(
            sprintf("%v %t", &[Value::Nil, Value::Bool(true)]),
            "<nil> true"
        );
        assert_eq!(sprintf("%d", &[Value::Float(1.0)]), "%!d(float64=1)");
        assert_eq!(sprintf("%s", &[Value::int(5)]), "%!s(int=5)");
        assert_eq!(sprintf("%s", &[Value::Nil]), "%!s(<nil>)");
        assert_eq!(sprintf("%d %d", &[Value::int(1)]), "1 %!d(MISSING)");
        assert_eq!(
            sprintf("%d", &[Value::int(1), s("x")]),
            "1%!(EXTRA string=x)"
        );
        assert_eq!(
            sprintf("%5s|%-5s|%05d", &[s("ab"), s("cd"), Value::int(-42)]),
            "   ab|cd   |-0042"
        );
        assert_eq!(sprintf("100%%", &[]), "100%");
        assert_eq!(sprintf("%x", &[Value::int(255)]), "ff");
    }

    #[test]
    fn containers_and_print_spacing() {
        let list = Value::list(vec![Value::str("a"), Value::int(1), Value::Nil]);
        assert_eq!(display(&list), "[a 1 <nil>]");
        let map = Value::empty_map();
        if let Value::Map(m) = &map {
            m.borrow_mut().insert("b".into(), Value::int(2));
            m.borrow_mut().insert("a".into(), Value::str("x"));
        }
        assert_eq!(display(&map), "map[a:x b:2]");
        assert_eq!(
            sprint(&[Value::int(1), Value::int(2), Value::str("a"), Value::int(3)]),
            "1 2a3"
        );
        assert_eq!(sprintln(&[Value::int(1), Value::str("a")]), "1 a\n");
    }

    /// `%#v` prints Go syntax of the value's Go type (fmt's `sharpV`: strings quoted,
    /// `map[string]interface {}{...}` with sorted keys, `[]interface {}{...}`, nil inside
    /// as `interface {}(nil)`); `%U` is `U+0041`, `%#U` adds the character.
    #[test]
    fn go_syntax_and_unicode_verbs() {
        let list = Value::list(vec![Value::str("a"), Value::int(1), Value::Nil]);
        let map = Value::empty_map();
        if let Value::Map(m) = &map {
            m.borrow_mut().insert("b".into(), list);
            m.borrow_mut().insert("a".into(), Value::Float(1.5));
        }
        assert_eq!(
            sprintf("%#v", &[map]),
            "map[string]interface {}{\"a\":1.5, \"b\":[]interface {}{\"a\", 1, interface {}(nil)}}"
        );
        assert_eq!(
            sprintf("%#v|%#v", &[Value::str("s"), Value::int(1)]),
            "\"s\"|1"
        );
        assert_eq!(sprintf("%#v", &[Value::Nil]), "<nil>");
        assert_eq!(
            sprintf("%U|%#U", &[Value::int(65), Value::int(65)]),
            "U+0041|U+0041 'A'"
        );
    }
}
