//! Lorem ipsum, for ipsum mode: the text that replaces a ConfigMap's values, about as long as
//! each old value, from a seeded [`Rng`] so a pass can be repeated.

use super::rng::Rng;
use serde_json::{Map, Value};

/// New values for a ConfigMap's `data`: same keys, in the same order, each value lorem
/// ipsum of about its old length (keeping a trailing newline, and line breaks for
/// multi-line values). Keys are processed in sorted order, so the text does not depend on
/// the order the server lists them in.
pub(super) fn ipsum_data(old: &Map<String, Value>, rng: &mut Rng) -> Map<String, Value> {
    let mut sorted: Vec<&String> = old.keys().collect();
    sorted.sort();
    let mut generated = std::collections::HashMap::new();
    for key in sorted {
        let value = old[key].as_str().unwrap_or("");
        let target = value.chars().count();
        let mut text = lorem_ipsum(rng, target);
        if value.contains('\n') {
            text = wrap(&text, 72);
        }
        if value.ends_with('\n') {
            text.push('\n');
        }
        generated.insert(key.clone(), text);
    }
    old.keys()
        .map(|k| {
            (
                k.clone(),
                Value::String(generated.remove(k).unwrap_or_default()),
            )
        })
        .collect()
}

const WORDS: [&str; 64] = [
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
    "enim",
    "ad",
    "minim",
    "veniam",
    "quis",
    "nostrud",
    "exercitation",
    "ullamco",
    "laboris",
    "nisi",
    "aliquip",
    "ex",
    "ea",
    "commodo",
    "consequat",
    "duis",
    "aute",
    "irure",
    "in",
    "reprehenderit",
    "voluptate",
    "velit",
    "esse",
    "cillum",
    "fugiat",
    "nulla",
    "pariatur",
    "excepteur",
    "sint",
    "occaecat",
    "cupidatat",
    "non",
    "proident",
    "sunt",
    "culpa",
    "qui",
    "officia",
    "deserunt",
    "mollit",
    "anim",
    "id",
    "est",
    "laborum",
    "blandit",
    "volutpat",
];

/// Lorem ipsum text of about `target` characters (at least "Lorem ipsum."; it overshoots by
/// at most one word). Starts "Lorem ipsum", then sentences of random words.
pub fn lorem_ipsum(rng: &mut Rng, target: usize) -> String {
    let mut text = String::from("Lorem ipsum");
    let mut sentence_words = 2;
    let mut sentence_len = 4 + rng.below(9) as usize;
    while text.chars().count() + 1 < target {
        let word = WORDS[rng.below(WORDS.len() as u64) as usize];
        if sentence_words >= sentence_len {
            text.push_str(". ");
            text.push_str(&capitalize(word));
            sentence_words = 1;
            sentence_len = 4 + rng.below(9) as usize;
        } else {
            text.push(' ');
            text.push_str(word);
            sentence_words += 1;
        }
    }
    text.push('.');
    text
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Break text into lines of at most `width` characters at spaces.
fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line_len = 0;
    for word in text.split(' ') {
        if line_len > 0 && line_len + 1 + word.len() > width {
            out.push('\n');
            line_len = 0;
        } else if line_len > 0 {
            out.push(' ');
            line_len += 1;
        }
        out.push_str(word);
        line_len += word.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lorem_ipsum_has_about_the_old_length() {
        let mut rng = Rng::new(11);
        for target in [0, 1, 5, 12, 40, 200, 5000] {
            let text = lorem_ipsum(&mut rng, target);
            let len = text.chars().count();
            assert!(len >= target.min(12), "{target}: {text:?}");
            assert!(len <= target.max(12) + 15, "{target}: {len}");
            assert!(text.starts_with("Lorem ipsum") && text.ends_with('.'));
            let words = text.split([' ', '.']).filter(|w| !w.is_empty());
            for word in words {
                assert!(WORDS.contains(&word.to_lowercase().as_str()), "{word}");
            }
        }
    }
}
