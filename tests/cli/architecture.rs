//! The shape of `src/` that the crate map in `lib.rs` promises: data flows one way (no cycle
//! between top-level modules), and files stay small enough to read (issue 10's limits).
//! `scripts/module-graph.py` prints the same graph for humans. Below the top level, no two
//! files import each other, directly or around a loop ([`imports`] follows `crate::`,
//! `super::`, `self::` and child-module paths, globs included).

mod imports;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text of a file before its first `#[cfg(test)]`.
fn code_before_tests(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("read source file");
    text.split("#[cfg(test)]").next().unwrap_or("").to_string()
}

/// The code of a file before its first `#[cfg(test)]`, without `//` comments.
fn non_test_code(path: &Path) -> String {
    code_before_tests(path)
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn src() -> PathBuf {
    super::common::repo_root().join("src")
}

fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(src()).expect("under src");
        let first = relative
            .iter()
            .next()
            .and_then(|c| c.to_str())
            .unwrap_or("");
        let module = first.trim_end_matches(".rs").to_string();
        // Test-only files (`tests.rs`, `tests/`) are compiled under `#[cfg(test)]`.
        let test_only = relative.iter().any(|c| c == "tests" || c == "tests.rs");
        if module == "lib" || module == "main" || test_only {
            continue;
        }
        let code = non_test_code(&file);
        let used = graph.entry(module.clone()).or_default();
        for part in code.split("crate::").skip(1) {
            let name: String = part
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() && name != module {
                used.insert(name);
            }
        }
    }
    graph
}

fn reaches(graph: &BTreeMap<String, BTreeSet<String>>, from: &str, goal: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(next) = todo.pop() {
        for dep in graph.get(&next).into_iter().flatten() {
            if dep == goal {
                return true;
            }
            if seen.insert(dep.clone()) {
                todo.push(dep.clone());
            }
        }
    }
    false
}

#[test]
fn no_module_cycles_in_src() {
    let graph = module_graph();
    assert!(
        graph.contains_key("apply") && graph.contains_key("plan"),
        "{graph:?}"
    );
    let cycles: Vec<String> = graph
        .iter()
        .flat_map(|(module, deps)| deps.iter().map(move |dep| (module, dep)))
        .filter(|(module, dep)| reaches(&graph, dep, module))
        .map(|(module, dep)| format!("{module} -> {dep}"))
        .collect();
    assert!(cycles.is_empty(), "module cycles: {cycles:?}\n{graph:#?}");
}

/// Circles that stand today, each as the set of files it joins, all in code other work is
/// changing (helm/, sops/). The test fails when one of them changes or goes, so this list
/// only shrinks; a new circle is never added to it.
const KNOWN_CIRCLES: &[&[&str]] = &[
    // The Helm renderer's function table and template engine: each mod.rs holds the shared
    // helpers its children call back into.
    &["helm/template/builtins.rs", "helm/template/mod.rs"],
    // SOPS: mod.rs holds `Metadata` and `SopsError`, which the tree walk needs.
    &["sops/metadata.rs", "sops/mod.rs", "sops/tree.rs"],
];

#[test]
fn no_import_circles_between_files() {
    let graph = imports::file_graph(&src());
    assert!(
        graph["kinds/copy_rule/mod.rs"].contains("kinds/mod.rs"),
        "the graph follows `super::` paths: {graph:#?}"
    );
    let circles = imports::circles(&graph);
    let known: Vec<BTreeSet<String>> = KNOWN_CIRCLES
        .iter()
        .map(|files| files.iter().map(|f| f.to_string()).collect())
        .collect();
    let new: Vec<&str> = circles
        .iter()
        .filter(|circle| !known.contains(&circle.files))
        .map(|circle| circle.shown.as_str())
        .collect();
    assert!(
        new.is_empty(),
        "import circles between files of src/ (move what both sides need to the lower one):\n{}",
        new.join("\n")
    );
    let gone: Vec<&BTreeSet<String>> = known
        .iter()
        .filter(|files| !circles.iter().any(|circle| circle.files == **files))
        .collect();
    assert!(
        gone.is_empty(),
        "these known circles are gone or changed: update KNOWN_CIRCLES: {gone:?}"
    );
}

#[test]
fn operations_and_pure_stages_stay_free_of_what_they_must_not_see() {
    let graph = module_graph();
    for (module, forbidden) in [
        ("ops", &["cli", "commands"][..]),
        ("plan", &["cluster", "apply", "report"][..]),
        ("render", &["cluster", "apply", "plan", "report"][..]),
        ("kstatus", &["cluster", "apply"][..]),
    ] {
        let deps = &graph[module];
        for name in forbidden {
            assert!(!deps.contains(*name), "{module} imports {name}: {deps:?}");
        }
    }
}

