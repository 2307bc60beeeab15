//! Go's encoding/json as Helm and Sprig call it: `toJson` (HTML-safe escapes),
//! `toRawJson` (no HTML escapes), `toPrettyJson` (`MarshalIndent` with two spaces), the
//! `must` variants, `fromJsonArray`.

use super::conv::want_str;
use crate::helm::template::builtins::exact;
use crate::helm::template::{CallError, Engine, Value};

pub fn register(engine: &mut Engine) {
    for name in ["toJson", "mustToJson"] {
        engine.register(name, |_, args| {
            let [v] = exact::<1>(args, "toJson")?;
            Ok(Value::str(go_json(&v)))
        });
    }
    for name in ["toRawJson", "mustToRawJson"] {
        engine.register(name, |_, args| {
            let [v] = exact::<1>(args, "toRawJson")?;
            Ok(Value::str(encode(&v, false, false)))
        });
    }
    for name in ["toPrettyJson", "mustToPrettyJson"] {
        engine.register(name, |_, args| {
            let [v] = exact::<1>(args, "toPrettyJson")?;
            Ok(Value::str(encode(&v, true, true)))
        });
    }
    engine.register("fromJsonArray", |_, args| {
        let [text] = exact::<1>(args, "fromJsonArray")?;
        Ok(
            match serde_json::from_str::<serde_json::Value>(want_str(&text)?) {
                Ok(json @ serde_json::Value::Array(_)) => Value::from_json_values(&json),
                Ok(_) => Value::list(vec![Value::str(
                    "json: cannot unmarshal object into Go value of type []interface {}",
                )]),
                Err(e) => Value::list(vec![Value::str(e.to_string())]),
            },
        )
    });
    engine.register("mustFromJson", |_, args| {
        let [text] = exact::<1>(args, "mustFromJson")?;
        match serde_json::from_str::<serde_json::Value>(want_str(&text)?) {
            Ok(json) => Ok(Value::from_json_values(&json)),
            Err(e) => Err(CallError::Message(e.to_string())),
        }
    });
}

/// Go's encoding/json text: sorted keys, HTML-safe escapes, floats without needless
/// exponents.
pub fn go_json(v: &Value) -> String {
    encode(v, true, false)
}

fn encode(v: &Value, escape_html: bool, pretty: bool) -> String {
    let mut out = String::new();
    write_json(&mut out, v, escape_html, pretty.then_some(0));
    out
}

fn newline(out: &mut String, depth: Option<usize>) {
    if let Some(d) = depth {
        out.push('\n');
        out.push_str(&"  ".repeat(d));
    }
}

fn write_json(out: &mut String, v: &Value, html: bool, depth: Option<usize>) {
    let inner = depth.map(|d| d + 1);
    match v {
        Value::Nil => out.push_str("null"),
        Value::Struct(s) => write_json(out, &Value::from_json(&s.json, false), html, depth),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i, _) => out.push_str(&i.to_string()),
        Value::Float(f) => write_float(out, *f),
        Value::Str(s) => json_string(out, s, html),
        Value::List(l) if l.is_empty() => out.push_str("[]"),
        Value::List(l) => {
            out.push('[');
            for (i, item) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, inner);
                write_json(out, item, html, inner);
            }
            newline(out, depth);
            out.push(']');
        }
        Value::Map(m) if m.borrow().is_empty() => out.push_str("{}"),
        Value::Map(m) => {
            out.push('{');
            for (i, (k, item)) in m.borrow().iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, inner);
                json_string(out, k, html);
                out.push(':');
                if depth.is_some() {
                    out.push(' ');
                }
                write_json(out, item, html, inner);
            }
            newline(out, depth);
            out.push('}');
        }
    }
}

fn write_float(out: &mut String, f: f64) {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        let (m, e) = text.split_once('e').unwrap_or((&text, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        out.push_str(&format!(
            "{m}e{}{:02}",
            if e < 0 { '-' } else { '+' },
            e.abs()
        ));
        if let Some(pos) = out.rfind("e-0") {
            out.replace_range(pos..pos + 3, "e-");
        } else if let Some(pos) = out.rfind("e+0") {
            out.replace_range(pos..pos + 3, "e+");
        }
    } else {
        out.push_str(&format!("{f}"));
    }
}

fn json_string(out: &mut String, s: &str, html: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Go 1.22 and later write these two short forms.
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' if html => out.push_str(&format!("\\u{:04x}", c as u32)),
            '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}
