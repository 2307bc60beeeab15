//! Helm's template functions (`include`, `tpl`, `required`, `fail`, `toYaml`, `fromYaml`,
//! `toJson`) and the part of Sprig v3 charts use, with Sprig's
//! semantics: its `empty`, its string conversion (`strval`), mergo's merge rules.

mod collections;
mod conv;
mod crypto;
mod dates;
/// Go's `time.ParseDuration` (Flux's durations are read with it too).
pub use dates::parse_duration;
mod files;
mod gobase64;
pub mod goregex;
pub mod goyaml;
mod json;
mod lists;
mod numbers;
mod strings;
mod text;
mod toml;
mod toml_read;
mod url;
mod values;
mod yaml11;
pub use conv::{error_map, from_yaml, strval, to_int, want_str};
pub use conv::{is_binary_text, BINARY_TEXT_FUNCTIONS};
pub use files::binary_file;
pub use strings::{semver_compare, semver_order};
pub use text::base32_encode;

use super::template::builtins::exact;
use super::template::{CallError, Engine, RenderContext, Value};

/// Registers every Helm and Sprig function tend supports on `engine`.
pub fn register(engine: &mut Engine) {
    strings::register(engine);
    collections::register(engine);
    lists::register(engine);
    text::register(engine);
    numbers::register(engine);
    dates::register(engine);
    crypto::register(engine);
    engine.register("include", |exec, args| {
        let [name, data] = exact::<2>(args, "include")?;
        let name = want_str(&name)?;
        Ok(Value::str(exec.execute_named(name, data)?))
    });
    engine.register("tpl", |exec, args| {
        let [text, data] = exact::<2>(args, "tpl")?;
        // Helm's tpl cleans "<no value>" itself: its result is text, not a template's output.
        let out = exec.execute_text(want_str(&text)?, data)?;
        Ok(Value::str(out.replace("<no value>", "")))
    });
    engine.register("required", |_, args| {
        let [message, value] = exact::<2>(args, "required")?;
        match &value {
            Value::Nil => Err(strval(&message).into()),
            Value::Str(s) if s.is_empty() => Err(strval(&message).into()),
            _ => Ok(value),
        }
    });
    engine.register("fail", |_, args| {
        let [message] = exact::<1>(args, "fail")?;
        Err(strval(&message).into())
    });
    engine.register("toYaml", |_, args| {
        let [v] = exact::<1>(args, "toYaml")?;
        let text = goyaml::to_yaml(&v);
        Ok(Value::str(text.strip_suffix('\n').unwrap_or(&text)))
    });
    engine.register("toYamlPretty", |_, args| {
        let [v] = exact::<1>(args, "toYamlPretty")?;
        // go-yaml v3 writes a Go struct with its own field names and order, not its JSON:
        // refused rather than guessed.
        if let Some(name) = struct_inside(&v) {
            return Err(format!(
                "toYamlPretty of a {name}: tend does not write Go structs as go-yaml v3 does; use toYaml"
            )
            .into());
        }
        let text = goyaml::to_yaml_pretty(&v);
        Ok(Value::str(text.strip_suffix('\n').unwrap_or(&text)))
    });
    engine.register("fromYaml", |_, args| {
        let [text] = exact::<1>(args, "fromYaml")?;
        Ok(from_yaml(want_str(&text)?, false))
    });
    engine.register("fromYamlArray", |_, args| {
        let [text] = exact::<1>(args, "fromYamlArray")?;
        Ok(from_yaml(want_str(&text)?, true))
    });
    engine.register("fromJson", |_, args| {
        let [text] = exact::<1>(args, "fromJson")?;
        Ok(
            match serde_json::from_str::<serde_json::Value>(want_str(&text)?) {
                Ok(json) => Value::from_json_values(&json),
                Err(e) => error_map(&e.to_string()),
            },
        )
    });
    // Sprig's greeting (functions.go `"hello"`): a chart may print it.
    engine.register("hello", |_, args| {
        let [] = exact::<0>(args, "hello")?;
        Ok(Value::str("Hello!"))
    });
    // Go's `call` builtin: Helm's data holds no function values (its methods are called
    // as fields, never handed out), so a `call` that Helm reaches always fails; defined,
    // so a chart that has one in a branch it never takes parses as in Helm.
    engine.register("call", |_, args| {
        let Some(callee) = args.first() else {
            return Err("wrong number of args for call: want at least 1 got 0".into());
        };
        Err(match callee {
            Value::Nil => "call of nil".to_string(),
            other => format!(
                "non-function {} of type {}",
                crate::helm::template::gofmt::display(other),
                other.type_name()
            ),
        }
        .into())
    });
    // chartutil.VersionSet.Has: `.Capabilities.APIVersions.Has "apps/v1"`.
    engine.register_method("Has", |_, args| {
        let [set, wanted] = exact::<2>(args, "Has")?;
        let Value::List(ref set) = set else {
            return Err("Has needs a list of API versions".into());
        };
        Ok(Value::Bool(
            set.iter().any(|v| v.as_str() == wanted.as_str()),
        ))
    });
    files::register(engine);
    values::register(engine);
    json::register(engine);
    toml::register(engine);
    toml_read::register(engine);
    url::register(engine);
    // `lookup` is registered with what the cluster answered: see `helm::lookup`.
    super::lookup::register(engine, None);
}

