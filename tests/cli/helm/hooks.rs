//! Helm hooks as tend runs them (README "Waves and hooks"): `pre-install`/`pre-upgrade` Jobs become pre-apply
//! hooks in `helm.sh/hook-weight` order, the objects they need (a ServiceAccount) are applied
//! a wave before them and the release's objects, `post-install`/`post-upgrade` Jobs become post-apply hooks,
//! `hook-succeeded` deletes on success, deletion hooks are left out with a note.

use crate::common::*;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::json;
use std::time::{Duration, Instant};
use tend_testserver::{RequestRecord, TestCluster};

fn job(name: &str, hook: &str, extra: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{{{ .Release.Name }}}}-{name}\n  annotations:\n    \"helm.sh/hook\": {hook}\n{extra}spec:\n  backoffLimit: 0\n  template:\n    spec:\n      serviceAccountName: {{{{ .Release.Name }}}}-migrator\n      restartPolicy: Never\n      containers:\n        - name: {name}\n          image: busybox:1.36\n"
    )
}

fn hook_chart() -> tempfile::TempDir {
    let hooks = [
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ .Release.Name }}-migrator\n  annotations:\n    \"helm.sh/hook\": pre-install,pre-upgrade,post-install,post-upgrade\n    \"helm.sh/hook-weight\": \"-10\"\n    \"helm.sh/hook-delete-policy\": before-hook-creation,hook-succeeded\n".to_string(),
        job("migrate", "pre-install,pre-upgrade", "    \"helm.sh/hook-weight\": \"5\"\n"),
        job("seed", "pre-install", "    \"helm.sh/hook-weight\": \"-1\"\n"),
        job(
            "notify",
            "post-install,post-upgrade",
            "    \"helm.sh/hook-delete-policy\": before-hook-creation,hook-succeeded\n",
        ),
        job("cleanup", "pre-delete", ""),
    ]
    .join("---\n");
    site(&[
        ("namespaces.yaml", &ns_yaml("shop")),
        (
            "apps/shop.yaml",
            "apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: shop\n  namespace: shop\nspec:\n  chart: ../charts/hooked\n",
        ),
        ("charts/hooked/Chart.yaml", "apiVersion: v2\nname: hooked\nversion: 1.0.0\n"),
        ("charts/hooked/templates/hooks.yaml", &hooks),
        (
            "charts/hooked/templates/app.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop-jobs\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-app\ndata:\n  k: v\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-data\n  annotations:\n    helm.sh/resource-policy: keep\ndata:\n  k: v\n",
        ),
    ])
}

#[test]
fn helm_hooks_render_as_tend_hooks() {
    let dir = hook_chart();
    let (code, stdout, stderr) = run(tend().arg("render").arg("--repo").arg(dir.path()));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let objects = parse_stream(&stdout);
    let by_name = |name: &str| {
        objects
            .iter()
            .find(|o| o["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("{name} rendered: {stdout}"))["metadata"]["annotations"]
            .clone()
    };
    assert_eq!(by_name("shop-migrate")["tend.dev/hook"], "pre-apply");
    assert_eq!(by_name("shop-seed")["tend.dev/hook"], "pre-apply");
    assert_eq!(by_name("shop-notify")["tend.dev/hook"], "post-apply");
    assert_eq!(
        by_name("shop-notify")["tend.dev/hook-delete-policy"],
        "on-success"
    );
    assert!(by_name("shop-migrate")
        .get("tend.dev/hook-delete-policy")
        .is_none());
    assert!(
        by_name("shop-migrator").get("tend.dev/wave").is_none(),
        "what the hooks need is applied in the wave before them"
    );
    assert_eq!(by_name("shop-migrate")["tend.dev/wave"], "1");
    assert_eq!(
        by_name("shop-app")["tend.dev/wave"],
        "1",
        "the release after its pre hooks"
    );
    assert_eq!(
        by_name("shop-migrate")["helm.sh/hook-weight"],
        "5",
        "Helm's annotations stay"
    );
    assert!(!stdout.contains("shop-cleanup"), "{stdout}");
    assert_eq!(
        by_name("shop-data")["tend.dev/prune"],
        "disabled",
        "helm.sh/resource-policy: keep is never pruned"
    );
    assert!(
        stderr.contains("Job shop-cleanup (templates/hooks.yaml) is a pre-delete hook, which a GitOps run never triggers: left out"),
        "{stderr}"
    );
}

/// Plays the Job controller: completes `shop/<name>` once it exists.
fn complete_job(cluster: &TestCluster, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while cluster.object("batch", "jobs", "shop", name).is_none() {
        if Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let gvk = GroupVersionKind::gvk("batch", "v1", "Job");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "jobs");
    let status = json!({"status": {
        "startTime": "2026-11-25T10:00:00Z",
        "completionTime": "2026-11-25T10:00:05Z",
        "succeeded": 1,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
            {"type": "Complete", "status": "True", "reason": "CompletionsReached"},
        ],
    }});
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let api: Api<DynamicObject> =
            Api::namespaced_with(cluster.client().await, "shop", &resource);
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .expect("status write");
    });
}

