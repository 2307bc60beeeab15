//! List documents (README "Desired state (sources)"): `kind: List` and `<Kind>List` expand into their items, each at its
//! own line.

use crate::common::*;

use serde_json::Value;
use tend_testserver::TestCluster;

fn lists() -> std::path::PathBuf {
    fixture("lists")
}

#[test]
fn a_role_list_and_a_config_map_list_render_apply_and_diff_clean() {
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(lists()));
    assert_eq!(code, 0, "{stderr}");
    let objects = parse_stream(&stdout);
    let roles: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "Role").collect();
    let cms: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "ConfigMap")
        .collect();
    assert_eq!((roles.len(), cms.len()), (30, 30));
    assert!(roles
        .iter()
        .all(|r| r["apiVersion"] == "rbac.authorization.k8s.io/v1"));
    assert!(
        stderr.contains("rendered 61 objects from 3 files (61 documents)"),
        "{stderr}"
    );
    // Each item is reported at its own line: the first Role starts on line 6, the third
    // (without apiVersion and kind, taken from the RoleList) on line 26.
    assert!(stdout.contains("# Source: roles.yaml:6\n"), "{stdout}");
    assert!(stdout.contains("# Source: roles.yaml:26\n"), "{stdout}");
    assert!(stdout.contains("# Source: configmaps.yaml:5\n"), "{stdout}");

    let cluster = TestCluster::start();
    let (code, out, stderr) = tend_on(&cluster, &lists(), &["apply"]);
    assert_eq!(code, 0, "{out}\n{stderr}");
    let (code, out, stderr) = tend_on(&cluster, &lists(), &["diff"]);
    assert_eq!(code, 0, "{out}\n{stderr}");
    assert!(
        out.contains("0 to create, 0 to update, 0 to prune, 61 unchanged"),
        "{out}"
    );
    assert_eq!(
        cluster.objects("rbac.authorization.k8s.io", "roles").len(),
        30
    );
    let cm = get(&cluster, "", "configmaps", "lists", "config-29").unwrap();
    assert_eq!(cm["data"]["settings.ini"], "[main]\nshard = 29\n");
    let role = get(
        &cluster,
        "rbac.authorization.k8s.io",
        "roles",
        "lists",
        "reader-02",
    )
    .unwrap();
    assert_eq!(role["rules"][0]["resourceNames"][0], "config-02");
}

#[test]
fn a_bad_item_is_reported_at_its_own_line() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&lists(), dir.path());
    let file = dir.path().join("configmaps.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    // Item 12's name, and item 20 without a name at all.
    let text = text
        .replace("    name: config-12\n", "    name: Config_12\n")
        .replace("    name: config-20\n", "    generateName: config-\n");
    std::fs::write(&file, &text).unwrap();
    let name_line = text.lines().position(|l| l.contains("Config_12")).unwrap() + 1;
    let meta_line = text
        .lines()
        .position(|l| l.contains("generateName"))
        .unwrap();
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2, "{stdout}");
    assert!(
        stderr.contains(&format!(
            "configmaps.yaml:{name_line}: metadata.name \"Config_12\""
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "configmaps.yaml:{meta_line}: missing metadata.name: generateName"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("has 2 problems"), "{stderr}");
}

#[test]
fn lists_in_other_shapes() {
    let dir = site(&[
        // JSON, as `kubectl get -o json` writes it.
        (
            "exported.yaml",
            r#"{"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "web"}},
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "web"}}
]}
"#,
        ),
        // Flow style, a nested List, and an empty one.
        (
            "flow.yaml",
            "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: web}}\n  - apiVersion: v1\n    kind: List\n    items:\n      - apiVersion: v1\n        kind: ConfigMap\n        metadata:\n          name: d\n          namespace: web\n---\napiVersion: v1\nkind: List\nitems: []\n",
        ),
        // A kind that merely ends in "List", without items, is an object of its own.
        (
            "crd-kind.yaml",
            "apiVersion: example.com/v1\nkind: AllowList\nmetadata:\n  name: e\n  namespace: web\nspec:\n  cidrs: [10.0.0.0/8]\n",
        ),
    ]);
    let (code, stdout, stderr) = run(tend()
        .args(["render", "-o", "json", "--repo"])
        .arg(dir.path()));
    assert_eq!(code, 0, "{stderr}");
    let list: Value = serde_json::from_str(&stdout).unwrap();
    let mut names = ids(list["items"].as_array().unwrap());
    names.sort();
    assert_eq!(
        names,
        [
            "AllowList web/e",
            "ConfigMap web/a",
            "ConfigMap web/b",
            "ConfigMap web/c",
            "ConfigMap web/d",
        ]
    );
    let (code, stdout, _) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0);
    assert!(stdout.contains("# Source: exported.yaml:2\n"), "{stdout}");
    assert!(stdout.contains("# Source: flow.yaml:4\n"), "{stdout}");
    assert!(stdout.contains("# Source: flow.yaml:8\n"), "{stdout}");

    // A List whose items are not a sequence.
    let dir = site(&[("bad.yaml", "apiVersion: v1\nkind: List\nitems:\n  a: 1\n")]);
    let (code, _, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 2);
    assert!(
        stderr
            .contains("bad.yaml:3: items of a List must be a sequence of objects, found a mapping"),
        "{stderr}"
    );
}