/// The executor is the top of the run: nothing below it imports it (or the operations above
/// it), so a stage never calls back up into the run that called it.
#[test]
fn no_stage_below_the_executor_imports_it() {
    let graph = module_graph();
    let above = ["cli", "commands", "ops", "run"];
    assert!(graph.contains_key("run"), "{graph:?}");
    for (module, deps) in &graph {
        if above.contains(&module.as_str()) {
            continue;
        }
        for name in ["run", "ops", "commands", "cli"] {
            assert!(
                !deps.contains(name),
                "{module} imports {name}, above it (see ARCHITECTURE.md \"Layers and who may call whom\"): {deps:?}"
            );
        }
    }
    for name in ["cli", "commands"] {
        assert!(!graph["run"].contains(name) && !graph["ops"].contains(name));
    }
    assert!(
        !graph["run"].contains("ops"),
        "run imports ops: {:?}",
        graph["run"]
    );
}

/// `render`, `plan`, `kinds` and `kstatus` do no I/O and read neither the clock nor the
/// environment: files, the cluster, time and randomness come in as values (kept Helm renders
/// are read before a render and written after it, by `run/load.rs`).
#[test]
fn pure_stages_do_no_io() {
    let forbidden = [
        "std::fs",
        "std::net",
        "std::process",
        "std::env::",
        "tokio::",
        "kube::Client",
        "SystemTime::now",
        "Instant::now",
        "Timestamp::now",
    ];
    let mut found = Vec::new();
    for module in ["render", "plan", "kinds", "kstatus"] {
        let mut files = Vec::new();
        rust_files(&src().join(module), &mut files);
        for file in files {
            let relative = file.strip_prefix(src()).expect("under src");
            if relative.iter().any(|c| c == "tests" || c == "tests.rs") {
                continue;
            }
            let code = non_test_code(&file);
            for name in forbidden.iter().filter(|name| code.contains(*name)) {
                found.push(format!("{}: {name}", relative.display()));
            }
        }
    }
    assert!(found.is_empty(), "I/O in a pure stage: {found:#?}");
}

/// Files that start threads or tasks outside the executor and the parallel map, each for a
/// reason of its own (ARCHITECTURE.md "Where concurrency lives"). This list only shrinks.
const SPAWNS_ELSEWHERE: &[(&str, &str)] = &[
    ("apply/lock.rs", "the lock's heartbeat, as long as the lock"),
    ("source/kustomize.rs", "reading a builder's pipes"),
    (
        "source/private_copy.rs",
        "removing decrypted files on a signal",
    ),
];

