//! YAML as Helm reads values files and `fromYaml` text: go-yaml v2 (YAML 1.1) under
//! sigs.k8s.io/yaml, which converts the result to JSON. So `yes`/`on`/`y` are true,
//! `no`/`off`/`n` false, `0644` is the octal 420, `0x1F` 31, `1_000` 1000, timestamps stay
//! strings, `<<` merges maps, only the first document counts and map keys become strings
//! (`true`, `1`); a quoted scalar is always a string. The plain/quoted distinction is why
//! this reads libyaml's events (the parser go-yaml v2 ports) instead of serde_yaml's tree.

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::mem::MaybeUninit;
use unsafe_libyaml as unsafe_sys;

use super::limits::{
    alias_bomb_message, deep_flow_line, nesting_message, MAX_EXPANDED_BYTES, MAX_NESTING,
};

/// The first document of `text` as Helm's `chartutil.ReadValues` and `fromYaml` see it
/// (null for an empty one), or go-yaml's or sigs.k8s.io/yaml's error.
///
/// The limits of every YAML file tend reads hold here too (a chart's own `values.yaml`, and
/// text a template hands `fromYaml`): nesting past [`MAX_NESTING`] levels, and aliases that
/// copy more than [`MAX_EXPANDED_BYTES`] in all, are refused.
pub fn parse_helm_yaml(text: &str) -> Result<Value, String> {
    // libyaml takes time quadratic in the depth of flow collections: refused before it runs.
    if let Some(line) = deep_flow_line(text, MAX_NESTING) {
        return Err(format!("line {}: {}", line + 1, nesting_message()));
    }
    let mut events = Events::new(text.as_bytes());
    let mut builder = Builder {
        events: &mut events,
        anchors: HashMap::new(),
        aliased: 0,
        depth: 0,
    };
    builder.document()
}

enum Event {
    StreamEnd,
    DocumentStart,
    Other,
    Alias(String),
    Scalar {
        anchor: Option<String>,
        tag: Option<String>,
        value: String,
        plain: bool,
    },
    SequenceStart(Option<String>),
    SequenceEnd,
    MappingStart(Option<String>),
    MappingEnd,
}

/// libyaml's event parser over one input.
struct Events<'a> {
    parser: Box<MaybeUninit<unsafe_sys::yaml_parser_t>>,
    _input: &'a [u8],
    failed: bool,
}

impl<'a> Events<'a> {
    fn new(input: &'a [u8]) -> Events<'a> {
        let mut parser = Box::new(MaybeUninit::<unsafe_sys::yaml_parser_t>::uninit());
        // SAFETY: the parser is initialised in place before any other use; `input` outlives
        // it (the borrow is held in `_input`); it is deleted once, in Drop.
        let failed = unsafe {
            let p = parser.as_mut_ptr();
            let failed = unsafe_sys::yaml_parser_initialize(p).fail;
            if !failed {
                unsafe_sys::yaml_parser_set_encoding(p, unsafe_sys::YAML_UTF8_ENCODING);
                unsafe_sys::yaml_parser_set_input_string(p, input.as_ptr(), input.len() as u64);
            }
            failed
        };
        Events {
            parser,
            _input: input,
            failed,
        }
    }

    fn next(&mut self) -> Result<Event, String> {
        if self.failed {
            return Err("yaml: cannot initialise the parser".into());
        }
        let mut event = MaybeUninit::<unsafe_sys::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised (checked above); the event is read only after
        // yaml_parser_parse succeeded, and deleted once after its strings were copied.
        unsafe {
            let p = self.parser.as_mut_ptr();
            if unsafe_sys::yaml_parser_parse(p, event.as_mut_ptr()).fail {
                self.failed = true;
                let parser = &*p;
                let problem = c_text(parser.problem.cast()).unwrap_or_default();
                let line = parser.problem_mark.line + 1;
                return Err(format!("yaml: line {line}: {problem}"));
            }
            let e = event.as_mut_ptr();
            let converted = match (*e).type_ {
                unsafe_sys::YAML_STREAM_END_EVENT => Event::StreamEnd,
                unsafe_sys::YAML_DOCUMENT_START_EVENT => Event::DocumentStart,
                unsafe_sys::YAML_ALIAS_EVENT => {
                    Event::Alias(c_text((*e).data.alias.anchor).unwrap_or_default())
                }
                unsafe_sys::YAML_SCALAR_EVENT => {
                    let s = (*e).data.scalar;
                    let bytes = std::slice::from_raw_parts(s.value, s.length as usize);
                    Event::Scalar {
                        anchor: c_text(s.anchor),
                        tag: c_text(s.tag),
                        value: String::from_utf8_lossy(bytes).into_owned(),
                        plain: s.style == unsafe_sys::YAML_PLAIN_SCALAR_STYLE,
                    }
                }
                unsafe_sys::YAML_SEQUENCE_START_EVENT => {
                    Event::SequenceStart(c_text((*e).data.sequence_start.anchor))
                }
                unsafe_sys::YAML_SEQUENCE_END_EVENT => Event::SequenceEnd,
                unsafe_sys::YAML_MAPPING_START_EVENT => {
                    Event::MappingStart(c_text((*e).data.mapping_start.anchor))
                }
                unsafe_sys::YAML_MAPPING_END_EVENT => Event::MappingEnd,
                _ => Event::Other,
            };
            unsafe_sys::yaml_event_delete(e);
            Ok(converted)
        }
    }
}

impl Drop for Events<'_> {
    fn drop(&mut self) {
        // SAFETY: initialised in `new` (a failed initialisation leaves nothing to free, and
        // yaml_parser_delete of a zeroed parser is what libyaml's own cleanup does).
        unsafe { unsafe_sys::yaml_parser_delete(self.parser.as_mut_ptr()) }
    }
}

