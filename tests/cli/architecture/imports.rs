//! The import graph between the files of `src/`: which file each `crate::`, `super::`,
//! `self::` or child-module path (in `use` trees, globs included, and in code) lands in.
//! A path lands in the deepest module file it names; items and inline modules stay with
//! their file. Code after a file's first `#[cfg(test)]`, comments and string literals are
//! left out: tests may look anywhere, the code must flow one way.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module's path below the crate root: `src/kinds/copy_rule/copy_view.rs` is `kinds::copy_rule::copy_view`,
/// `src/kinds/mod.rs` is `kinds`, `src/lib.rs` is the root (empty).
type ModulePath = Vec<String>;

/// Every file of `src/` (relative to it, e.g. `kinds/run.rs`) and the files it imports from.
pub type FileGraph = BTreeMap<String, BTreeSet<String>>;

pub fn file_graph(src: &Path) -> FileGraph {
    let mut files = Vec::new();
    super::rust_files(src, &mut files);
    let mut crate_files = CrateFiles::default();
    for file in &files {
        let relative = file.strip_prefix(src).expect("under src").to_path_buf();
        let Some(module) = module_path(&relative) else {
            continue;
        };
        let name = slash_path(&relative);
        let code = code_without_comments_and_strings(&super::code_before_tests(file));
        crate_files
            .files
            .insert(module.clone(), (name, FileImports::read(&code)));
    }
    let mut graph = FileGraph::new();
    for (module, (file, imports)) in &crate_files.files {
        let targets = graph.entry(file.clone()).or_default();
        for path in &imports.paths {
            if let Some(target) = crate_files.landing_file(module, &imports.children, path, 0) {
                if target != *file {
                    targets.insert(target);
                }
            }
        }
    }
    graph
}

/// What one file declares and names.
#[derive(Default)]
struct FileImports {
    /// Modules declared as files of their own (`mod x;`).
    children: BTreeSet<String>,
    /// Items the file defines (`fn x`, `struct X`, `mod x { … }`, …).
    items: BTreeSet<String>,
    /// Paths named by `use` (globs included) and in code; a re-export is not a use.
    paths: Vec<Vec<String>>,
    /// `use a::b::C as D;`, public or not: `D` → `a::b::C`. A path that names `D` through
    /// this file lands where `C` is defined (a re-export is not this file's own use).
    imported: BTreeMap<String, Vec<String>>,
    /// `pub use a::b::*;`: names the file passes through from `a::b`.
    glob_reexports: Vec<Vec<String>>,
}

impl FileImports {
    fn read(code: &str) -> Self {
        let tokens = tokenize(code);
        let mut found = FileImports::default();
        // Brace depth, and the depths at which inline modules (`mod x { … }`) opened: inside
        // one, `super::` first climbs within this file.
        let mut depth = 0usize;
        let mut inline_modules: Vec<usize> = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            let word = tokens[i].as_str();
            let previous = i.checked_sub(1).map(|p| tokens[p].as_str());
            match word {
                "{" => {
                    let opens_module = i >= 2 && tokens[i - 2] == "mod" && is_ident(&tokens[i - 1]);
                    if opens_module {
                        inline_modules.push(depth);
                    }
                    depth += 1;
                }
                "}" => {
                    depth = depth.saturating_sub(1);
                    if inline_modules.last() == Some(&depth) {
                        inline_modules.pop();
                    }
                }
                _ => {}
            }
            let within_file = |path: Vec<String>| within_this_file(path, inline_modules.len());
            if previous != Some("::") && ITEM_KEYWORDS.contains(&word) {
                if let Some(name) = tokens.get(i + 1).filter(|t| is_ident(t)) {
                    found.items.insert(name.clone());
                    if word == "mod" && tokens.get(i + 2).is_some_and(|t| t == ";") {
                        found.children.insert(name.clone());
                    }
                }
            }
            if word == "use" && previous != Some("::") {
                let end = tokens[i..]
                    .iter()
                    .position(|t| t == ";")
                    .map_or(tokens.len(), |p| i + p);
                let mut trees = Vec::new();
                use_tree(&tokens[i + 1..end], Vec::new(), &mut trees);
                let public = previous == Some("pub") || previous == Some(")");
                for UsePath { path, name, glob } in trees {
                    let path = within_file(path);
                    match (public, glob) {
                        (true, true) => found.glob_reexports.push(path),
                        (true, false) => {
                            found.imported.insert(name, path);
                        }
                        (false, glob) => {
                            if !glob && inline_modules.is_empty() {
                                found.imported.insert(name, path.clone());
                            }
                            found.paths.push(path);
                        }
                    }
                }
                i = end;
                continue;
            }
            let starts_path = is_ident(word)
                && previous != Some("::")
                && tokens.get(i + 1).is_some_and(|t| t == "::");
            if starts_path {
                let mut path = vec![tokens[i].clone()];
                let mut j = i + 1;
                while tokens.get(j).is_some_and(|t| t == "::")
                    && tokens.get(j + 1).is_some_and(|t| is_ident(t))
                {
                    path.push(tokens[j + 1].clone());
                    j += 2;
                }
                found.paths.push(within_file(path));
                i = j;
                continue;
            }
            i += 1;
        }
        found
    }
}

