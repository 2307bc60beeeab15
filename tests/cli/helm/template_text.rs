//! `tend render --helm-template`: a HelmChart's release printed as `helm template` prints it,
//! byte for byte, and never a Secret's values unasked.

use crate::common::*;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/helm-corpus");

#[test]
fn a_release_prints_as_helm_template_prints_it() {
    let chart = std::path::Path::new(CORPUS).join("charts/kube-state-metrics");
    let golden = std::path::Path::new(CORPUS).join("golden/kube-state-metrics/default.yaml");
    let (Ok(expected), true) = (std::fs::read_to_string(&golden), chart.is_dir()) else {
        eprintln!("skipped: no Helm corpus at {CORPUS}");
        return;
    };
    // As `helm template rel charts/kube-state-metrics --namespace ns1 --kube-version v1.33.0`.
    let dir = site(&[(
        "release.yaml",
        "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: rel\n  namespace: ns1\nspec:\n  chart: charts/ksm\n  kubeVersion: v1.33.0\n",
    )]);
    copy_tree(&chart, &dir.path().join("charts/ksm"));
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, expected);
}

#[test]
fn a_release_with_a_secret_prints_only_with_show_secrets() {
    let dir = site(&[
        (
            "release.yaml",
            "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: rel\n  namespace: ns1\nspec:\n  chart: charts/app\n",
        ),
        ("charts/app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\n"),
        (
            "charts/app/templates/secret.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-creds\nstringData:\n  password: hunter2-canary\n",
        ),
    ]);
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("--show-secrets"), "{stderr}");
    assert!(!stdout.contains("hunter2-canary") && !stderr.contains("hunter2-canary"));
    let (code, stdout, stderr) = run(tend()
        .args(["render", "--helm-template", "--show-secrets", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "---\n# Source: app/templates/secret.yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: rel-creds\nstringData:\n  password: hunter2-canary\n"
    );
}

/// Go's nil rules through `range` (issue 33): a field of a nil element is an error, as
/// `helm template` gives it, and nothing is rendered; the same element unwrapped by a
/// pipeline (`($v).x`) is empty.
#[test]
fn a_field_of_a_nil_range_element_fails_as_helm_fails() {
    let chart = |template: &str| {
        site(&[
            (
                "release.yaml",
                "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: rel\n  namespace: ns1\nspec:\n  chart: charts/app\n  values:\n    ports: {web: null}\n",
            ),
            ("charts/app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\n"),
            ("charts/app/templates/cm.yaml", template),
        ])
    };
    let head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n";
    let dir = chart(&format!(
        "{head}{{{{- range $name, $port := .Values.ports }}}}\n  {{{{ $name }}}}: \"{{{{ $port.number }}}}\"\n{{{{- end }}}}\n"
    ));
    let (code, stdout, stderr) = run(tend().args(["render", "--repo"]).arg(dir.path()));
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("templates/cm.yaml")
            && stderr.contains("nil pointer evaluating interface {}.number"),
        "{stderr}"
    );
    assert!(!stdout.contains("kind: ConfigMap"), "{stdout}");
    let dir = chart(&format!(
        "{head}{{{{- range $name, $port := .Values.ports }}}}\n  {{{{ $name }}}}: \"{{{{ ($port).number }}}}\"\n{{{{- end }}}}\n"
    ));
    let (code, stdout, stderr) = run(tend().args(["render", "--repo"]).arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("web: ''"), "{stdout}");
}

/// Sprig's `urlParse` and `urlJoin` (harbor's `externalURL`, gitlab's OIDC host), as Go's
/// net/url splits and prints: the same text `helm template` prints, and Sprig's error for
/// a URL Go refuses.
#[test]
fn url_functions_split_and_join_as_go_does() {
    let chart = |url: &str| {
        app_chart(&[
            ("values.yaml", &format!("externalURL: {url:?}\n")),
            (
                "templates/cm.yaml",
                "{{- $u := urlParse .Values.externalURL }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: urls\ndata:\n  host: {{ $u.host | quote }}\n  hostname: {{ $u.hostname | quote }}\n  path: {{ $u.path | quote }}\n  userinfo: {{ $u.userinfo | quote }}\n  joined: {{ urlJoin (dict \"scheme\" \"https\" \"host\" $u.hostname \"path\" \"/v2 api\" \"query\" $u.query \"userinfo\" \"me@corp:p\") | quote }}\n",
            ),
        ])
    };
    let dir = chart("http://admin:s%40cret@core.harbor.local:8443/a%20b?x=1#top");
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: urls\ndata:\n  host: \"core.harbor.local:8443\"\n  hostname: \"core.harbor.local\"\n  path: \"/a b\"\n  userinfo: \"admin:s%40cret\"\n  joined: \"https://me%40corp:p@core.harbor.local/v2%20api?x=1\"\n"
    );
    let dir = chart("http://harbor:port/");
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "unable to parse url: parse \"http://harbor:port/\": invalid port \":port\" after host"
        ),
        "{stderr}"
    );
}

