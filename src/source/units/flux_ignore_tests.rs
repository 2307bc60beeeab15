use super::*;

/// How `pattern` (scoped to `domain`) decides `path`: "exclude", "include" or "none".
fn decide(pattern: &str, domain: &[&str], path: &[&str], is_dir: bool) -> &'static str {
    let domain: Vec<String> = domain.iter().map(|d| d.to_string()).collect();
    match Pattern::parse(pattern, &domain).decides(path, is_dir) {
        Some(true) => "exclude",
        Some(false) => "include",
        None => "none",
    }
}

/// A pattern, its domain, a path, whether the path is a directory, and the outcome.
type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], bool, &'a str);

#[test]
fn patterns_decide_as_go_gits_gitignore_patterns() {
    // (pattern, domain, path, is a directory, outcome): go-git's pattern_test.go cases.
    let cases: &[Case] = &[
        (
            "!vul?ano",
            &[],
            &["value", "vulkano", "tail"],
            false,
            "include",
        ),
        (
            "value",
            &["head", "middle", "tail"],
            &["head", "middle"],
            false,
            "none",
        ),
        (
            "value",
            &["head", "middle", "tail"],
            &["head", "middle", "tail"],
            false,
            "none",
        ),
        (
            "value",
            &["head", "middle", "tail"],
            &["head", "middle", "_tail_", "value"],
            false,
            "none",
        ),
        (
            "middle/",
            &["value", "volcano"],
            &["value", "volcano", "middle", "tail"],
            false,
            "exclude",
        ),
        (
            "volcano/",
            &["value", "volcano"],
            &["value", "volcano", "tail"],
            true,
            "none",
        ),
        ("value", &[], &["value", "tail"], false, "exclude"),
        ("value", &[], &["head", "value", "tail"], false, "exclude"),
        ("value", &[], &["head", "value"], false, "exclude"),
        ("value/", &[], &["value", "tail"], false, "exclude"),
        ("value/", &[], &["head", "value", "tail"], false, "exclude"),
        ("value/", &[], &["head", "value"], true, "exclude"),
        ("value/", &[], &["head", "value"], false, "none"),
        ("value", &[], &["head", "val", "tail"], false, "none"),
        ("val", &[], &["head", "value", "tail"], false, "none"),
        ("v*o", &[], &["value", "vulkano", "tail"], false, "exclude"),
        (
            "vul?ano",
            &[],
            &["value", "vulkano", "tail"],
            false,
            "exclude",
        ),
        (
            "v[ou]l[kc]ano",
            &[],
            &["value", "volcano"],
            false,
            "exclude",
        ),
        ("v[ou]l[", &[], &["value", "vol["], false, "none"),
        (
            "/value/vul?ano",
            &[],
            &["value", "vulkano", "tail"],
            false,
            "exclude",
        ),
        (
            "middle/tail/",
            &["value", "volcano"],
            &["value", "volcano", "middle", "tail"],
            true,
            "exclude",
        ),
        (
            "volcano/tail",
            &["value", "volcano"],
            &["value", "volcano", "tail"],
            false,
            "none",
        ),
        (
            "value/vul?ano",
            &[],
            &["value", "vulkano", "tail"],
            false,
            "exclude",
        ),
        ("value/vulkano", &[], &["value", "volcano"], false, "none"),
        ("value/vul?ano", &[], &["value"], false, "none"),
        (
            "/value/volcano",
            &[],
            &["value", "value", "volcano"],
            false,
            "none",
        ),
        (
            "**/*lue/vol?ano",
            &[],
            &["value", "volcano", "tail"],
            false,
            "exclude",
        ),
        (
            "**/*lue/vol?ano",
            &[],
            &["head", "value", "volcano", "tail"],
            false,
            "exclude",
        ),
        (
            "**/*lue/vol?ano",
            &[],
            &["head", "value", "Volcano", "tail"],
            false,
            "none",
        ),
        (
            "**/*lue/vol?ano/",
            &[],
            &["head", "value", "volcano", "tail"],
            false,
            "exclude",
        ),
        (
            "**/*lue/vol?ano/",
            &[],
            &["head", "value", "volcano"],
            true,
            "exclude",
        ),
        (
            "**/*lue/vol?ano/",
            &[],
            &["head", "value", "Colcano"],
            true,
            "none",
        ),
        (
            "**/*lue/vol?ano/",
            &[],
            &["head", "value", "volcano"],
            false,
            "none",
        ),
        (
            "/*lue/vol?ano/**",
            &[],
            &["value", "volcano", "tail", "moretail"],
            false,
            "exclude",
        ),
        (
            "/*lue/vol?ano/**",
            &[],
            &["value", "volcano"],
            false,
            "exclude",
        ),
        (
            "/*lue/**/vol?ano",
            &[],
            &["value", "volcano"],
            false,
            "exclude",
        ),
        (
            "/*lue/**/vol?ano",
            &[],
            &["value", "middle", "volcano"],
            false,
            "exclude",
        ),
        (
            "/*lue/**/vol?ano",
            &[],
            &["value", "middle1", "middle2", "volcano"],
            false,
            "exclude",
        ),
        (
            "/*lue/**/vol?ano/",
            &[],
            &["value", "middle1", "middle2", "volcano"],
            true,
            "exclude",
        ),
        (
            "/*lue/**/vol?ano/",
            &[],
            &["value", "middle1", "middle2", "volcano"],
            false,
            "none",
        ),
        // A `**` inside an element matches nothing; trailing spaces are dropped.
        ("/a**b/c", &[], &["axxb", "c"], false, "none"),
        ("docs/   ", &[], &["docs", "a.md"], false, "exclude"),
    ];
    for (pattern, domain, path, is_dir, want) in cases {
        assert_eq!(
            decide(pattern, domain, path, *is_dir),
            *want,
            "{pattern:?} in {domain:?} on {path:?} (dir: {is_dir})"
        );
    }
}

