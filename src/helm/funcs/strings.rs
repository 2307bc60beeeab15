//! Sprig's string functions, type conversions, encodings, hashes, regular expressions and
//! semver comparison.

use super::conv::{string_list, strval, to_float, to_int, want_bytes, want_int, want_str};
use crate::helm::template::builtins::exact;
use crate::helm::template::{gofmt, CallError, Engine, Exec, IntType, Value};
use base64::Engine as _;
use sha2::Digest;

fn s(text: impl Into<std::rc::Rc<str>>) -> Result<Value, CallError> {
    Ok(Value::Str(text.into()))
}

/// Registers a function of one string argument.
macro_rules! unary {
    ($engine:ident, $name:literal, |$x:ident| $body:expr) => {
        $engine.register($name, |_, args| {
            let [v] = exact::<1>(args, $name)?;
            let $x = want_str(&v)?;
            s($body)
        });
    };
}

/// Registers a function of two string arguments.
macro_rules! binary {
    ($engine:ident, $name:literal, |$a:ident, $b:ident| $body:expr) => {
        $engine.register($name, |_, args| {
            let [a, b] = exact::<2>(args, $name)?;
            let ($a, $b) = (want_str(&a)?, want_str(&b)?);
            Ok(Value::from($body))
        });
    };
}

