//! All YAML parsing lives here (serde_yaml is deprecated upstream; one module keeps a future
//! swap small). Files are split into documents by hand so that every document keeps the line
//! it starts on, and serde_yaml's own error locations are shifted to file lines.

mod block;
#[cfg(test)]
mod block_tests;
mod convert;
mod document;
mod emit;
mod helm_values;
mod limits;
mod lists;
mod sops_block;
mod yaml11;

pub use document::{dotted, one_line, Document, Step};
pub use helm_values::{go_parse_uint, parse_helm_yaml};
pub use limits::MAX_NESTING;
pub use lists::expand_decrypted;

use crate::problem::Problem;
use convert::{direct, yaml_to_json};
use limits::{check_expansion, deep_flow_line, may_have_aliases, nesting_message};
use lists::expand_lists;
use serde_json::Value;
use std::path::Path;

/// Split `text` into documents and parse each. Empty documents (only comments or blank) are
/// skipped. Problems are returned per document; a bad document does not hide later ones.
pub fn parse_file(file: &Path, text: &str) -> (Vec<Document>, Vec<Problem>) {
    parse_documents(file, text, false)
}

/// [`parse_file`] for what a Helm chart rendered, read as Helm's Kubernetes client reads it
/// (sigs.k8s.io/yaml's non-strict `Unmarshal` over go-yaml v2): a key a mapping repeats takes
/// its last value, where tend refuses it in the files it reads. Charts rely on it
/// (kube-prometheus-stack's `additionalConfig` repeats spec fields to override them), and
/// `helm install` applies them so.
pub fn parse_rendered(file: &Path, text: &str) -> (Vec<Document>, Vec<Problem>) {
    parse_documents(file, text, true)
}

fn parse_documents(file: &Path, text: &str, last_key_wins: bool) -> (Vec<Document>, Vec<Problem>) {
    let mut docs = Vec::new();
    let mut problems = Vec::new();
    for (start_line, chunk) in split_documents(text) {
        let Some(first) = first_content_line(&chunk) else {
            continue;
        };
        let line = start_line + first;
        let mut doc = Document {
            line,
            start_line,
            text: chunk,
            value: Value::Null,
            typed_from_value: false,
            decrypted: false,
            sealed: Vec::new(),
        };
        // What the block reader takes has no tab in its indentation, no alias and no deep
        // nesting (it gives up on all three): the checks below are for what it leaves.
        if let Some((value, yaml_1_1_differs)) = block::parse_noting_yaml_1_1(&doc.text) {
            doc.value = value;
            if yaml_1_1_differs {
                as_yaml_1_1(&mut doc);
            }
            expand_lists(file, doc, 0, &mut docs, &mut problems);
            continue;
        }
        if doc.text.contains('\t') {
            if let Some(tab_line) = leading_tab_line(&doc.text) {
                problems.push(Problem::new(
                    file,
                    start_line + tab_line,
                    "tab character used for indentation; YAML allows only spaces",
                ));
                continue;
            }
        }
        if let Some(deep) = deep_flow_line(&doc.text, MAX_NESTING) {
            problems.push(Problem::new(file, start_line + deep, nesting_message()));
            continue;
        }
        if may_have_aliases(&doc.text) {
            if let Err(e) = check_expansion(&doc.text) {
                problems.push(doc.problem_from(file, &e));
                continue;
            }
        }
        if let Some(value) = sops_block::parse(&doc.text, read).or_else(|| direct(&doc.text)) {
            if !value.is_null() {
                doc.value = value;
                as_yaml_1_1(&mut doc);
                expand_lists(file, doc, 0, &mut docs, &mut problems);
            }
            continue;
        }
        // Rare: what the fast path does not take, through serde_yaml's tree, tracking the
        // path to say where a problem is.
        match serde_yaml::from_str::<serde_yaml::Value>(&doc.text) {
            Ok(yaml) => match yaml_to_json(yaml, &mut Vec::new()) {
                Ok(Value::Null) => continue,
                Ok(value) => {
                    doc.value = value;
                    as_yaml_1_1(&mut doc);
                    expand_lists(file, doc, 0, &mut docs, &mut problems);
                }
                Err((path, msg)) => {
                    problems.push(Problem::new(file, doc.line_at(&path), one_line(&msg)))
                }
            },
            Err(e) => match repeated_keys_last_wins(last_key_wins, &e, &doc.text) {
                Some(Value::Null) => {}
                Some(value) => {
                    // Typed parsing takes the value: the text holds the keys twice.
                    doc.set_value(value);
                    expand_lists(file, doc, 0, &mut docs, &mut problems);
                }
                None => problems.push(doc.problem_from(file, &e)),
            },
        }
    }
    (docs, problems)
}