fn written(r: &RequestRecord, resource: &str, name: &str) -> bool {
    is_write(r)
        && r.subresource.is_none()
        && r.resource == resource
        && r.name.as_deref() == Some(name)
        && r.method != "DELETE"
}

fn status_written(r: &RequestRecord, name: &str) -> bool {
    r.verb.is_mutating()
        && r.subresource.as_deref() == Some("status")
        && r.name.as_deref() == Some(name)
}

#[test]
fn helm_hooks_run_in_weight_order_around_the_apply() {
    let cluster = crate::kinds::cluster_with_crds();
    let dir = hook_chart();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Job shop/shop-seed"),
        "diff names the hooks: {stdout}"
    );

    let (code, stdout, stderr) = std::thread::scope(|s| {
        s.spawn(|| complete_job(&cluster, "shop-seed"));
        s.spawn(|| complete_job(&cluster, "shop-migrate"));
        s.spawn(|| complete_job(&cluster, "shop-notify"));
        tend_on(&cluster, dir.path(), &["apply"])
    });
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let log = cluster.requests();
    let at = |what: &str, pred: &dyn Fn(&RequestRecord) -> bool| {
        log.iter()
            .position(pred)
            .unwrap_or_else(|| panic!("no request for {what}"))
    };
    let order = [
        at("service account", &|r| {
            written(r, "serviceaccounts", "shop-migrator")
        }),
        at("seed (weight -1)", &|r| written(r, "jobs", "shop-seed")),
        at("seed done", &|r| status_written(r, "shop-seed")),
        at("migrate (weight 5)", &|r| {
            written(r, "jobs", "shop-migrate")
        }),
        at("migrate done", &|r| status_written(r, "shop-migrate")),
        at("app", &|r| written(r, "configmaps", "shop-app")),
        at("notify", &|r| written(r, "jobs", "shop-notify")),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    assert!(
        get(&cluster, "batch", "jobs", "shop", "shop-notify").is_none(),
        "hook-succeeded: deleted once it succeeded"
    );
    assert!(get(&cluster, "batch", "jobs", "shop", "shop-migrate").is_some());
    assert!(get(&cluster, "batch", "jobs", "shop", "shop-cleanup").is_none());

    // Nothing changed: in sync, and no hook runs again.
    let before = cluster.requests().len();
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["apply"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let again: Vec<String> = cluster.requests()[before..]
        .iter()
        .filter(|r| is_write(r) && r.resource == "jobs")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(again.is_empty(), "no hook reruns: {again:?}");
    let (code, stdout, stderr) = tend_on(&cluster, dir.path(), &["diff"]);
    assert_eq!(code, 0, "in sync:\n{stdout}\n{stderr}");
}