/// The Go type of the first struct inside `v`, if any.
fn struct_inside(v: &Value) -> Option<&'static str> {
    match v {
        Value::Struct(s) => Some(s.type_name),
        Value::List(items) => items.iter().find_map(struct_inside),
        Value::Map(m) => m.borrow().values().find_map(struct_inside),
        _ => None,
    }
}

/// Sprig's random strings (`randAlphaNum`, `randAlpha`, `randNumeric`, `randAscii`) and its
/// keys, certificates, salts and IVs (`genCA`, `bcrypt`, `encryptAES`, ...), drawn
/// from `seed`: the caller decides how stable they are.
pub fn register_random(engine: &mut Engine, seed: u64) {
    engine.context().start_random(seed);
    crypto::register_random(engine);
    engine.register("randAlphaNum", |exec, args| {
        random(
            exec.context(),
            args,
            "randAlphaNum",
            b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        )
    });
    engine.register("randAlpha", |exec, args| {
        random(
            exec.context(),
            args,
            "randAlpha",
            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        )
    });
    engine.register("randNumeric", |exec, args| {
        random(exec.context(), args, "randNumeric", b"0123456789")
    });
    engine.register("randInt", |exec, args| {
        let [min, max] = exact::<2>(args, "randInt")?;
        let (min, max) = (to_int(&min), to_int(&max));
        if max <= min {
            return Err("invalid argument to Intn".into());
        }
        let span = (max as i128 - min as i128) as u128;
        let offset = (exec.context().next_random() as u128 % span) as i128;
        Ok(Value::int((min as i128 + offset) as i64))
    });
    engine.register("randBytes", |exec, args| {
        use base64::Engine as _;
        let [n] = exact::<1>(args, "randBytes")?;
        exec.context().spend_bytes(to_int(&n).max(0) as u64 * 2)?;
        let bytes: Vec<u8> = (0..to_int(&n).max(0))
            .map(|_| exec.context().next_random() as u8)
            .collect();
        Ok(Value::str(
            base64::engine::general_purpose::STANDARD.encode(bytes),
        ))
    });
    engine.register("uuidv4", |exec, args| {
        let [] = exact::<0>(args, "uuidv4")?;
        let mut b: Vec<u8> = (0..16)
            .map(|_| exec.context().next_random() as u8)
            .collect();
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let h = hex::encode(b);
        Ok(Value::str(format!(
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )))
    });
    engine.register("shuffle", |exec, args| {
        let [v] = exact::<1>(args, "shuffle")?;
        let mut chars: Vec<char> = want_str(&v)?.chars().collect();
        for i in (1..chars.len()).rev() {
            chars.swap(i, (exec.context().next_random() % (i as u64 + 1)) as usize);
        }
        Ok(Value::str(chars.into_iter().collect::<String>()))
    });
    engine.register("randAscii", |exec, args| {
        let printable: Vec<u8> = (b' '..=b'~').collect();
        random(exec.context(), args, "randAscii", &printable)
    });
}

fn random(
    context: &RenderContext,
    args: Vec<Value>,
    name: &str,
    alphabet: &[u8],
) -> Result<Value, CallError> {
    let [n] = exact::<1>(args, name)?;
    let n = to_int(&n).max(0) as usize;
    context.spend_bytes(n as u64)?;
    let text: String = (0..n)
        .map(|_| alphabet[(context.next_random() % alphabet.len() as u64) as usize] as char)
        .collect();
    Ok(Value::str(text))
}

#[cfg(test)]
mod tests;
