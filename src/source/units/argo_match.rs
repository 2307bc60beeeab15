//! Matching as Argo CD does it: Kubernetes label selectors (`matchLabels`,
//! `matchExpressions`) over a generator's flattened parameters or a cluster's labels, Go's
//! `path.Match` (the git directory generator, `directory.include`/`exclude`) and git's
//! pathspec globs (the git file generator's `git ls-files -- PATTERN`). Pure.

use serde_json::Value as Json;
use std::collections::BTreeMap;

/// A parsed `metav1.LabelSelector`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selector {
    requirements: Vec<(String, Operator, Vec<String>)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl Selector {
    /// `matchLabels` and `matchExpressions` of `selector`; an empty selector matches all.
    pub fn parse(selector: &Json) -> Result<Selector, String> {
        let mut requirements = Vec::new();
        if let Some(labels) = selector.get("matchLabels").and_then(Json::as_object) {
            for (k, v) in labels {
                let value = scalar(v).ok_or_else(|| format!("matchLabels.{k} must be a string"))?;
                requirements.push((k.clone(), Operator::In, vec![value]));
            }
        }
        for e in selector
            .get("matchExpressions")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            let key = e
                .get("key")
                .and_then(Json::as_str)
                .ok_or("matchExpressions: every expression needs a key")?;
            let op = match e.get("operator").and_then(Json::as_str) {
                Some("In") => Operator::In,
                Some("NotIn") => Operator::NotIn,
                Some("Exists") => Operator::Exists,
                Some("DoesNotExist") => Operator::DoesNotExist,
                other => {
                    return Err(format!(
                        "matchExpressions: operator {other:?} of key {key} is not In, NotIn, \
                         Exists or DoesNotExist"
                    ))
                }
            };
            let values: Vec<String> = e
                .get("values")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .filter_map(scalar)
                .collect();
            match op {
                Operator::In | Operator::NotIn if values.is_empty() => {
                    return Err(format!(
                        "matchExpressions: key {key}: values must be non-empty for {op:?}"
                    ))
                }
                Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                    return Err(format!(
                        "matchExpressions: key {key}: values must be empty for {op:?}"
                    ))
                }
                _ => {}
            }
            requirements.push((key.to_string(), op, values));
        }
        Ok(Selector { requirements })
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|(key, op, values)| {
            let value = labels.get(key);
            match op {
                Operator::In => value.is_some_and(|v| values.contains(v)),
                Operator::NotIn => value.is_none_or(|v| !values.contains(v)),
                Operator::Exists => value.is_some(),
                Operator::DoesNotExist => value.is_none(),
            }
        })
    }
}