/// A NUL-terminated string of libyaml's, if the pointer is set.
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string.
unsafe fn c_text(ptr: *const u8) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: per this function's contract.
    let text = unsafe { std::ffi::CStr::from_ptr(ptr.cast()) };
    Some(text.to_string_lossy().into_owned())
}

struct Builder<'e, 'a> {
    events: &'e mut Events<'a>,
    anchors: HashMap<String, (Value, usize)>,
    aliased: usize,
    /// Collections open around the node being read.
    depth: usize,
}

impl Builder<'_, '_> {
    /// The first document; go-yaml v2's Unmarshal reads no further.
    fn document(&mut self) -> Result<Value, String> {
        loop {
            match self.events.next()? {
                Event::StreamEnd => return Ok(Value::Null),
                Event::DocumentStart => break,
                _ => {}
            }
        }
        let first = self.events.next()?;
        self.node(first)
    }

    fn node(&mut self, event: Event) -> Result<Value, String> {
        if matches!(event, Event::SequenceStart(_) | Event::MappingStart(_)) {
            self.depth += 1;
            if self.depth > MAX_NESTING {
                return Err(nesting_message());
            }
        }
        let value = self.node_within(event);
        if value.as_ref().is_ok_and(|v| v.is_array() || v.is_object()) {
            self.depth -= 1;
        }
        value
    }

    fn node_within(&mut self, event: Event) -> Result<Value, String> {
        let (anchor, value) = match event {
            Event::Scalar {
                anchor,
                tag,
                value,
                plain,
            } => (anchor, resolve(tag.as_deref(), &value, plain)?),
            Event::SequenceStart(anchor) => {
                let mut items = Vec::new();
                loop {
                    match self.events.next()? {
                        Event::SequenceEnd => break,
                        e => items.push(self.node(e)?),
                    }
                }
                (anchor, Value::Array(items))
            }
            Event::MappingStart(anchor) => (anchor, Value::Object(self.mapping()?)),
            Event::Alias(name) => {
                let (value, size) = self
                    .anchors
                    .get(&name)
                    .cloned()
                    .ok_or_else(|| format!("yaml: unknown anchor '{name}' referenced"))?;
                self.aliased = self.aliased.saturating_add(size);
                if self.aliased > MAX_EXPANDED_BYTES {
                    return Err(alias_bomb_message());
                }
                // An alias of a collection is no level of nesting of its own.
                if value.is_array() || value.is_object() {
                    self.depth += 1;
                }
                return Ok(value);
            }
            Event::MappingEnd | Event::SequenceEnd | Event::StreamEnd | Event::DocumentStart => {
                return Err("yaml: did not find expected node content".into())
            }
            Event::Other => return Ok(Value::Null),
        };
        if let Some(name) = anchor {
            self.anchors.insert(name, (value.clone(), size_of(&value)));
        }
        Ok(value)
    }