pub fn register(engine: &mut Engine) {
    unary!(engine, "upper", |x| x.to_uppercase());
    unary!(engine, "lower", |x| x.to_lowercase());
    unary!(engine, "trim", |x| x.trim());
    unary!(engine, "title", |x| title(x));
    // These take a string's bytes, which may be a chart file's that are not UTF-8 text.
    engine.register("b64enc", |_, args| {
        let [v] = exact::<1>(args, "b64enc")?;
        s(base64::engine::general_purpose::STANDARD.encode(want_bytes(&v)?))
    });
    engine.register("sha256sum", |_, args| {
        let [v] = exact::<1>(args, "sha256sum")?;
        s(hex::encode(sha2::Sha256::digest(want_bytes(&v)?)))
    });
    engine.register("sha1sum", |_, args| {
        let [v] = exact::<1>(args, "sha1sum")?;
        s(hex::encode(sha1::Sha1::digest(want_bytes(&v)?)))
    });
    engine.register("b64dec", |_, args| {
        let [v] = exact::<1>(args, "b64dec")?;
        // Sprig's base64decode: the error's text in place of the value.
        match super::gobase64::decode(want_str(&v)?.as_bytes()) {
            Ok(bytes) => s(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) => s(e),
        }
    });
    binary!(engine, "trimSuffix", |suffix, x| x
        .strip_suffix(suffix)
        .unwrap_or(x));
    binary!(engine, "trimPrefix", |prefix, x| x
        .strip_prefix(prefix)
        .unwrap_or(x));
    binary!(engine, "trimAll", |cut, x| x
        .trim_matches(|c| cut.contains(c)));
    binary!(engine, "contains", |sub, x| x.contains(sub));
    binary!(engine, "hasPrefix", |prefix, x| x.starts_with(prefix));
    binary!(engine, "hasSuffix", |suffix, x| x.ends_with(suffix));
    engine.register("replace", |exec, args| {
        let [old, new, src] = exact::<3>(args, "replace")?;
        let (old, new, src) = (want_str(&old)?, want_str(&new)?, want_str(&src)?);
        // Paid for before it is made: an empty `old` matches between every character.
        let matches = if old.is_empty() {
            src.chars().count() + 1
        } else {
            src.matches(old).count()
        };
        pay(exec, src.len() as u64 + matches as u64 * new.len() as u64)?;
        s(src.replace(old, new))
    });
    engine.register("trunc", |_, args| {
        let [n, v] = exact::<2>(args, "trunc")?;
        let (n, text) = (want_int(&n)?, want_str(&v)?);
        let len = text.len() as i64;
        let cut = if n < 0 && len + n > 0 {
            text.get((len + n) as usize..)
        } else if n >= 0 && len > n {
            text.get(..n as usize)
        } else {
            Some(text)
        };
        s(cut.unwrap_or(text))
    });
    engine.register("indent", |exec, args| {
        let [n, v] = exact::<2>(args, "indent")?;
        s(indent(exec, want_int(&n)?, want_str(&v)?)?)
    });
    engine.register("nindent", |exec, args| {
        let [n, v] = exact::<2>(args, "nindent")?;
        s(format!("\n{}", indent(exec, want_int(&n)?, want_str(&v)?)?))
    });
    engine.register("quote", |_, args| {
        let quoted: Vec<String> = args
            .iter()
            .filter(|a| !matches!(a, Value::Nil))
            .map(|a| gofmt::quote(&strval(a)))
            .collect();
        s(quoted.join(" "))
    });
    engine.register("squote", |_, args| {
        let quoted: Vec<String> = args
            .iter()
            .filter(|a| !matches!(a, Value::Nil))
            .map(|a| format!("'{}'", strval(a)))
            .collect();
        s(quoted.join(" "))
    });
    engine.register("toString", |_, args| {
        let [v] = exact::<1>(args, "toString")?;
        s(strval(&v))
    });
    engine.register("int", |_, args| {
        Ok(Value::int(to_int(&exact::<1>(args, "int")?[0])))
    });
    engine.register("int64", |_, args| {
        Ok(Value::int64(to_int(&exact::<1>(args, "int64")?[0])))
    });
    engine.register("float64", |_, args| {
        Ok(Value::Float(to_float(&exact::<1>(args, "float64")?[0])))
    });
    engine.register("atoi", |_, args| {
        let [v] = exact::<1>(args, "atoi")?;
        Ok(Value::int(want_str(&v)?.parse().unwrap_or(0)))
    });
    engine.register("join", |exec, args| {
        let [sep, v] = exact::<2>(args, "join")?;
        let (parts, sep) = (string_list(&v), want_str(&sep)?);
        let len: usize = parts.iter().map(|p| p.len() + sep.len()).sum();
        pay(exec, len as u64)?;
        s(parts.join(sep))
    });
    engine.register("splitList", |_, args| {
        let [sep, v] = exact::<2>(args, "splitList")?;
        let parts = want_str(&v)?
            .split(want_str(&sep)?)
            .map(Value::from)
            .collect();
        Ok(Value::list(parts))
    });
    engine.register("split", |_, args| {
        let [sep, v] = exact::<2>(args, "split")?;
        let parts = want_str(&v)?
            .split(want_str(&sep)?)
            .enumerate()
            .map(|(i, p)| (format!("_{i}"), Value::from(p)))
            .collect();
        Ok(Value::map(parts))
    });
    engine.register("regexMatch", |_, args| {
        let [re, v] = exact::<2>(args, "regexMatch")?;
        // Sprig ignores Go's parse error here (false); what tend cannot run is an error.
        let text = want_str(&v)?;
        match super::goregex::compile(want_str(&re)?) {
            Ok(re) => Ok(Value::Bool(re.is_match(text))),
            Err(super::goregex::RegexError::Go(_)) => Ok(Value::Bool(false)),
            Err(e) => Err(CallError::Message(e.to_string())),
        }
    });
    engine.register("regexReplaceAll", |exec, args| {
        let [re, v, repl] = exact::<3>(args, "regexReplaceAll")?;
        regex_replace_all(exec, &re, &v, &repl, true)
    });
    engine.register("regexFind", |_, args| {
        let [re, v] = exact::<2>(args, "regexFind")?;
        s(regex(&re)?.find(want_str(&v)?).map_or("", |m| m.as_str()))
    });
    engine.register("semver", |_, args| {
        let [v] = exact::<1>(args, "semver")?;
        semver(want_str(&v)?)
    });
    engine.register_method("LessThan", |_, args| {
        semver_method(args, |o| o == std::cmp::Ordering::Less)
    });
    engine.register_method("GreaterThan", |_, args| {
        semver_method(args, |o| o == std::cmp::Ordering::Greater)
    });
    engine.register_method("Equal", |_, args| {
        semver_method(args, |o| o == std::cmp::Ordering::Equal)
    });
    engine.register_method("Compare", |_, args| {
        let [a, b] = exact::<2>(args, "Compare")?;
        let order = semver_receiver_order(&a, &b)?;
        Ok(Value::int(order as i64))
    });
    engine.register("semverCompare", |_, args| {
        let [constraint, version] = exact::<2>(args, "semverCompare")?;
        Ok(Value::Bool(semver_compare(
            want_str(&constraint)?,
            want_str(&version)?,
        )?))
    });
}

