//! Tenants (README "Coming from Flux"): a Flux unit with `spec.serviceAccountName` is
//! applied as that ServiceAccount, and a tenant that would write outside what its RBAC
//! allows is refused before anything is written.

use crate::common::*;
use tend_testserver::TestCluster;

const TENANT: &str = "system:serviceaccount:team-a:team-a";

/// A bootstrap layout: the platform's `tenants` unit (as kustomize-controller, i.e. tend)
/// sets team-a up (Namespace, ServiceAccount, a Role with every right in team-a only, its
/// RoleBinding) and holds team-a's own Kustomization, written as ServiceAccount team-a.
fn tenant_site() -> tempfile::TempDir {
    site(&[
        (
            "clusters/dev/flux-system/gotk-sync.yaml",
            "# This file will be generated automatically by flux boostrap.\n",
        ),
        (
            "clusters/dev/flux-system/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - gotk-sync.yaml\n  - sync.yaml\n",
        ),
        (
            "clusters/dev/flux-system/sync.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
        ),
        (
            "clusters/dev/tenants.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: tenants\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./tenants\n  prune: true\n  serviceAccountName: kustomize-controller\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
        ),
        (
            "tenants/team-a.yaml",
            concat!(
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n---\n",
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-b\n---\n",
                "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: team-a\n  namespace: team-a\n---\n",
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: admin\n  namespace: team-a\nrules:\n  - apiGroups: [\"*\"]\n    resources: [\"*\"]\n    verbs: [\"*\"]\n---\n",
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: team-a\n  namespace: team-a\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: admin\nsubjects:\n  - kind: ServiceAccount\n    name: team-a\n    namespace: team-a\n---\n",
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: team-a\n  namespace: team-a\nspec:\n  interval: 5m\n  path: ./apps/team-a\n  prune: true\n  serviceAccountName: team-a\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n    namespace: flux-system\n",
            ),
        ),
        (
            "apps/team-a/app.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: team-a\ndata:\n  greeting: hello\n",
        ),
    ])
}

const ARGS: [&str; 2] = ["--path", "clusters/dev"];

/// Write `files` into the site, keeping the rest.
fn add_files(dir: &std::path::Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

#[test]
fn a_tenant_unit_is_applied_as_its_service_account() {
    let cluster = TestCluster::start();
    let dir = tenant_site();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &ARGS].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(get(&cluster, "", "configmaps", "team-a", "app").is_some());
    let requests = cluster.requests();
    let written_as = |resource: &str, name: &str| {
        requests
            .iter()
            .filter(|r| is_write(r) && r.resource == resource && r.name.as_deref() == Some(name))
            .map(|r| r.impersonated.clone())
            .collect::<Vec<_>>()
    };
    // The tenant's object as the tenant; the platform's as tend.
    assert_eq!(written_as("configmaps", "app"), [Some(TENANT.to_string())]);
    assert_eq!(written_as("rolebindings", "team-a"), [None]);
    // Reads stay tend's own.
    assert!(requests
        .iter()
        .filter(|r| r.verb == tend_testserver::Verb::List)
        .all(|r| r.impersonated.is_none()));

    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["diff"][..], &ARGS].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(writes(&cluster).is_empty(), "{:?}", writes(&cluster));
}

#[test]
fn a_tenant_writing_outside_its_namespace_is_refused_before_anything_is_written() {
    let cluster = TestCluster::start();
    let dir = tenant_site();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &ARGS].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    add_files(
        dir.path(),
        &[
            (
                "apps/team-a/app.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: team-a\ndata:\n  greeting: changed\n",
            ),
            (
                "apps/team-a/intruder.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: intruder\n  namespace: team-b\ndata:\n  x: y\n",
            ),
        ],
    );
    for command in ["apply", "diff"] {
        cluster.clear_requests();
        let (code, stdout, stderr) =
            tend_on(&cluster, dir.path(), &[&[command][..], &ARGS].concat());
        assert_eq!(code, 2, "{command}: {stdout}{stderr}");
        for expected in [
            "apps/team-a (kustomize build) (Flux Kustomization flux-system/tenants → Kustomization team-a/team-a)",
            "ConfigMap team-b/intruder of Flux Kustomization flux-system/tenants → Kustomization team-a/team-a (at tenants (kustomize build) (Flux Kustomization flux-system/tenants):60)",
            "would be written as ServiceAccount team-a/team-a",
            "configmaps \"intruder\" is forbidden: User \"system:serviceaccount:team-a:team-a\" cannot patch resource \"configmaps\" in API group \"\" in the namespace \"team-b\"",
            "with a RoleBinding in namespace team-b, or move the object",
        ] {
            assert!(stderr.contains(expected), "{command}: {expected}\n{stderr}");
        }
        // Nothing at all was written: not the tenant's allowed change, not the lock.
        assert!(
            writes(&cluster).is_empty(),
            "{command}: {:?}",
            writes(&cluster)
        );
    }
    assert_eq!(
        get(&cluster, "", "configmaps", "team-a", "app").unwrap()["data"]["greeting"],
        "hello"
    );
    assert!(get(&cluster, "", "configmaps", "team-b", "intruder").is_none());
}

