//! Impersonation and RBAC, as kube-apiserver does them for a request that carries
//! `Impersonate-User` (and `Impersonate-Group`, `Impersonate-Uid`): the request runs as that
//! user, and is authorized by the Roles, ClusterRoles and their bindings the server stores
//! (`rbac.authorization.k8s.io/v1`). A request without these headers is the test server's
//! own admin, as before.
//!
//! Follows `k8s.io/apiserver/pkg/endpoints/filters/impersonation.go` (a ServiceAccount's
//! groups are added when no group is named; `system:authenticated` too), the RBAC
//! authorizer's rule matching (`k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac`: verbs,
//! apiGroups, resources with `*`, `res/sub` and `*/sub`, resourceNames) and the Forbidden
//! Status of `responsewriters.Forbidden`. Not modelled: aggregated ClusterRoles (their
//! rules are read as stored), the bootstrap roles other than what every authenticated user
//! may do (discovery, self access and rules reviews), and who may impersonate (the test
//! server's admin may).

use crate::errors::ApiError;
use crate::faults::Verb;
use crate::store::State;
use serde_json::Value;

const GROUP: &str = "rbac.authorization.k8s.io";

/// The user a request runs as.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct User {
    pub name: String,
    pub groups: Vec<String>,
}

impl User {
    /// The impersonated user of a request's headers, `None` when it impersonates nobody.
    /// Groups named without a user are refused as kube-apiserver refuses them (500).
    pub(crate) fn impersonated(user: &str, groups: &[String]) -> Result<Option<User>, String> {
        if user.is_empty() {
            if groups.is_empty() {
                return Ok(None);
            }
            return Err(format!(
                "requested groups {groups:?} without impersonating a user"
            ));
        }
        let mut all = groups.to_vec();
        if groups.is_empty() {
            if let Some((namespace, _)) = service_account(user) {
                all.push("system:serviceaccounts".to_string());
                all.push(format!("system:serviceaccounts:{namespace}"));
            }
            if user != "system:anonymous" {
                all.push("system:authenticated".to_string());
            }
        }
        Ok(Some(User {
            name: user.to_string(),
            groups: all,
        }))
    }
}

/// `system:serviceaccount:NS:NAME` → (NS, NAME).
fn service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some((namespace, name))
}

/// What is asked: kube-apiserver's request attributes of a resource request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Attributes {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

impl Attributes {
    /// A resource request's attributes (the route's parts and the request's verb); a
    /// server-side apply is `patch`. A Namespace's own path is in that namespace, as
    /// kube-apiserver's RequestInfo has it.
    pub(crate) fn of_request(
        verb: Verb,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
        name: Option<&str>,
        sub: Option<&str>,
    ) -> Attributes {
        let verb = match verb {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch | Verb::Apply => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Discovery | Verb::Other => "",
        };
        let namespace = match (plural, namespace, name) {
            ("namespaces", None, Some(name)) => name,
            _ => namespace.unwrap_or(""),
        };
        Attributes {
            verb: verb.to_string(),
            group: group.to_string(),
            resource: plural.to_string(),
            subresource: sub.unwrap_or("").to_string(),
            namespace: namespace.to_string(),
            name: name.unwrap_or("").to_string(),
        }
    }

