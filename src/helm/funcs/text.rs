//! Sprig's string functions beyond the basics (`substr`, `repeat`, `cat`, `abbrev`,
//! `camelcase`, `snakecase`, `b32enc`, `adler32sum`, `regexFindAll`, `regexSplit`, paths,
//! ...) and Go's `html`/`js`, with the semantics of Sprig, goutils, xstrings and Go.

use super::conv::{want_bytes, want_int, want_str};
use super::lists::numbered;
use crate::helm::template::builtins::exact;
use crate::helm::template::{gofmt, CallError, Engine, Value};

fn s(text: impl Into<std::rc::Rc<str>>) -> Result<Value, CallError> {
    Ok(Value::Str(text.into()))
}

/// A byte range of `text`, or Go's slice-bounds error (Sprig slices bytes).
fn bytes(text: &str, from: usize, to: usize) -> Result<&str, CallError> {
    text.get(from..to).ok_or_else(|| {
        format!(
            "runtime error: slice bounds out of range [{from}:{to}] with length {}",
            text.len()
        )
        .into()
    })
}

/// goutils' `WrapCustom` (Sprig's `wrap` and `wrapWith`): breaks `text` at the last space
/// within `width` bytes, dropping the space and spaces that would start a line; a word longer
/// than `width` is cut (`cut_long_words`) or left whole up to its next space.
fn wrap_custom(text: &str, width: i64, separator: &str, cut_long_words: bool) -> String {
    if text.is_empty() {
        return String::new();
    }
    let separator = if separator.is_empty() {
        "\n"
    } else {
        separator
    }
    .as_bytes();
    let width = width.max(1) as usize;
    let bytes = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + 16);
    let mut offset = 0;
    while bytes.len() - offset > width {
        if bytes[offset] == b' ' {
            offset += 1;
            continue;
        }
        let window = &bytes[offset..offset + width + 1];
        if let Some(space) = window.iter().rposition(|b| *b == b' ') {
            out.extend_from_slice(&bytes[offset..offset + space]);
            out.extend_from_slice(separator);
            offset += space + 1;
        } else if cut_long_words {
            out.extend_from_slice(&bytes[offset..offset + width]);
            out.extend_from_slice(separator);
            offset += width;
        } else {
            let end = offset + width;
            match bytes[end..].iter().position(|b| *b == b' ') {
                None => {
                    out.extend_from_slice(&bytes[offset..]);
                    offset = bytes.len();
                }
                Some(i) => {
                    out.extend_from_slice(&bytes[offset..end + i]);
                    out.extend_from_slice(separator);
                    offset = end + i + 1;
                }
            }
        }
    }
    out.extend_from_slice(&bytes[offset..]);
    // Go cuts bytes; a cut through a character is shown as Go's template would print it.
    String::from_utf8_lossy(&out).into_owned()
}