/// Go's `regexp.Compile` of the pattern (see [`super::goregex`]).
fn regex(v: &Value) -> Result<regex::Regex, CallError> {
    super::goregex::compile(want_str(v)?).map_err(|e| CallError::Message(e.to_string()))
}

/// Spends `bytes` of the render's memory budget before a function makes them.
pub(super) fn pay(exec: &Exec, bytes: u64) -> Result<(), CallError> {
    exec.spend_bytes(bytes).map_err(CallError::Template)
}

fn indent(exec: &Exec, n: i64, text: &str) -> Result<String, CallError> {
    let n = n.max(0) as u64;
    let lines = text.matches('\n').count() as u64 + 1;
    pay(
        exec,
        (text.len() as u64).saturating_add(lines.saturating_mul(n)),
    )?;
    let pad = " ".repeat(n as usize);
    Ok(format!("{pad}{}", text.replace('\n', &format!("\n{pad}"))))
}

/// Go's `ReplaceAllString` (`$1` expanded) or `ReplaceAllLiteralString`, paid for first:
/// every match may expand each `$` of the replacement to the whole text.
pub(super) fn regex_replace_all(
    exec: &Exec,
    re: &Value,
    v: &Value,
    repl: &Value,
    expand: bool,
) -> Result<Value, CallError> {
    let (re, text, repl) = (regex(re)?, want_str(v)?, want_str(repl)?);
    let matches = re.find_iter(text).count() as u64;
    let per_match = if expand {
        (repl.len() as u64)
            .saturating_add((repl.matches('$').count() as u64).saturating_mul(text.len() as u64))
    } else {
        repl.len() as u64
    };
    pay(
        exec,
        (text.len() as u64).saturating_add(matches.saturating_mul(per_match)),
    )?;
    let out = if expand {
        re.replace_all(text, repl).into_owned()
    } else {
        re.replace_all(text, regex::NoExpand(repl)).into_owned()
    };
    s(out)
}