/// `fromToml` reads a chart file as Helm's BurntSushi/toml does (int64, float64, tables as
/// maps); a TOML date, which Helm hands templates as Go's time.Time, stops the render naming it.
#[test]
fn from_toml_reads_a_config_file_as_helm_does() {
    let chart = |config: &str| {
        app_chart(&[
            ("config.toml", config),
            (
                "templates/cm.yaml",
                "{{- $c := .Files.Get \"config.toml\" | fromToml }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  port: {{ $c.server.port | quote }}\n  next: {{ add1 $c.server.port }}\n  kind: {{ kindOf $c.server.port }}/{{ kindOf $c.server.ratio }}\n  peers: {{ $c.peers | toJson | quote }}\n",
            ),
        ])
    };
    let dir = chart(
        "[server]\nport = 8080\nratio = 0.5\n\n[[peers]]\nname = 'a'\n[[peers]]\nname = 'b'\n",
    );
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  port: \"8080\"\n  next: 8081\n  kind: int64/float64\n  peers: \"[{\\\"name\\\":\\\"a\\\"},{\\\"name\\\":\\\"b\\\"}]\"\n"
    );
    let dir = chart("[server]\nport = 8080\nratio = 0.5\nsince = 2024-01-02\n");
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("fromToml") && stderr.contains("at server.since is a date or time"),
        "{stderr}"
    );
}

/// A chart file that is not UTF-8 text reaches a ConfigMap's binaryData through
/// `.Files.Get | b64enc` (kube-prometheus-stack's CRD upgrade job): its exact bytes, as Go's
/// string holds them; printing it as text stops the render naming the file's bytes.
#[test]
fn a_binary_chart_file_encodes_to_its_exact_bytes() {
    let chart = |template: &str| {
        let dir = app_chart(&[("templates/cm.yaml", template)]);
        std::fs::create_dir_all(dir.path().join("charts/app/files")).unwrap();
        std::fs::write(
            dir.path().join("charts/app/files/data.bz2"),
            [0x42, 0x5a, 0x68, 0x39, 0xff, 0x00, 0x80],
        )
        .unwrap();
        dir
    };
    let dir = chart(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  annotations:\n    sum: {{ .Files.Get \"files/data.bz2\" | sha256sum }}\nbinaryData:\n  data.bz2: {{ .Files.Get \"files/data.bz2\" | b64enc }}\n",
    );
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  annotations:\n    sum: bffc85939c1e3bdf88147e5594e54aa00e989a253f4ce73fec11f71d7c04cc5e\nbinaryData:\n  data.bz2: QlpoOf8AgA==\n"
    );
    let dir = chart("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  x: {{ .Files.Get \"files/data.bz2\" | quote }}\n");
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("not UTF-8"), "{stderr}");
}

/// A key a template repeats takes its last value, as Helm's Kubernetes client reads the
/// render (sigs.k8s.io/yaml, non-strict): kube-prometheus-stack's `additionalConfig` repeats
/// spec fields to override them. `--helm-template` prints the text as Helm does.
#[test]
fn a_repeated_key_in_a_render_takes_its_last_value() {
    let dir = app_chart(&[
        (
            "templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  level: info\n  format: text\n{{- with .Values.extra }}\n{{ toYaml . | indent 2 }}\n{{- end }}\n",
        ),
        // A chart test stays left out though it repeats a key.
        (
            "templates/test.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers: []\n  containers: [{name: c, image: busybox}]\n",
        ),
    ]);
    std::fs::write(
        dir.path().join("charts/app/values.yaml"),
        "extra:\n  level: debug\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(tend().args(["render", "--repo"]).arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("  level: debug\n")
            && stdout.contains("  format: text\n")
            && !stdout.contains("info")
            && !stdout.contains("kind: Pod"),
        "{stdout}"
    );
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("  level: info\n  format: text\n  level: debug\n"),
        "{stdout}"
    );
}