    /// A mapping's entries; `<<` merges a map, or a list of maps (earlier ones winning), at
    /// its place: later keys override what it brought, and it overrides earlier keys, as
    /// go-yaml v2 decodes it.
    fn mapping(&mut self) -> Result<Map<String, Value>, String> {
        let mut map = Map::new();
        loop {
            let key_event = match self.events.next()? {
                Event::MappingEnd => return Ok(map),
                e => e,
            };
            let merge = matches!(&key_event,
                Event::Scalar { tag, value, plain, .. }
                    if (*plain && tag.is_none() && value == "<<")
                        || tag.as_deref() == Some("tag:yaml.org,2002:merge"));
            let key = self.node(key_event)?;
            let value_event = self.events.next()?;
            let value = self.node(value_event)?;
            if merge {
                let maps = match value {
                    Value::Object(m) => vec![m],
                    Value::Array(items) => items
                        .into_iter()
                        .rev()
                        .map(|i| match i {
                            Value::Object(m) => Ok(m),
                            _ => Err(MERGE_ERROR.to_string()),
                        })
                        .collect::<Result<_, _>>()?,
                    _ => return Err(MERGE_ERROR.into()),
                };
                for m in maps {
                    for (k, v) in m {
                        map.insert(k, v);
                    }
                }
                continue;
            }
            map.insert(key_text(&key)?, value);
        }
    }
}

const MERGE_ERROR: &str = "yaml: map merge requires map or sequence of maps as the value";

/// What copying `v` makes, counted as the limits of every YAML file count it: the bytes of
/// its scalars and keys, and 8 per node.
fn size_of(v: &Value) -> usize {
    match v {
        Value::Array(items) => 8 + items.iter().map(size_of).sum::<usize>(),
        Value::Object(m) => 8 + m.iter().map(|(k, v)| k.len() + size_of(v)).sum::<usize>(),
        Value::String(s) => 8 + s.len(),
        _ => 8,
    }
}

/// sigs.k8s.io/yaml's conversion of a map key to JSON's string key.
fn key_text(key: &Value) -> Result<String, String> {
    Ok(match key {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_i64() => n.to_string(),
        Value::Number(n) if n.is_f64() => {
            // strconv.FormatFloat(f, 'g', -1, 32): the shortest float32 text.
            let f = n.as_f64().unwrap_or(0.0) as f32;
            let text = format!("{f}");
            if text.contains('e') || text.contains('.') {
                text
            } else if text.len() > 21 {
                format!("{f:e}").replace('e', "e+")
            } else {
                text
            }
        }
        other => {
            return Err(format!(
                "error converting YAML to JSON: Unsupported map key of type: {}",
                match other {
                    Value::Null => "<nil>",
                    Value::Number(_) => "uint64",
                    Value::Array(_) => "[]interface {}",
                    _ => "map[interface {}]interface {}",
                }
            ))
        }
    })
}

const TAG_PREFIX: &str = "tag:yaml.org,2002:";

/// go-yaml v2's `resolve` of one scalar, then what encoding/json keeps of it.
fn resolve(tag: Option<&str>, text: &str, plain: bool) -> Result<Value, String> {
    let short = tag.map(|t| match t.strip_prefix(TAG_PREFIX) {
        Some(rest) => format!("!!{rest}"),
        None => t.to_string(),
    });
    let short = short.as_deref().unwrap_or("");
    // A quoted or block scalar without a tag is a string; so is any value under a tag go-yaml
    // does not resolve (`!!str`, `!!binary`, a local `!tag`).
    let resolvable = matches!(
        short,
        "" | "!!bool" | "!!int" | "!!float" | "!!null" | "!!timestamp"
    );
    if !resolvable || (short.is_empty() && !plain) {
        return Ok(Value::String(text.to_string()));
    }
    let (kind, value) = implicit(text);
    if kind == "!!float" && value.is_null() {
        // .inf/.nan: go-yaml reads them; encoding/json cannot write them.
        return Err(format!(
            "error converting YAML to JSON: json: unsupported value: {text}"
        ));
    }
    let fits = match short {
        "" => true,
        "!!float" if kind == "!!int" => {
            return Ok(Value::from(value.as_f64().unwrap_or(0.0)));
        }
        "!!timestamp" => kind == "!!timestamp",
        other => other == kind,
    };
    if !fits {
        return Err(format!("yaml: cannot decode {kind} `{text}` as a {short}"));
    }
    Ok(value)
}