/// A path named inside `inline` nested inline modules, as seen from the file's own module:
/// the `super::`s that climb out of inline modules are dropped, and a path that stays inside
/// the file becomes `self::…`.
fn within_this_file(mut path: Vec<String>, inline: usize) -> Vec<String> {
    if inline == 0 || path.first().is_some_and(|s| s == "crate") {
        return path;
    }
    let climbs = path.iter().take_while(|s| *s == "super").count();
    if path.first().is_some_and(|s| s == "self") || climbs == 0 {
        // `self::` or a bare path inside an inline module names its own items.
        path.insert(0, "self".to_string());
        return path;
    }
    let dropped = climbs.min(inline);
    path.drain(..dropped);
    if climbs == dropped {
        path.insert(0, "self".to_string());
    }
    path
}

const ITEM_KEYWORDS: [&str; 9] = [
    "fn",
    "struct",
    "enum",
    "const",
    "static",
    "type",
    "trait",
    "mod",
    "macro_rules",
];

#[derive(Default)]
struct CrateFiles {
    /// Each module's file (as `kinds/run.rs`) and what it names.
    files: BTreeMap<ModulePath, (String, FileImports)>,
}

impl CrateFiles {
    /// The file a path named in `module` lands in: the deepest module file it names, or,
    /// where that file only re-exports the next name, the file the re-export leads to.
    /// `None` for a path into another crate, a type's associated item or a local enum.
    fn landing_file(
        &self,
        module: &ModulePath,
        children: &BTreeSet<String>,
        path: &[String],
        depth: usize,
    ) -> Option<String> {
        let mut at = starting_module(module, children, path)?;
        let rest: Vec<&String> = path[1..].iter().skip_while(|s| *s == "super").collect();
        let mut next = 0;
        while let Some(segment) = rest.get(next) {
            at.push((*segment).clone());
            if !self.files.contains_key(&at) {
                at.pop();
                break;
            }
            next += 1;
        }
        let (file, imports) = self.files.get(&at)?;
        let Some(name) = rest.get(next) else {
            return Some(file.clone());
        };
        if imports.items.contains(*name) || depth > 8 {
            return Some(file.clone());
        }
        if let Some(target) = imports.imported.get(*name) {
            let forwarded: Vec<String> = target
                .iter()
                .cloned()
                .chain(rest[next + 1..].iter().map(|s| (*s).clone()))
                .collect();
            return self
                .landing_file(&at, &imports.children, &forwarded, depth + 1)
                .or_else(|| Some(file.clone()));
        }
        for glob in &imports.glob_reexports {
            let mut forwarded = glob.clone();
            forwarded.extend(rest[next..].iter().map(|s| (*s).clone()));
            if let Some(target) = self.landing_file(&at, &imports.children, &forwarded, depth + 1) {
                let defines = self
                    .files
                    .values()
                    .any(|(f, i)| *f == target && i.items.contains(*name));
                if defines {
                    return Some(target);
                }
            }
        }
        Some(file.clone())
    }
}

/// A set of files that import each other around one or more loops.
pub struct Circle {
    pub files: BTreeSet<String>,
    /// Its shortest loop and every import between its files.
    pub shown: String,
}

/// The circles of the graph: each strongly connected set of two or more files.
pub fn circles(graph: &FileGraph) -> Vec<Circle> {
    let mut shown = Vec::new();
    let mut placed: BTreeSet<&String> = BTreeSet::new();
    for file in graph.keys() {
        if placed.contains(file) {
            continue;
        }
        let component: BTreeSet<&String> = graph
            .keys()
            .filter(|other| {
                *other == file
                    || (reach(graph, file, other).is_some() && reach(graph, other, file).is_some())
            })
            .collect();
        if component.len() < 2 {
            continue;
        }
        placed.extend(component.iter().copied());
        let shortest = component
            .iter()
            .flat_map(|member| {
                graph[*member]
                    .iter()
                    .filter_map(|next| reach(graph, next, member))
                    .map(|mut back| {
                        back.insert(0, (*member).clone());
                        back
                    })
            })
            .min_by_key(|path| path.len())
            .expect("a strongly connected set has a loop");
        let imports: Vec<String> = component
            .iter()
            .flat_map(|from| {
                graph[*from]
                    .iter()
                    .filter(|to| component.contains(to))
                    .map(move |to| format!("{from} -> {to}"))
            })
            .collect();
        shown.push(Circle {
            files: component.iter().map(|f| (*f).clone()).collect(),
            shown: format!(
                "{}\n    imports inside the circle: {}",
                shortest.join(" -> "),
                imports.join(", ")
            ),
        });
    }
    shown
}

