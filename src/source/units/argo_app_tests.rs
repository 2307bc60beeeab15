use super::*;
use serde_json::json;

fn files(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn source_types_as_the_repo_server_detects_them() {
    let plain = json!({"repoURL": "r", "path": "p"});
    assert_eq!(
        source_type(&plain, &files(&["a.yaml"])).unwrap(),
        SourceType::Directory
    );
    assert_eq!(
        source_type(&plain, &files(&["Chart.yaml", "kustomization.yaml"])).unwrap(),
        SourceType::Kustomize
    );
    assert_eq!(
        source_type(&plain, &files(&["Chart.yaml"])).unwrap(),
        SourceType::Helm
    );
    let explicit = json!({"repoURL": "r", "path": "p", "directory": {"recurse": true}});
    assert_eq!(
        source_type(&explicit, &files(&["kustomization.yaml"])).unwrap(),
        SourceType::Directory
    );
    assert_eq!(
        source_type(&json!({"chart": "podinfo"}), &[]).unwrap(),
        SourceType::Helm
    );
    let err = source_type(&json!({"plugin": {"name": "x"}}), &[]).unwrap_err();
    assert!(err.contains("config management plugin"), "{err}");
    let err = source_type(&json!({"helm": {}, "kustomize": {}}), &[]).unwrap_err();
    assert!(
        err.contains("multiple application sources defined"),
        "{err}"
    );
}

#[test]
fn destinations_name_this_cluster_or_another() {
    let clusters = [ArgoCluster {
        name: "hub".into(),
        server: IN_CLUSTER_SERVER.into(),
        ..ArgoCluster::default()
    }];
    let t = |dest: Json| target(&json!({ "destination": dest }), &clusters, Some("prod"));
    assert_eq!(
        t(json!({"server": "https://kubernetes.default.svc/"})).unwrap(),
        Target::ThisCluster
    );
    assert_eq!(
        t(json!({"name": "in-cluster"})).unwrap(),
        Target::ThisCluster
    );
    assert_eq!(t(json!({"name": "hub"})).unwrap(), Target::ThisCluster);
    assert_eq!(t(json!({"name": "prod"})).unwrap(), Target::ThisCluster);
    assert_eq!(
        t(json!({"name": "spoke"})).unwrap(),
        Target::Other("spoke".into())
    );
    assert_eq!(
        t(json!({"server": "https://spoke:6443"})).unwrap(),
        Target::Other("https://spoke:6443".into())
    );
    assert!(t(json!({"server": "a", "name": "b"})).is_err());
}

#[test]
fn destinations_naming_a_cluster_of_the_run_are_that_clusters() {
    // A cluster Secret whose server is the run's cluster `east`, and the run's `west`.
    let clusters = [
        ArgoCluster {
            name: "prod-east".into(),
            server: "https://east:6443".into(),
            run_name: Some("east".into()),
            ..ArgoCluster::default()
        },
        ArgoCluster {
            name: "west".into(),
            server: "https://west:6443".into(),
            run_name: Some("west".into()),
            ..ArgoCluster::default()
        },
    ];
    let in_east = |dest: Json| target(&json!({ "destination": dest }), &clusters, Some("east"));
    assert_eq!(
        in_east(json!({"name": "prod-east"})).unwrap(),
        Target::ThisCluster
    );
    assert_eq!(
        in_east(json!({"server": "https://east:6443/"})).unwrap(),
        Target::ThisCluster
    );
    assert_eq!(
        in_east(json!({"server": "https://west:6443"})).unwrap(),
        Target::OfRun("west".into())
    );
    assert_eq!(
        in_east(json!({"name": "west"})).unwrap(),
        Target::OfRun("west".into())
    );
    assert_eq!(
        in_east(json!({"name": "north"})).unwrap(),
        Target::Other("north".into())
    );
}

#[test]
fn sync_options_become_policies() {
    let spec = json!({"syncPolicy": {"syncOptions": ["CreateNamespace=true", "Prune=false", "ServerSideApply=true"]}});
    let options = app_sync_options(&spec);
    assert!(options.create_namespace && options.keep && !options.replace);
    let mut object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "a",
                     "annotations": {"argocd.argoproj.io/sync-options": "Replace=true"}},
        "spec": {"replicas": 3, "template": {}}});
    let rules = ignore_rules(&json!({"ignoreDifferences": [
        {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}]}))
    .unwrap();
    apply_policies(&mut object, &options, &rules);
    assert_eq!(
        object["metadata"]["annotations"]["tend.dev/prune"],
        "disabled"
    );
    assert_eq!(
        object["metadata"]["annotations"]["tend.dev/replace"],
        "on-immutable"
    );
    assert!(object["spec"].get("replicas").is_none());
    assert!(object["spec"].get("template").is_some());

    let ns = managed_namespace(
        &json!({"syncPolicy": {"managedNamespaceMetadata": {"labels": {"team": "a"}}}}),
        "web",
    );
    assert_eq!(
        ns["metadata"],
        json!({"name": "web", "labels": {"team": "a"}})
    );

    // Field managers become the object's tend.dev/ignore-fields-of; jq deletes.
    let rules = ignore_rules(&json!({"ignoreDifferences": [
        {"group": "apps", "kind": "Deployment", "managedFieldsManagers": ["kube-controller-manager", "hpa"]},
        {"group": "apps", "kind": "Deployment", "jqPathExpressions": [".spec.template.spec.containers[] | select(.name == \"sidecar\")"]}]}))
    .expect("valid");
    let mut deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {IGNORE_FIELDS_OF: "hpa"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "app"}, {"name": "sidecar"}]}}}});
    strip_ignored(&mut deployment, &rules);
    assert_eq!(
        deployment["metadata"]["annotations"][IGNORE_FIELDS_OF],
        "hpa,kube-controller-manager"
    );
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"],
        json!([{"name": "app"}])
    );
    let err = ignore_rules(&json!({"ignoreDifferences": [
        {"kind": "Deployment", "jqPathExpressions": [".spec | nosuchfunction"]}]}))
    .unwrap_err();
    assert!(
        err.contains("spec.ignoreDifferences[0].jqPathExpressions"),
        "{err}"
    );
}