/// The untagged resolution: (tag, value). Timestamps stay strings (go-yaml v2 keeps them so
/// for `interface{}`).
fn implicit(text: &str) -> (&'static str, Value) {
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return ("!!bool", Value::Bool(true))
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return ("!!bool", Value::Bool(false))
        }
        "" | "~" | "null" | "Null" | "NULL" => return ("!!null", Value::Null),
        ".nan" | ".NaN" | ".NAN" => return ("!!float", float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return ("!!float", float(f64::INFINITY))
        }
        "-.inf" | "-.Inf" | "-.INF" => return ("!!float", float(f64::NEG_INFINITY)),
        _ => {}
    }
    let string = ("!!str", Value::String(text.to_string()));
    match text.as_bytes()[0] {
        // Go's ParseFloat fails on a number past float64's range (`1e400`), which go-yaml
        // then reads as a string; Rust's parse gives infinity.
        b'.' => match text.parse::<f64>() {
            Ok(f) if go_float_syntax(text) && f.is_finite() => ("!!float", float(f)),
            _ => string,
        },
        b'+' | b'-' | b'0'..=b'9' => {
            if is_timestamp(text) {
                return ("!!timestamp", Value::String(text.to_string()));
            }
            let plain = text.replace('_', "");
            if let Some(i) = go_parse_int(&plain) {
                return ("!!int", Value::from(i));
            }
            if let Some(u) = go_parse_uint(&plain) {
                return ("!!int", Value::from(u));
            }
            if is_yaml_float(&plain) {
                if let Some(f) = plain.parse::<f64>().ok().filter(|f| f.is_finite()) {
                    return ("!!float", float(f));
                }
            }
            if let Some(bits) = plain.strip_prefix("-0b") {
                if let Ok(i) = i64::from_str_radix(&format!("-{bits}"), 2) {
                    return ("!!int", Value::from(i));
                }
            }
            string
        }
        _ => string,
    }
}

