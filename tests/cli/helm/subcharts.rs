//! Subcharts (directories and `.tgz` archives in `charts/`), `dependencies` with
//! `condition`, `tags`, `alias` and `import-values`, globals, library charts, `.Files`,
//! `crds/` of subcharts, `.helmignore` and `values.schema.json`, as `helm template` renders
//! them.

use crate::common::*;
use crate::kinds::cluster_with_crds;
use serde_json::Value;
use std::io::Write;

const WEB_CHART: &str = "\
apiVersion: v2
name: web
version: 0.3.0
dependencies:
  - name: db
    version: \"1.x\"
    condition: db.enabled
  - name: cache
    version: 0.1.0
    alias: redis
    tags: [backend]
    import-values:
      - child: info
        parent: cacheInfo
  - name: cache
    version: 0.1.0
    alias: cache2
    condition: cache2.enabled
  - name: common
    version: 1.0.0
  - name: metrics
    version: ^2.0.0
    import-values:
      - defaults
";

const WEB_VALUES: &str = "\
global:
  region: eu
db:
  enabled: true
cache2:
  enabled: false
tags:
  backend: true
";

const WEB_TEMPLATE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "common.name" . }}
  annotations:
    template: {{ .Template.Name }}
data:
  cachePort: {{ with .Values.cacheInfo }}{{ .port | quote }}{{ else }}"none"{{ end }}
  metricsPort: {{ .Values.metricsPort | quote }}
  dbSize: {{ with .Subcharts.db }}{{ .Values.size | quote }}{{ else }}"none"{{ end }}
  region: {{ .Values.global.region }}
  isRoot: {{ .Chart.IsRoot | quote }}
  deps: "{{ range .Chart.Dependencies }}{{ .Name }},{{ end }}"
"#;

const DB_TEMPLATE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
  annotations:
    template: {{ .Template.Name }}
data:
  size: {{ .Values.size }}
  region: {{ .Values.global.region }}
  tier: {{ .Values.global.tier }}
  init.sql: {{ .Files.Get "files/init.sql" | quote }}
  isRoot: {{ .Chart.IsRoot | quote }}
"#;

const CACHE_TEMPLATE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-{{ .Chart.Name }}
  annotations:
    template: {{ .Template.Name }}
data:
  port: {{ .Values.info.port | quote }}
"#;

fn release(values: &str) -> String {
    format!(
        "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: shop\n  namespace: shop\nspec:\n  chart: ../charts/web\n{values}"
    )
}

