//! What tend leaves out of a chart's rendered templates: chart tests, deletion and
//! rollback hooks (`helm template --skip-tests` leaves out tests; tend never runs the
//! others), and whether a template holds the pre-install hooks that move a release's
//! objects a wave later.

use crate::helm::hooks::{self, Hook, When};
use crate::yaml;

/// The text with the documents tend never runs blanked out (chart tests, deletion and
/// rollback hooks; lines kept, so the lines of the others hold), and a note for each of the
/// hooks among them.
pub(super) fn without_left_out(text: &str, template: &str, notes: &mut Vec<String>) -> String {
    // Most templates hold no hook, and their text is nearly in the shape the blanking
    // gives (a big chart's is megabytes, CRDs among them): taken as it is.
    if !text.contains("helm.sh/hook") {
        if let Some(shaped) = in_shape(text) {
            return shaped;
        }
    }
    blanked(text, template, notes)
}

/// What [`blanked`] gives of `text` when it leaves nothing out, where that is `text` with a
/// final `\n` (no `\r`, no `---` line with trailing blanks); `None` otherwise.
fn in_shape(text: &str) -> Option<String> {
    if text.contains('\r') {
        return None;
    }
    let mut marker_lines = text
        .starts_with("---")
        .then_some(0)
        .into_iter()
        .chain(text.match_indices("\n---").map(|(at, _)| at + 1));
    let markers_bare = marker_lines.all(|at| {
        let line = text[at..].split('\n').next().unwrap_or("");
        line == "---" || line.trim_end() != "---"
    });
    if !markers_bare {
        return None;
    }
    let mut shaped = String::with_capacity(text.len() + 1);
    shaped.push_str(text);
    if !(text.is_empty() || text.ends_with('\n')) {
        shaped.push('\n');
    }
    Some(shaped)
}

fn blanked(text: &str, template: &str, notes: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut doc: Vec<&str> = Vec::new();
    let mut flush = |doc: &mut Vec<&str>, out: &mut String| {
        let body = doc.join("\n");
        // Only hooks are left out: a document without Helm's hook annotation stays as is.
        let value = if body.contains("helm.sh/hook") {
            rendered_value(&body)
        } else {
            None
        };
        let left_out = match value.as_ref().map(hooks::classify) {
            Some(Hook::LeftOut(why)) => {
                if !value.as_ref().is_some_and(hooks::is_test) {
                    let value = value.as_ref().unwrap_or(&serde_json::Value::Null);
                    let field = |p: &str| value.pointer(p).and_then(|v| v.as_str()).unwrap_or("");
                    notes.push(format!(
                        "{} {} ({template}) is {why}: left out",
                        field("/kind"),
                        field("/metadata/name")
                    ));
                }
                true
            }
            _ => false,
        };
        for line in doc.iter() {
            if !left_out {
                out.push_str(line);
            }
            out.push('\n');
        }
        doc.clear();
    };
    for line in text.lines() {
        if line.trim_end() == "---" {
            flush(&mut doc, &mut out);
            out.push_str("---\n");
        } else {
            doc.push(line);
        }
    }
    flush(&mut doc, &mut out);
    out
}

/// A rendered document's value; one that repeats a key takes its last value, as Helm reads
/// hooks (sigs.k8s.io/yaml) and as `yaml::parse_rendered` reads it afterwards.
fn rendered_value(doc: &str) -> Option<serde_json::Value> {
    yaml::parse_value(doc).or_else(|| yaml::parse_helm_yaml(doc).ok())
}

/// Whether a rendered template holds a pre-install/pre-upgrade Job or Pod.
pub(super) fn pre_hook_jobs(text: &str) -> bool {
    text.contains("helm.sh/hook")
        && text.split("\n---").any(|doc| {
            rendered_value(doc).is_some_and(|v| {
                matches!(
                    hooks::classify(&v),
                    Hook::Run {
                        when: When::Before,
                        ..
                    }
                )
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts taken as they are come out of the blanking the same.
    #[test]
    fn texts_in_shape_are_what_blanking_gives() {
        let texts = [
            "",
            "\n",
            "a: 1\n",
            "a: 1",
            "---\na: 1\n---\nb: 2\n",
            "--- \na: 1\n",
            "a: 1\n---\t\nb: 2\n",
            "a: 1\n--- # c\n",
            "a: 1\n---x\n",
            "a: 1\r\nb: 2\n",
            "a: 1\rb\n",
            "a: 1\n---",
            "a: |\n  ---\n  text\n",
            "a: 1\n\n\n---\n",
        ];
        let mut taken = 0;
        for text in texts {
            let mut notes = Vec::new();
            let blank = blanked(text, "t", &mut notes);
            if let Some(shaped) = in_shape(text) {
                assert_eq!(shaped, blank, "{text:?}");
                taken += 1;
            }
            assert_eq!(without_left_out(text, "t", &mut notes), blank, "{text:?}");
        }
        assert_eq!(taken, 10);
        assert!(in_shape("a: 1\n--- \n").is_none());
    }
}