fn rules(user: &str) -> Rules {
    Rules::new(read_patterns(user, &[]))
}

#[test]
fn the_last_deciding_pattern_wins_and_negation_keeps() {
    // fluxcd/flux2-kustomize-helm-example's .sourceignore.
    let r = rules("# flux:\n/*\n!/apps/\n!/clusters/\n!/infrastructure/\n");
    assert!(r.leaves_out(&["README.md"], false));
    assert!(r.leaves_out(&["scripts"], true));
    assert!(r.leaves_out(&["scripts", "validate.sh"], false));
    assert!(!r.leaves_out(&["apps"], true));
    assert!(!r.leaves_out(&["apps", "base", "podinfo", "release.yaml"], false));
    assert!(!r.leaves_out(&["clusters", "staging", "apps.yaml"], false));
    // The defaults are gone once a user pattern exists; git's own files stay left out.
    assert!(!r.leaves_out(&["apps", "logo.png"], false));
    assert!(r.leaves_out(&[".gitignore"], false));
    assert!(r.leaves_out(&[".git", "config"], false));
    // A later pattern decides over git's own: `!/apps/` keeps apps/.gitignore, as in Flux.
    assert!(!r.leaves_out(&["apps", ".gitignore"], false));
}

#[test]
fn defaults_apply_only_without_user_patterns() {
    let r = rules("\n# nothing but a comment\n   \n");
    assert!(r.leaves_out(&["docs", "logo.png"], false));
    assert!(r.leaves_out(&["archive.tar.gz"], false));
    assert!(r.leaves_out(&[".github", "workflows", "ci.yaml"], false));
    assert!(r.leaves_out(&["apps", ".sops.yaml"], false));
    assert!(r.leaves_out(&["cloudbuild.yaml"], false));
    assert!(!r.leaves_out(&["apps", "app.yaml"], false));
    let r = rules("docs/\r\n*.md\r\n");
    assert!(!r.leaves_out(&["docs.png"], false));
    assert!(!r.leaves_out(&[".github", "workflows", "ci.yaml"], false));
    assert!(r.leaves_out(&["docs", "a.yaml"], false));
    assert!(r.leaves_out(&["apps", "docs", "a.yaml"], false));
    assert!(r.leaves_out(&["apps", "README.md"], false));
    assert!(!r.leaves_out(&["docs"], false), "docs/ wants a directory");
}

fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let full = dir.path().join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        fs::write(full, text).unwrap();
    }
    dir
}

#[test]
fn ignore_files_are_scoped_to_their_directory_and_spec_ignore_comes_last() {
    let dir = tree(&[
        (".sourceignore", "/tests/\n"),
        ("apps/.sourceignore", "/tests/\n!keep.yaml\n"),
        ("apps/tests/a.yaml", ""),
        ("apps/tests/keep.yaml", ""),
        ("tests/a.yaml", ""),
    ]);
    let r = rules_of(dir.path(), Some("apps/tests/keep.yaml\n")).unwrap();
    assert!(r.leaves_out(&["tests", "a.yaml"], false));
    assert!(r.leaves_out(&["apps", "tests", "a.yaml"], false));
    assert!(r.leaves_out(&["apps", "tests", "keep.yaml"], false));
    let r = rules_of(dir.path(), None).unwrap();
    assert!(!r.leaves_out(&["apps", "tests", "keep.yaml"], false));
    assert!(!r.leaves_out(&["other", "tests", "a.yaml"], false));
}

#[test]
fn elements_match_as_go_path_match() {
    assert!(element_match("*", ".hidden"));
    assert!(element_match("*.yaml", "a.yaml"));
    assert!(!element_match("*.yaml", "a.yml"));
    assert!(element_match("[a-c]?", "bx"));
    assert!(!element_match("[^a-c]?", "bx"));
    assert!(element_match("[]a]", "]"));
    assert!(element_match("\\*", "*"));
    assert!(!element_match("\\*", "a"));
    assert!(!element_match("a[", "a"));
}
