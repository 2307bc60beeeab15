//! The exact text Helm's `toYaml` writes: sigs.k8s.io/yaml turns the value into JSON, reads
//! that back with go-yaml v2 (so integral numbers become ints) and emits it with go-yaml v2's
//! emitter: keys in its natural sort order, sequences not indented under their key, strings
//! plain when they can't be read back as another type, else quoted (single quotes when the
//! text has YAML indicators, double when they would resolve to a bool/number/null or hold
//! control characters), multi-line strings as literal blocks, and long lines folded at 80
//! columns, as libyaml does.

use super::yaml11;
use crate::helm::template::gofmt;
use crate::helm::template::Value;
use std::cmp::Ordering;

const BEST_WIDTH: usize = 80;

/// `yaml.Marshal(v)` of sigs.k8s.io/yaml, with its trailing newline.
pub fn to_yaml(v: &Value) -> String {
    write(v, false)
}

/// What Helm's `toYamlPretty` writes (pkg/engine/funcs.go `toYAMLPretty`): go-yaml v3's
/// encoder with `SetIndent(2)`, given the value itself rather than its JSON. The same
/// emitter, but sequences are indented under their key and floats are not read back
/// through JSON (`1e+08`, not `100000000`).
pub fn to_yaml_pretty(v: &Value) -> String {
    write(v, true)
}

fn write(v: &Value, pretty: bool) -> String {
    if let Value::Struct(s) = v {
        // Marshalled through encoding/json first, as sigs.k8s.io/yaml does.
        return write(&Value::from_json(&s.json, false), pretty);
    }
    let mut w = Writer {
        out: String::new(),
        pretty,
    };
    match v {
        Value::Map(m) if !m.borrow().is_empty() => w.map(v, 0, false),
        Value::List(l) if !l.is_empty() => w.seq(v, 0, false),
        other => {
            w.scalar(other, 2, false);
        }
    }
    w.out.push('\n');
    w.out
}

struct Writer {
    out: String,
    /// go-yaml v3 as `toYamlPretty` uses it, rather than v2 behind JSON.
    pretty: bool,
}

impl Writer {
    fn column(&self) -> usize {
        let line = match self.out.rfind('\n') {
            Some(i) => &self.out[i + 1..],
            None => &self.out,
        };
        line.chars().count()
    }

    fn indent(&mut self, indent: usize) {
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        self.out.push_str(&" ".repeat(indent));
    }

    /// A block mapping at `indent`; `inline` when its first key follows a `- ` already
    /// written.
    fn map(&mut self, v: &Value, indent: usize, inline: bool) {
        let Value::Map(m) = v else { return };
        let map = m.borrow();
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort_by(|a, b| natural_order(a, b));
        for (i, key) in keys.into_iter().enumerate() {
            if i > 0 || !inline {
                self.indent(indent);
            }
            self.scalar(&Value::str(key.as_str()), indent + 2, true);
            self.out.push(':');
            self.value(&map[key], indent, true);
        }
    }

    fn seq(&mut self, v: &Value, indent: usize, inline: bool) {
        let Value::List(l) = v else { return };
        for (i, item) in l.iter().enumerate() {
            if i > 0 || !inline {
                self.indent(indent);
            }
            self.out.push('-');
            self.value(item, indent, false);
        }
    }

    /// A value after `key:` (`in_map`) or `-` at `indent`.
    fn value(&mut self, v: &Value, indent: usize, in_map: bool) {
        match v {
            Value::Struct(s) => self.value(&Value::from_json(&s.json, false), indent, in_map),
            Value::Map(m) if !m.borrow().is_empty() => {
                if in_map {
                    self.map(v, indent + 2, false);
                } else {
                    self.out.push(' ');
                    self.map(v, indent + 2, true);
                }
            }
            // go-yaml v2 does not indent sequences under a mapping key ("indentless");
            // v3 does.
            Value::List(l) if !l.is_empty() => {
                if in_map {
                    self.seq(v, if self.pretty { indent + 2 } else { indent }, false);
                } else {
                    self.out.push(' ');
                    self.seq(v, indent + 2, true);
                }
            }
            other => {
                self.out.push(' ');
                self.scalar(other, indent + 2, false);
            }
        }
    }