fn scalar(v: &Json) -> Option<String> {
    match v {
        Json::String(s) => Some(s.clone()),
        Json::Bool(b) => Some(b.to_string()),
        Json::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A parameter set flattened with dots (`metadata.labels.env`, list items by index) and
/// every value printed as Go's `%v` does: what an ApplicationSet's generator `selector`
/// matches.
pub fn flatten(params: &serde_json::Map<String, Json>) -> BTreeMap<String, String> {
    fn walk(prefix: &str, v: &Json, out: &mut BTreeMap<String, String>) {
        let key = |k: &str| {
            if prefix.is_empty() {
                k.to_string()
            } else {
                format!("{prefix}.{k}")
            }
        };
        match v {
            Json::Object(m) if !m.is_empty() => {
                for (k, v) in m {
                    walk(&key(k), v, out);
                }
            }
            Json::Array(a) if !a.is_empty() => {
                for (i, v) in a.iter().enumerate() {
                    walk(&key(&i.to_string()), v, out);
                }
            }
            Json::String(s) => {
                out.insert(prefix.to_string(), s.clone());
            }
            Json::Null => {
                out.insert(prefix.to_string(), "<nil>".into());
            }
            Json::Object(_) => {
                out.insert(prefix.to_string(), "map[]".into());
            }
            Json::Array(_) => {
                out.insert(prefix.to_string(), "[]".into());
            }
            other => {
                out.insert(prefix.to_string(), other.to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    for (k, v) in params {
        walk(k, v, &mut out);
    }
    out
}

/// Go's `path.Match`: `*` any run of characters but `/`, `?` one such character, `[...]`
/// a class (`^` or `!` negates, ranges), `\` escapes. A malformed pattern matches nothing.
pub fn path_match(pattern: &str, name: &str) -> bool {
    glob(pattern.as_bytes(), name.as_bytes(), false)
}

/// git's pathspec glob (fnmatch without `FNM_PATHNAME`), as `git ls-files -- PATTERN`
/// reads it: `*` crosses `/`; a pattern without wildcards also names a directory's files.
pub fn pathspec_match(pattern: &str, name: &str) -> bool {
    let pattern = pattern.trim_start_matches("./");
    if !pattern.contains(['*', '?', '[']) {
        let dir = pattern.trim_end_matches('/');
        return name == dir || name.starts_with(&format!("{dir}/")) || dir.is_empty();
    }
    glob(pattern.as_bytes(), name.as_bytes(), true)
}

fn glob(p: &[u8], s: &[u8], star_crosses_slash: bool) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut back: Option<(usize, usize)> = None;
    while si < s.len() {
        let step = match p.get(pi) {
            Some(b'*') => {
                pi += 1;
                back = Some((pi, si));
                continue;
            }
            Some(b'?') if s[si] != b'/' || star_crosses_slash => Some(pi + 1),
            Some(b'[') => class(p, pi, s[si]).and_then(|(ok, next)| ok.then_some(next)),
            Some(b'\\') if p.get(pi + 1) == Some(&s[si]) => Some(pi + 2),
            Some(&c) if c != b'\\' && c != b'?' && c == s[si] => Some(pi + 1),
            _ => None,
        };
        match step {
            Some(next) => {
                pi = next;
                si += 1;
            }
            None => match back {
                Some((bp, bs)) if star_crosses_slash || s[bs] != b'/' => {
                    back = Some((bp, bs + 1));
                    pi = bp;
                    si = bs + 1;
                }
                _ => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// A `[...]` class at `p[start]` against `c`: whether it matches and where the pattern
/// goes on; `None` when malformed.
fn class(p: &[u8], start: usize, c: u8) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negated = matches!(p.get(i), Some(b'^' | b'!'));
    if negated {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let lo = *p.get(i)?;
        if lo == b']' && !first {
            i += 1;
            break;
        }
        first = false;
        let lo = if lo == b'\\' {
            i += 1;
            *p.get(i)?
        } else {
            lo
        };
        i += 1;
        let hi = if p.get(i) == Some(&b'-') && p.get(i + 1).is_some_and(|&h| h != b']') {
            i += 2;
            p[i - 1]
        } else {
            lo
        };
        if lo <= c && c <= hi {
            matched = true;
        }
    }
    Some((matched != negated && c != b'/', i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selectors_match_labels_and_expressions() {
        let s = Selector::parse(&json!({
            "matchLabels": {"environment": "staging"},
            "matchExpressions": [
                {"key": "akuity.io/argo-cd-cluster-name", "operator": "NotIn", "values": ["in-cluster"]},
                {"key": "enable_x", "operator": "In", "values": ["true"]},
                {"key": "aws_cluster_name", "operator": "DoesNotExist"},
            ]
        }))
        .unwrap();
        assert!(s.matches(&labels(&[("environment", "staging"), ("enable_x", "true")])));
        assert!(!s.matches(&labels(&[("environment", "prod"), ("enable_x", "true")])));
        assert!(!s.matches(&labels(&[
            ("environment", "staging"),
            ("enable_x", "true"),
            ("aws_cluster_name", "a")
        ])));
        assert!(Selector::parse(&json!({})).unwrap().matches(&labels(&[])));
        assert!(Selector::parse(
            &json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})
        )
        .is_err());
    }

    #[test]
    fn parameters_flatten_with_dots() {
        let p = json!({"a": {"b": "c", "n": 1}, "l": ["x"], "e": {}});
        let flat = flatten(p.as_object().unwrap());
        assert_eq!(flat["a.b"], "c");
        assert_eq!(flat["a.n"], "1");
        assert_eq!(flat["l.0"], "x");
        assert_eq!(flat["e"], "map[]");
    }

    #[test]
    fn path_match_is_gos() {
        assert!(path_match("apps/*", "apps/web"));
        assert!(!path_match("apps/*", "apps/web/sub"));
        assert!(path_match("apps/[a-c]?b", "apps/bxb"));
        assert!(!path_match("apps/[^a-c]*", "apps/b"));
        assert!(path_match("*", "exclude"));
        assert!(path_match("a\\*b", "a*b"));
    }

    #[test]
    fn pathspecs_cross_slashes() {
        assert!(pathspec_match(
            "clusters/*/config.json",
            "clusters/a/b/config.json"
        ));
        assert!(pathspec_match("**/config.yaml", "x/y/config.yaml"));
        assert!(pathspec_match("clusters", "clusters/a.json"));
        assert!(!pathspec_match("clusters/*.json", "other/a.json"));
    }
}