/// A JSON number for `f`; null for .inf and .nan, which `resolve` refuses.
fn float(f: f64) -> Value {
    serde_json::Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// strconv.ParseFloat's syntax for a text starting with `.` (what Rust's parse would take
/// too, minus Rust-only spellings).
fn go_float_syntax(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_float(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((whole, frac)) => digits(whole) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    let exp_ok = exp.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exp_ok
}

/// Go's `strconv.ParseInt(s, 0, 64)`: sign, then `0x`/`0o`/`0b` or a leading `0` (octal) or
/// decimal.
fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = go_parse_uint(body)?;
    if neg {
        if magnitude <= i64::MAX as u64 + 1 {
            Some((magnitude as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)` (no sign).
pub fn go_parse_uint(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let (digits, radix) = if let Some(h) = lower.strip_prefix("0x") {
        (h, 16)
    } else if let Some(o) = lower.strip_prefix("0o") {
        (o, 8)
    } else if let Some(b) = lower.strip_prefix("0b") {
        (b, 2)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (&lower[1..], 8)
    } else {
        (lower.as_str(), 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// go-yaml v2's `parseTimestamp`: `YYYY-M-D`, optionally with a time (`T`, `t` or a space)
/// and, after `T`/`t`, a zone.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let rest = &s[5..];
    let (date, time, sep) = match rest.find(['T', 't', ' ']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..]), rest.as_bytes()[i]),
        None => (rest, None, 0),
    };
    let one_or_two = |t: &str| (1..=2).contains(&t.len()) && t.bytes().all(|c| c.is_ascii_digit());
    let Some((month, day)) = date.split_once('-') else {
        return false;
    };
    let in_range =
        |t: &str, lo: u32, hi: u32| t.parse::<u32>().is_ok_and(|v| (lo..=hi).contains(&v));
    if !one_or_two(month) || !one_or_two(day) || !in_range(month, 1, 12) || !in_range(day, 1, 31) {
        return false;
    }
    let Some(time) = time else {
        return true;
    };
    // After a space, no zone; after T, a `Z` or `±hh:mm` zone is required.
    let (clock, zone) = if sep == b' ' {
        (time, None)
    } else {
        match time.find(['Z', '+', '-']) {
            Some(i) => (&time[..i], Some(&time[i..])),
            None => return false,
        }
    };
    let (hms, frac) = match clock.split_once('.') {
        Some((h, f)) => (h, Some(f)),
        None => (clock, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    let clock_ok = parts.len() == 3
        && parts.iter().all(|p| one_or_two(p))
        && in_range(parts[0], 0, 23)
        && in_range(parts[1], 0, 59)
        && in_range(parts[2], 0, 59)
        && frac
            .is_none_or(|f| !f.is_empty() && f.len() <= 9 && f.bytes().all(|c| c.is_ascii_digit()));
    let zone_ok = match zone {
        None | Some("Z") => true,
        Some(z) => {
            let z = &z[1..];
            z.len() == 5
                && z.as_bytes()[2] == b':'
                && in_range(&z[..2], 0, 23)
                && in_range(&z[3..], 0, 59)
        }
    };
    clock_ok && zone_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(text: &str) -> Value {
        parse_helm_yaml(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn yaml_1_1_scalars_as_go_yaml_v2_resolves_them() {
        assert_eq!(
            read("a: yes\nb: on\nc: No\nd: OFF\ne: y\nf: 'yes'\ng: \"on\"\nh: True\ni: ~\nj:\n"),
            json!({"a": true, "b": true, "c": false, "d": false, "e": true, "f": "yes",
                   "g": "on", "h": true, "i": null, "j": null})
        );
        assert_eq!(
            read("mode: 0644\nhex: 0x1F\nbig: 1_000\nneg: -012\nbad: 08\nf: 1.5\ne: 1e3\nv: 1.2.3\nt: 2024-01-02\nq: '0644'\nplus: +7\nbin: 0b101\noct: 0o17\n"),
            json!({"mode": 420, "hex": 31, "big": 1000, "neg": -10, "bad": 8.0, "f": 1.5,
                   "e": 1000.0, "v": "1.2.3", "t": "2024-01-02", "q": "0644", "plus": 7,
                   "bin": 5, "oct": 15})
        );
        assert_eq!(
            read("u: 18446744073709551615\n")["u"],
            json!(18446744073709551615u64)
        );
        assert_eq!(read("s: .5\nd: .\n"), json!({"s": 0.5, "d": "."}));
        // Past float64's range Go's ParseFloat fails, and go-yaml keeps the text; below it
        // the number is 0.
        assert_eq!(
            read("big: 1e400\nneg: -1e400\ndot: .5e999\ntiny: 1e-400\n"),
            json!({"big": "1e400", "neg": "-1e400", "dot": ".5e999", "tiny": 0.0})
        );
    }

    #[test]
    fn tags_keys_merges_and_documents() {
        assert_eq!(
            read("a: !!str 12\nb: !!float 3\nc: !custom yes\nd: !!int \"7\"\n"),
            json!({"a": "12", "b": 3.0, "c": "yes", "d": 7})
        );
        assert!(parse_helm_yaml("a: !!int abc\n").is_err());
        assert_eq!(
            read("on: 1\n2: b\ntrue: c\n"),
            json!({"true": "c", "2": "b"}),
            "keys become strings; `on` is the key true, replaced by the later `true`"
        );
        assert_eq!(
            read("base: &b {x: 1, z: 2}\nm:\n  x: 0\n  <<: *b\n  z: 3\nl:\n  <<: [{k: 1}, {k: 2, j: 2}]\n"),
            json!({"base": {"x": 1, "z": 2}, "m": {"x": 1, "z": 3}, "l": {"k": 1, "j": 2}})
        );
        // YAML 1.1's `y` is a bool, as a key too.
        assert_eq!(read("{x: 1, y: 2}"), json!({"x": 1, "true": 2}));
        assert_eq!(
            read("a: 1\n---\nb: 2\n"),
            json!({"a": 1}),
            "first document only"
        );
        assert_eq!(read("# nothing\n"), Value::Null);
        assert_eq!(read("dup: 1\ndup: 2\n"), json!({"dup": 2}));
        let err = parse_helm_yaml("a: b: c\n").unwrap_err();
        assert!(err.starts_with("yaml: line 1:"), "{err}");
        assert!(
            parse_helm_yaml("a: .inf\n").is_err(),
            "JSON has no infinity"
        );
        assert!(parse_helm_yaml("a: *missing\n").is_err());
    }

    #[test]
    fn nested_aliases_are_bounded() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..8 {
            let prev = format!("*a{}", i - 1);
            text.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
        }
        assert!(parse_helm_yaml(&text).unwrap_err().contains("alias bomb"));
    }

    #[test]
    fn one_large_anchor_aliased_many_times_is_bounded() {
        let mut text = format!("a: &a \"{}\"\nl:\n", "x".repeat(1 << 20));
        for _ in 0..2000 {
            text.push_str("- *a\n");
        }
        assert!(parse_helm_yaml(&text).unwrap_err().contains("alias bomb"));
    }

    #[test]
    fn deep_nesting_is_refused_block_or_flow() {
        let flow = "[".repeat(100_000);
        assert!(parse_helm_yaml(&flow)
            .unwrap_err()
            .contains("nested more than"));
        let mut block = String::new();
        for i in 0..200 {
            block.push_str(&format!("{}k:\n", "  ".repeat(i)));
        }
        assert!(parse_helm_yaml(&block)
            .unwrap_err()
            .contains("nested more than"));
        let ok = "a:\n  b:\n    c: [1, [2, {d: 3}]]\n";
        assert!(parse_helm_yaml(ok).is_ok());
    }
}