#[test]
fn kustomize_options_make_an_overlay() {
    let overlay = kustomize_overlay(
        &json!({"namePrefix": "p-", "images": ["nginx=registry/nginx:1.2", "redis:7", "app@sha256:abc"],
                "commonLabels": {"team": "a"}, "replicas": [{"name": "web", "count": 2}]}),
        "../base",
    )
    .unwrap();
    assert_eq!(overlay["resources"], json!(["../base"]));
    assert_eq!(overlay["namePrefix"], "p-");
    assert_eq!(
        overlay["images"],
        json!([{"name": "nginx", "newName": "registry/nginx", "newTag": "1.2"},
               {"name": "redis", "newTag": "7"},
               {"name": "app", "digest": "sha256:abc"}])
    );
    assert_eq!(overlay["labels"][0]["pairs"], json!({"team": "a"}));
    assert_eq!(overlay["replicas"][0]["count"], 2);
    assert!(kustomize_overlay(&json!({"bogus": 1}), ".").is_err());
}

#[test]
fn helm_parameters_set_values_as_helm_set_does() {
    let helm = json!({
        "values": "a: {b: 1}\nlist: [x]\n",
        "parameters": [
            {"name": "a.c", "value": "true"},
            {"name": "list[1]", "value": "y"},
            {"name": "n", "value": "0123"},
            {"name": "m", "value": "42"},
            {"name": "s", "value": "42", "forceString": true},
            {"name": "dotted\\.key", "value": "v"},
            {"name": "l", "value": "{1,two}"},
        ],
        "fileParameters": [{"name": "file", "path": "f.txt"}],
    });
    let read = |p: &str| -> Result<String, String> { Ok(format!("text of {p}")) };
    let v = helm_values(&helm, json!({"a": {"z": 0}, "list": ["w"]}), &read).unwrap();
    assert_eq!(
        v,
        json!({"a": {"z": 0, "b": 1, "c": true}, "list": ["x", "y"], "n": "0123", "m": 42,
               "s": "42", "dotted.key": "v", "l": [1, "two"], "file": "text of f.txt"})
    );
    let v = helm_values(
        &json!({"values": "a: 1", "valuesObject": {"b": 2}}),
        json!({}),
        &read,
    )
    .unwrap();
    assert_eq!(v, json!({"b": 2}));
}

#[test]
fn policies_travel_encoded_for_chart_output() {
    let sync = SyncOptions {
        keep: true,
        ..Default::default()
    };
    let rules = ignore_rules(&json!({"ignoreDifferences": [
        {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}]}))
    .unwrap();
    assert_eq!(encode_policies(&SyncOptions::default(), &[]), None);
    let encoded = encode_policies(&sync, &rules).unwrap();
    let mut object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"replicas": 2}});
    apply_encoded_policies(&mut object, &encoded);
    assert_eq!(
        object["metadata"]["annotations"]["tend.dev/prune"],
        "disabled"
    );
    assert!(object["spec"].get("replicas").is_none());
}