/// A cluster-scoped object a chart gives a namespace is applied without it, as kube-apiserver
/// stores what `helm install` sends (opentelemetry-target-allocator's ClusterRole);
/// `--helm-template` prints the text as Helm does.
#[test]
fn a_cluster_scoped_object_a_chart_namespaces_renders_without_it() {
    let dir = app_chart(&[
        (
            "templates/role.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\n  namespace: {{ .Release.Namespace }}\nrules: []\n",
        ),
        // A kind the chart's own CRD makes cluster-scoped.
        (
            "crds/widgets.yaml",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Cluster\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n",
        ),
        (
            "templates/widget.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: {{ .Release.Namespace }}\n",
        ),
    ]);
    let (code, stdout, stderr) = run(tend().args(["render", "--repo"]).arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("kind: ClusterRole\nmetadata:\n  name: reader\nrules: []\n")
            && stdout.contains("kind: Widget\nmetadata:\n  name: w\n"),
        "{stdout}"
    );
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("  name: reader\n  namespace: ns1\n"),
        "{stdout}"
    );
}

/// `.Values` is Helm's chartutil.Values: `.Values.AsMap` calls its method (cilium's
/// validate.yaml digs into it for removed options) rather than looking up a missing key.
#[test]
fn values_methods_answer_as_chartutil_values() {
    let dir = app_chart(&[
        ("values.yaml", "old:\n  option: true\nport: 80\n"),
        (
            "templates/cm.yaml",
            "{{- if (dig \"old\" \"option\" false .Values.AsMap) }}\n{{ fail \"old.option was removed\" }}\n{{- end }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  port: {{ .Values.PathValue \"port\" | quote }}\n",
        ),
    ]);
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("old.option was removed"), "{stderr}");
    std::fs::write(dir.path().join("charts/app/values.yaml"), "port: 80\n").unwrap();
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.ends_with("data:\n  port: \"80\"\n"), "{stdout}");
}

/// A function with fields after it (`merge.Values.a`) parses, as Go's parser takes it: a
/// branch that never runs it renders (bitnami's grafana-mimir), one that runs it fails.
#[test]
fn a_function_with_fields_fails_only_where_it_runs() {
    let chart = |values: &str| {
        app_chart(&[
            ("values.yaml", values),
            (
                "templates/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  {{- if .Values.extra }}\n  {{- $a := merge.Values.extra .Values.common }}\n  {{- end }}\n",
            ),
        ])
    };
    let (code, stdout, stderr) = helm_template(&chart("extra: {}\ncommon: {}\n"));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.ends_with("  name: cfg\n"), "{stdout}");
    let (code, stdout, stderr) = helm_template(&chart("extra: {a: 1}\ncommon: {}\n"));
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("merge"), "{stderr}");
}

/// A repository with one HelmChart `rel` (namespace ns1) of the chart `charts/app`, whose
/// files are `files` (paths inside the chart) besides its Chart.yaml.
fn app_chart(files: &[(&str, &str)]) -> tempfile::TempDir {
    let paths: Vec<String> = files
        .iter()
        .map(|(p, _)| format!("charts/app/{p}"))
        .collect();
    let mut all = vec![
        (
            "release.yaml",
            "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: rel\n  namespace: ns1\nspec:\n  chart: charts/app\n",
        ),
        ("charts/app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\n"),
    ];
    all.extend(
        paths
            .iter()
            .map(String::as_str)
            .zip(files.iter().map(|(_, t)| *t)),
    );
    site(&all)
}

/// `tend render --helm-template` of the repository `dir`.
fn helm_template(dir: &tempfile::TempDir) -> (i32, String, String) {
    run(tend()
        .args(["render", "--helm-template", "--repo"])
        .arg(dir.path()))
}

/// Helm 3.19.5's function map as a chart meets it (issue 33): `toYamlPretty` is go-yaml v3
/// with two-space indent (sequences indented, the float64 of a values file as `1e+08`),
/// Sprig's `hello` prints, `call` in a branch never taken parses, a number past float64's
/// range in values.yaml is the string go-yaml v2 leaves; Helm 4's `mustToYaml` is refused
/// as 3.19.5 refuses it.
#[test]
fn helm_3_19_5s_functions_render_as_helm_renders_them() {
    let template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  pretty: |\n    {{- toYamlPretty (dict \"ports\" .Values.ports \"replicas\" .Values.replicas) | nindent 4 }}\n  big: {{ .Values.big | quote }}\n  hello: {{ hello }}\n{{- if false }}{{ call .Values.fn }}{{ end }}\n";
    let dir = app_chart(&[
        (
            "values.yaml",
            "big: 1e400\nports: [80, 443]\nreplicas: 100000000\n",
        ),
        ("templates/cm.yaml", template),
    ]);
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rel\ndata:\n  pretty: |\n    ports:\n      - 80\n      - 443\n    replicas: 1e+08\n  big: \"1e400\"\n  hello: Hello!\n"
    );
    let dir = app_chart(&[("templates/cm.yaml", "{{ mustToYaml .Values }}\n")]);
    let (code, stdout, stderr) = helm_template(&dir);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("function \"mustToYaml\" not defined"),
        "{stderr}"
    );
}