pub fn register(engine: &mut Engine) {
    engine.register("substr", |_, args| {
        let [start, end, v] = exact::<3>(args, "substr")?;
        let (start, end, text) = (want_int(&start)?, want_int(&end)?, want_str(&v)?);
        let len = text.len() as i64;
        if start < 0 {
            return s(bytes(text, 0, end.max(0) as usize)?);
        }
        if end < 0 || end > len {
            return s(bytes(text, start as usize, text.len())?);
        }
        s(bytes(text, start as usize, end.max(start) as usize)?)
    });
    engine.register("wrap", |_, args| {
        let [n, v] = exact::<2>(args, "wrap")?;
        s(wrap_custom(want_str(&v)?, want_int(&n)?, "", false))
    });
    engine.register("wrapWith", |exec, args| {
        let [n, sep, v] = exact::<3>(args, "wrapWith")?;
        let (n, sep, text) = (want_int(&n)?, want_str(&sep)?, want_str(&v)?);
        // Every break may insert the separator: bounded before it is built.
        let breaks = text.len() as u64 / n.max(1) as u64 + 1;
        super::strings::pay(exec, breaks.saturating_mul(sep.len() as u64))?;
        s(wrap_custom(text, n, sep, true))
    });
    engine.register("repeat", |exec, args| {
        let [n, v] = exact::<2>(args, "repeat")?;
        let n = want_int(&n)?;
        if n < 0 {
            return Err("strings: negative Repeat count".into());
        }
        let text = want_str(&v)?;
        super::strings::pay(exec, (n as u64).saturating_mul(text.len() as u64))?;
        s(text.repeat(n as usize))
    });
    engine.register("trimall", |_, args| {
        let [cut, v] = exact::<2>(args, "trimall")?;
        let cut = want_str(&cut)?.to_string();
        s(want_str(&v)?.trim_matches(|c| cut.contains(c)))
    });
    engine.register("nospace", |_, args| {
        let [v] = exact::<1>(args, "nospace")?;
        s(want_str(&v)?
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>())
    });
    engine.register("abbrev", |_, args| {
        let [width, v] = exact::<2>(args, "abbrev")?;
        let (width, text) = (want_int(&width)?, want_str(&v)?);
        if width < 4 {
            return s(text);
        }
        s(abbreviate(text, 0, width as usize))
    });
    engine.register("abbrevboth", |_, args| {
        let [left, right, v] = exact::<3>(args, "abbrevboth")?;
        let (left, right, text) = (want_int(&left)?, want_int(&right)?, want_str(&v)?);
        if right < 4 || left > 0 && right < 7 {
            return s(text);
        }
        s(abbreviate(text, left.max(0) as usize, right as usize))
    });
    engine.register("initials", |_, args| {
        let [v] = exact::<1>(args, "initials")?;
        s(want_str(&v)?
            .split_whitespace()
            .filter_map(|w| w.chars().next())
            .collect::<String>())
    });
    engine.register("untitle", |_, args| {
        let [v] = exact::<1>(args, "untitle")?;
        s(map_word_starts(want_str(&v)?, |c| {
            c.to_lowercase().collect()
        }))
    });
    engine.register("swapcase", |_, args| {
        let [v] = exact::<1>(args, "swapcase")?;
        s(want_str(&v)?
            .chars()
            .map(|c| {
                if c.is_uppercase() {
                    c.to_lowercase().collect::<String>()
                } else if c.is_lowercase() {
                    c.to_uppercase().collect()
                } else {
                    c.to_string()
                }
            })
            .collect::<String>())
    });
    engine.register("camelcase", |_, args| {
        let [v] = exact::<1>(args, "camelcase")?;
        s(camel_case(want_str(&v)?))
    });
    engine.register("snakecase", |_, args| {
        let [v] = exact::<1>(args, "snakecase")?;
        s(lower_words(want_str(&v)?, '_'))
    });
    engine.register("kebabcase", |_, args| {
        let [v] = exact::<1>(args, "kebabcase")?;
        s(lower_words(want_str(&v)?, '-'))
    });
    engine.register("cat", |exec, args| {
        let parts: Vec<String> = args
            .iter()
            .filter(|a| !matches!(a, Value::Nil))
            .map(gofmt::display)
            .collect();
        super::strings::pay(exec, parts.iter().map(|p| p.len() as u64 + 1).sum())?;
        s(parts.join(" "))
    });
    engine.register("plural", |_, args| {
        let [one, many, n] = exact::<3>(args, "plural")?;
        Ok(if want_int(&n)? == 1 { one } else { many })
    });
    engine.register("adler32sum", |_, args| {
        let [v] = exact::<1>(args, "adler32sum")?;
        let (mut a, mut b) = (1u32, 0u32);
        for &byte in want_bytes(&v)?.iter() {
            a = (a + u32::from(byte)) % 65521;
            b = (b + a) % 65521;
        }
        s(((b << 16) | a).to_string())
    });
    engine.register("b32enc", |_, args| {
        let [v] = exact::<1>(args, "b32enc")?;
        s(base32_encode(&want_bytes(&v)?))
    });
    engine.register("b32dec", |_, args| {
        let [v] = exact::<1>(args, "b32dec")?;
        // Sprig's base32decode: the error's text in place of the value.
        s(
            match super::gobase64::decode_base32(want_str(&v)?.as_bytes()) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) => e,
            },
        )
    });
    engine.register("splitn", |_, args| {
        let [sep, n, v] = exact::<3>(args, "splitn")?;
        let (sep, n, text) = (want_str(&sep)?, want_int(&n)?, want_str(&v)?);
        Ok(match n {
            0 => Value::empty_map(),
            n if n < 0 => numbered(text.split(sep).collect()),
            n => numbered(text.splitn(n as usize, sep).collect()),
        })
    });
    engine.register("toDecimal", |_, args| {
        let [v] = exact::<1>(args, "toDecimal")?;
        Ok(Value::int64(
            i64::from_str_radix(&gofmt::display(&v), 8).unwrap_or(0),
        ))
    });
    for name in ["regexFindAll", "mustRegexFindAll"] {
        engine.register(name, |_, args| {
            let [re, v, n] = exact::<3>(args, "regexFindAll")?;
            let (re, text, n) = (regex(&re)?, want_str(&v)?, want_int(&n)?);
            let found = re.find_iter(text).map(|m| Value::from(m.as_str()));
            Ok(Value::list(limit(found, n)))
        });
    }
    for name in ["regexSplit", "mustRegexSplit"] {
        engine.register(name, |_, args| {
            let [re, v, n] = exact::<3>(args, "regexSplit")?;
            let (re, text, n) = (regex(&re)?, want_str(&v)?, want_int(&n)?);
            Ok(Value::list(match n {
                0 => Vec::new(),
                n if n < 0 => re.split(text).map(Value::from).collect(),
                n => re.splitn(text, n as usize).map(Value::from).collect(),
            }))
        });
    }
    for name in ["regexReplaceAllLiteral", "mustRegexReplaceAllLiteral"] {
        engine.register(name, |exec, args| {
            let [re, v, repl] = exact::<3>(args, "regexReplaceAllLiteral")?;
            super::strings::regex_replace_all(exec, &re, &v, &repl, false)
        });
    }
    engine.register("mustRegexMatch", |_, args| {
        let [re, v] = exact::<2>(args, "mustRegexMatch")?;
        Ok(Value::Bool(regex(&re)?.is_match(want_str(&v)?)))
    });
    engine.register("mustRegexFind", |_, args| {
        let [re, v] = exact::<2>(args, "mustRegexFind")?;
        s(regex(&re)?.find(want_str(&v)?).map_or("", |m| m.as_str()))
    });
    engine.register("mustRegexReplaceAll", |exec, args| {
        let [re, v, repl] = exact::<3>(args, "mustRegexReplaceAll")?;
        super::strings::regex_replace_all(exec, &re, &v, &repl, true)
    });
    engine.register("regexQuoteMeta", |_, args| {
        let [v] = exact::<1>(args, "regexQuoteMeta")?;
        let mut out = String::new();
        for c in want_str(&v)?.chars() {
            if r"\.+*?()|[]{}^$".contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
        s(out)
    });
    for name in ["base", "osBase"] {
        engine.register(name, |_, args| {
            let [v] = exact::<1>(args, "base")?;
            s(path_base(want_str(&v)?))
        });
    }
    for name in ["dir", "osDir"] {
        engine.register(name, |_, args| {
            let [v] = exact::<1>(args, "dir")?;
            let p = want_str(&v)?;
            let cut = p.rfind('/').map_or(0, |i| i + 1);
            s(path_clean(&p[..cut]))
        });
    }
    for name in ["clean", "osClean"] {
        engine.register(name, |_, args| {
            let [v] = exact::<1>(args, "clean")?;
            s(path_clean(want_str(&v)?))
        });
    }
    for name in ["ext", "osExt"] {
        engine.register(name, |_, args| {
            let [v] = exact::<1>(args, "ext")?;
            let p = want_str(&v)?;
            let name_start = p.rfind('/').map_or(0, |i| i + 1);
            s(p[name_start..]
                .rfind('.')
                .map_or("", |i| &p[name_start + i..]))
        });
    }
    for name in ["isAbs", "osIsAbs"] {
        engine.register(name, |_, args| {
            let [v] = exact::<1>(args, "isAbs")?;
            Ok(Value::Bool(want_str(&v)?.starts_with('/')))
        });
    }
    engine.register("html", |_, args| s(html_escape(&gofmt::sprint(&args))));
    engine.register("js", |_, args| s(js_escape(&gofmt::sprint(&args))));
    engine.register("getHostByName", |_, args| {
        // No network while rendering: like a failed lookup (Sprig returns "").
        let [_name] = exact::<1>(args, "getHostByName")?;
        s("")
    });
}