/// A .tgz as `helm package` writes it: every file under the chart's directory.
pub(crate) fn tgz(files: &[(&str, &str)]) -> Vec<u8> {
    let mut tar = Vec::new();
    for (name, text) in files {
        let mut header = [0u8; 512];
        header[..name.len()].copy_from_slice(name.as_bytes());
        header[100..107].copy_from_slice(b"0000644");
        header[124..135].copy_from_slice(format!("{:011o}", text.len()).as_bytes());
        header[156] = b'0';
        header[257..263].copy_from_slice(b"ustar\0");
        header[148..156].copy_from_slice(b"        ");
        let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
        header[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        tar.extend_from_slice(&header);
        tar.extend_from_slice(text.as_bytes());
        tar.resize(tar.len().div_ceil(512) * 512, 0);
    }
    tar.resize(tar.len() + 1024, 0);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

fn web_site(release_values: &str) -> tempfile::TempDir {
    let dir = site(&[
        ("namespaces.yaml", &ns_yaml("shop")),
        ("apps/shop.yaml", &release(release_values)),
        ("charts/web/Chart.yaml", WEB_CHART),
        ("charts/web/values.yaml", WEB_VALUES),
        ("charts/web/templates/app.yaml", WEB_TEMPLATE),
        // Ignored by .helmignore: rendering it would fail.
        (
            "charts/web/templates/broken.yaml",
            "{{ .Values.nope.deeper.still }}",
        ),
        (
            "charts/web/.helmignore",
            "# not part of the chart\ntemplates/broken.yaml\n*.bak\n",
        ),
        (
            "charts/web/charts/db/Chart.yaml",
            "apiVersion: v2\nname: db\nversion: 1.4.0\n",
        ),
        (
            "charts/web/charts/db/values.yaml",
            "size: 1Gi\nglobal:\n  region: us\n  tier: data\n",
        ),
        ("charts/web/charts/db/templates/db.yaml", DB_TEMPLATE),
        (
            "charts/web/charts/db/files/init.sql",
            "CREATE TABLE carts (id int);\n",
        ),
        (
            "charts/web/charts/db/crds/backups.yaml",
            &super::crd("db.example.com", "Backup"),
        ),
        (
            "charts/web/charts/cache/Chart.yaml",
            "apiVersion: v2\nname: cache\nversion: 0.1.0\n",
        ),
        (
            "charts/web/charts/cache/values.yaml",
            "info:\n  port: 6379\n",
        ),
        (
            "charts/web/charts/cache/templates/cache.yaml",
            CACHE_TEMPLATE,
        ),
        (
            "charts/web/charts/common/Chart.yaml",
            "apiVersion: v2\nname: common\nversion: 1.0.0\ntype: library\n",
        ),
        (
            "charts/web/charts/common/templates/_names.tpl",
            "{{- define \"common.name\" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}\n",
        ),
        (
            "charts/web/charts/common/templates/not-rendered.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-a-library\n",
        ),
    ]);
    let archive = tgz(&[
        ("metrics/Chart.yaml", "apiVersion: v2\nname: metrics\nversion: 2.1.0\n"),
        ("metrics/values.yaml", "exports:\n  defaults:\n    metricsPort: 9102\n"),
        (
            "metrics/templates/metrics.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-metrics\n  annotations:\n    template: {{ .Template.Name }}\ndata:\n  port: {{ .Values.exports.defaults.metricsPort | quote }}\n",
        ),
    ]);
    std::fs::write(
        dir.path().join("charts/web/charts/metrics-2.1.0.tgz"),
        archive,
    )
    .unwrap();
    dir
}

fn config_maps(stdout: &str) -> std::collections::BTreeMap<String, Value> {
    parse_stream(stdout)
        .into_iter()
        .filter(|o| o["kind"] == "ConfigMap")
        .map(|o| (o["metadata"]["name"].as_str().unwrap_or("").to_string(), o))
        .collect()
}

#[test]
fn subcharts_render_with_their_values_globals_aliases_imports_and_library_templates() {
    let cluster = cluster_with_crds();
    let dir = web_site("  values:\n    db:\n      size: 10Gi\n");
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let cms = config_maps(&stdout);
    let names: Vec<&String> = cms.keys().collect();
    assert_eq!(
        names,
        ["shop-db", "shop-metrics", "shop-redis", "shop-web"],
        "the disabled alias and the library's template render nothing"
    );

    let web = &cms["shop-web"]["data"];
    assert_eq!(web["cachePort"], "6379", "import-values, map form");
    assert_eq!(web["metricsPort"], "9102", "import-values, exports form");
    assert_eq!(
        web["dbSize"], "10Gi",
        ".Subcharts and values for a subchart"
    );
    assert_eq!(web["isRoot"], "true");
    assert_eq!(web["deps"], "db,redis,common,metrics,");
    assert_eq!(
        cms["shop-web"]["metadata"]["annotations"]["template"],
        "web/templates/app.yaml"
    );

    let db = &cms["shop-db"];
    assert_eq!(db["data"]["size"], "10Gi", "the parent's values win");
    assert_eq!(db["data"]["region"], "eu", "the parent's globals win");
    assert_eq!(
        db["data"]["tier"], "data",
        "the subchart's own globals stay"
    );
    assert_eq!(db["data"]["init.sql"], "CREATE TABLE carts (id int);\n");
    assert_eq!(db["data"]["isRoot"], "false");
    assert_eq!(
        db["metadata"]["annotations"]["template"],
        "web/charts/db/templates/db.yaml"
    );
    assert_eq!(db["metadata"]["namespace"], "shop");
    assert_eq!(
        cms["shop-redis"]["metadata"]["annotations"]["template"],
        "web/charts/redis/templates/cache.yaml",
        "an alias renames the chart"
    );
    assert_eq!(
        cms["shop-metrics"]["metadata"]["annotations"]["template"],
        "web/charts/metrics/templates/metrics.yaml"
    );
    assert!(
        stdout.contains("backups.db.example.com"),
        "a subchart's crds/ are applied too"
    );

    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(get(&cluster, "", "configmaps", "shop", "shop-db").is_some());
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "in sync:\n{stdout}\n{stderr}");
}

#[test]
fn conditions_and_tags_disable_subcharts_with_their_crds() {
    let dir =
        web_site("  values:\n    db:\n      enabled: false\n    tags:\n      backend: false\n");
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let cms = config_maps(&stdout);
    let names: Vec<&String> = cms.keys().collect();
    assert_eq!(names, ["shop-metrics", "shop-web"]);
    assert_eq!(cms["shop-web"]["data"]["dbSize"], "none");
    assert_eq!(
        cms["shop-web"]["data"]["cachePort"], "none",
        "nothing imported"
    );
    assert_eq!(cms["shop-web"]["data"]["deps"], "common,metrics,");
    assert!(!stdout.contains("backups.db.example.com"), "{stdout}");
}

#[test]
fn a_v1_chart_reads_its_dependencies_from_requirements_yaml() {
    let dir = web_site("");
    let root = dir.path().join("charts/web");
    let chart = std::fs::read_to_string(root.join("Chart.yaml")).unwrap();
    let (head, deps) = chart.split_once("dependencies:\n").unwrap();
    std::fs::write(
        root.join("Chart.yaml"),
        head.replace("apiVersion: v2", "apiVersion: v1"),
    )
    .unwrap();
    std::fs::write(
        root.join("requirements.yaml"),
        format!("dependencies:\n{deps}"),
    )
    .unwrap();
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let cms = config_maps(&stdout);
    assert_eq!(cms["shop-web"]["data"]["cachePort"], "6379");
    assert!(!cms.contains_key("shop-cache2"));
}

#[test]
fn a_library_chart_is_not_installable() {
    let dir = web_site("");
    let path = dir.path().join("apps/shop.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("../charts/web", "../charts/common")).unwrap();
    copy_tree(
        &dir.path().join("charts/web/charts/common"),
        &dir.path().join("charts/common"),
    );
    let (code, _, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("apps/shop.yaml:7"), "{stderr}");
    assert!(stderr.contains("library chart"), "{stderr}");
}

const WEB_SCHEMA: &str = r#"{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "replicas": {"type": "integer", "minimum": 1}
  }
}"#;

