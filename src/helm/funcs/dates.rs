//! Sprig's date functions (`now`, `date`, `dateInZone`, `htmlDate`, `dateModify`, `toDate`,
//! `unixEpoch`, `ago`, `duration`, `durationRound`) with Go's layouts (`2006-01-02`).
//! A time is Go's `time.Time` at a Unix second, in UTC (a struct value that prints, writes
//! JSON and answers `.Unix`, `.Year`, ... as Go's does); "now" is the clock the caller
//! sets (`RenderContext::set_now`), never the machine's, so a render is repeatable.

use super::conv::want_str;
use crate::helm::template::builtins::exact;
use crate::helm::template::{Engine, IntType, RenderContext, Value};

/// Go's zero `time.Time` (0001-01-01 UTC), what `toDate` gives for text it can't parse.
const ZERO_TIME: i64 = -62_135_596_800;

/// A time argument: Unix seconds for a time or an integer; Sprig's `formatDate` falls back
/// to now for anything else.
fn time_of(context: &RenderContext, v: &Value) -> i64 {
    match v {
        Value::Int(i, _) => *i,
        Value::Struct(st) if st.type_name == TIME_TYPE => match st.fields.get("Unix") {
            Some(Value::Int(t, _)) => *t,
            _ => context.now(),
        },
        _ => context.now(),
    }
}

const TIME_TYPE: &str = "time.Time";

/// Go's `time.Time` at Unix second `t`, UTC: an action prints its `String()`
/// (`2021-05-06 00:00:00 +0000 UTC`), `toJson` its RFC 3339 text, and the methods charts call
/// without arguments answer; others (`.Month`, `.Format`) are errors, never a guess.
fn time_value(t: i64) -> Value {
    let text = format("2006-01-02 15:04:05.999999999 -0700 MST", t);
    let part = |layout: &str| Value::int(format(layout, t).parse::<i64>().unwrap_or(0));
    let fields = [
        ("Unix", Value::Int(t, IntType::Int64)),
        (
            "UnixMilli",
            Value::Int(t.saturating_mul(1_000), IntType::Int64),
        ),
        (
            "UnixNano",
            Value::Int(t.saturating_mul(1_000_000_000), IntType::Int64),
        ),
        ("Year", part("2006")),
        ("Day", part("2")),
        ("Hour", part("15")),
        ("Minute", part("4")),
        ("Second", part("5")),
        ("Nanosecond", Value::int(0)),
        ("IsZero", Value::Bool(t == ZERO_TIME)),
        ("String", Value::str(text.as_str())),
    ];
    Value::Struct(std::rc::Rc::new(crate::helm::template::value::Struct {
        type_name: TIME_TYPE,
        fields: fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        json: serde_json::Value::String(format("2006-01-02T15:04:05.999999999Z07:00", t)),
        fmt: Some(text.clone()),
        text: Some(text),
    }))
}