    fn scalar(&mut self, v: &Value, indent: usize, simple_key: bool) {
        let text = match v {
            Value::Nil => "null".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i, _) => i.to_string(),
            Value::Float(f) if self.pretty => pretty_float_text(*f),
            Value::Float(f) => float_text(*f),
            Value::Map(_) => "{}".to_string(),
            Value::List(_) => "[]".to_string(),
            Value::Str(s) => return self.string(s, indent, simple_key),
            Value::Struct(s) => {
                return self.scalar(&Value::from_json(&s.json, false), indent, simple_key)
            }
        };
        self.out.push_str(&text);
    }

    fn string(&mut self, s: &str, indent: usize, simple_key: bool) {
        let a = analyze(s);
        let requested = if s.contains('\n') {
            Style::Literal
        } else if resolves_to_string(s) {
            Style::Plain
        } else {
            Style::Double
        };
        let mut style = requested;
        if simple_key && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain && (!a.block_plain || (s.is_empty() && simple_key)) {
            style = Style::Single;
        }
        if style == Style::Single && !a.single_quoted {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block || simple_key) {
            style = Style::Double;
        }
        let breaks = !simple_key;
        match style {
            Style::Plain => self.plain(s, indent, breaks),
            Style::Single => self.single(s, indent, breaks),
            Style::Double => self.double(s, indent, breaks),
            Style::Literal => self.literal(s, indent),
        }
    }

    fn fold(&mut self, indent: usize) {
        self.out.push('\n');
        self.out.push_str(&" ".repeat(indent));
    }

    fn plain(&mut self, s: &str, indent: usize, breaks: bool) {
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                if breaks && !spaces && self.column() > BEST_WIDTH && !next_space {
                    self.fold(indent);
                } else {
                    self.out.push(c);
                }
                spaces = true;
            } else {
                self.out.push(c);
                spaces = false;
            }
        }
    }

    fn single(&mut self, s: &str, indent: usize, breaks: bool) {
        self.out.push('\'');
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                if breaks
                    && !spaces
                    && self.column() > BEST_WIDTH
                    && i != 0
                    && i + 1 != chars.len()
                    && !next_space
                {
                    self.fold(indent);
                } else {
                    self.out.push(c);
                }
                spaces = true;
            } else {
                if c == '\'' {
                    self.out.push('\'');
                }
                self.out.push(c);
                spaces = false;
            }
        }
        self.out.push('\'');
    }

    fn double(&mut self, s: &str, indent: usize, breaks: bool) {
        self.out.push('"');
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !printable(c) || c == '\u{feff}' || is_break(c) || c == '"' || c == '\\' {
                self.out.push('\\');
                match c {
                    '\0' => self.out.push('0'),
                    '\u{7}' => self.out.push('a'),
                    '\u{8}' => self.out.push('b'),
                    '\t' => self.out.push('t'),
                    '\n' => self.out.push('n'),
                    '\u{b}' => self.out.push('v'),
                    '\u{c}' => self.out.push('f'),
                    '\r' => self.out.push('r'),
                    '\u{1b}' => self.out.push('e'),
                    '"' => self.out.push('"'),
                    '\\' => self.out.push('\\'),
                    '\u{85}' => self.out.push('N'),
                    '\u{a0}' => self.out.push('_'),
                    '\u{2028}' => self.out.push('L'),
                    '\u{2029}' => self.out.push('P'),
                    c if (c as u32) <= 0xff => self.out.push_str(&format!("x{:02X}", c as u32)),
                    c if (c as u32) <= 0xffff => self.out.push_str(&format!("u{:04X}", c as u32)),
                    c => self.out.push_str(&format!("U{:08X}", c as u32)),
                }
                spaces = false;
            } else if c == ' ' {
                if breaks && !spaces && self.column() > BEST_WIDTH && i != 0 && i + 1 != chars.len()
                {
                    self.fold(indent);
                    if chars.get(i + 1) == Some(&' ') {
                        self.out.push('\\');
                    }
                } else {
                    self.out.push(c);
                }
                spaces = true;
            } else {
                self.out.push(c);
                spaces = false;
            }
        }
        self.out.push('"');
    }

    fn literal(&mut self, s: &str, indent: usize) {
        self.out.push('|');
        if s.starts_with([' ', '\n']) {
            self.out.push('2');
        }
        let ends_break = s.ends_with('\n');
        if !ends_break {
            self.out.push('-');
        } else if s.len() == 1 || s[..s.len() - 1].ends_with('\n') {
            self.out.push('+');
        }
        let mut at_line_start = true;
        self.out.push('\n');
        for c in s.chars() {
            if c == '\n' {
                self.out.push('\n');
                at_line_start = true;
            } else {
                if at_line_start {
                    self.out.push_str(&" ".repeat(indent));
                    at_line_start = false;
                }
                self.out.push(c);
            }
        }
        // The emitter's final line break comes from the next node (or the document end).
        if self.out.ends_with('\n') {
            self.out.pop();
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// Go's strconv 'g' shortest form, with go-yaml's names for infinities and NaN.
fn float_text(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    // JSON in between: encoding/json writes an integral float below 1e21 in 'f' form with
    // its shortest digits, zeros after (1.2345678901234567e19 as 12345678901234567000,
    // Rust's `{}` too), which go-yaml reads back as an int64 or uint64 where one holds it
    // (-0 as 0), else as a float it writes in 'g' form (1e+20).
    if f.fract() == 0.0 && f.abs() < 1e21 {
        let json = format!("{f}");
        if let Ok(i) = json.parse::<i64>() {
            return i.to_string();
        }
        if let Ok(u) = json.parse::<u64>() {
            return u.to_string();
        }
    }
    gofmt::float_v(f)
}

/// go-yaml v3's float: `strconv.FormatFloat(f, 'g', -1, 64)`, with YAML's names for
/// infinities and NaN.
fn pretty_float_text(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    gofmt::float_v(f)
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn printable(c: char) -> bool {
    let u = c as u32;
    u == 0x0a
        || (0x20..=0x7e).contains(&u)
        || u == 0x85
        || (0xa0..=0xd7ff).contains(&u)
        || ((0xe000..=0xfffd).contains(&u) && u != 0xfeff)
        || (0x10000..=0x10ffff).contains(&u)
}

struct Analysis {
    multiline: bool,
    block_plain: bool,
    single_quoted: bool,
    block: bool,
}

/// libyaml's `yaml_emitter_analyze_scalar`, for block context.
fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis {
            multiline: false,
            block_plain: true,
            single_quoted: true,
            block: false,
        };
    }
    let chars: Vec<char> = s.chars().collect();
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break, mut special, mut line_breaks) =
        (false, false, false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars
            .get(i + 1)
            .is_none_or(|n| matches!(n, ' ' | '\t') || is_break(*n));
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !printable(c) {
            special = true;
        }
        let last = i + 1 == chars.len();
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= last;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= last;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = matches!(c, ' ' | '\t' | '\0') || is_break(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain: true,
        single_quoted: true,
        block: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain = false;
    }
    if trailing_space {
        a.block = false;
    }
    if break_space {
        a.block_plain = false;
        a.single_quoted = false;
    }
    if space_break || special {
        a.block_plain = false;
        a.single_quoted = false;
        a.block = false;
    }
    if line_breaks || block_indicators {
        a.block_plain = false;
    }
    a
}

/// Whether go-yaml v2 would read `s`, written plain, back as a string (its `resolve`), and
/// it is not a YAML 1.1 sexagesimal number.
pub fn resolves_to_string(s: &str) -> bool {
    const NON_STRINGS: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
        "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
        ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan",
        ".NaN", ".NAN",
    ];
    if NON_STRINGS.contains(&s) || yaml11::is_base60(s) {
        return false;
    }
    let Some(first) = s.chars().next() else {
        return false;
    };
    match first {
        '.' => s.parse::<f64>().is_err() || s.contains(['i', 'I', 'n', 'N']),
        '0'..='9' | '+' | '-' => {
            if yaml11::is_timestamp(s) {
                return false;
            }
            let plain = s.replace('_', "");
            !(go_int(&plain) || (yaml11::is_float(&plain) && plain.parse::<f64>().is_ok()))
        }
        _ => true,
    }
}

