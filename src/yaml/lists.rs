//! List documents (`kind: List`, `<Kind>List` with `items`): expanded into their items, each at its own line.

use super::convert::yaml_to_json;
use super::document::{key_matches, Document, Step};
use super::limits::MAX_NESTING;
use crate::problem::Problem;
use serde_json::Value;
use std::path::Path;

/// Whether a parsed document is a list of objects (as `kubectl apply` reads them): `kind:
/// List`, or any `<Kind>List` with an `items` sequence. `Err` for a `kind: List` whose
/// `items` is not a sequence.
pub(super) fn list_items(value: &Value) -> Result<Option<&[Value]>, String> {
    let Some(kind) = value.get("kind").and_then(Value::as_str) else {
        return Ok(None);
    };
    if !kind.ends_with("List") {
        return Ok(None);
    }
    match value.get("items") {
        Some(Value::Array(items)) => Ok(Some(items)),
        // `items:` with nothing after it, or no items at all: an empty List.
        None | Some(Value::Null) if kind == "List" => Ok(Some(&[])),
        Some(Value::Null) => Ok(Some(&[])),
        Some(other) if kind == "List" => Err(format!(
            "items of a List must be a sequence of objects, found {}",
            match other {
                Value::Object(_) => "a mapping",
                Value::String(_) => "a string",
                _ => "a scalar",
            }
        )),
        // `<Kind>List` without an items sequence: a kind of its own (e.g. a custom resource).
        _ => Ok(None),
    }
}

/// Push `doc`, or, if it is a List, its items, each as a document at its own line.
pub(super) fn expand_lists(
    file: &Path,
    doc: Document,
    depth: usize,
    out: &mut Vec<Document>,
    problems: &mut Vec<Problem>,
) {
    // A SOPS-encrypted List is one document to its MAC: expanded once decrypted
    // ([`expand_decrypted`]).
    let encrypted = doc.value.get("sops").is_some_and(Value::is_object);
    let items = match list_items(&doc.value) {
        Ok(Some(items)) if depth < MAX_NESTING && !encrypted => items,
        Ok(_) => {
            out.push(doc);
            return;
        }
        Err(message) => {
            problems.push(Problem::new(
                file,
                doc.line_at(&[Step::Key("items".into())]),
                message,
            ));
            return;
        }
    };
    let list_kind = doc.value["kind"].as_str().unwrap_or("List");
    // Items of a typed list (`RoleList`) may leave out apiVersion and kind, as the API server
    // returns them: they are the list's apiVersion and its kind without `List`.
    let inherited = match (list_kind.strip_suffix("List"), doc.value.get("apiVersion")) {
        (Some(kind), Some(Value::String(api_version))) if !kind.is_empty() => {
            Some((api_version.clone(), kind.to_string()))
        }
        _ => None,
    };
    // A decrypted list's text still holds ciphertext: its items keep their lines of it
    // (never a text made from their plaintext values) and are read from their values.
    let decrypted = doc.decrypted;
    let spans = item_spans(&doc, items.len());
    // Items in flow style (JSON, `[{...}, {...}]`): the line each starts on.
    let flow_lines = match spans {
        Some(_) => None,
        None => flow_item_lines(&doc, items.len()),
    };
    for (i, item) in items.iter().enumerate() {
        let line = match &flow_lines {
            Some(lines) => lines[i],
            None => doc.line_at(&[Step::Key("items".into()), Step::Index(i)]),
        };
        let mut value = item.clone();
        let mut needs_own_text = false;
        if let (Some((api_version, kind)), Value::Object(map)) = (&inherited, &mut value) {
            if !map.contains_key("apiVersion") && !map.contains_key("kind") {
                map.insert("apiVersion".into(), Value::String(api_version.clone()));
                map.insert("kind".into(), Value::String(kind.clone()));
                needs_own_text = true;
            }
        }
        // The item's own lines, so that messages about its fields point into it; where they
        // cannot be cut out (flow style, JSON, aliases across items), its value as one line
        // of JSON at the item's line.
        let sliced = spans
            .as_ref()
            .filter(|_| !needs_own_text || decrypted)
            .and_then(|spans| item_text(&doc, spans[i]))
            .filter(|(_, text)| {
                decrypted
                    || serde_yaml::from_str::<serde_yaml::Value>(text)
                        .ok()
                        .and_then(|y| yaml_to_json(y, &mut Vec::new()).ok())
                        .as_ref()
                        == Some(item)
            });
        let (start_line, text) = match sliced {
            Some((start, text)) => (start, text),
            None if decrypted => (line, String::new()),
            None => (
                line,
                serde_json::to_string(&value).unwrap_or_default() + "\n",
            ),
        };
        let prefix = format!("/items/{i}/");
        let item_doc = Document {
            line,
            start_line,
            text,
            value,
            typed_from_value: decrypted,
            decrypted,
            sealed: doc
                .sealed
                .iter()
                .filter_map(|p| p.strip_prefix(&prefix).map(|rest| format!("/{rest}")))
                .collect(),
        };
        expand_lists(file, item_doc, depth + 1, out, problems);
    }
}

/// `doc`, decrypted from a SOPS file, or if it is a List, its items (each at its own line,
/// keeping the fields sops sealed).
pub fn expand_decrypted(file: &Path, doc: Document) -> (Vec<Document>, Vec<Problem>) {
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    expand_lists(file, doc, 0, &mut out, &mut problems);
    (out, problems)
}