    /// A SelfSubjectAccessReview's `spec.resourceAttributes`.
    pub(crate) fn of_review(attrs: &Value) -> Attributes {
        let text = |k: &str| {
            attrs
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        Attributes {
            verb: text("verb"),
            group: text("group"),
            resource: text("resource"),
            subresource: text("subresource"),
            namespace: text("namespace"),
            name: text("name"),
        }
    }

    /// The same request as a `create` (a server-side apply that creates the object).
    pub(crate) fn as_create(&self) -> Attributes {
        Attributes {
            verb: "create".to_string(),
            ..self.clone()
        }
    }
}

/// Whether every authenticated user may do this without any binding: the bootstrap
/// `system:basic-user` role (self access and rules reviews).
fn bootstrap_allowed(attrs: &Attributes) -> bool {
    attrs.verb == "create"
        && attrs.group == "authorization.k8s.io"
        && matches!(
            attrs.resource.as_str(),
            "selfsubjectaccessreviews" | "selfsubjectrulesreviews"
        )
}

/// The RBAC decision for `user`: allowed, or the reason the authorizer gives (empty unless
/// a binding that applies names a role that does not exist).
pub(crate) fn authorize(state: &State, user: &User, attrs: &Attributes) -> Result<(), String> {
    if bootstrap_allowed(attrs) {
        return Ok(());
    }
    let mut errors = Vec::new();
    let mut bindings: Vec<Value> = state.objects_of(GROUP, "clusterrolebindings");
    if !attrs.namespace.is_empty() {
        bindings.extend(
            state
                .objects_of(GROUP, "rolebindings")
                .into_iter()
                .filter(|b| {
                    b.pointer("/metadata/namespace") == Some(&attrs.namespace.clone().into())
                }),
        );
    }
    for binding in &bindings {
        if !applies_to(binding, user) {
            continue;
        }
        match rules_of(state, binding) {
            Ok(rules) => {
                if rules.iter().any(|rule| rule_allows(rule, attrs)) {
                    return Ok(());
                }
            }
            Err(missing) => errors.push(missing),
        }
    }
    if errors.is_empty() {
        Err(String::new())
    } else {
        Err(format!("RBAC: [{}]", errors.join(", ")))
    }
}

/// Whether one of a binding's subjects is the user or one of its groups.
fn applies_to(binding: &Value, user: &User) -> bool {
    let binding_ns = binding
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let subjects = binding.get("subjects").and_then(Value::as_array);
    subjects.into_iter().flatten().any(|s| {
        let text = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
        match text("kind") {
            "User" => text("name") == user.name,
            "Group" => user.groups.iter().any(|g| g == text("name")),
            "ServiceAccount" => {
                let ns = match text("namespace") {
                    "" => binding_ns,
                    ns => ns,
                };
                service_account(&user.name) == Some((ns, text("name")))
            }
            _ => false,
        }
    })
}

/// The rules of the role a binding names (a RoleBinding's Role is in its namespace), or
/// the authorizer's error for a role that does not exist.
fn rules_of(state: &State, binding: &Value) -> Result<Vec<Value>, String> {
    let text = |p: &str| binding.pointer(p).and_then(Value::as_str).unwrap_or("");
    let (kind, name) = (text("/roleRef/kind"), text("/roleRef/name"));
    let role = match kind {
        "ClusterRole" => state
            .object(GROUP, "clusterroles", "", name)
            .ok_or_else(|| format!("clusterrole.{GROUP} {name:?} not found")),
        _ => state
            .object(GROUP, "roles", text("/metadata/namespace"), name)
            .ok_or_else(|| format!("role.{GROUP} {name:?} not found")),
    }?;
    Ok(role
        .get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

fn list(rule: &Value, key: &str) -> Vec<String> {
    rule.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

fn rule_allows(rule: &Value, attrs: &Attributes) -> bool {
    let has = |key: &str, wanted: &str| list(rule, key).iter().any(|v| v == "*" || v == wanted);
    let names = list(rule, "resourceNames");
    has("verbs", &attrs.verb)
        && has("apiGroups", &attrs.group)
        && resource_matches(&list(rule, "resources"), attrs)
        && (names.is_empty() || names.contains(&attrs.name))
}

fn resource_matches(resources: &[String], attrs: &Attributes) -> bool {
    let combined = if attrs.subresource.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    resources.iter().any(|r| {
        r == "*"
            || *r == combined
            || (!attrs.subresource.is_empty()
                && r.strip_prefix("*/") == Some(attrs.subresource.as_str()))
    })
}

/// kube-apiserver's message for a denied request (`responsewriters.forbiddenMessage`).
fn forbidden_message(user: &User, attrs: &Attributes) -> String {
    let resource = if attrs.subresource.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    let scope = if attrs.namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace {:?}", attrs.namespace)
    };
    format!(
        "User {:?} cannot {} resource {resource:?} in API group {:?} {scope}",
        user.name, attrs.verb, attrs.group
    )
}

/// The 403 of the authorization filter (`responsewriters.Forbidden`): the message, then the
/// authorizer's reason if it gave one.
pub(crate) fn forbidden(user: &User, attrs: &Attributes, reason: &str) -> ApiError {
    let mut why = forbidden_message(user, attrs);
    if !reason.is_empty() {
        why = format!("{why}: {reason}");
    }
    ApiError::forbidden(&attrs.group, &attrs.resource, &attrs.name, &why)
}

/// The 403 of a server-side apply that would create an object the user may patch but not
/// create (the patch handler's `withAuthorization`): only the authorizer's reason follows.
pub(crate) fn forbidden_create_on_patch(attrs: &Attributes, reason: &str) -> ApiError {
    ApiError::forbidden(&attrs.group, &attrs.resource, &attrs.name, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_accounts_get_their_groups() {
        let user = User::impersonated("system:serviceaccount:team-a:bot", &[])
            .unwrap()
            .unwrap();
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:team-a",
                "system:authenticated"
            ]
        );
        let named = User::impersonated("alice", &["devs".to_string()])
            .unwrap()
            .unwrap();
        assert_eq!(named.groups, ["devs"]);
        assert!(User::impersonated("", &["devs".to_string()]).is_err());
        assert_eq!(User::impersonated("", &[]).unwrap(), None);
    }

    #[test]
    fn rules_match_like_rbac() {
        let rule = serde_json::json!({"verbs": ["get", "patch"], "apiGroups": [""],
            "resources": ["configmaps", "*/status", "pods/log"], "resourceNames": ["a"]});
        let attrs = |verb: &str, resource: &str, sub: &str, name: &str| Attributes {
            verb: verb.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Attributes::default()
        };
        assert!(rule_allows(&rule, &attrs("get", "configmaps", "", "a")));
        assert!(!rule_allows(&rule, &attrs("get", "configmaps", "", "b")));
        assert!(!rule_allows(&rule, &attrs("list", "configmaps", "", "a")));
        assert!(rule_allows(
            &rule,
            &attrs("patch", "deployments", "status", "a")
        ));
        assert!(rule_allows(&rule, &attrs("get", "pods", "log", "a")));
        assert!(!rule_allows(&rule, &attrs("get", "pods", "exec", "a")));
    }
}