/// The shortest import path from `from` to `to` (both ends included; `from` itself when
/// they are the same file), if any.
fn reach(graph: &FileGraph, from: &str, to: &str) -> Option<Vec<String>> {
    if from == to {
        return Some(vec![from.to_string()]);
    }
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut todo = std::collections::VecDeque::from([from]);
    while let Some(next) = todo.pop_front() {
        for dep in graph.get(next).into_iter().flatten() {
            if dep == from || came_from.contains_key(dep.as_str()) {
                continue;
            }
            came_from.insert(dep, next);
            if dep == to {
                let mut path = vec![to.to_string()];
                let mut at = to;
                while at != from {
                    at = came_from[at];
                    path.push(at.to_string());
                }
                path.reverse();
                return Some(path);
            }
            todo.push_back(dep);
        }
    }
    None
}

fn slash_path(relative: &Path) -> String {
    relative
        .iter()
        .map(|c| c.to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn module_path(relative: &Path) -> Option<ModulePath> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    // Test-only files (`tests.rs`, `tests/`) are compiled under `#[cfg(test)]`.
    if last == "main.rs" || last == "tests.rs" || parts.iter().any(|p| p == "tests") {
        return None;
    }
    match last.strip_suffix(".rs")? {
        "mod" | "lib" => {}
        name => parts.push(name.to_string()),
    }
    Some(parts)
}

/// Source text with comments removed and string and char literals emptied, so that a path
/// spelled inside a message or a doc line is not taken for an import.
fn code_without_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && matches!(next, Some('#') | Some('"')) && !ident_char_before(&chars, i)
        {
            // A raw string: r"…", r#"…"#, …
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            i += hashes + 2;
            let closing: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            while i < chars.len() && !chars[i..].starts_with(&closing) {
                i += 1;
            }
            i += closing.len();
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && (chars.get(i + 2) == Some(&'\'') || next == Some('\\')) {
            // A char literal ('x', '\n', '\''); lifetimes ('a) pass through.
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_char_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// One path a `use` tree names: `use a::{b as c, d::*}` names `a::b` as `c` and the glob `a::d`.
struct UsePath {
    path: Vec<String>,
    name: String,
    glob: bool,
}

/// The paths one `use` tree names, each with `prefix` before it (`self` in a group is the
/// group's prefix).
fn use_tree(tokens: &[String], prefix: Vec<String>, out: &mut Vec<UsePath>) {
    let mut path = prefix;
    let mut name = None;
    let mut glob = false;
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i].as_str() {
            "::" => {}
            "*" => {
                glob = true;
                break;
            }
            "as" => {
                name = tokens.get(i + 1).cloned();
                break;
            }
            "{" => {
                // Split the group at its top-level commas.
                let mut depth = 0;
                let mut start = i + 1;
                for j in i..tokens.len() {
                    match tokens[j].as_str() {
                        "{" => depth += 1,
                        "}" => {
                            depth -= 1;
                            if depth == 0 {
                                use_tree(&tokens[start..j], path.clone(), out);
                                return;
                            }
                        }
                        "," if depth == 1 => {
                            use_tree(&tokens[start..j], path.clone(), out);
                            start = j + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            "self" if !path.is_empty() => {}
            word if is_ident(word) => path.push(word.to_string()),
            _ => {}
        }
        i += 1;
    }
    if let Some(last) = path.last() {
        let name = name.unwrap_or_else(|| last.clone());
        out.push(UsePath { path, name, glob });
    }
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

fn tokenize(code: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".to_string());
            i += 2;
        } else {
            if !c.is_whitespace() {
                tokens.push(c.to_string());
            }
            i += 1;
        }
    }
    tokens
}

/// The module a path starts from, or `None` for a path into another crate, a type's
/// associated item (`Self::x`, `Vec::new`) or a local enum.
fn starting_module(
    module: &ModulePath,
    children: &BTreeSet<String>,
    path: &[String],
) -> Option<ModulePath> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(Vec::new()),
        "self" => Some(module.clone()),
        "super" => {
            let mut up = module.clone();
            up.pop()?;
            // `super::super::x`: climb once more per extra `super`.
            for segment in &path[1..] {
                if segment != "super" {
                    break;
                }
                up.pop()?;
            }
            Some(up)
        }
        name if children.contains(name) => {
            let mut down = module.clone();
            down.push(name.to_string());
            Some(down)
        }
        _ => None,
    }
}