/// A document that failed only for a repeated mapping key, read with the last value of each
/// key (go-yaml v2's non-strict decoding, YAML 1.1 as there), when that is the rule.
fn repeated_keys_last_wins(rule: bool, error: &serde_yaml::Error, text: &str) -> Option<Value> {
    if !rule || !error.to_string().contains("duplicate entry with key") {
        return None;
    }
    parse_helm_yaml(text).ok()
}

/// The document's value as kubectl, Helm, Flux and Argo CD read it (YAML 1.1, see
/// `yaml11.rs`), where that differs. A SOPS file keeps YAML 1.2: sops reads it so, and its
/// MAC covers the values as sops read them.
fn as_yaml_1_1(doc: &mut Document) {
    let sops = doc.text.starts_with("sops:") || doc.text.contains("\nsops:");
    if sops || !yaml11::may_differ(&doc.text) {
        return;
    }
    if let Ok(value) = parse_helm_yaml(&doc.text) {
        if !value.is_null() {
            doc.set_value(value);
        }
    }
}

/// One document read by the block reader when it takes it (most Kubernetes YAML), else by
/// libyaml's events: the same value either way.
fn read(text: &str) -> Option<Value> {
    block::parse(text).or_else(|| direct(text))
}

/// Parse a small YAML text (an annotation's value) into JSON; `None` if it is not YAML.
pub fn parse_value(text: &str) -> Option<Value> {
    let yaml = serde_yaml::from_str::<serde_yaml::Value>(text).ok()?;
    yaml_to_json(yaml, &mut Vec::new()).ok()
}

/// Split on `---` document markers (and `...` end markers) at column 0, returning each chunk
/// with the 1-based line where it starts. Marker lines are blanked so line numbers hold.
fn split_documents(text: &str) -> Vec<(usize, String)> {
    // Most files hold one document and no marker: taken whole, not line by line.
    let marker = |m: &str| text.starts_with(m) || text.contains(&format!("\n{m}"));
    if !marker("---") && !marker("...") {
        return if text.is_empty() {
            Vec::new()
        } else {
            vec![(1, text.to_string())]
        };
    }
    let mut chunks = Vec::new();
    let mut current = String::new();
    let mut start = 1;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let content = line.trim_end_matches(['\n', '\r']);
        let is_start = content == "---"
            || content.starts_with("--- ")
            || content.starts_with("---\t")
            || content.starts_with("---#");
        let is_end = content == "..." || content.starts_with("... ");
        if is_start || is_end {
            if !current.is_empty() {
                chunks.push((start, std::mem::take(&mut current)));
            }
            start = i + 1;
            if is_start {
                // Keep inline content after the marker (`--- !tag` or `--- {a: 1}`), blanking
                // the marker itself so columns stay put.
                current.push_str("   ");
                current.push_str(&line[3..]);
            } else {
                current.push('\n');
            }
        } else {
            current.push_str(line);
        }
    }
    if !current.is_empty() {
        chunks.push((start, current));
    }
    chunks
}

/// 0-based index of the first line that is neither blank nor a comment.
fn first_content_line(chunk: &str) -> Option<usize> {
    chunk.lines().position(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#') && !t.starts_with('%')
    })
}

/// 0-based index of a line whose indentation contains a tab (outside block scalars we cannot
/// tell cheaply, so only leading tabs before any content are flagged).
fn leading_tab_line(chunk: &str) -> Option<usize> {
    chunk.lines().position(|l| {
        let indent: String = l.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
        indent.contains('\t') && !l.trim().is_empty() && !l.trim_start().starts_with('#')
    })
}

