//! `tend crds`: six CRDs that parse as k8s-openapi types.

use crate::common::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

#[test]
fn prints_the_six_crds() {
    let (code, stdout, stderr) = run(tend().arg("crds"));
    assert_eq!(code, 0, "{stderr}");
    let docs = parse_stream(&stdout);
    let names: Vec<String> = docs
        .into_iter()
        .map(|d| {
            let crd: CustomResourceDefinition = serde_json::from_value(d).unwrap();
            assert_eq!(crd.spec.group, "tend.dev");
            crd.metadata.name.unwrap()
        })
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec![
            "chaosagents.tend.dev",
            "copyrules.tend.dev",
            "fleets.tend.dev",
            "helmcharts.tend.dev",
            "immortalcontainers.tend.dev",
            "registrymirrors.tend.dev"
        ]
    );
    let (code, json, _) = run(tend().args(["crds", "-o", "json"]));
    assert_eq!(code, 0);
    let list: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 6);
}

#[test]
fn crds_install_on_the_test_api_server_and_become_established() {
    let cluster = tend_testserver::TestCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, _) = run(tend().arg("crds"));
    assert_eq!(code, 0);
    std::fs::write(dir.path().join("crds.yaml"), stdout).unwrap();
    let (code, _, stderr) = run(tend()
        .args(["apply", "--applyset", "tend-crds", "--repo"])
        .arg(dir.path())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()));
    assert_eq!(code, 0, "{stderr}");
    for name in [
        "copyrules",
        "registrymirrors",
        "immortalcontainers",
        "chaosagents",
    ] {
        let crd = cluster
            .object(
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                "",
                &format!("{name}.tend.dev"),
            )
            .expect("crd stored");
        let established = crd["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True");
        assert!(established, "{name}");
    }
    // The example site now applies (its tend kinds are served).
    let (code, _, stderr) = run(tend()
        .args(["apply", "--cluster", "dc1", "--repo"])
        .arg(example_site())
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path()));
    assert_eq!(code, 0, "{stderr}");
}