/// All concurrency of a run is in one place: tasks are spawned by `run/executor.rs` only,
/// threads for work by `parallel.rs` only.
#[test]
fn tasks_and_threads_start_in_one_place() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut found = BTreeSet::new();
    for file in files {
        let relative = file.strip_prefix(src()).expect("under src");
        if relative.iter().any(|c| c == "tests" || c == "tests.rs") {
            continue;
        }
        let code = non_test_code(&file);
        let spawns = [
            "tokio::spawn",
            "runtime.spawn",
            "thread::spawn",
            "thread::scope",
            "spawn_blocking",
            "runtime::Builder",
        ]
        .iter()
        .any(|s| code.contains(s));
        if spawns {
            found.insert(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    let allowed: BTreeSet<String> = ["run/executor.rs", "parallel.rs"]
        .into_iter()
        .chain(SPAWNS_ELSEWHERE.iter().map(|(file, _)| *file))
        .map(String::from)
        .collect();
    let outside: Vec<&String> = found.difference(&allowed).collect();
    assert!(
        outside.is_empty(),
        "these files start tasks or threads outside run/executor.rs and parallel.rs: {outside:?}"
    );
    let gone: Vec<&String> = allowed.difference(&found).collect();
    assert!(
        gone.is_empty(),
        "these files no longer start tasks or threads: take them off SPAWNS_ELSEWHERE: {gone:?}"
    );
}

/// Functions of the operations, the executor and the engine's steps fit on a screen (about
/// 60 lines; a screen holds 70).
#[test]
fn run_and_engine_functions_fit_on_a_screen() {
    let mut files = Vec::new();
    for dir in ["ops", "run", "apply"] {
        rust_files(&src().join(dir), &mut files);
    }
    files.push(src().join("render/mod.rs"));
    let mut long = Vec::new();
    for file in files {
        let code = code_before_tests(&file);
        let lines: Vec<&str> = code.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            let indent = line.len() - line.trim_start().len();
            let is_fn = [
                "fn ",
                "pub fn ",
                "async fn ",
                "pub async fn ",
                "pub(super) fn ",
                "pub(super) async fn ",
                "pub(crate) fn ",
            ]
            .iter()
            .any(|p| line.trim_start().starts_with(p));
            if !is_fn || line.trim_end().ends_with(';') {
                i += 1;
                continue;
            }
            let close = format!("{}}}", " ".repeat(indent));
            let end = (i + 1..lines.len())
                .find(|&j| lines[j].trim_end() == close)
                .unwrap_or(i);
            let length = end - i + 1;
            if length > FUNCTION_LIMIT {
                let name = line
                    .trim_start()
                    .split('(')
                    .next()
                    .unwrap_or(line)
                    .to_string();
                let relative = file
                    .strip_prefix(src())
                    .expect("under src")
                    .display()
                    .to_string();
                long.push(format!("{relative}: {name} ({length} lines)"));
            }
            i = end + 1;
        }
    }
    assert!(
        long.is_empty(),
        "functions over {FUNCTION_LIMIT} lines: {long:#?}"
    );
}

const FUNCTION_LIMIT: usize = 70;

#[test]
fn files_stay_readable() {
    let root = super::common::repo_root();
    let mut too_long = Vec::new();
    for dir in ["src", "testserver/src"] {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        for file in files {
            let relative = file.strip_prefix(&root).expect("under the repository");
            // Files of tests get the same limit, counted whole.
            let lines = if relative.iter().any(|c| c == "tests" || c == "tests.rs") {
                std::fs::read_to_string(&file)
                    .expect("read")
                    .lines()
                    .count()
            } else {
                non_test_code(&file).lines().count()
            };
            let limit = if relative.starts_with("src/apply") {
                400
            } else {
                800
            };
            if lines > limit {
                too_long.push(format!("{}: {lines} > {limit}", relative.display()));
            }
        }
    }
    assert!(too_long.is_empty(), "{too_long:#?}");
}

/// The headings of a Markdown file, and the lead-ins of its bold paragraphs (`**Lock.**`) and
/// italic list items (`- *Targeting*:`): the places a citation may name.
fn citable_places(markdown: &str) -> BTreeSet<String> {
    let mut places = BTreeSet::new();
    for line in markdown.lines() {
        if let Some(heading) = line.strip_prefix('#') {
            let heading = heading.trim_start_matches('#').trim();
            // `## 2. Faults` is cited as "Faults".
            let unnumbered = heading
                .split_once(". ")
                .filter(|(n, _)| n.chars().all(|c| c.is_ascii_digit()))
                .map_or(heading, |(_, rest)| rest);
            // `### CopyRule — copy ConfigMaps ...` is cited as "CopyRule".
            if let Some((short, _)) = unnumbered.split_once(" — ") {
                places.insert(short.to_string());
            }
            places.insert(unnumbered.to_string());
        } else if let Some(rest) = line.strip_prefix("**") {
            if let Some((lead, _)) = rest.split_once("**") {
                places.insert(lead.trim_end_matches('.').to_string());
            }
        } else if let Some(rest) = line.strip_prefix("- *") {
            if let Some((lead, _)) = rest.split_once('*') {
                places.insert(lead.to_string());
            }
        }
    }
    places
}

/// Comments cite what a reader can open: a section of README or RELIABILITY.md, named in
/// quotes after the file's name; never the product specification or the seed operators,
/// which live outside the repository.
#[test]
fn comments_cite_documents_in_the_repository() {
    let root = super::common::repo_root();
    let documents: BTreeMap<&str, BTreeSet<String>> = ["README", "RELIABILITY.md"]
        .into_iter()
        .map(|name| {
            let file = if name == "README" { "README.md" } else { name };
            let text = std::fs::read_to_string(root.join(file)).expect("read document");
            (name, citable_places(&text))
        })
        .collect();
    // Spelled in two pieces so that this file does not cite them itself.
    let outside = [format!("{} ", "SPEC"), format!("{} 00", "seed")];
    let mut files = Vec::new();
    for dir in ["src", "tests", "testserver/src", "testserver/tests"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut wrong = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&root).expect("under the repository");
        let text = std::fs::read_to_string(&file).expect("read source file");
        let cites_outside = outside.iter().any(|o| {
            text.match_indices(o.as_str())
                .any(|(i, _)| text[i + o.len()..].starts_with(|c: char| c.is_ascii_digit()))
        });
        if cites_outside {
            wrong.push(format!(
                "{}: cites a document outside the repository: cite a README or RELIABILITY.md section",
                relative.display()
            ));
        }
        for (name, places) in &documents {
            let marker = format!("{name} \"");
            for (i, _) in text.match_indices(marker.as_str()) {
                let rest = &text[i + marker.len()..];
                let place = rest.split('"').next().unwrap_or("");
                if !places.contains(place) {
                    wrong.push(format!(
                        "{}: cites {name} \"{place}\", which has no such section",
                        relative.display()
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
