//! Impersonation (`Impersonate-User`) and RBAC: a request made as a ServiceAccount is
//! authorized by the Roles and RoleBindings stored, and a denied one gets kube-apiserver's
//! Forbidden Status. Only namespaced RBAC objects are created, so the tests leave nothing
//! behind on a real cluster.

use super::*;
use k8s_openapi::api::core::v1::Pod;

/// A client of the same cluster and credentials, acting as `user`.
async fn impersonating(env: &Env, user: &str) -> Client {
    let kubeconfig = match &env.cluster {
        Some(cluster) => kube::config::Kubeconfig::read_from(cluster.kubeconfig_path()),
        None => kube::config::Kubeconfig::read_from(std::env::var(REAL).expect("kubeconfig")),
    }
    .expect("read kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("kubeconfig");
    config.auth_info.impersonate = Some(user.to_string());
    Client::try_from(config).expect("client")
}

/// A Role of `rules` in `ns` bound to `subject`.
async fn grant(env: &Env, ns: &str, name: &str, rules: Value, subject: Value) {
    let roles: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", "Role"),
            "roles",
        ),
    );
    let bindings: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", "RoleBinding"),
            "rolebindings",
        ),
    );
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name}, "rules": rules});
    apply(&roles, name, "conformance", role)
        .await
        .expect("role");
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [subject]});
    apply(&bindings, name, "conformance", binding)
        .await
        .expect("binding");
}

fn service_account(ns: &str) -> Value {
    json!({"kind": "ServiceAccount", "name": "tenant", "namespace": ns})
}

conformance!(impersonated_service_account_is_authorized_by_rbac, |env| {
    let other = env.extra_namespace("other").await;
    let rules = json!([{"apiGroups": [""], "resources": ["configmaps"],
        "verbs": ["get", "list", "create", "patch", "update", "delete"]}]);
    grant(&env, &env.ns, "tenant", rules, service_account(&env.ns)).await;
    let user = format!("system:serviceaccount:{}:tenant", env.ns);
    let tenant = impersonating(&env, &user).await;
    let own: Api<ConfigMap> = Api::namespaced(tenant.clone(), &env.ns);
    // RBAC caches on a real server follow the binding within moments.
    eventually("the binding to take effect", || async {
        apply(&own, "a", "tenant", apply_cm("a", json!({"k": "v"})))
            .await
            .ok()
    })
    .await;
    assert!(own.get("a").await.is_ok());

    let theirs: Api<ConfigMap> = Api::namespaced(tenant.clone(), &other);
    let denied = api_err(apply(&theirs, "b", "tenant", apply_cm("b", json!({}))).await);
    assert_eq!(denied.code, 403);
    assert_eq!(denied.reason, "Forbidden");
    assert_eq!(
        denied.message,
        format!(
            "configmaps \"b\" is forbidden: User \"{user}\" cannot patch resource \"configmaps\" in API group \"\" in the namespace \"{other}\""
        )
    );
    let details = denied.details.expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("b", "configmaps")
    );
    assert_eq!(details.group, "");
    // A dry run is authorized as the real request is.
    let dry = apply_with(
        &theirs,
        "b",
        PatchParams::apply("tenant").dry_run(),
        apply_cm("b", json!({})),
    )
    .await;
    assert_eq!(api_err(dry).message, denied.message);
    // A POST has no name in its attributes.
    let created = api_err(
        theirs
            .create(&PostParams::default(), &cm("c", json!({})))
            .await,
    );
    assert_eq!(
        created.message,
        format!(
            "configmaps is forbidden: User \"{user}\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"{other}\""
        )
    );
    // Another resource of its own namespace is not granted either.
    let pods = api_err(
        Api::<Pod>::namespaced(tenant.clone(), &env.ns)
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(
        pods.message,
        format!(
            "pods is forbidden: User \"{user}\" cannot list resource \"pods\" in API group \"\" in the namespace \"{}\"",
            env.ns
        )
    );
    let namespaces = api_err(Api::<Namespace>::all(tenant).get(&other).await);
    assert_eq!(
        namespaces.message,
        format!(
            "namespaces \"{other}\" is forbidden: User \"{user}\" cannot get resource \"namespaces\" in API group \"\" in the namespace \"{other}\""
        )
    );
    // Nothing was written where it was refused.
    let admin: Api<ConfigMap> = Api::namespaced(env.client.clone(), &other);
    assert!(admin.get_opt("b").await.expect("read").is_none());
});