/// Serialize a value as one YAML document (no leading `---`).
pub fn to_yaml(value: &Value) -> String {
    let mut text = String::new();
    push_yaml(&mut text, value);
    text
}

/// [`to_yaml`], appended to `text`: a stream of documents is written into one buffer.
pub fn push_yaml(text: &mut String, value: &Value) {
    // Read back as kubectl reads it (YAML 1.1), a string must stay a string. The writer
    // notes the plain scalars YAML 1.1 reads otherwise; serde_yaml's text is scanned.
    let start = text.len();
    let suspect = match emit::write(value, text) {
        Some(suspect) => suspect,
        None => {
            text.truncate(start);
            match serde_yaml::to_string(value) {
                Ok(written) => text.push_str(&written),
                Err(e) => text.push_str(&format!("# cannot serialize: {e}\n")),
            }
            yaml11::may_differ(&text[start..])
        }
    };
    if suspect {
        let quoted = yaml11::quote_for_yaml_1_1(&text[start..]);
        text.truncate(start);
        text.push_str(&quoted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Vec<Document>, Vec<Problem>) {
        parse_file(Path::new("f.yaml"), text)
    }

    #[test]
    fn a_file_without_markers_is_one_document_and_markers_still_split() {
        assert_eq!(split_documents(""), vec![]);
        assert_eq!(
            split_documents("a: 1\nb: '--- x'\n"),
            vec![(1, "a: 1\nb: '--- x'\n".to_string())]
        );
        assert_eq!(
            split_documents("a: 1\n---\nb: 2\n...\n"),
            vec![
                (1, "a: 1\n".to_string()),
                (2, "   \nb: 2\n".to_string()),
                (4, "\n".to_string())
            ]
        );
        assert_eq!(
            split_documents("---\na: 1\n"),
            vec![(1, "   \na: 1\n".to_string())]
        );
    }

    #[test]
    fn documents_keep_their_lines() {
        let (docs, problems) = parse("# header\na: 1\n---\n\n# c\nb: 2\n---\n---\nc: 3\n");
        assert!(problems.is_empty(), "{problems:?}");
        let lines: Vec<usize> = docs.iter().map(|d| d.line).collect();
        assert_eq!(lines, vec![2, 6, 9]);
        assert_eq!(docs[1].value["b"], 2);
    }

    #[test]
    fn errors_point_at_the_file_line() {
        let (docs, problems) = parse("a: 1\n---\nb: 2\nc: [unclosed\n");
        assert_eq!(docs.len(), 1);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].line >= 4, "{:?}", problems[0]);
    }

    #[test]
    fn duplicate_keys_are_errors() {
        let (_, problems) = parse("a: 1\na: 2\n");
        assert_eq!(problems.len(), 1);
        assert!(problems[0].message.contains("duplicate"), "{}", problems[0]);
        assert_eq!(problems[0].line, 2);
    }

    /// What a chart rendered takes the last value of a repeated key, as sigs.k8s.io/yaml's
    /// `Unmarshal` does ("Last declaration of `a` wins", even over one of another type),
    /// nested too, with YAML 1.1's scalars; other problems stay problems.
    #[test]
    fn rendered_documents_take_the_last_value_of_a_repeated_key() {
        let text = "kind: A\nspec:\n  a: [1, 2]\n  b: yes\n  a: last\n---\nkind: B\nx: 1\nx: 2\n---\na: [\n";
        let (docs, problems) = parse_rendered(Path::new("f.yaml"), text);
        assert_eq!(
            docs.iter().map(|d| d.value.clone()).collect::<Vec<_>>(),
            vec![
                serde_json::json!({"kind": "A", "spec": {"a": "last", "b": true}}),
                serde_json::json!({"kind": "B", "x": 2}),
            ]
        );
        assert_eq!(docs[1].line, 7);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].line, 12);
        let (docs, problems) = parse(text);
        assert_eq!((docs.len(), problems.len()), (0, 3), "{problems:?}");
    }

    #[test]
    fn tabs_are_reported() {
        let (_, problems) = parse("a:\n\tb: 1\n");
        assert_eq!(problems[0].line, 2);
        assert!(problems[0].message.contains("tab"));
    }

    #[test]
    fn inline_document_after_marker() {
        let (docs, problems) = parse("--- {a: 1}\n");
        assert!(problems.is_empty());
        assert_eq!(docs[0].value["a"], 1);
        assert_eq!(docs[0].line, 1);
    }

    #[test]
    fn deep_flow_nesting_is_refused_quickly() {
        let text = format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
        let started = std::time::Instant::now();
        let (docs, problems) = parse(&text);
        assert!(docs.is_empty());
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.contains("nested more than 128"),
            "{}",
            problems[0]
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        let deep = "[".repeat(200);
        for text in [
            format!("a: !tag {deep}\n"),
            format!("a: &anchor {deep}\n"),
            format!("- {deep}\n"),
            format!("? {deep}\n"),
            format!("a:\n  b: [1, {deep}\n"),
            format!("a: {{b: x, c: {deep}\n"),
        ] {
            let (_, problems) = parse(&text);
            assert!(
                problems.len() == 1 && problems[0].message.contains("nested more than 128"),
                "{text}: {problems:?}"
            );
        }
    }

    #[test]
    fn deep_block_nesting_names_its_line() {
        let mut text = String::new();
        for i in 0..200 {
            text.push_str(&format!("{}k{i}:\n", "  ".repeat(i)));
        }
        let (_, problems) = parse(&text);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.contains("nested more than 128"),
            "{}",
            problems[0]
        );
        assert!(problems[0].line > 100, "{}", problems[0]);
    }

    #[test]
    fn brackets_in_block_scalars_quotes_and_comments_do_not_count() {
        let inner = "[".repeat(300);
        let text = format!(
            "a: |\n  {inner}\n  more {inner}\nb: \"{inner}\"\nc: '{inner}'\n# {inner}\nd: x{inner}\ne: [1, [2, {{f: 3}}]]\n"
        );
        let (docs, problems) = parse(&text);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(docs[0].value["e"][1][1]["f"], 3);
    }

    #[test]
    fn alias_bombs_are_refused() {
        // Exponential: nine levels of nine aliases.
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x]\n");
        let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"];
        for w in names.windows(2) {
            let refs = vec![format!("*{}", w[0]); 9].join(", ");
            text.push_str(&format!("{}: &{} [{refs}]\n", w[1], w[1]));
        }
        let (_, problems) = parse(&text);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.contains("billion laughs"),
            "{}",
            problems[0]
        );

        // Linear: one large string repeated (within serde_yaml's own repetition limit).
        let big = "x".repeat(1 << 20);
        let mut text = format!("a: &a \"{big}\"\nb: [");
        text.push_str(&"*a, ".repeat(100));
        text.push_str("]\n");
        let started = std::time::Instant::now();
        let (_, problems) = parse(&text);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.contains("more than 16 MiB"),
            "{}",
            problems[0]
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn modest_aliases_are_fine() {
        let (docs, problems) =
            parse("base: &labels {app: web, tier: front}\nmetadata:\n  labels: *labels\n");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(docs[0].value["metadata"]["labels"]["tier"], "front");
    }

    #[test]
    fn clear_messages_for_odd_input() {
        let (_, p) = parse("a: *nowhere\n");
        assert!(p[0].message.contains("anchor"), "{}", p[0]);
        let (_, p) = parse("a:\n  b: 123456789012345678901234567890\n");
        assert_eq!(p[0].line, 2);
        assert!(
            p[0].message.starts_with("a.b: integer is too large"),
            "{}",
            p[0]
        );
        assert!(!p[0].message.contains("1234567890"), "{}", p[0]);
        let (_, p) = parse("a:\n  ? [x, y]\n  : z\n");
        assert_eq!(p[0].line, 1);
        assert!(p[0].message.contains("is not a string"), "{}", p[0]);
        assert!(!p[0].message.contains('\n'));
        let (_, p) = parse("a: 1\nb: x\u{7}y\n");
        assert_eq!(p[0].line, 2, "{}", p[0]);
        assert_eq!(p[0].message, "control characters are not allowed");
    }

    #[test]
    fn line_at_follows_keys_and_indexes() {
        let text = "kind: X\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n        image: x\n      - name: b\n        ports:\n          - containerPort: 80\n          - containerPort: http\n";
        let (docs, _) = parse(text);
        let path = |steps: &[&str]| -> Vec<Step> {
            steps
                .iter()
                .map(|s| match s.parse::<usize>() {
                    Ok(i) => Step::Index(i),
                    Err(_) => Step::Key(s.to_string()),
                })
                .collect()
        };
        let d = &docs[0];
        assert_eq!(
            d.line_at(&path(&["spec", "template", "spec", "containers"])),
            5
        );
        assert_eq!(
            d.line_at(&path(&["spec", "template", "spec", "containers", "1"])),
            8
        );
        assert_eq!(
            d.line_at(&path(&[
                "spec",
                "template",
                "spec",
                "containers",
                "1",
                "ports",
                "1",
                "containerPort"
            ])),
            11
        );
        assert_eq!(
            d.line_at(&path(&[
                "spec",
                "template",
                "spec",
                "containers",
                "0",
                "image"
            ])),
            7
        );
        // Flow style: the deepest block node found.
        let (docs, _) = parse("a:\n  b: {c: [1, 2]}\n");
        assert_eq!(docs[0].line_at(&path(&["a", "b", "c", "1"])), 2);
        assert_eq!(dotted(&path(&["a", "b", "0", "c"])), "a.b[0].c");
    }

    #[test]
    fn lists_expand_into_items_at_their_lines() {
        let text = "# c\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleList\nitems:\n- apiVersion: rbac.authorization.k8s.io/v1\n  kind: Role\n  metadata:\n    name: a\n\n  # between\n- metadata:\n    name: b\n    labels:\n      x: |\n        - not an item\n-\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\nmetadata: {}\n";
        let (docs, problems) = parse(text);
        assert!(problems.is_empty(), "{problems:?}");
        let lines: Vec<usize> = docs.iter().map(|d| d.line).collect();
        assert_eq!(lines, vec![5, 11, 16]);
        // Inherited from the typed list.
        assert_eq!(docs[1].value["kind"], "Role");
        assert_eq!(docs[1].value["apiVersion"], "rbac.authorization.k8s.io/v1");
        assert_eq!(docs[2].value["kind"], "ConfigMap");
        // Lines inside an item point into the file.
        let name = vec!["metadata".to_string(), "name".to_string()];
        assert_eq!(docs[0].line_of(&name), 8);
        assert_eq!(docs[2].line_of(&["apiVersion".to_string()]), 17);
        #[derive(serde::Deserialize)]
        struct Named {
            metadata: serde_json::Map<String, Value>,
        }
        let typed: Named = docs[0].parse_typed(Path::new("f.yaml")).unwrap();
        assert_eq!(typed.metadata["name"], "a");
    }

    #[test]
    fn list_shapes() {
        // JSON: each item at the line it starts on.
        let (docs, _) = parse("{\"kind\": \"List\", \"apiVersion\": \"v1\",\n \"items\": [\n  {\"kind\": \"A\", \"s\": \"[{,\\\"\"},\n  {\"kind\": \"B\"}]}\n");
        assert_eq!(docs.iter().map(|d| d.line).collect::<Vec<_>>(), vec![3, 4]);
        // Empty and absent items; a kind that only ends in List is not a list.
        let (docs, problems) =
            parse("kind: List\nitems: []\n---\nkind: List\n---\nkind: AllowList\nspec: {}\n");
        assert!(problems.is_empty());
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].value["kind"], "AllowList");
        let (_, problems) = parse("kind: List\nitems: nope\n");
        assert_eq!(problems[0].line, 2);
        assert!(problems[0].message.contains("sequence"), "{}", problems[0]);
    }

    #[test]
    fn line_of_nested_key() {
        let (docs, _) = parse("---\nkind: X\nspec:\n  a: 1\n  eagerness: 200\n");
        let path = vec!["spec".to_string(), "eagerness".to_string()];
        assert_eq!(docs[0].line_of(&path), 5);
    }
}
