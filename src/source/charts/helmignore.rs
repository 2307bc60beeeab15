//! `.helmignore`, with Helm's own rules (helm/helm `pkg/ignore`), which are not gitignore's:
//! Go's `filepath.Match` globs, a pattern without `/` matches the base name, one with `/`
//! the whole path, a trailing `/` only directories, `**` is refused, the first matching
//! rule decides, and a `!` rule ignores every path it does *not* match.

/// The file's name, in a chart's root.
pub const FILE: &str = ".helmignore";

struct Pattern {
    glob: Glob,
    negate: bool,
    must_dir: bool,
    /// Matches the base name only (no `/` in the pattern).
    base_only: bool,
}

pub struct Rules {
    patterns: Vec<Pattern>,
}

impl Default for Rules {
    /// Helm's defaults: dotfiles in `templates/` are ignored.
    fn default() -> Self {
        let mut rules = Rules {
            patterns: Vec::new(),
        };
        rules.add("templates/.?*");
        rules
    }
}

impl Rules {
    /// The rules of a `.helmignore` (after the defaults), or the 1-based line of a bad one.
    pub fn parse(text: &str) -> Result<Rules, (usize, String)> {
        let mut rules = Rules::default();
        for (i, line) in text.lines().enumerate() {
            let rule = line.trim();
            if rule.is_empty() || rule.starts_with('#') {
                continue;
            }
            if rule.contains("**") {
                return Err((
                    i + 1,
                    format!("{rule:?}: double-star (**) syntax is not supported by Helm's .helmignore; write one pattern per directory level"),
                ));
            }
            if !valid_glob(rule) {
                return Err((
                    i + 1,
                    format!("{rule:?} is not a valid pattern (syntax error in pattern)"),
                ));
            }
            rules.add(rule);
        }
        Ok(rules)
    }

    fn add(&mut self, rule: &str) {
        let (negate, rule) = match rule.strip_prefix('!') {
            Some(r) => (true, r),
            None => (false, rule),
        };
        let (must_dir, rule) = match rule.strip_suffix('/') {
            Some(r) => (true, r),
            None => (false, rule),
        };
        let base_only = !rule.contains('/');
        self.patterns.push(Pattern {
            // Helm trims one leading `/`: `//x` matches no path.
            glob: Glob::compile(rule.strip_prefix('/').unwrap_or(rule)),
            negate,
            must_dir,
            base_only,
        });
    }

    /// Whether `path` (relative to the chart, `/`-separated) is ignored.
    pub fn ignore(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." || path == "./" {
            return false;
        }
        let base = path.rfind('/').map_or(path, |slash| &path[slash + 1..]);
        for p in &self.patterns {
            let name = if p.base_only { base } else { path };
            if p.negate {
                if (p.must_dir && !is_dir) || !p.glob.matches(name) {
                    return true;
                }
                continue;
            }
            if p.must_dir && !is_dir {
                continue;
            }
            if p.glob.matches(name) {
                return true;
            }
        }
        false
    }
}

fn valid_glob(pattern: &str) -> bool {
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.next().is_none() => return false,
            '[' => {
                let mut closed = false;
                let mut first = true;
                for c in chars.by_ref() {
                    if c == ']' && !first {
                        closed = true;
                        break;
                    }
                    first = c == '^' && first;
                }
                if !closed {
                    return false;
                }
            }
            _ => {}
        }
    }
    true
}

/// A glob compiled once, as every path of a chart is matched against every rule: most
/// rules are a name (`OWNERS`, `.git`) or a suffix after one `*` (`*.bak`), which need no
/// general matching, and the rest are matched without allocating when the glob and the path
/// are ASCII (where bytes and characters are the same thing).
enum Glob {
    /// No `*`, `?`, `[` or `\`: only the very name matches.
    Literal(String),
    /// `*` then a literal: a name without `/` ending with it.
    StarSuffix(String),
    General {
        text: String,
        chars: Vec<char>,
    },
}