/// Go's `regexp.Compile` of the pattern (see [`super::goregex`]).
fn regex(v: &Value) -> Result<regex::Regex, CallError> {
    super::goregex::compile(want_str(v)?).map_err(|e| CallError::Message(e.to_string()))
}

/// Go's `n` argument of `FindAllString`: negative means all.
fn limit(items: impl Iterator<Item = Value>, n: i64) -> Vec<Value> {
    if n < 0 {
        items.collect()
    } else {
        items.take(n as usize).collect()
    }
}

/// goutils.AbbreviateFull (byte offsets, as Go slices strings).
fn abbreviate(text: &str, offset: usize, width: usize) -> String {
    let len = text.len();
    if text.is_empty() || width < 4 || len <= width {
        return text.to_string();
    }
    let mut offset = offset.min(len);
    if len - offset < width - 3 {
        offset = len - (width - 3);
    }
    let cut = |from: usize, to: usize| text.get(from..to).unwrap_or(text).to_string();
    if offset <= 4 {
        return format!("{}...", cut(0, width - 3));
    }
    if width < 7 {
        return String::new();
    }
    if offset + width - 3 < len {
        return format!("...{}", abbreviate(&cut(offset, len), 0, width - 3));
    }
    format!("...{}", cut(len - (width - 3), len))
}