conformance!(server_side_apply_that_creates_needs_create, |env| {
    let rules =
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "patch"]}]);
    grant(&env, &env.ns, "patcher", rules, service_account(&env.ns)).await;
    let user = format!("system:serviceaccount:{}:tenant", env.ns);
    env.api::<ConfigMap>()
        .create(&PostParams::default(), &cm("there", json!({})))
        .await
        .expect("create");
    let tenant: Api<ConfigMap> = Api::namespaced(impersonating(&env, &user).await, &env.ns);
    eventually("the binding to take effect", || async {
        apply(
            &tenant,
            "there",
            "tenant",
            apply_cm("there", json!({"k": "v"})),
        )
        .await
        .ok()
    })
    .await;
    // The patch handler asks again, for `create`, before creating: its Forbidden carries
    // only the authorizer's reason, empty for RBAC's plain no.
    let denied = api_err(apply(&tenant, "new", "tenant", apply_cm("new", json!({}))).await);
    assert_eq!(denied.code, 403);
    assert_eq!(denied.message, "configmaps \"new\" is forbidden: ");
});

conformance!(rbac_rules_match_groups_names_and_subresources, |env| {
    let group = json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
        "name": format!("system:serviceaccounts:{}", env.ns)});
    let rules = json!([
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["named"],
         "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["*/status"], "verbs": ["get"]}
    ]);
    grant(&env, &env.ns, "by-group", rules, group).await;
    env.api::<ConfigMap>()
        .create(&PostParams::default(), &cm("named", json!({})))
        .await
        .expect("create");
    env.api::<ConfigMap>()
        .create(&PostParams::default(), &cm("unnamed", json!({})))
        .await
        .expect("create");
    let user = format!("system:serviceaccount:{}:anyone", env.ns);
    let client = impersonating(&env, &user).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &env.ns);
    eventually("the binding to take effect", || async {
        cms.get("named").await.ok()
    })
    .await;
    let denied = api_err(cms.get("unnamed").await);
    assert_eq!(
        denied.message,
        format!(
            "configmaps \"unnamed\" is forbidden: User \"{user}\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"{}\"",
            env.ns
        )
    );
    let deployments: Api<Deployment> = Api::namespaced(client, &env.ns);
    let status = api_err(deployments.get_status("web").await);
    assert_eq!(status.code, 404, "allowed by */status, then not found");
    let spec = api_err(deployments.get("web").await);
    assert_eq!(
        spec.message,
        format!(
            "deployments.apps \"web\" is forbidden: User \"{user}\" cannot get resource \"deployments\" in API group \"apps\" in the namespace \"{}\"",
            env.ns
        )
    );
});

conformance!(access_reviews_answer_for_the_impersonated_user, |env| {
    let rules = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["patch"]}]);
    grant(&env, &env.ns, "tenant", rules, service_account(&env.ns)).await;
    let user = format!("system:serviceaccount:{}:tenant", env.ns);
    let client = impersonating(&env, &user).await;
    let ask = |ns: String| {
        let client = client.clone();
        async move {
            let review = json!({"apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": {"verb": "patch", "resource": "configmaps",
                    "namespace": ns, "name": "x"}}});
            let api: Api<DynamicObject> = Api::all_with(
                client,
                &ApiResource::from_gvk_with_plural(
                    &GroupVersionKind::gvk("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
                    "selfsubjectaccessreviews",
                ),
            );
            let data: DynamicObject = serde_json::from_value(review).unwrap();
            let answer = api
                .create(&PostParams::default(), &data)
                .await
                .expect("review");
            answer.data["status"]["allowed"].as_bool().unwrap_or(false)
        }
    };
    eventually("the binding to take effect", || async {
        ask(env.ns.clone()).await.then_some(())
    })
    .await;
    assert!(!ask("elsewhere".to_string()).await);
});