pub fn register(engine: &mut Engine) {
    engine.register("now", |exec, args| {
        let [] = exact::<0>(args, "now")?;
        Ok(time_value(exec.context().now()))
    });
    engine.register("date", |exec, args| {
        let [layout, t] = exact::<2>(args, "date")?;
        Ok(Value::str(format(
            want_str(&layout)?,
            time_of(exec.context(), &t),
        )))
    });
    for name in ["dateInZone", "date_in_zone"] {
        engine.register(name, |exec, args| {
            // Zones other than UTC need a zone database; rendered as UTC.
            let [layout, t, _zone] = exact::<3>(args, "dateInZone")?;
            Ok(Value::str(format(
                want_str(&layout)?,
                time_of(exec.context(), &t),
            )))
        });
    }
    engine.register("htmlDate", |exec, args| {
        let [t] = exact::<1>(args, "htmlDate")?;
        Ok(Value::str(format(
            "2006-01-02",
            time_of(exec.context(), &t),
        )))
    });
    engine.register("htmlDateInZone", |exec, args| {
        let [t, _zone] = exact::<2>(args, "htmlDateInZone")?;
        Ok(Value::str(format(
            "2006-01-02",
            time_of(exec.context(), &t),
        )))
    });
    for name in ["dateModify", "date_modify"] {
        engine.register(name, |exec, args| {
            let [d, t] = exact::<2>(args, "dateModify")?;
            let t = time_of(exec.context(), &t);
            Ok(time_value(
                parse_duration(want_str(&d)?).map_or(t, |n| t + n / 1_000_000_000),
            ))
        });
    }
    for name in ["mustDateModify", "must_date_modify"] {
        engine.register(name, |exec, args| {
            let [d, t] = exact::<2>(args, "mustDateModify")?;
            let text = want_str(&d)?;
            let n =
                parse_duration(text).ok_or_else(|| format!("time: invalid duration \"{text}\""))?;
            Ok(time_value(time_of(exec.context(), &t) + n / 1_000_000_000))
        });
    }
    engine.register("toDate", |_, args| {
        let [layout, text] = exact::<2>(args, "toDate")?;
        Ok(time_value(
            parse(want_str(&layout)?, want_str(&text)?).unwrap_or(ZERO_TIME),
        ))
    });
    engine.register("mustToDate", |_, args| {
        let [layout, text] = exact::<2>(args, "mustToDate")?;
        let (layout, text) = (want_str(&layout)?, want_str(&text)?);
        Ok(time_value(parse(layout, text).ok_or_else(|| {
            format!("parsing time \"{text}\" as \"{layout}\": cannot parse")
        })?))
    });
    // Sprig's unixEpoch takes a time.Time parameter: anything else is Go's argument error.
    engine.register("unixEpoch", |exec, args| {
        let [t] = exact::<1>(args, "unixEpoch")?;
        match &t {
            Value::Struct(st) if st.type_name == TIME_TYPE => {
                Ok(Value::str(time_of(exec.context(), &t).to_string()))
            }
            Value::Nil => Err("invalid value; expected time.Time".into()),
            other => Err(format!(
                "wrong type for value; expected time.Time; got {}",
                other.type_name()
            )
            .into()),
        }
    });
    engine.register("ago", |exec, args| {
        let [t] = exact::<1>(args, "ago")?;
        Ok(Value::str(format_duration(
            (exec.context().now() - time_of(exec.context(), &t)).saturating_mul(1_000_000_000),
        )))
    });
    engine.register("duration", |_, args| {
        let [sec] = exact::<1>(args, "duration")?;
        // Sprig reads a string or an int64; anything else (an int, a float64) is 0.
        let n = match &sec {
            Value::Str(s) => s.parse::<i64>().unwrap_or(0),
            Value::Int(i, IntType::Int64) => *i,
            _ => 0,
        };
        Ok(Value::str(format_duration(n.saturating_mul(1_000_000_000))))
    });
    engine.register("durationRound", |exec, args| {
        let [d] = exact::<1>(args, "durationRound")?;
        let nanos = match &d {
            Value::Str(s) => parse_duration(s).unwrap_or(0),
            // Only an int64 is a duration to Sprig; an int is 0.
            Value::Int(i, IntType::Int64) => *i,
            // A time: how long ago it was.
            Value::Struct(st) if st.type_name == TIME_TYPE => {
                (exec.context().now() - time_of(exec.context(), &d)).saturating_mul(1_000_000_000)
            }
            _ => 0,
        };
        Ok(Value::str(duration_round(nanos)))
    });
}

fn duration_round(nanos: i64) -> String {
    let u = nanos.unsigned_abs();
    let second = 1_000_000_000u64;
    let units = [
        (second * 3600 * 24 * 365, "y"),
        (second * 3600 * 24 * 30, "mo"),
        (second * 3600 * 24, "d"),
        (second * 3600, "h"),
        (second * 60, "m"),
        (second, "s"),
    ];
    for (size, name) in units {
        if u > size {
            return format!("{}{name}", u / size);
        }
    }
    "0s".into()
}

/// Go's `time.Duration.String`.
pub fn format_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let neg = nanos < 0;
    let u = nanos.unsigned_abs();
    let sign = if neg { "-" } else { "" };
    if u < 1_000_000_000 {
        let (unit, scale) = match u {
            0..1_000 => ("ns", 1),
            1_000..1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{sign}{}{unit}", fraction(u, scale));
    }
    let secs = u / 1_000_000_000;
    let (h, m) = (secs / 3600, secs / 60 % 60);
    let s = fraction(u % 60_000_000_000, 1_000_000_000);
    let mut out = sign.to_string();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&format!("{s}s"));
    out
}