/// Go's `strings.Title`: a letter is upper-cased after a separator, which is any ASCII
/// character but letters, digits and `_`, or a non-ASCII space.
fn title(text: &str) -> String {
    let is_separator = |c: char| {
        if c.is_ascii() {
            !(c.is_ascii_alphanumeric() || c == '_')
        } else {
            !c.is_alphanumeric() && c.is_whitespace()
        }
    };
    let mut out = String::with_capacity(text.len());
    let mut prev = ' ';
    for c in text.chars() {
        if is_separator(prev) {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev = c;
    }
    out
}

/// The Go type `semver` returns.
const SEMVER_TYPE: &str = "*semver.Version";

/// Sprig's `semver`: Masterminds/semver v3's `NewVersion` (`v` prefix, missing minor and
/// patch 0, `-prerelease` and `+metadata` of dot-separated `[0-9A-Za-z-]` identifiers, no
/// leading zero in a numeric prerelease identifier), as a `*semver.Version` whose methods
/// `Major`, `Minor`, `Patch`, `Prerelease`, `Metadata`, `Original` and `String` templates
/// call (`LessThan`, `GreaterThan`, `Equal` and `Compare` take another version).
pub fn semver(text: &str) -> Result<Value, CallError> {
    let invalid = || CallError::Message("Invalid Semantic Version".into());
    let body = text.strip_prefix('v').unwrap_or(text);
    let (body, metadata) = match body.split_once('+') {
        Some((b, m)) => (b, m),
        None => (body, ""),
    };
    let (core, pre) = match body.split_once('-') {
        Some((c, p)) => (c, p),
        None => (body, ""),
    };
    let ident_ok = |part: &str| {
        !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    let dotted_ok = |text: &str, given: bool| !given || text.split('.').all(ident_ok);
    if !dotted_ok(pre, body.len() != core.len()) || !dotted_ok(metadata, text.contains('+')) {
        return Err(invalid());
    }
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(invalid());
    }
    let mut nums = [0u64; 3];
    for (i, p) in parts.iter().enumerate() {
        nums[i] = p
            .parse()
            .map_err(|e| CallError::Message(format!("Error parsing version segment: {e}")))?;
    }
    if pre
        .split('.')
        .any(|p| p.len() > 1 && p.starts_with('0') && p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err("Version segment starts with 0".into());
    }
    let mut string = format!("{}.{}.{}", nums[0], nums[1], nums[2]);
    if !pre.is_empty() {
        string.push('-');
        string.push_str(pre);
    }
    if !metadata.is_empty() {
        string.push('+');
        string.push_str(metadata);
    }
    let fields = [
        ("Major", Value::Int(nums[0] as i64, IntType::Uint64)),
        ("Minor", Value::Int(nums[1] as i64, IntType::Uint64)),
        ("Patch", Value::Int(nums[2] as i64, IntType::Uint64)),
        ("Prerelease", Value::str(pre)),
        ("Metadata", Value::str(metadata)),
        ("Original", Value::str(text)),
        ("String", Value::str(string.as_str())),
    ];
    Ok(Value::Struct(std::rc::Rc::new(
        crate::helm::template::value::Struct {
            type_name: SEMVER_TYPE,
            fields: fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            // MarshalJSON writes the version's String() as a JSON string.
            json: serde_json::Value::String(string.clone()),
            // `String` has a value receiver: used by actions and fmt alike.
            fmt: Some(string.clone()),
            text: Some(string),
        },
    )))
}

/// The order of two `*semver.Version`s (receiver first), as its `Compare` gives it.
fn semver_receiver_order(a: &Value, b: &Value) -> Result<std::cmp::Ordering, CallError> {
    let version = |v: &Value| match v {
        Value::Struct(st) if st.type_name == SEMVER_TYPE => {
            st.text.as_deref().and_then(parse_version).map(|p| p.0)
        }
        _ => None,
    };
    let (Some(x), Some(y)) = (version(a), version(b)) else {
        return Err(format!(
            "wrong type for value; expected {SEMVER_TYPE}; got {}",
            b.type_name()
        )
        .into());
    };
    Ok(cmp_versions(&x, &y))
}

fn semver_method(
    args: Vec<Value>,
    test: fn(std::cmp::Ordering) -> bool,
) -> Result<Value, CallError> {
    let [a, b] = exact::<2>(args, "semver method")?;
    Ok(Value::Bool(test(semver_receiver_order(&a, &b)?)))
}

/// A version as Masterminds/semver reads it (`v` prefix, missing parts 0).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    /// Empty for a release; compared so that a prerelease sorts before its release.
    pre: Vec<Pre>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Pre {
    Num(u64),
    Text(String),
}

fn parse_version(text: &str) -> Option<(Version, usize)> {
    let t = text.trim().trim_start_matches(['v', 'V']);
    let t = t.split('+').next().unwrap_or(t);
    let (core, pre) = match t.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (t, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let mut nums = [0u64; 3];
    for (i, p) in parts.iter().enumerate() {
        nums[i] = p.parse().ok()?;
    }
    let pre = pre
        .map(|p| {
            p.split('.')
                .map(|x| {
                    x.parse()
                        .map(Pre::Num)
                        .unwrap_or_else(|_| Pre::Text(x.into()))
                })
                .collect()
        })
        .unwrap_or_default();
    Some((
        Version {
            major: nums[0],
            minor: nums[1],
            patch: nums[2],
            pre,
        },
        parts.len(),
    ))
}

fn cmp_versions(a: &Version, b: &Version) -> std::cmp::Ordering {
    (a.major, a.minor, a.patch)
        .cmp(&(b.major, b.minor, b.patch))
        .then_with(|| match (a.pre.is_empty(), b.pre.is_empty()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            (false, false) => a.pre.cmp(&b.pre),
        })
}

/// The order of two versions as Masterminds/semver sorts them; `None` when one is not a
/// version.
pub fn semver_order(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    let (a, _) = parse_version(a)?;
    let (b, _) = parse_version(b)?;
    Some(cmp_versions(&a, &b))
}

/// Masterminds/semver v3 constraints: `||` of `,`/space-separated comparisons (`= != > < >=
/// <= ~ ^`, `x` wildcards). A prerelease version satisfies a comparison only when the
/// constraint itself names a prerelease (e.g. `>=1.19-0`).
pub fn semver_compare(constraint: &str, version: &str) -> Result<bool, CallError> {
    let (v, _) = parse_version(version)
        .ok_or_else(|| CallError::Message("Invalid Semantic Version".to_string()))?;
    for alternative in constraint.split("||") {
        let mut all = true;
        for part in constraint_parts(alternative) {
            if !check(&part, &v)? {
                all = false;
                break;
            }
        }
        if all {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The comparisons of one `||` alternative, as Masterminds/semver v3 finds them: an
/// operator may stand apart from its version (`>= 1.22-0`), comparisons are separated by
/// commas or spaces, and `1.2 - 1.4` is the range `>=1.2`, `<=1.4`.
fn constraint_parts(alternative: &str) -> Vec<String> {
    let words: Vec<&str> = alternative
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    let is_op = |w: &str| w.chars().all(|c| "=<>!~^".contains(c));
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let word = words[i];
        if is_op(word) && i + 1 < words.len() {
            parts.push(format!("{word}{}", words[i + 1]));
            i += 2;
        } else if word == "-" && !parts.is_empty() && i + 1 < words.len() {
            // A hyphen range: the version before it is the lower bound.
            if let Some(lower) = parts.pop() {
                parts.push(format!(">={lower}"));
            }
            parts.push(format!("<={}", words[i + 1]));
            i += 2;
        } else {
            parts.push(word.to_string());
            i += 1;
        }
    }
    parts
}

fn check(part: &str, v: &Version) -> Result<bool, CallError> {
    let op_len = part
        .find(|c: char| c.is_ascii_digit() || c == 'v' || c == 'x' || c == 'X' || c == '*')
        .unwrap_or(part.len());
    let (op, rest) = part.split_at(op_len);
    let op = op.trim();
    let wild = rest.split('.').position(|p| matches!(p, "x" | "X" | "*"));
    let cleaned: String = rest
        .split('.')
        .take(wild.unwrap_or(3))
        .collect::<Vec<_>>()
        .join(".");
    let (c, given) = if cleaned.is_empty() {
        (parse_version("0.0.0").map(|p| p.0), 0)
    } else {
        parse_version(&cleaned).map_or((None, 0), |(c, n)| (Some(c), n))
    };
    let c = c.ok_or_else(|| CallError::Message(format!("improper constraint: {part}")))?;
    if !v.pre.is_empty() && c.pre.is_empty() {
        return Ok(false);
    }
    let ord = cmp_versions(v, &c);
    use std::cmp::Ordering::*;
    // Masterminds' "dirty" constraints: parts left out or `x` (`1` minor-dirty, `1.2`
    // patch-dirty, `*` dirty with nothing given).
    let dirty = given < 3;
    let (minor_dirty, patch_dirty) = (given == 1, given == 2);
    // `constraintTilde`: at least the version, same major, and same minor unless the
    // constraint left the minor out; `~*`/`~0.0.0` take anything.
    let tilde = ord != Less
        && ((c.major == 0 && c.minor == 0 && c.patch == 0 && !minor_dirty && !patch_dirty)
            || (v.major == c.major && (minor_dirty || v.minor == c.minor)));
    Ok(match op {
        "" | "=" | "==" if dirty => tilde,
        "" | "=" | "==" => ord == Equal,
        "!=" => ord != Equal,
        ">" if dirty => {
            if v.major != c.major {
                v.major > c.major
            } else if minor_dirty {
                // `>11` wants 12 or more.
                false
            } else if patch_dirty {
                v.minor > c.minor
            } else {
                ord == Greater
            }
        }
        ">" => ord == Greater,
        "<" => ord == Less,
        ">=" | "=>" => ord != Less,
        // `<=1.2` takes every 1.2.x.
        "<=" | "=<" if dirty => {
            !(v.major > c.major || (v.major == c.major && v.minor > c.minor && !minor_dirty))
        }
        "<=" | "=<" => ord != Greater,
        "~" | "~>" => tilde,
        "^" => {
            let limit = if c.major > 0 || given < 2 {
                Version {
                    major: c.major + 1,
                    minor: 0,
                    patch: 0,
                    pre: vec![],
                }
            } else if c.minor > 0 || given < 3 {
                Version {
                    major: 0,
                    minor: c.minor + 1,
                    patch: 0,
                    pre: vec![],
                }
            } else {
                Version {
                    major: 0,
                    minor: 0,
                    patch: c.patch + 1,
                    pre: vec![],
                }
            };
            ord != Less && cmp_versions(v, &limit) == Less
        }
        other => return Err(format!("improper constraint: {other}{rest}").into()),
    })
}
