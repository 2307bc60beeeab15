use super::*;
use serde_json::json;

struct Tree {
    dirs: Vec<&'static str>,
    files: Vec<(&'static str, &'static str)>,
}

impl RepoTree for Tree {
    fn directories(&self, _: &str, _: &str) -> Result<Vec<String>, String> {
        Ok(self.dirs.iter().map(|d| d.to_string()).collect())
    }
    fn files(&self, _: &str, _: &str, pattern: &str) -> Result<Vec<(String, String)>, String> {
        Ok(self
            .files
            .iter()
            .filter(|(p, _)| super::super::argo_match::pathspec_match(pattern, p))
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect())
    }
}

fn empty_tree() -> Tree {
    Tree {
        dirs: vec![],
        files: vec![],
    }
}

fn cluster(
    name: &str,
    server: &str,
    labels: &[(&str, &str)],
    annotations: &[(&str, &str)],
) -> ArgoCluster {
    ArgoCluster {
        name: name.into(),
        server: server.into(),
        project: String::new(),
        run_name: None,
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        annotations: annotations
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn names(apps: &[Json]) -> Vec<String> {
    apps.iter()
        .map(|a| {
            a["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

fn yaml(text: &str) -> Json {
    serde_yaml::from_str(text).expect("test YAML")
}

#[test]
fn list_generator_with_fasttemplate_and_go_templates() {
    let tree = empty_tree();
    let ctx = GenerateContext {
        clusters: &[],
        repo: &tree,
    };
    let appset = yaml(
        r#"
metadata: {name: guestbook, namespace: argocd}
spec:
  generators:
  - list:
      elements:
      - {cluster: engineering-dev, url: "https://1.2.3.4", values: {team: a}}
      - {cluster: engineering-prod, url: "https://2.4.6.8", values: {team: b}}
  template:
    metadata: {name: '{{cluster}}-guestbook', labels: {team: '{{values.team}}'}}
    spec:
      project: default
      source: {repoURL: https://example.com/repo.git, path: 'guestbook/{{cluster}}'}
      destination: {server: '{{url}}', namespace: guestbook}
"#,
    );
    let apps = generate(&appset, &ctx).unwrap();
    assert_eq!(
        names(&apps),
        ["engineering-dev-guestbook", "engineering-prod-guestbook"]
    );
    assert_eq!(apps[0]["metadata"]["namespace"], "argocd");
    assert_eq!(apps[0]["metadata"]["labels"]["team"], "a");
    assert_eq!(
        apps[1]["spec"]["source"]["path"],
        "guestbook/engineering-prod"
    );
    assert_eq!(
        apps[0]["metadata"]["finalizers"],
        json!(["resources-finalizer.argocd.argoproj.io"])
    );

    let go = yaml(
        r#"
metadata: {name: go}
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  syncPolicy: {preserveResourcesOnDeletion: true}
  generators:
  - list:
      elements:
      - {name: a, replicas: 2, tags: [x, y]}
  template:
    metadata: {name: '{{ .name | upper | lower }}-{{ index .tags 1 }}'}
    spec: {source: {path: '{{ .missing }}'}}
"#,
    );
    let err = generate(&go, &ctx).unwrap_err();
    assert!(err.contains("map has no entry for key"), "{err}");
    let go = yaml(
        &serde_yaml::to_string(&go)
            .unwrap()
            .replace("{{ .missing }}", "{{ .replicas }}"),
    );
    let apps = generate(&go, &ctx).unwrap();
    assert_eq!(names(&apps), ["a-y"]);
    assert_eq!(apps[0]["spec"]["source"]["path"], "2");
    assert!(apps[0]["metadata"].get("finalizers").is_none());
}

#[test]
fn clusters_generator_selects_by_labels_and_adds_the_local_cluster_when_unselected() {
    let tree = empty_tree();
    let clusters = [
        cluster(
            "hub",
            IN_CLUSTER_SERVER,
            &[("environment", "staging")],
            &[("repo", "r1")],
        ),
        cluster(
            "spoke",
            "https://spoke:6443",
            &[("environment", "prod")],
            &[],
        ),
    ];
    let ctx = GenerateContext {
        clusters: &clusters,
        repo: &tree,
    };
    let appset = yaml(
        r#"
metadata: {name: x, namespace: argocd}
spec:
  generators:
  - clusters:
      selector: {matchLabels: {environment: staging}}
      values: {chart: 'c-{{name}}'}
  template:
    metadata: {name: 'x-{{name}}'}
    spec:
      source: {repoURL: '{{metadata.annotations.repo}}', chart: '{{values.chart}}'}
      destination: {server: '{{server}}'}
"#,
    );
    let apps = generate(&appset, &ctx).unwrap();
    assert_eq!(names(&apps), ["x-hub"]);
    assert_eq!(apps[0]["spec"]["source"]["repoURL"], "r1");
    assert_eq!(apps[0]["spec"]["source"]["chart"], "c-hub");

    // No selector and no Secret for Argo CD's own cluster: it is generated too.
    let only_spoke = [clusters[1].clone()];
    let ctx = GenerateContext {
        clusters: &only_spoke,
        repo: &tree,
    };
    let appset = yaml(
        r#"
spec:
  generators: [{clusters: {}}]
  template: {metadata: {name: 'x-{{name}}'}, spec: {}}
"#,
    );
    assert_eq!(
        names(&generate(&appset, &ctx).unwrap()),
        ["x-spoke", "x-in-cluster"]
    );
}

#[test]
fn merge_of_cluster_generators_overrides_values_by_merge_key() {
    let tree = empty_tree();
    let clusters = [
        cluster(
            "hub",
            IN_CLUSTER_SERVER,
            &[("environment", "staging"), ("enable_cm", "true")],
            &[],
        ),
        cluster(
            "dev",
            "https://dev",
            &[("environment", "dev"), ("enable_cm", "true")],
            &[],
        ),
        cluster("off", "https://off", &[("environment", "dev")], &[]),
    ];
    let ctx = GenerateContext {
        clusters: &clusters,
        repo: &tree,
    };
    for go in [false, true] {
        let dot = if go { "." } else { "" };
        let appset = yaml(&format!(
            r#"
spec:
  goTemplate: {go}
  generators:
  - merge:
      mergeKeys: [server]
      generators:
      - clusters:
          values: {{addonChart: cert-manager, addonChartVersion: v1}}
          selector:
            matchExpressions:
            - {{key: enable_cm, operator: In, values: ['true']}}
      - clusters:
          selector: {{matchLabels: {{environment: staging}}}}
          values: {{addonChartVersion: v2}}
  template:
    metadata: {{name: 'addon-{{{{{dot}name}}}}-{{{{{dot}values.addonChart}}}}'}}
    spec: {{source: {{targetRevision: '{{{{{dot}values.addonChartVersion}}}}'}}}}
"#
        ));
        let apps = generate(&appset, &ctx).unwrap();
        assert_eq!(
            names(&apps),
            ["addon-hub-cert-manager", "addon-dev-cert-manager"],
            "go: {go}"
        );
        assert_eq!(apps[0]["spec"]["source"]["targetRevision"], "v2");
        assert_eq!(apps[1]["spec"]["source"]["targetRevision"], "v1");
    }
}

#[test]
fn git_generators_give_path_parameters_and_matrix_combines() {
    let tree = Tree {
        dirs: vec!["apps", "apps/web", "apps/api", "apps/skip", "other"],
        files: vec![
            (
                "clusters/a/config.json",
                r#"{"cluster": {"name": "a", "env": "dev"}}"#,
            ),
            (
                "clusters/b/config.json",
                r#"{"cluster": {"name": "b", "env": "prod"}}"#,
            ),
        ],
    };
    let ctx = GenerateContext {
        clusters: &[],
        repo: &tree,
    };
    let appset = yaml(
        r#"
spec:
  generators:
  - git:
      repoURL: https://example.com/repo.git
      directories: [{path: 'apps/*'}, {path: apps/skip, exclude: true}]
  template:
    metadata: {name: '{{path.basename}}-{{path[0]}}'}
    spec: {source: {path: '{{path}}'}, destination: {namespace: '{{path.basenameNormalized}}'}}
"#,
    );
    let apps = generate(&appset, &ctx).unwrap();
    assert_eq!(names(&apps), ["web-apps", "api-apps"]);
    assert_eq!(apps[0]["spec"]["source"]["path"], "apps/web");

    let appset = yaml(
        r#"
spec:
  goTemplate: true
  generators:
  - matrix:
      generators:
      - git:
          repoURL: https://example.com/repo.git
          files: [{path: 'clusters/**/config.json'}]
      - list:
          elements: [{app: web}, {app: api}]
        selector: {matchLabels: {app: web}}
  template:
    metadata: {name: '{{.cluster.name}}-{{.app}}-{{index .path.segments 1}}'}
    spec: {source: {path: '{{.path.path}}/{{.path.filename}}'}}
"#,
    );
    let apps = generate(&appset, &ctx).unwrap();
    assert_eq!(names(&apps), ["a-web-a", "b-web-b"]);
    assert_eq!(apps[0]["spec"]["source"]["path"], "clusters/a/config.json");
}

#[test]
fn service_generators_and_duplicates_are_refused_with_the_way_out() {
    let tree = empty_tree();
    let ctx = GenerateContext {
        clusters: &[],
        repo: &tree,
    };
    let appset = yaml("spec: {generators: [{pullRequest: {}}], template: {}}");
    let err = generate(&appset, &ctx).unwrap_err();
    assert!(
        err.contains("pullRequest generator needs a service"),
        "{err}"
    );
    assert!(err.contains("commit them"), "{err}");
    let appset = yaml(
        "spec: {generators: [{list: {elements: [{a: x}, {a: y}]}}], template: {metadata: {name: same}, spec: {}}}",
    );
    let err = generate(&appset, &ctx).unwrap_err();
    assert!(err.contains("duplicate name: same"), "{err}");
}

#[test]
fn template_patch_merges_over_the_rendered_template() {
    let tree = empty_tree();
    let ctx = GenerateContext {
        clusters: &[],
        repo: &tree,
    };
    let appset = yaml(
        r#"
spec:
  goTemplate: true
  generators: [{list: {elements: [{name: a, auto: true}, {name: b, auto: false}]}}]
  template: {metadata: {name: '{{.name}}'}, spec: {project: default}}
  templatePatch: |
    {{- if .auto }}
    spec:
      syncPolicy: {automated: {prune: true}}
    {{- end }}
"#,
    );
    let apps = generate(&appset, &ctx).unwrap();
    assert_eq!(apps[0]["spec"]["syncPolicy"]["automated"]["prune"], true);
    assert!(apps[1]["spec"].get("syncPolicy").is_none());
}