/// Applies `f` to the first letter of each whitespace-separated word (goutils'
/// Uncapitalize, which Sprig's `untitle` is).
fn map_word_starts(text: &str, f: impl Fn(char) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut start = true;
    for c in text.chars() {
        if start && !c.is_whitespace() {
            out.push_str(&f(c));
        } else {
            out.push(c);
        }
        start = c.is_whitespace();
    }
    out
}

fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || c.is_whitespace()
}

/// xstrings.ToCamelCase: connectors (`-`, `_`, spaces) dropped and the next rune upper-cased;
/// the first rune upper-cased; leading connectors and doubled ones kept.
fn camel_case(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    let mut r0 = None;
    for c in chars.by_ref() {
        if !is_connector(c) {
            r0 = Some(c.to_uppercase().next().unwrap_or(c));
            break;
        }
        out.push(c);
    }
    let Some(mut r0) = r0 else {
        return out;
    };
    for c in chars {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            r0 = r0.to_uppercase().next().unwrap_or(r0);
        } else {
            out.push(r1);
        }
    }
    out.push(r0);
    out
}

/// snake_case / kebab-case as xstrings gives them for the usual inputs: words split at
/// connectors and at lower-to-upper changes (an acronym ends before its last capital when
/// a lower-case letter follows), lower-cased and joined with `connector`.
fn lower_words(text: &str, connector: char) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if is_connector(c) {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            continue;
        }
        if c.is_uppercase() && !word.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                words.push(std::mem::take(&mut word));
            }
        }
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words.join(&connector.to_string())
}

const B32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// Go's `base32.StdEncoding`, padded (Sprig's `b32enc`).
pub fn base32_encode(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let bits = buf.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                out.push(B32[((bits >> (35 - i * 5)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// Go's `path.Clean`.
pub fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// Go's `template.HTMLEscapeString`.
fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Go's `template.JSEscapeString`.
fn js_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