#[test]
fn the_default_service_account_flag_locks_units_without_one_down() {
    let cluster = TestCluster::start();
    let dir = tenant_site();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &ARGS].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    // team-a's unit names no ServiceAccount now: with Flux's lockdown flag it runs as
    // team-a's `default`, which no RoleBinding names.
    let tenants = std::fs::read_to_string(dir.path().join("tenants/team-a.yaml")).unwrap();
    add_files(
        dir.path(),
        &[(
            "tenants/team-a.yaml",
            &tenants.replace("  serviceAccountName: team-a\n", ""),
        )],
    );
    // Without the flag it is tend's (its wave changes: it no longer starts after the unit
    // holding it).
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["diff"][..], &ARGS].concat());
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(!stderr.contains("would be written as"), "{stderr}");
    let locked = [&["diff", "--default-service-account", "default"][..], &ARGS].concat();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &locked);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("would be written as ServiceAccount team-a/default"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "User \"system:serviceaccount:team-a:default\" cannot patch resource \"configmaps\""
        ),
        "{stderr}"
    );
}

#[test]
fn a_tenant_cannot_hold_tends_own_kinds() {
    let cluster = TestCluster::start();
    let dir = tenant_site();
    add_files(
        dir.path(),
        &[(
            "apps/team-a/immortal.yaml",
            "apiVersion: tend.dev/v1alpha1\nkind: ImmortalContainer\nmetadata:\n  name: sleeper\n  namespace: team-a\nspec:\n  image: busybox:1.36\n  command: [sleep, infinity]\n",
        )],
    );
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &ARGS].concat());
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("ImmortalContainer team-a/sleeper is one of tend's kinds, in Flux Kustomization flux-system/tenants → Kustomization team-a/team-a (written as ServiceAccount team-a/team-a)"),
        "{stderr}"
    );
    assert!(writes(&cluster).is_empty(), "{:?}", writes(&cluster));
}

/// The DELETEs of `configmaps/<name>`, with whom they were sent as and the answer.
fn deletes_of(cluster: &TestCluster, name: &str) -> Vec<(Option<String>, Option<u16>)> {
    cluster
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE" && r.resource == "configmaps")
        .filter(|r| r.name.as_deref() == Some(name))
        .map(|r| (r.impersonated.clone(), r.status))
        .collect()
}

#[test]
fn a_tenants_object_gone_from_its_tree_is_pruned_as_the_tenant() {
    let cluster = TestCluster::start();
    let dir = tenant_site();
    let extra = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: team-a\ndata:\n  x: y\n";
    add_files(dir.path(), &[("apps/team-a/extra.yaml", extra)]);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &ARGS].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    std::fs::remove_file(dir.path().join("apps/team-a/extra.yaml")).unwrap();
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &ARGS].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(get(&cluster, "", "configmaps", "team-a", "extra").is_none());
    assert_eq!(
        deletes_of(&cluster, "extra"),
        [(Some(TENANT.to_string()), Some(200))]
    );
    // The tenant's whole unit gone: what it wrote is still pruned as the tenant.
    let tenants = std::fs::read_to_string(dir.path().join("tenants/team-a.yaml")).unwrap();
    let (platform, _) = tenants
        .split_once("---\napiVersion: kustomize.toolkit.fluxcd.io/v1")
        .unwrap();
    add_files(dir.path(), &[("tenants/team-a.yaml", platform)]);
    cluster.clear_requests();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &ARGS].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(
        deletes_of(&cluster, "app"),
        [(Some(TENANT.to_string()), Some(200))]
    );
}

#[test]
fn a_prune_the_tenants_rbac_forbids_is_refused_not_done_as_tend() {
    let cluster = TestCluster::start();
    let dir = tenant_site();
    let extra = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: team-a\ndata:\n  x: y\n";
    add_files(dir.path(), &[("apps/team-a/extra.yaml", extra)]);
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &[&["apply"][..], &ARGS].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    // The platform takes delete away from team-a, and team-a's tree drops the object.
    let tenants = std::fs::read_to_string(dir.path().join("tenants/team-a.yaml")).unwrap();
    let no_delete = tenants.replace(
        "    verbs: [\"*\"]\n",
        "    verbs: [get, list, watch, create, update, patch]\n",
    );
    assert_ne!(no_delete, tenants);
    add_files(dir.path(), &[("tenants/team-a.yaml", &no_delete)]);
    std::fs::remove_file(dir.path().join("apps/team-a/extra.yaml")).unwrap();
    for _ in 0..2 {
        cluster.clear_requests();
        let apply = [&["apply", "-o", "json"][..], &ARGS].concat();
        let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &apply);
        assert_eq!(code, 2, "{stdout}{stderr}");
        for expected in [
            "not pruned: ServiceAccount team-a/team-a, whose unit wrote it, may not delete it (grant it delete, or delete the object yourself); the cluster said: configmaps",
            "User \\\"system:serviceaccount:team-a:team-a\\\" cannot delete resource",
        ] {
            assert!(stdout.contains(expected), "{expected}\n{stdout}");
        }
        // Asked as the tenant only, never again as tend; the next run still knows whose it is.
        assert_eq!(
            deletes_of(&cluster, "extra"),
            [(Some(TENANT.to_string()), Some(403))]
        );
        assert!(get(&cluster, "", "configmaps", "team-a", "extra").is_some());
    }
    // `diff` shows the refusal before an apply meets it: the prune dry-run as the tenant.
    let diff = [&["diff"][..], &ARGS].concat();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &diff);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains("ConfigMap team-a/extra: would not be pruned: ServiceAccount team-a/team-a, whose unit wrote it, may not delete it"),
        "{stderr}"
    );
    assert!(get(&cluster, "", "configmaps", "team-a", "extra").is_some());
}