impl Glob {
    fn compile(glob: &str) -> Glob {
        let special = |s: &str| s.contains(['*', '?', '[', '\\']);
        if !special(glob) {
            return Glob::Literal(glob.to_string());
        }
        match glob.strip_prefix('*') {
            Some(tail) if !special(tail) && !tail.contains('/') => {
                Glob::StarSuffix(tail.to_string())
            }
            _ => Glob::General {
                text: glob.to_string(),
                chars: glob.chars().collect(),
            },
        }
    }

    fn matches(&self, name: &str) -> bool {
        match self {
            Glob::Literal(literal) => name == literal,
            Glob::StarSuffix(tail) => name.ends_with(tail.as_str()) && !name.contains('/'),
            Glob::General { text, chars } => {
                if text.is_ascii() && name.is_ascii() {
                    return matches(text.as_bytes(), name.as_bytes());
                }
                let name: Vec<char> = name.chars().collect();
                matches(chars, &name)
            }
        }
    }
}

/// Go's `filepath.Match` (Unix): `*` and `?` never match `/`, `[a-z]`/`[^...]` classes,
/// `\` escapes. Over characters, as written: what [`Glob`] must agree with.
#[cfg(test)]
fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    matches(&p, &n)
}

/// [`glob_match`] over characters, or over bytes where both sides are ASCII.
fn matches<C: Copy + Into<char>>(p: &[C], n: &[C]) -> bool {
    let at = |s: &[C], i: usize| -> Option<char> { s.get(i).map(|&c| c.into()) };
    match at(p, 0) {
        None => n.is_empty(),
        Some('*') => {
            let rest = &p[1..];
            for i in 0..=n.len() {
                if matches(rest, &n[i..]) {
                    return true;
                }
                if at(n, i) == Some('/') {
                    return false;
                }
            }
            false
        }
        Some('?') => !matches!(at(n, 0), None | Some('/')) && matches(&p[1..], &n[1..]),
        Some('[') => {
            let c = match at(n, 0) {
                None | Some('/') => return false,
                Some(c) => c,
            };
            let mut i = 1;
            let negated = at(p, 1) == Some('^');
            if negated {
                i += 1;
            }
            let mut found = false;
            let mut first = true;
            while let Some(pc) = at(p, i).filter(|&pc| pc != ']' || first) {
                first = false;
                let lo = match at(p, i + 1) {
                    Some(escaped) if pc == '\\' => {
                        i += 1;
                        escaped
                    }
                    _ => pc,
                };
                match (at(p, i + 1), at(p, i + 2)) {
                    (Some('-'), Some(hi)) if hi != ']' => {
                        found |= lo <= c && c <= hi;
                        i += 3;
                    }
                    _ => {
                        found |= lo == c;
                        i += 1;
                    }
                }
            }
            if i >= p.len() || found == negated {
                return false;
            }
            matches(&p[i + 1..], &n[1..])
        }
        Some('\\') if p.len() > 1 => {
            at(n, 0).is_some() && at(n, 0) == at(p, 1) && matches(&p[2..], &n[1..])
        }
        Some(c) => at(n, 0) == Some(c) && matches(&p[1..], &n[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_as_go_matches_them() {
        assert!(glob_match("*.txt", "a.txt"));
        assert!(!glob_match("*.txt", "d/a.txt"));
        assert!(glob_match("d/*.txt", "d/a.txt"));
        assert!(glob_match("a?c", "abc"));
        assert!(glob_match("[a-c]x", "bx"));
        assert!(!glob_match("[^a-c]x", "bx"));
        assert!(glob_match(".?*", ".git"));
        assert!(!glob_match(".?*", "."));
    }

    /// The matcher as it was before it was compiled and made generic, kept to compare.
    fn reference(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => {
                let rest = &p[1..];
                for i in 0..=n.len() {
                    if reference(rest, &n[i..]) {
                        return true;
                    }
                    if i < n.len() && n[i] == '/' {
                        return false;
                    }
                }
                false
            }
            Some('?') => !n.is_empty() && n[0] != '/' && reference(&p[1..], &n[1..]),
            Some('[') => {
                let Some(&c) = n.first() else { return false };
                if c == '/' {
                    return false;
                }
                let mut i = 1;
                let negated = p.get(1) == Some(&'^');
                if negated {
                    i += 1;
                }
                let mut found = false;
                let mut first = true;
                while i < p.len() && (p[i] != ']' || first) {
                    first = false;
                    let lo = if p[i] == '\\' && i + 1 < p.len() {
                        i += 1;
                        p[i]
                    } else {
                        p[i]
                    };
                    if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
                        if lo <= c && c <= p[i + 2] {
                            found = true;
                        }
                        i += 3;
                    } else {
                        if lo == c {
                            found = true;
                        }
                        i += 1;
                    }
                }
                if i >= p.len() || found == negated {
                    return false;
                }
                reference(&p[i + 1..], &n[1..])
            }
            Some('\\') if p.len() > 1 => {
                !n.is_empty() && n[0] == p[1] && reference(&p[2..], &n[1..])
            }
            Some(&c) => !n.is_empty() && n[0] == c && reference(&p[1..], &n[1..]),
        }
    }

    /// The compiled forms (a name, a suffix, bytes for ASCII) match as the general
    /// matcher over characters does.
    #[test]
    fn compiled_globs_match_as_the_general_matcher() {
        let globs = [
            "OWNERS",
            ".git",
            "*.bak",
            "*~",
            "*",
            "*.",
            "kube-prometheus-*.tgz",
            "ci/*.yaml",
            "templates/.?*",
            "a?c",
            "[a-c]x",
            "[^a-c]x",
            "[\\]]x",
            "\\*x",
            "*é",
            "é?",
            "[é-ü]",
            "d/*",
            "*/*.txt",
            "x*y*z",
            "[a-]",
            "ci/x.yaml",
        ];
        let names = [
            "",
            "OWNERS",
            "x.bak",
            ".bak",
            "d/x.bak",
            "a~",
            "~",
            "kube-prometheus-1.tgz",
            "kube-prometheus-a/b.tgz",
            "ci/a.yaml",
            "ci/d/a.yaml",
            "templates/.x",
            "templates/.",
            "abc",
            "a/c",
            "bx",
            "]x",
            "*x",
            "ax",
            "é",
            "aé",
            "éa",
            "ö",
            "d/é",
            "d/x.txt",
            "xyz",
            "x/y/z",
            "xaybz",
            "-",
            "ci/x.yaml",
            "ci/x.yamL",
            ".git",
        ];
        for glob in globs {
            let compiled = Glob::compile(glob);
            for name in names {
                let chars = |s: &str| s.chars().collect::<Vec<char>>();
                let expected = reference(&chars(glob), &chars(name));
                assert_eq!(compiled.matches(name), expected, "{glob} {name}");
                assert_eq!(glob_match(glob, name), expected, "{glob} {name}");
            }
        }
    }

    #[test]
    fn helm_rules() {
        let rules = Rules::parse("# comment\n*.bak\nsecrets/\n/top.txt\nci/*.yaml\n").unwrap();
        assert!(rules.ignore("x.bak", false));
        assert!(rules.ignore("templates/x.bak", false));
        assert!(rules.ignore("secrets", true));
        assert!(!rules.ignore("secrets", false));
        assert!(rules.ignore("top.txt", false));
        assert!(rules.ignore("ci/a.yaml", false));
        assert!(!rules.ignore("ci/sub/a.yaml", false));
        assert!(rules.ignore("templates/.hidden.yaml", false));
        assert!(!rules.ignore("templates/a.yaml", false));
        assert!(Rules::parse("a/**/b\n").is_err_and(|(line, _)| line == 1));
        // Helm's `!` rule: every path it does not match is ignored.
        let negated = Rules::parse("!keep.txt\n").unwrap();
        assert!(negated.ignore("other.txt", false));
        assert!(!negated.ignore("keep.txt", false));
        // Helm trims one leading `/` only.
        let rooted = Rules::parse("//top.txt\n/sub/a.txt\n").unwrap();
        assert!(!rooted.ignore("top.txt", false));
        assert!(rooted.ignore("sub/a.txt", false));
    }
}