const DB_SCHEMA: &str = r#"{
  "type": "object",
  "required": ["size"],
  "properties": {"size": {"type": "string", "pattern": "^[0-9]+[MG]i$"}}
}"#;

#[test]
fn values_are_checked_against_the_schemas_of_the_chart_and_its_subcharts() {
    let cluster = cluster_with_crds();
    let dir = web_site("  values:\n    replicas: three\n    db:\n      size: 10GB\n");
    std::fs::write(dir.path().join("charts/web/values.schema.json"), WEB_SCHEMA).unwrap();
    std::fs::write(
        dir.path().join("charts/web/charts/db/values.schema.json"),
        DB_SCHEMA,
    )
    .unwrap();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(stderr.contains("apps/shop.yaml:7"), "{stderr}");
    assert!(
        stderr.contains("values don't meet the specifications of the schema"),
        "{stderr}"
    );
    assert!(stderr.contains("web: at \"/replicas\""), "{stderr}");
    assert!(stderr.contains("db: at \"/size\""), "{stderr}");
    assert!(
        !stderr.contains("three") && !stderr.contains("10GB"),
        "values are not echoed: {stderr}"
    );
    assert!(object_writes(&cluster).is_empty(), "nothing written");

    let good = web_site("  values:\n    replicas: 3\n    db:\n      size: 10Gi\n");
    std::fs::write(
        good.path().join("charts/web/values.schema.json"),
        WEB_SCHEMA,
    )
    .unwrap();
    std::fs::write(
        good.path().join("charts/web/charts/db/values.schema.json"),
        DB_SCHEMA,
    )
    .unwrap();
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(good.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
}

#[test]
fn a_bad_helmignore_or_a_stray_file_in_charts_is_refused_clearly() {
    let dir = web_site("");
    std::fs::write(
        dir.path().join("charts/web/.helmignore"),
        "ok.txt\nfiles/**/x\n",
    )
    .unwrap();
    let (code, _, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("charts/web/.helmignore:2"), "{stderr}");
    assert!(stderr.contains("double-star"), "{stderr}");

    let dir = web_site("");
    std::fs::remove_dir_all(dir.path().join("charts/web/charts/db")).unwrap();
    let (code, _, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("apps/shop.yaml:7"), "{stderr}");
    assert!(
        stderr.contains("found in Chart.yaml, but missing in charts/ directory: db"),
        "{stderr}"
    );

    let dir = web_site("");
    std::fs::write(dir.path().join("charts/web/charts/README.md"), "# deps\n").unwrap();
    let (code, _, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("charts/web/charts/README.md:1"), "{stderr}");
    assert!(stderr.contains("not a chart"), "{stderr}");

    let dir = web_site("");
    std::fs::write(
        dir.path().join("charts/web/charts/metrics-2.1.0.tgz"),
        b"not gzip",
    )
    .unwrap();
    let (code, _, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("charts/web/charts/metrics-2.1.0.tgz:1"),
        "{stderr}"
    );
}

const FILES_TEMPLATE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-files
data:
  {{- (.Files.Glob "files/*").AsConfig | nindent 2 }}
  first-line: {{ index (.Files.Lines "files/app.conf") 0 | quote }}
  greeting: {{ tpl .Values.greeting . | quote }}
  missing: {{ .Files.Get "files/nope" | quote }}
  schema: {{ .Files.Get "values.schema.json" | quote }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-files
data:
  {{- (.Files.Glob "files/*.ini").AsSecrets | nindent 2 }}
"#;

#[test]
fn files_and_tpl_work_as_in_helm() {
    let dir = site(&[
        ("namespaces.yaml", &ns_yaml("shop")),
        (
            "apps/shop.yaml",
            &release(
                "  values:\n    greeting: \"hello {{ .Release.Name }} from {{ .Chart.Name }}\"\n",
            )
            .replace("charts/web", "charts/files"),
        ),
        (
            "charts/files/Chart.yaml",
            "apiVersion: v2\nname: files\nversion: 1.0.0\n",
        ),
        ("charts/files/.helmignore", "*.bak\n"),
        ("charts/files/values.schema.json", "{\"type\": \"object\"}"),
        ("charts/files/files/app.conf", "listen 80\nworkers 2\n"),
        ("charts/files/files/extra.ini", "[a]\nb=1\n"),
        ("charts/files/files/old.bak", "ignored\n"),
        (
            "charts/files/files/deeper/x.conf",
            "not matched by files/*\n",
        ),
        ("charts/files/templates/files.yaml", FILES_TEMPLATE),
    ]);
    // A symlink back up the chart is read once, not forever.
    std::os::unix::fs::symlink("..", dir.path().join("charts/files/files/loop")).unwrap();
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let objects = parse_stream(&stdout);
    let cm = objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .expect("ConfigMap");
    let data = cm["data"].as_object().expect("data");
    let keys: Vec<&String> = data.keys().collect();
    assert_eq!(
        keys,
        [
            "app.conf",
            "extra.ini",
            "first-line",
            "greeting",
            "missing",
            "schema"
        ],
        ".helmignore'd and deeper files are not globbed: {data:?}"
    );
    assert_eq!(data["app.conf"], "listen 80\nworkers 2\n");
    assert_eq!(data["first-line"], "listen 80");
    assert_eq!(data["greeting"], "hello shop from files");
    assert_eq!(data["missing"], "");
    assert_eq!(
        data["schema"], "",
        "the schema is the chart's, not one of its .Files"
    );
    let secret = objects
        .iter()
        .find(|o| o["kind"] == "Secret")
        .expect("Secret");
    // Secret data is masked in what render prints; the unit tests check the encoding.
    let secret_keys: Vec<&String> = secret["data"].as_object().expect("data").keys().collect();
    assert_eq!(secret_keys, ["extra.ini"]);

    // A symlink out of the repository, to a file or through a directory, is refused.
    for (link, target) in [("files/hosts", "/etc/hosts"), ("files/etc", "/etc")] {
        let path = dir.path().join("charts/files").join(link);
        std::os::unix::fs::symlink(target, &path).unwrap();
        let (code, _, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains(&format!(
                "charts/files/{link}:1: symlink points outside the repository"
            )),
            "{stderr}"
        );
        std::fs::remove_file(&path).unwrap();
    }
}