/// `strconv.ParseInt(s, 0, 64)` (or ParseUint) succeeds, or go-yaml's `0b` forms.
fn go_int(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    crate::yaml::go_parse_uint(body).is_some()
}

/// go-yaml v2's key order: letters by code point, runs of digits by number, a letter after
/// a non-letter only when the previous (equal) character was a digit.
pub fn natural_order(a: &str, b: &str) -> Ordering {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let less = |x: &[char], y: &[char]| -> Option<bool> {
        let mut digits = false;
        let mut i = 0;
        while i < x.len() && i < y.len() {
            if x[i] == y[i] {
                digits = x[i].is_ascii_digit();
                i += 1;
                continue;
            }
            let (xl, yl) = (x[i].is_alphabetic(), y[i].is_alphabetic());
            if xl && yl {
                return Some(x[i] < y[i]);
            }
            if xl || yl {
                return Some(if digits { xl } else { yl });
            }
            let (mut xn, mut yn) = (0i64, 0i64);
            if x[i] == '0' || y[i] == '0' {
                let mut j = i;
                while j > 0 && x[j - 1].is_ascii_digit() {
                    j -= 1;
                    if x[j] != '0' {
                        xn = 1;
                        yn = 1;
                        break;
                    }
                }
            }
            let mut xi = i;
            while xi < x.len() && x[xi].is_ascii_digit() {
                xn = xn.wrapping_mul(10).wrapping_add(x[xi] as i64 - '0' as i64);
                xi += 1;
            }
            let mut yi = i;
            while yi < y.len() && y[yi].is_ascii_digit() {
                yn = yn.wrapping_mul(10).wrapping_add(y[yi] as i64 - '0' as i64);
                yi += 1;
            }
            if xn != yn {
                return Some(xn < yn);
            }
            if xi != yi {
                return Some(xi < yi);
            }
            return Some(x[i] < y[i]);
        }
        None
    };
    match less(&ar, &br) {
        Some(true) => Ordering::Less,
        Some(false) => match less(&br, &ar) {
            Some(true) => Ordering::Greater,
            _ => Ordering::Equal,
        },
        None => ar.len().cmp(&br.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(json: serde_json::Value) -> Value {
        Value::from_json(&json, true)
    }

    // Expected texts: what `helm template` prints for `{{ toYaml . }}` of the same value.
    #[test]
    fn maps_lists_and_nesting() {
        let value = v(serde_json::json!({
            "b": [1, "two", {"x": 1, "y": [true]}, [1, 2]],
            "a": {"c": null, "d": {}, "e": []},
            "n": 1.5, "num": 2, "big": 1000000.0
        }));
        assert_eq!(
            to_yaml(&value),
            "a:\n  c: null\n  d: {}\n  e: []\nb:\n- 1\n- two\n- x: 1\n  \"y\":\n  - true\n- - 1\n  - 2\nbig: 1000000\n\"n\": 1.5\nnum: 2\n"
        );
    }

    /// `toYamlPretty`: go-yaml v3's encoder with `SetIndent(2)` (Helm's `toYAMLPretty`):
    /// sequences indented under their key, a value's float64 written in 'g' form as it is
    /// (v3 `encode.go` floatv), not read back through JSON; keys and quoting as v2.
    #[test]
    fn pretty_is_go_yaml_v3_with_indent_2() {
        let value = v(serde_json::json!({
            "b": [1, {"y": [true], "x": "yes"}, [1, 2]],
            "a": {"e": [], "d": {}},
            "big": 100000000, "port": 8080, "f": 0.5
        }));
        assert_eq!(
            to_yaml_pretty(&value),
            "a:\n  d: {}\n  e: []\nb:\n  - 1\n  - x: \"yes\"\n    \"y\":\n      - true\n  - - 1\n    - 2\nbig: 1e+08\nf: 0.5\nport: 8080\n"
        );
        assert_eq!(to_yaml_pretty(&Value::Nil), "null\n");
        assert_eq!(to_yaml_pretty(&v(serde_json::json!(["a"]))), "- a\n");
        assert_eq!(to_yaml_pretty(&Value::int(3)), "3\n");
    }

    /// Floats through sigs.k8s.io/yaml: encoding/json's text, read back by go-yaml v2 as an
    /// int64, a uint64 or a float64 ('g' form), whichever first holds it.
    #[test]
    fn floats_go_through_json_then_go_yaml() {
        let f = |x: f64| to_yaml(&Value::Float(x));
        assert_eq!(f(1e6), "1000000\n");
        assert_eq!(f(-0.0), "0\n");
        assert_eq!(f(9.223372036854776e18), "9223372036854776000\n");
        assert_eq!(f(1.2345678901234567e19), "12345678901234567000\n");
        assert_eq!(f(-1e19), "-1e+19\n");
        assert_eq!(f(1e20), "1e+20\n");
        assert_eq!(f(1e21), "1e+21\n");
        assert_eq!(f(1.5), "1.5\n");
        assert_eq!(f(1e-7), "1e-07\n");
    }

    #[test]
    fn strings_are_quoted_as_go_yaml_does() {
        let s = |t: &str| to_yaml(&Value::str(t));
        assert_eq!(s("plain text"), "plain text\n");
        assert_eq!(s("true"), "\"true\"\n");
        assert_eq!(s("123"), "\"123\"\n");
        assert_eq!(s("1.5"), "\"1.5\"\n");
        assert_eq!(s("0x1F"), "\"0x1F\"\n");
        assert_eq!(s(""), "\"\"\n");
        assert_eq!(s("~"), "\"~\"\n");
        assert_eq!(s("2024-01-02"), "\"2024-01-02\"\n");
        assert_eq!(s("a: b"), "'a: b'\n");
        assert_eq!(s("*star"), "'*star'\n");
        assert_eq!(s("it's"), "it's\n");
        assert_eq!(s("'q'"), "'''q'''\n");
        assert_eq!(s(" lead"), "' lead'\n");
        assert_eq!(s("tab\there"), "\"tab\\there\"\n");
        assert_eq!(s("1:20"), "\"1:20\"\n");
        assert_eq!(s("v1.2.3"), "v1.2.3\n");
    }

    #[test]
    fn multi_line_strings_are_literal_blocks() {
        let value = v(serde_json::json!({"k": "a\nb\n", "l": "a\nb", "m": "a\n\n", "o": " x\ny"}));
        assert_eq!(
            to_yaml(&value),
            "k: |\n  a\n  b\nl: |-\n  a\n  b\nm: |+\n  a\n\no: |2-\n   x\n  y\n"
        );
        let trailing_space = v(serde_json::json!({"k": "a \nb"}));
        assert_eq!(to_yaml(&trailing_space), "k: \"a \\nb\"\n");
    }

    #[test]
    fn key_order_is_go_yaml_natural_order() {
        let mut keys = vec!["a10", "a9", "b", "a_", "aB", "A", "a1"];
        keys.sort_by(|a, b| natural_order(a, b));
        assert_eq!(keys, ["A", "a_", "a1", "a9", "a10", "aB", "b"]);
    }

    #[test]
    fn long_plain_lines_fold_at_80_columns() {
        let words = vec!["word"; 30].join(" ");
        let out = to_yaml(&v(serde_json::json!({ "k": words })));
        let first = out.lines().next().unwrap_or_default();
        assert!(first.len() > 80 && first.len() <= 85, "{out}");
        assert!(
            out.lines().nth(1).unwrap_or_default().starts_with("  word"),
            "{out}"
        );
    }
}
