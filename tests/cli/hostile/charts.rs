//! Charts written to hurt: values files, archives, dependencies, and what Helm's loader
//! refuses.

use super::*;
use std::io::Write;

/// A `.tgz` as `helm package` writes it (entries under the chart's directory), of bytes.
fn tgz(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut tar = Vec::new();
    for (name, data) in files {
        let mut header = [0u8; 512];
        header[..name.len()].copy_from_slice(name.as_bytes());
        header[100..107].copy_from_slice(b"0000644");
        header[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
        header[156] = b'0';
        header[257..263].copy_from_slice(b"ustar\0");
        header[148..156].copy_from_slice(b"        ");
        let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
        header[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        tar.extend_from_slice(&header);
        tar.extend_from_slice(data);
        tar.resize(tar.len().div_ceil(512) * 512, 0);
    }
    tar.resize(tar.len() + 1024, 0);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

fn chart_yaml(name: &str) -> String {
    format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\n")
}

const CONFIG_MAP: &[u8] = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";

#[test]
fn values_yaml_gets_the_limits_of_every_yaml_file() {
    let deep = "a: ".to_string() + &"[".repeat(100_000);
    render_bounded(chart_repo(&[("values.yaml", deep.as_bytes())]).path(), &[])
        .refused_with("nested more than 128 levels");
    let mut bomb = format!("a: &a \"{}\"\nl:\n", "x".repeat(1 << 20));
    for _ in 0..2000 {
        bomb.push_str("- *a\n");
    }
    render_bounded(chart_repo(&[("values.yaml", bomb.as_bytes())]).path(), &[])
        .refused_with("alias bomb");
}

#[test]
fn archives_within_archives_are_bounded_as_one_tree() {
    // 20 archives of 20 MB of zeros each: small on disk, 400 MB unpacked.
    let zeros = vec![0u8; 20 << 20];
    let inner = tgz(&[
        ("z/Chart.yaml", chart_yaml("z").as_bytes()),
        ("z/files/zeros", &zeros),
    ]);
    let mut files: Vec<(String, Vec<u8>)> =
        vec![("outer/Chart.yaml".into(), chart_yaml("outer").into_bytes())];
    for i in 0..20 {
        files.push((format!("outer/charts/z{i}.tgz"), inner.clone()));
    }
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let outer = tgz(&refs);
    let dir = chart_repo(&[
        ("templates/t.yaml", CONFIG_MAP),
        ("charts/outer-1.0.0.tgz", &outer),
    ]);
    render_bounded(dir.path(), &[]).refused_with("budget of the whole chart tree");

    // Archives nested deeper than any chart.
    let mut archive = tgz(&[("l/Chart.yaml", chart_yaml("l").as_bytes())]);
    for _ in 0..40 {
        archive = tgz(&[
            ("l/Chart.yaml", chart_yaml("l").as_bytes()),
            ("l/charts/l-1.0.0.tgz", &archive),
        ]);
    }
    let dir = chart_repo(&[
        ("templates/t.yaml", CONFIG_MAP),
        ("charts/l-1.0.0.tgz", &archive),
    ]);
    render_bounded(dir.path(), &[]).refused_with("nest more than 20 levels");
}

#[test]
fn aliases_that_multiply_charts_are_bounded() {
    // Six levels, each naming the next ten times under ten aliases: a million charts.
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut prefix = String::new();
    for level in 0..6 {
        let deps: String = (0..10)
            .map(|i| {
                format!(
                    "  - name: l{next}\n    version: 1.0.0\n    alias: a{i}\n",
                    next = level + 1
                )
            })
            .collect();
        let name = if level == 0 {
            "c".to_string()
        } else {
            format!("l{level}")
        };
        files.push((
            format!("{prefix}Chart.yaml"),
            format!("apiVersion: v2\nname: {name}\nversion: 1.0.0\ndependencies:\n{deps}")
                .into_bytes(),
        ));
        prefix.push_str(&format!("charts/l{}/", level + 1));
    }
    files.push((format!("{prefix}Chart.yaml"), chart_yaml("l6").into_bytes()));
    files.push(("templates/t.yaml".into(), CONFIG_MAP.to_vec()));
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    render_bounded(chart_repo(&refs).path(), &[]).refused_with("more than 5000 charts");
}

#[test]
fn what_helms_loader_refuses_is_refused() {
    let traversal = tgz(&[
        ("sub/Chart.yaml", chart_yaml("sub").as_bytes()),
        ("sub/templates/../../../x.yaml", CONFIG_MAP),
    ]);
    render_bounded(
        chart_repo(&[("charts/sub-1.0.0.tgz", &traversal)]).path(),
        &[],
    )
    .refused_with("illegally references parent directory");

    let cases: [(&str, &str); 6] = [
        (
            "apiVersion: v2\nname: c\nversion: 1.0.0\ndependencies:\n  - name: sub\n    version: 1.0.0\n    alias: x\n  - name: sub\n    version: 1.0.0\n    alias: x\n",
            "more than one dependency with name or alias \"x\"",
        ),
        (
            "apiVersion: v2\nname: c\nversion: 1.0.0\ndependencies:\n  - name: sub\n    version: 1.0.0\n    alias: ../../../etc\n",
            "disallowed characters in the alias",
        ),
        ("apiVersion: v2\nname: ../../../etc\nversion: 1.0.0\n", "is invalid"),
        (
            "apiVersion: v2\nname: c\nversion: 1.0.0\nkubeVersion: \">= 1.99.0\"\n",
            "chart requires kubeVersion: >= 1.99.0 which is incompatible with Kubernetes",
        ),
        ("apiVersion: v2\nname: c\nversion: latest\n", "must be a semantic version"),
        ("apiVersion: v3\nname: c\nversion: 1.0.0\n", "apiVersion \"v3\" is not supported"),
    ];
    for (chart, needle) in cases {
        let dir = chart_repo(&[
            ("templates/t.yaml", CONFIG_MAP),
            ("charts/sub/Chart.yaml", chart_yaml("sub").as_bytes()),
        ]);
        std::fs::write(dir.path().join("charts/c/Chart.yaml"), chart).unwrap();
        render_bounded(dir.path(), &[]).refused_with(needle);
    }
}

#[test]
fn a_named_pipe_in_a_chart_is_not_read() {
    let dir = chart_repo(&[("templates/t.yaml", CONFIG_MAP)]);
    let fifo = dir.path().join("charts/c/notes.txt");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the file.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
    render_bounded(dir.path(), &[]).refused_with("not a regular file");
}

#[test]
fn bytes_that_are_not_text_are_kept_or_refused_never_mangled() {
    // A binary chart file: AsSecrets encodes its bytes as Helm does.
    let jks: &[u8] = &[0xfe, 0xed, 0xfe, 0xed, 0x00, 0x02, 0xff, 0x80];
    let secret = b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: store\n  namespace: default\ndata:\n{{ (.Files.Glob \"files/*\").AsSecrets | indent 2 }}\n";
    let dir = chart_repo(&[("files/k.jks", jks), ("templates/s.yaml", secret)]);
    let out = render_bounded(dir.path(), &["--show-secrets"]);
    out.rendered();
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(jks);
    assert!(out.stdout.contains(&encoded), "{}", out.stdout);
    // `.Files.Get` gives Go's string of its bytes: b64enc encodes them exactly.
    let get = b"apiVersion: v1\nkind: Secret\nmetadata:\n  name: store\n  namespace: default\ndata:\n  k: {{ .Files.Get \"files/k.jks\" | b64enc }}\n";
    let dir = chart_repo(&[("files/k.jks", jks), ("templates/s.yaml", get)]);
    let out = render_bounded(dir.path(), &["--show-secrets"]);
    out.rendered();
    assert!(
        out.stdout.contains(&format!("k: {encoded}")),
        "{}",
        out.stdout
    );
    // Any read of it as text is refused, never its lossy text.
    let lines = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: default\ndata:\n  k: {{ .Files.Lines \"files/k.jks\" | join \",\" | quote }}\n";
    let dir = chart_repo(&[("files/k.jks", jks), ("templates/s.yaml", lines)]);
    render_bounded(dir.path(), &[]).refused_with("files/k.jks is not UTF-8 text");
    let printed = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: default\ndata:\n  k: \"{{ .Files.Get \"files/k.jks\" }}\"\n";
    let dir = chart_repo(&[("files/k.jks", jks), ("templates/s.yaml", printed)]);
    render_bounded(dir.path(), &[]).refused_with("not UTF-8 text");
    // values.yaml and Chart.yaml are YAML, which is UTF-8: refused at the line, as Helm does.
    let values: &[u8] = b"a: 1\nname: caf\xe9\n";
    let dir = chart_repo(&[("values.yaml", values), ("templates/t.yaml", b"")]);
    let out = render_bounded(dir.path(), &[]);
    out.refused_with("values.yaml:2");
    out.refused_with("not valid UTF-8");
    assert!(!out.stderr.contains('\u{FFFD}'), "{}", out.stderr);
    // A values file a HelmChart names: said once, at the HelmChart.
    let dir = chart_repo(&[("templates/t.yaml", b"")]);
    let release = "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: r\n  namespace: default\nspec:\n  chart: ../charts/c\n  valuesFiles: [latin1.yaml]\n";
    std::fs::write(dir.path().join("apps/release.yaml"), release).unwrap();
    std::fs::write(dir.path().join("apps/latin1.yaml"), b"name: caf\xe9\n").unwrap();
    let out = render_bounded(dir.path(), &[]);
    out.refused_with("apps/release.yaml:");
    out.refused_with("not UTF-8 text");
}
