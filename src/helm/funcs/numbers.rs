//! Sprig's float math (`addf`, `subf`, `mulf`, `divf` through shopspring/decimal, so
//! `addf 1.1 2.2` is 3.3, not 3.3000000000000003), `maxf`/`minf`, `ceil`, `floor`, `round`.

use super::conv::{to_float, to_int};
use crate::helm::template::builtins::exact;
use crate::helm::template::{CallError, Engine, Value};

pub fn register(engine: &mut Engine) {
    engine.register("add1f", |_, args| {
        let [a] = exact::<1>(args, "add1f")?;
        Ok(Value::Float(decimal_op(&a, &[Value::int(1)], Op::Add)))
    });
    engine.register("addf", |_, args| {
        Ok(Value::Float(decimal_op(&Value::Float(0.0), &args, Op::Add)))
    });
    engine.register("subf", |_, args| folded(args, Op::Sub));
    engine.register("mulf", |_, args| folded(args, Op::Mul));
    engine.register("divf", |_, args| folded(args, Op::Div));
    engine.register("maxf", |_, args| {
        let (first, rest) = args.split_first().ok_or("missing argument")?;
        Ok(Value::Float(
            rest.iter().map(to_float).fold(to_float(first), f64::max),
        ))
    });
    engine.register("minf", |_, args| {
        let (first, rest) = args.split_first().ok_or("missing argument")?;
        Ok(Value::Float(
            rest.iter().map(to_float).fold(to_float(first), f64::min),
        ))
    });
    engine.register("biggest", |_, args| {
        Ok(Value::int64(args.iter().map(to_int).max().unwrap_or(0)))
    });
    engine.register("ceil", |_, args| {
        Ok(Value::Float(to_float(&exact::<1>(args, "ceil")?[0]).ceil()))
    });
    engine.register("floor", |_, args| {
        Ok(Value::Float(
            to_float(&exact::<1>(args, "floor")?[0]).floor(),
        ))
    });
    engine.register("round", |_, args| {
        if !(2..=3).contains(&args.len()) {
            return Err(
                format!("wrong number of args for round: want 2 got {}", args.len()).into(),
            );
        }
        let round_on = args.get(2).map_or(0.5, to_float);
        let pow = 10f64.powf(to_int(&args[1]) as f64);
        let digit = pow * to_float(&args[0]);
        let rounded = if digit - digit.trunc() >= round_on {
            digit.ceil()
        } else {
            digit.floor()
        };
        Ok(Value::Float(rounded / pow))
    });
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

fn folded(args: Vec<Value>, op: Op) -> Result<Value, CallError> {
    let (first, rest) = args.split_first().ok_or("missing argument")?;
    Ok(Value::Float(decimal_op(first, rest, op)))
}

/// An exact decimal: `mantissa * 10^-scale`.
#[derive(Clone, Copy)]
struct Decimal {
    mantissa: i128,
    scale: u32,
}

/// shopspring's `NewFromFloat`: the shortest decimal that reads back as `f`.
fn decimal(f: f64) -> Option<Decimal> {
    if !f.is_finite() {
        return None;
    }
    let text = format!("{f}");
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let mantissa: i128 = format!("{int}{frac}").parse().ok()?;
    Some(Decimal {
        mantissa,
        scale: frac.len() as u32,
    })
}

fn rescale(d: Decimal, scale: u32) -> Option<i128> {
    d.mantissa.checked_mul(10i128.checked_pow(scale - d.scale)?)
}

fn apply(a: Decimal, b: Decimal, op: Op) -> Option<Decimal> {
    let common = a.scale.max(b.scale);
    Some(match op {
        Op::Add => Decimal {
            mantissa: rescale(a, common)?.checked_add(rescale(b, common)?)?,
            scale: common,
        },
        Op::Sub => Decimal {
            mantissa: rescale(a, common)?.checked_sub(rescale(b, common)?)?,
            scale: common,
        },
        Op::Mul => Decimal {
            mantissa: a.mantissa.checked_mul(b.mantissa)?,
            scale: a.scale + b.scale,
        },
        // decimal.Div rounds the quotient to 16 places (DivisionPrecision), half away
        // from zero.
        Op::Div => {
            if b.mantissa == 0 {
                return None;
            }
            let num = rescale(a, common)?.checked_mul(10i128.checked_pow(16)?)?;
            let den = rescale(b, common)?;
            let (q, r) = (num / den, num % den);
            let away = (r.abs() * 2 >= den.abs()) as i128 * (num.signum() * den.signum());
            Decimal {
                mantissa: q + away,
                scale: 16,
            }
        }
    })
}

fn to_f64(d: Decimal) -> f64 {
    let digits = d.mantissa.unsigned_abs().to_string();
    let scale = d.scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    let sign = if d.mantissa < 0 { "-" } else { "" };
    format!("{sign}{int}.{frac}0").parse().unwrap_or(f64::NAN)
}

/// Sprig's `execDecimalOp`: each operand through `toFloat64` and decimal, folded with
/// `op`; plain float math when a value has no exact decimal in range.
fn decimal_op(first: &Value, rest: &[Value], op: Op) -> f64 {
    let mut acc_f = to_float(first);
    let mut acc = decimal(acc_f);
    for x in rest {
        let xf = to_float(x);
        acc = acc.zip(decimal(xf)).and_then(|(a, b)| apply(a, b, op));
        acc_f = match op {
            Op::Add => acc_f + xf,
            Op::Sub => acc_f - xf,
            Op::Mul => acc_f * xf,
            Op::Div => acc_f / xf,
        };
    }
    acc.map_or(acc_f, to_f64)
}