/// `value / scale` with the fraction's trailing zeros dropped.
fn fraction(value: u64, scale: u64) -> String {
    let (int, frac) = (value / scale, value % scale);
    if frac == 0 {
        return int.to_string();
    }
    let width = scale.to_string().len() - 1;
    let digits = format!("{frac:0width$}");
    format!("{int}.{}", digits.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_duration(text: &str) -> Option<i64> {
    let (neg, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * scale;
    }
    let total = total as i64;
    Some(if neg { -total } else { total })
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// The layout elements of Go's `time` package, longest first where one is a prefix of
/// another.
const TOKENS: [&str; 35] = [
    "January",
    "Jan",
    "Monday",
    "Mon",
    "MST",
    "2006",
    "002",
    "01",
    "02",
    "03",
    "04",
    "05",
    "06",
    "_2",
    "15",
    "1",
    "2",
    "3",
    "4",
    "5",
    "PM",
    "pm",
    "-07:00:00",
    "-070000",
    "-07:00",
    "-0700",
    "-07",
    "Z07:00:00",
    "Z070000",
    "Z07:00",
    "Z0700",
    "Z07",
    ".000",
    ".999",
    "__2",
];

/// The layout element at the start of `rest`, if any (fractions of any length).
fn token(rest: &str) -> Option<&str> {
    for sep in ['.', ','] {
        if let Some(tail) = rest.strip_prefix(sep) {
            for digit in ['0', '9'] {
                let n = tail.chars().take_while(|&c| c == digit).count();
                let after = tail[n..].chars().next();
                if n > 0 && !after.is_some_and(|c| c.is_ascii_digit()) {
                    return Some(&rest[..n + 1]);
                }
            }
        }
    }
    TOKENS
        .iter()
        .find(|t| rest.starts_with(**t) && !t.starts_with('.'))
        .map(|t| &rest[..t.len()])
}

/// Go's `Time.Format` of `t` (Unix seconds, UTC) with `layout`.
pub fn format(layout: &str, t: i64) -> String {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400);
    let (year, month, day) = civil(days);
    let (hour, minute, second) = (secs / 3600, secs / 60 % 60, secs % 60);
    let weekday = (days + 4).rem_euclid(7) as usize;
    let yday = days - days_from_civil(year, 1, 1) + 1;
    let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
    let mut out = String::new();
    let mut rest = layout;
    while let Some(c) = rest.chars().next() {
        let Some(tok) = token(rest) else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        };
        let text = match tok {
            "January" => MONTHS[month as usize - 1].to_string(),
            "Jan" => MONTHS[month as usize - 1][..3].to_string(),
            "Monday" => DAYS[weekday].to_string(),
            "Mon" => DAYS[weekday][..3].to_string(),
            "MST" => "UTC".into(),
            "2006" => format!("{year:04}"),
            "06" => format!("{:02}", year.rem_euclid(100)),
            "01" => format!("{month:02}"),
            "1" => month.to_string(),
            "02" => format!("{day:02}"),
            "2" => day.to_string(),
            "_2" => format!("{day:>2}"),
            "002" => format!("{yday:03}"),
            "__2" => format!("{yday:>3}"),
            "15" => format!("{hour:02}"),
            "03" => format!("{hour12:02}"),
            "3" => hour12.to_string(),
            "04" => format!("{minute:02}"),
            "4" => minute.to_string(),
            "05" => format!("{second:02}"),
            "5" => second.to_string(),
            "PM" => if hour >= 12 { "PM" } else { "AM" }.into(),
            "pm" => if hour >= 12 { "pm" } else { "am" }.into(),
            t if t.starts_with('Z') => "Z".into(),
            "-07:00:00" => "+00:00:00".into(),
            "-070000" => "+000000".into(),
            "-07:00" => "+00:00".into(),
            "-0700" => "+0000".into(),
            "-07" => "+00".into(),
            // Whole seconds: `.000` keeps its zeros, `.999` drops them and its point.
            t if t[1..].starts_with('0') => format!("{}{}", &t[..1], "0".repeat(t.len() - 1)),
            _ => String::new(),
        };
        out.push_str(&text);
        rest = &rest[tok.len()..];
    }
    out
}

/// Go's `time.Parse` for the numeric layouts charts use (UTC unless the text gives an
/// offset); `None` where Go would fail.
pub fn parse(layout: &str, text: &str) -> Option<i64> {
    let (mut year, mut month, mut day) = (1i64, 1u32, 1u32);
    let (mut hour, mut minute, mut second, mut offset) = (0i64, 0i64, 0i64, 0i64);
    let mut pm = None;
    let (mut l, mut t) = (layout, text);
    let number = |t: &mut &str, min: usize, max: usize| -> Option<i64> {
        let n = t.chars().take(max).take_while(char::is_ascii_digit).count();
        if n < min {
            return None;
        }
        let v = t[..n].parse().ok()?;
        *t = &t[n..];
        Some(v)
    };
    while let Some(c) = l.chars().next() {
        let Some(tok) = token(l) else {
            t = t.strip_prefix(c)?;
            l = &l[c.len_utf8()..];
            continue;
        };
        l = &l[tok.len()..];
        match tok {
            "2006" => year = number(&mut t, 4, 4)?,
            "06" => year = 1900 + number(&mut t, 2, 2)?,
            "01" => month = number(&mut t, 2, 2)? as u32,
            "1" => month = number(&mut t, 1, 2)? as u32,
            "02" => day = number(&mut t, 2, 2)? as u32,
            "2" | "_2" => {
                t = t.trim_start_matches(' ');
                day = number(&mut t, 1, 2)? as u32
            }
            "15" => hour = number(&mut t, 2, 2)?,
            "03" => hour = number(&mut t, 2, 2)?,
            "3" => hour = number(&mut t, 1, 2)?,
            "04" => minute = number(&mut t, 2, 2)?,
            "4" => minute = number(&mut t, 1, 2)?,
            "05" => second = number(&mut t, 2, 2)?,
            "5" => second = number(&mut t, 1, 2)?,
            "PM" | "pm" => {
                let word = t.get(..2)?.to_ascii_uppercase();
                pm = Some(word == "PM");
                t = &t[2..];
            }
            "Jan" | "January" => {
                let i = MONTHS.iter().position(|m| {
                    let name = if tok == "Jan" { &m[..3] } else { m };
                    t.starts_with(name)
                })?;
                t = &t[if tok == "Jan" { 3 } else { MONTHS[i].len() }..];
                month = i as u32 + 1;
            }
            "Mon" | "Monday" => {
                let name = DAYS
                    .iter()
                    .find(|d| t.starts_with(if tok == "Mon" { &d[..3] } else { d }))?;
                t = &t[if tok == "Mon" { 3 } else { name.len() }..];
            }
            "MST" => t = t.strip_prefix("UTC")?,
            z if z.starts_with('Z') || z.starts_with('-') => {
                if z.starts_with('Z') {
                    if let Some(rest) = t.strip_prefix('Z') {
                        t = rest;
                        continue;
                    }
                }
                let sign = match t.as_bytes().first()? {
                    b'+' => 1,
                    b'-' => -1,
                    _ => return None,
                };
                t = &t[1..];
                let h = number(&mut t, 2, 2)?;
                t = t.strip_prefix(':').unwrap_or(t);
                let m = if z.len() > 3 {
                    number(&mut t, 2, 2)?
                } else {
                    0
                };
                offset = sign * (h * 3600 + m * 60);
            }
            frac if frac.starts_with(['.', ',']) => {
                if frac[1..].starts_with('0') || t.starts_with(['.', ',']) {
                    t = &t[1..];
                    t = t.trim_start_matches(|c: char| c.is_ascii_digit());
                }
            }
            _ => return None,
        }
        // Go accepts fractional seconds after a seconds field even when the layout has none.
        if matches!(tok, "05" | "5") && !l.starts_with(['.', ',']) && t.starts_with('.') {
            t = t[1..].trim_start_matches(|c: char| c.is_ascii_digit());
        }
    }
    if !t.is_empty() || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    match pm {
        Some(true) if hour < 12 => hour += 12,
        Some(false) if hour == 12 => hour = 0,
        _ => {}
    }
    let days = days_from_civil(year, month, day);
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}
