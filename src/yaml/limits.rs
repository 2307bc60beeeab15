//! Limits on what a document may make tend do: nesting depth and alias expansion (YAML bombs), with messages that say what to fix.

use std::cell::Cell;

/// Deepest nesting of collections tend reads. serde_yaml stops at 128 levels itself, but
/// libyaml spends time quadratic in the depth of *flow* collections (`[[[[...`) before
/// serde_yaml gets to count, so those are rejected by a linear scan first. Real Kubernetes
/// objects stay far below this (a Deployment is about 12 levels deep).
pub const MAX_NESTING: usize = 128;

/// Largest size a document may expand to through YAML aliases (`*anchor`), counted as the
/// bytes of every scalar plus 8 per node. A document without aliases is bounded by the file
/// size limit; one with aliases could otherwise expand exponentially ("billion laughs") or
/// repeat one large string thousands of times.
pub const MAX_EXPANDED_BYTES: usize = 16 * 1024 * 1024;

/// The message for documents nested deeper than [`MAX_NESTING`].
pub(super) fn nesting_message() -> String {
    format!("collections are nested more than {MAX_NESTING} levels deep; a Kubernetes object is never this deep")
}

/// The message for documents whose aliases expand beyond [`MAX_EXPANDED_BYTES`].
pub(super) fn alias_bomb_message() -> String {
    format!(
        "YAML aliases expand this document to more than {} MiB (an alias bomb, \"billion laughs\"?); write the values out or use fewer aliases",
        MAX_EXPANDED_BYTES / (1024 * 1024)
    )
}

/// Replace serde_yaml's terse messages for limits and oddities with ones that say what to do.
/// A `path: ` prefix (e.g. `spec.replicas: `) is kept.
pub(super) fn friendly_message(message: &str) -> String {
    let (prefix, rest) = match message.find(": ") {
        Some(i) if !message[..i].contains(' ') => (&message[..i + 2], &message[i + 2..]),
        _ => ("", message),
    };
    let rest = if rest == "recursion limit exceeded" {
        nesting_message()
    } else if rest == "repetition limit exceeded" || rest == ALIAS_BUDGET_EXCEEDED {
        alias_bomb_message()
    } else if rest == "unknown anchor" {
        format!("alias (`*name`) {UNKNOWN_ANCHOR_MESSAGE}")
    } else if rest.starts_with("invalid type: integer `")
        && (rest.contains("` as u128") || rest.contains("` as i128"))
    {
        // The number itself is not repeated: it could be a Secret value.
        "integer is too large; numbers must fit in 64 bits (quote it if it is meant as a string)"
            .to_string()
    } else {
        rest.to_string()
    };
    format!("{prefix}{rest}")
}

/// The end of the message for an alias without its anchor.
pub(super) const UNKNOWN_ANCHOR_MESSAGE: &str = "refers to an anchor (`&name`) that is not defined before it in this document; anchors do not carry across `---`";

/// Marker message of the expansion budget (replaced by [`alias_bomb_message`]).
pub(super) const ALIAS_BUDGET_EXCEEDED: &str = "tend: alias expansion budget exceeded";

/// Walk `text` as serde_yaml would deserialize it, following aliases, and fail as soon as the
/// expanded size passes [`MAX_EXPANDED_BYTES`]. Scalars are borrowed, not copied, so this
/// costs no more memory than the parsed events.
pub(super) fn check_expansion(text: &str) -> Result<(), serde_yaml::Error> {
    use serde::de::DeserializeSeed;
    let left = Cell::new(MAX_EXPANDED_BYTES);
    let de = serde_yaml::Deserializer::from_str(text);
    Count { left: &left }.deserialize(de)
}

/// A serde visitor that only counts what it is shown.
#[derive(Clone, Copy)]
pub(super) struct Count<'a> {
    left: &'a Cell<usize>,
}

impl Count<'_> {
    fn charge<E: serde::de::Error>(&self, bytes: usize) -> Result<(), E> {
        let cost = bytes.saturating_add(8);
        match self.left.get().checked_sub(cost) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => Err(E::custom(ALIAS_BUDGET_EXCEEDED)),
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Count<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Count<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_i128<E: serde::de::Error>(self, _: i128) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_u128<E: serde::de::Error>(self, _: u128) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.charge(v.len())
    }
    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<(), E> {
        self.charge(v.len())
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        self.charge(0)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_newtype_struct<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.charge::<A::Error>(0)?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.charge::<A::Error>(0)?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        // A tagged node (`!tag value`): count the value.
        use serde::de::VariantAccess;
        let (_, variant) = data.variant::<serde::de::IgnoredAny>()?;
        variant.newtype_variant_seed(self)
    }
}