/// Walk flow-style YAML (JSON included) from byte `from`, calling `at(depth, offset, line)`
/// where a node starts (`depth` counts the open `[`/`{` around it), until the collection
/// that starts at `from` closes or `at` returns true. Quoted scalars and comments are
/// skipped; in flow context plain scalars cannot hold `[]{},`.
pub(super) fn scan_flow(text: &str, from: usize, mut at: impl FnMut(usize, usize, usize) -> bool) {
    let bytes = text.as_bytes();
    let mut line = 1 + bytes[..from].iter().filter(|b| **b == b'\n').count();
    let (mut depth, mut quote, mut node_start) = (0usize, None::<u8>, true);
    let mut i = from;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            line += 1;
        }
        if let Some(q) = quote {
            if q == b'"' && c == b'\\' {
                if bytes.get(i + 1) == Some(&b'\n') {
                    line += 1;
                }
                i += 2;
                continue;
            }
            if c == q {
                if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                    i += 2;
                    continue;
                }
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b' ' | b'\t' | b'\r' | b'\n' => {}
            b'#' if i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'\n') => {
                while i + 1 < bytes.len() && bytes[i + 1] != b'\n' {
                    i += 1;
                }
            }
            b'[' | b'{' => {
                if node_start && at(depth, i, line) {
                    return;
                }
                depth += 1;
                node_start = true;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return;
                }
                node_start = false;
            }
            b',' | b':' => node_start = true,
            _ => {
                if node_start && at(depth, i, line) {
                    return;
                }
                if matches!(c, b'"' | b'\'') && node_start {
                    quote = Some(c);
                }
                node_start = false;
            }
        }
        i += 1;
    }
}

/// Byte offset of the `[` that opens the top-level `items` of a document, when it is in flow
/// style: in a flow (JSON) document, or after a block `items:` key.
pub(super) fn flow_items_open(doc: &Document) -> Option<usize> {
    let text = &doc.text;
    let first = text.find(|c: char| !c.is_whitespace())?;
    // `[` after `items` + `:` (and spaces), from a key's offset.
    let open_after_key = |offset: usize| -> Option<usize> {
        let rest = &text[offset..];
        let key_len = ["\"items\"", "'items'", "items"]
            .iter()
            .find(|k| rest.starts_with(*k))?
            .len();
        let after = rest[key_len..].trim_start_matches([' ', '\t']);
        let after = after.strip_prefix(':')?;
        let value = after.trim_start();
        value.starts_with('[').then(|| text.len() - value.len())
    };
    if text[first..].starts_with('{') {
        let mut open = None;
        scan_flow(text, first, |depth, offset, _| {
            if depth == 1 {
                open = open_after_key(offset);
            }
            open.is_some()
        });
        return open;
    }
    let line = doc.line_at(&[Step::Key("items".into())]);
    let index = line.checked_sub(doc.start_line)?;
    let line_offset: usize = text.split_inclusive('\n').take(index).map(str::len).sum();
    let line_text = text[line_offset..].lines().next()?;
    let indent = line_text.len() - line_text.trim_start_matches(' ').len();
    open_after_key(line_offset + indent)
}

/// The file line of each entry of a flow-style top-level `items` sequence.
pub(super) fn flow_item_lines(doc: &Document, count: usize) -> Option<Vec<usize>> {
    let open = flow_items_open(doc)?;
    let mut lines = Vec::new();
    scan_flow(&doc.text, open, |depth, _, line| {
        if depth == 1 {
            lines.push(doc.start_line + line - 1);
        }
        false
    });
    (lines.len() == count).then_some(lines)
}

/// For a document whose top-level `items` is a block sequence of `count` entries: each
/// entry's 0-based first text line, end (exclusive) and the column of its `-`.
pub(super) fn item_spans(doc: &Document, count: usize) -> Option<Vec<(usize, usize, usize)>> {
    let lines: Vec<&str> = doc.text.lines().collect();
    let content = |l: &str| {
        let t = l.trim_start_matches(' ');
        !(t.trim().is_empty() || t.starts_with('#'))
    };
    let indent = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let is_item = |t: &str| t == "-" || t.starts_with("- ");
    let first = lines.iter().position(|l| content(l))?;
    let root = indent(lines[first]);
    let key = (first..lines.len()).find(|&n| {
        let l = lines[n];
        if !content(l) || indent(l) != root {
            return false;
        }
        let t = &l[root..];
        key_matches(t, "items") && {
            let rest = t["items".len()..].trim_start_matches(':').trim();
            rest.is_empty() || rest.starts_with('#')
        }
    })?;
    let mut spans: Vec<(usize, usize, usize)> = Vec::new();
    let mut col = None;
    let mut end = lines.len();
    for (n, l) in lines.iter().enumerate().skip(key + 1) {
        if !content(l) {
            continue;
        }
        let (c, t) = (indent(l), &l[indent(l)..]);
        let col = *col.get_or_insert(c);
        if c < col || (c == col && !is_item(t)) {
            end = n;
            break;
        }
        if c == col {
            if let Some(last) = spans.last_mut() {
                last.1 = n;
            }
            spans.push((n, lines.len(), c));
        }
    }
    if let Some(last) = spans.last_mut() {
        last.1 = end;
    }
    (spans.len() == count).then_some(spans)
}

/// The text of one list entry as a document of its own: its lines, with the entry's `-`
/// blanked, and the file line it starts on. Trailing comment lines stay; they are harmless.
pub(super) fn item_text(
    doc: &Document,
    (start, end, col): (usize, usize, usize),
) -> Option<(usize, String)> {
    let mut text = String::new();
    for (n, line) in doc.text.lines().enumerate().take(end).skip(start) {
        if n == start {
            text.push_str(line.get(..col)?);
            text.push(' ');
            text.push_str(line.get(col + 1..)?);
        } else {
            text.push_str(line);
        }
        text.push('\n');
    }
    Some((doc.start_line + start, text))
}
