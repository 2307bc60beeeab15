//! Fuzzing the parsers people feed tend's Helm renderer, with proptest (stable Rust, so it
//! runs in `cargo test`, bounded): Go template text made of the language's own tokens
//! (deep nesting, huge widths and precisions, wrapping arithmetic, loops, values that hold
//! themselves), YAML as Helm reads values files, and chart archives of random and mutated
//! bytes. Nothing may panic, abort or run long; a template either renders or is an error.
//! Budgets are small here so a runaway case ends fast. The `tend render` side of each
//! limit is tested by the hostile corpus (tests/cli/hostile/).
//!
//! `FUZZ_CASES=<n>` runs more cases.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;
use std::time::{Duration, Instant};
use tend::charts::{parse_helm_yaml, read_chart, render, Chart, Release, RenderLimits};

fn config(default: u32) -> Config {
    Config {
        cases: std::env::var("FUZZ_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default),
        failure_persistence: None,
        ..Config::default()
    }
}

fn release() -> Release {
    Release {
        name: "r".into(),
        namespace: "ns".into(),
        kube_version: "v1.33.0".into(),
        api_versions: Vec::new(),
        seed: 1,
        now: 0,
        cluster: None,
        limits: RenderLimits {
            steps: 200_000,
            bytes: 16 << 20,
        },
    }
}

/// Renders `template` as the one template of a chart; panics propagate.
fn render_template(template: &str) -> Result<(), TestCaseError> {
    let mut chart = Chart {
        metadata: json!({"apiVersion": "v2", "name": "f", "version": "1.0.0"}),
        values: json!({"a": {"b": [1, "x", null]}, "n": 3}),
        ..Chart::default()
    };
    chart
        .files
        .insert("templates/t.yaml".into(), template.to_string());
    let started = Instant::now();
    let _ = render(&chart, &json!({}), &release());
    prop_assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?} for {template:?}",
        started.elapsed()
    );
    Ok(())
}

/// Pieces of Go template text: actions, control words, functions with hostile arguments.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{{ if true }}".to_string()),
        Just("{{ else }}".to_string()),
        Just("{{ end }}".to_string()),
        Just("{{ range until 50 }}".to_string()),
        Just("{{ with .Values.a }}".to_string()),
        Just("{{ $d := dict }}{{ $_ := set $d \"x\" $d }}".to_string()),
        Just("{{ toYaml $ }}".to_string()),
        Just("{{ define \"t\" }}".to_string()),
        Just("{{ include \"t\" . }}".to_string()),
        Just("{{ tpl \"{{ include \\\"t\\\" . }}\" . }}".to_string()),
        Just("((((".to_string()),
        Just("))))".to_string()),
        Just("{{ (".to_string()),
        Just(") }}".to_string()),
        Just("}}".to_string()),
        Just("{{".to_string()),
        "[a-z .$|\"]{0,8}".prop_map(|s| s),
        (any::<i64>(), any::<i64>()).prop_map(|(a, b)| format!(
            "{{{{ div {a} {b} }}}}{{{{ mod {a} {b} }}}}{{{{ mul {a} {b} }}}}"
        )),
        (0u64..100_000_000, 0u64..100_000_000).prop_map(|(w, p)| format!(
            "{{{{ printf \"%{w}.{p}f|%*d|%.*e\" 1.5 {w} 2 {p} 3.5 }}}}"
        )),
        (0u64..3_000_000_000).prop_map(|n| format!("{{{{ repeat {n} \"ab\" | len }}}}")),
        (0u64..3_000_000_000).prop_map(|n| format!("{{{{ indent {n} \"a\\nb\" | len }}}}")),
        (0i64..1_000_000_000).prop_map(|n| format!("{{{{ range until {n} }}}}x{{{{ end }}}}")),
    ]
}

#[test]
fn template_text_never_panics() {
    let mut runner = TestRunner::new(config(256));
    runner
        .run(&prop::collection::vec(token(), 0..40), |tokens| {
            render_template(&tokens.concat())
        })
        .unwrap();
}

#[test]
fn deep_template_text_is_an_error_not_an_abort() {
    for depth in [100, 1_000, 20_000] {
        render_template(&("{{ if true }}".repeat(depth) + &"{{ end }}".repeat(depth))).unwrap();
        render_template(&format!(
            "{{{{ {}1{} }}}}",
            "(".repeat(depth),
            ")".repeat(depth)
        ))
        .unwrap();
    }
}

#[test]
fn helm_yaml_never_panics() {
    let mut runner = TestRunner::new(config(512));
    let pieces = prop_oneof![
        Just("a: ".to_string()),
        Just("&x ".to_string()),
        Just("*x".to_string()),
        Just("[".to_string()),
        Just("{".to_string()),
        Just("]".to_string()),
        Just("- ".to_string()),
        Just("\n".to_string()),
        Just("  ".to_string()),
        Just("<<: *x\n".to_string()),
        Just("!!binary ".to_string()),
        "[ -~]{0,6}".prop_map(|s| s),
    ];
    runner
        .run(&prop::collection::vec(pieces, 0..200), |pieces| {
            let text = pieces.concat();
            let started = Instant::now();
            let _ = parse_helm_yaml(&text);
            prop_assert!(started.elapsed() < Duration::from_secs(5), "{text:?}");
            Ok(())
        })
        .unwrap();
    runner
        .run(&prop::collection::vec(any::<u8>(), 0..2000), |bytes| {
            let _ = parse_helm_yaml(&String::from_utf8_lossy(&bytes));
            Ok(())
        })
        .unwrap();
}

/// A gzipped tar of `entries` (name, bytes), as `helm package` writes it.
fn tgz(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    use std::io::Write;
    let mut tar = Vec::new();
    for (name, data) in entries {
        let mut header = [0u8; 512];
        let n = name.len().min(100);
        header[..n].copy_from_slice(&name.as_bytes()[..n]);
        header[100..107].copy_from_slice(b"0000644");
        header[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
        header[156] = b'0';
        header[257..263].copy_from_slice(b"ustar\0");
        tar.extend_from_slice(&header);
        tar.extend_from_slice(data);
        tar.resize(tar.len().div_ceil(512) * 512, 0);
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

#[test]
fn chart_archives_never_panic() {
    let mut runner = TestRunner::new(config(48));
    let name = prop_oneof![
        Just("sub/Chart.yaml".to_string()),
        Just("sub/values.yaml".to_string()),
        Just("sub/templates/../../x.yaml".to_string()),
        Just("/etc/passwd".to_string()),
        Just("sub/charts/in.tgz".to_string()),
        "[a-z./]{0,30}".prop_map(|s| s),
    ];
    let entries = prop::collection::vec((name, prop::collection::vec(any::<u8>(), 0..300)), 0..8);
    runner
        .run(&(entries, any::<bool>()), |(entries, corrupt)| {
            let dir = tempfile::tempdir().unwrap();
            let chart = dir.path().join("c");
            std::fs::create_dir_all(chart.join("charts")).unwrap();
            std::fs::write(
                chart.join("Chart.yaml"),
                "apiVersion: v2\nname: c\nversion: 1.0.0\n",
            )
            .unwrap();
            let mut archive = tgz(&entries);
            if corrupt && archive.len() > 20 {
                let at = archive.len() / 2;
                archive[at] ^= 0x5a;
            }
            std::fs::write(chart.join("charts/sub-1.0.0.tgz"), archive).unwrap();
            let _ = read_chart(dir.path(), &chart, std::path::Path::new("c"));
            Ok(())
        })
        .unwrap();
}