/// Whether a document may use aliases at all (both an anchor and an alias sign appear).
pub(super) fn may_have_aliases(text: &str) -> bool {
    text.contains('&') && text.contains('*')
}

/// 0-based index of the line where flow collections (`[`, `{`) nest deeper than `limit`, by a
/// linear scan that knows quoted scalars, comments, tags, anchors and block scalars well
/// enough for Kubernetes YAML. In block context only a `[`/`{` where a node starts opens a
/// collection, so brackets inside plain scalars (`a[0]`, `x [y`) do not count.
pub(super) fn deep_flow_line(text: &str, limit: usize) -> Option<usize> {
    // Nesting past `limit` needs more than `limit` opening brackets: most documents (sealed
    // `ENC[...]` values included) have far fewer, and counting is much cheaper than scanning.
    if memchr::memchr2_iter(b'[', b'{', text.as_bytes())
        .take(limit + 1)
        .count()
        <= limit
    {
        return None;
    }
    let mut depth = 0usize;
    // Inside a quoted scalar that continues on the next line: its quote character.
    let mut quote: Option<u8> = None;
    // Inside a block scalar (`|`, `>`): lines indented more than this belong to it.
    let mut block_parent: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        let indent = bytes.iter().take_while(|b| **b == b' ').count();
        if let Some(parent) = block_parent {
            if line.trim().is_empty() || indent > parent {
                continue;
            }
            block_parent = None;
        }
        let mut node_start = true;
        let mut prev = b' ';
        let mut j = 0;
        let mut content_end = bytes.len();
        while j < bytes.len() {
            let c = bytes[j];
            let next = bytes.get(j + 1).copied();
            if let Some(q) = quote {
                if q == b'\'' && c == b'\'' {
                    if next == Some(b'\'') {
                        j += 2;
                        continue;
                    }
                    quote = None;
                } else if q == b'"' && c == b'\\' {
                    j += 2;
                    continue;
                } else if q == b'"' && c == b'"' {
                    quote = None;
                }
                prev = c;
                j += 1;
                continue;
            }
            let blank_next = matches!(next, None | Some(b' ') | Some(b'\t'));
            match c {
                b' ' | b'\t' => {}
                b'#' if matches!(prev, b' ' | b'\t') => {
                    content_end = j;
                    break;
                }
                b'[' | b'{' if node_start || depth > 0 => {
                    depth += 1;
                    if depth > limit {
                        return Some(i);
                    }
                    node_start = true;
                }
                b']' | b'}' if depth > 0 => {
                    depth -= 1;
                    node_start = false;
                }
                b',' if depth > 0 => node_start = true,
                b'"' | b'\'' if node_start => {
                    quote = Some(c);
                    node_start = false;
                }
                // Tags, anchors and aliases: skip the token; a node may still start after it.
                b'!' | b'&' | b'*' if node_start => {
                    while j + 1 < bytes.len() && !matches!(bytes[j + 1], b' ' | b'\t') {
                        j += 1;
                    }
                }
                b'-' | b'?' if node_start && depth == 0 && blank_next => {}
                b':' if blank_next || depth > 0 => node_start = true,
                _ => node_start = false,
            }
            prev = bytes[j];
            j += 1;
        }
        if quote.is_none() && depth == 0 && opens_block_scalar(&line[..content_end]) {
            block_parent = Some(content_column(line));
        }
    }
    None
}

/// Whether a line ends with a block scalar indicator (`key: |`, `- >-`, `|2+`).
pub(super) fn opens_block_scalar(line: &str) -> bool {
    let t = line.trim_end();
    let Some(pos) = t.rfind(['|', '>']) else {
        return false;
    };
    let indicators = &t[pos + 1..];
    let before = &t[..pos];
    indicators
        .bytes()
        .all(|b| b == b'-' || b == b'+' || b.is_ascii_digit())
        && (before.trim().is_empty()
            || before.ends_with(": ")
            || before.ends_with("- ")
            || before.ends_with(' ') && before.trim_end().ends_with(['!', ':', '-']))
}

/// Column of a line's content after its indentation and any `- ` sequence markers: the
/// indentation a block scalar's parent node has.
pub(super) fn content_column(line: &str) -> usize {
    let mut col = 0;
    let bytes = line.as_bytes();
    loop {
        while col < bytes.len() && bytes[col] == b' ' {
            col += 1;
        }
        if bytes.get(col) == Some(&b'-') && bytes.get(col + 1) == Some(&b' ') {
            col += 2;
        } else {
            return col;
        }
    }
}
