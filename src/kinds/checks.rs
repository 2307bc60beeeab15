//! Small validation helpers shared by the kinds: problems under a field path, quantities,
//! ranges. Name syntax is [`crate::object::names`]'s. They mirror the apiserver's rules
//! (pkg/api/resource), so tend rejects offline what the cluster would reject later.

use super::FieldProblem;
use crate::object::names;
use std::collections::BTreeMap;

/// The checks of a kind's fields, collecting problems under a fixed path prefix (`spec`, ...).
pub(crate) struct FieldChecks<'a> {
    pub out: &'a mut Vec<FieldProblem>,
}

impl FieldChecks<'_> {
    pub fn push(&mut self, path: &[&str], message: impl Into<String>) {
        self.out.push(FieldProblem::new(path, message));
    }

    /// `value` must lie in `min..=max` (`max: None` = unbounded).
    pub fn range(&mut self, path: &[&str], value: i64, min: i64, max: Option<i64>) {
        let ok = value >= min && max.is_none_or(|m| value <= m);
        if !ok {
            let message = match max {
                Some(max) => format!("must be between {min} and {max}, got {value}"),
                None => format!("must be at least {min}, got {value}"),
            };
            self.push(path, message);
        }
    }

    pub fn non_empty(&mut self, path: &[&str], value: &str, what: &str) {
        if value.trim().is_empty() {
            self.push(path, format!("must not be empty: set {what}"));
        }
    }

    /// Every entry must be a namespace name (DNS-1123 label), no duplicates.
    pub fn namespaces(&mut self, path: &[&str], list: &[String]) {
        for (i, ns) in list.iter().enumerate() {
            if let Err(why) = names::dns1123_label(ns) {
                self.push(
                    path,
                    format!("item {i} ({ns:?}) is not a valid namespace name: {why}"),
                );
            } else if list[..i].contains(ns) {
                self.push(path, format!("item {i} ({ns:?}) is listed twice"));
            }
        }
    }

    /// Label selector `matchLabels`: keys and values must be valid label keys/values.
    pub fn labels(&mut self, path: &[&str], labels: &BTreeMap<String, String>) {
        for (k, v) in labels {
            if let Err(why) = names::qualified_name(k) {
                self.push(path, format!("label key {k:?} is invalid: {why}"));
            }
            if let Err(why) = names::label_value(v) {
                self.push(
                    path,
                    format!("value {v:?} of label {k:?} is invalid: {why}"),
                );
            }
        }
    }
}

/// Parse a Kubernetes resource quantity (`10Gi`, `500m`, `1e3`, `0.5`) into its value in
/// nano-units (10^-9), the apiserver's finest precision; finer values round up as there.
/// `None` if it is not a quantity or does not fit. Two quantities are equal as the
/// apiserver sees them (it canonicalizes `1024Mi` to `1Gi`) when these values are equal.
pub fn parse_quantity(s: &str) -> Option<i128> {
    let s = s.trim();
    let (negative, rest) = match s.as_bytes().first()? {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let num_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(num_end);
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if int_part.is_empty() && frac_part.is_empty() || frac_part.contains('.') {
        return None;
    }
    // Mantissa as an integer, with a power-of-ten scale for the fraction digits.
    let mut mantissa: i128 = 0;
    for c in int_part.chars().chain(frac_part.chars()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(i128::from(c.to_digit(10)?))?;
    }
    let mut exp10: i64 = -(frac_part.len() as i64);
    let mut binary: i128 = 1;
    match suffix {
        "" => {}
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let power = "KMGTPE".find(&suffix[..1])? as u32 + 1;
            binary = 1024i128.checked_pow(power)?;
        }
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        _ => {
            // Decimal exponent: e/E followed by a signed integer.
            let exp = suffix.strip_prefix(['e', 'E'])?;
            let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            exp10 += exp.parse::<i64>().ok()?;
        }
    }
    let value = mantissa.checked_mul(binary)?;
    let shift = exp10 + 9; // to nano-units
    let nanos = if shift >= 0 {
        value.checked_mul(10i128.checked_pow(u32::try_from(shift).ok()?)?)?
    } else {
        let div = 10i128.checked_pow(u32::try_from(-shift).ok()?)?;
        // Round up, as the apiserver does for sub-nano precision.
        (value + div - 1) / div
    };
    Some(if negative { -nanos } else { nanos })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity("1"), Some(1_000_000_000));
        assert_eq!(parse_quantity("500m"), Some(500_000_000));
        assert_eq!(parse_quantity("0.5"), parse_quantity("500m"));
        assert_eq!(parse_quantity("1Gi"), parse_quantity("1024Mi"));
        assert_eq!(parse_quantity("1k"), parse_quantity("1e3"));
        assert_eq!(parse_quantity("1E3"), parse_quantity("1000"));
        assert_eq!(
            parse_quantity("10Gi"),
            Some(10 * (1i128 << 30) * 1_000_000_000)
        );
        assert_eq!(parse_quantity("-1"), Some(-1_000_000_000));
        assert_eq!(parse_quantity(".5"), Some(500_000_000));
        assert_eq!(parse_quantity("1n"), Some(1));
        for bad in [
            "", "Gi", "10GB", "10 Gi", "1.2.3", "ten", "1e", "1Ki5", "--1",
        ] {
            assert_eq!(parse_quantity(bad), None, "{bad:?}");
        }
    }
}
