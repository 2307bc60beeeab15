//! Routing: a request's path and method to a [`Route`] and [`Verb`], and each route to its
//! handler (discovery, access reviews, the store).

use super::response::{json_outcome, page_not_found, written_outcome, ByteCount, Outcome, Payload};
use super::shared::Shared;
use super::watch::watch_outcome;
use crate::discovery::{self, ResourceDef};
use crate::errors::ApiError;
use crate::faults::Verb;
use crate::negotiate::{negotiate, represent, Representation};
use crate::rbac::{self, Attributes, User};
use crate::store::{Call, Query, Reply};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Route {
    Version,
    Api,
    CoreV1,
    Apis,
    Group(String),
    GroupVersion(String, String),
    Resource {
        group: String,
        version: String,
        plural: String,
        namespace: Option<String>,
        name: Option<String>,
        sub: Option<String>,
    },
    Unknown,
}

pub(super) fn route(path: &str) -> Route {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Route::Version,
        ["api"] => return Route::Api,
        ["api", "v1"] => return Route::CoreV1,
        ["apis"] => return Route::Apis,
        ["apis", g] => return Route::Group(g.to_string()),
        ["apis", g, v] => return Route::GroupVersion(g.to_string(), v.to_string()),
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Route::Unknown,
    };
    let s = |x: &&str| Some(x.to_string());
    let core_ns_sub =
        group.is_empty() && rest.len() == 3 && matches!(rest[2], "status" | "finalize");
    let (namespace, tail): (Option<String>, &[&str]) =
        if rest.len() >= 3 && rest[0] == "namespaces" && !core_ns_sub {
            (s(&rest[1]), &rest[2..])
        } else {
            (None, rest)
        };
    if tail.is_empty() || tail.len() > 3 || tail.iter().any(|t| t.is_empty()) {
        return Route::Unknown;
    }
    Route::Resource {
        group: group.to_string(),
        version: version.to_string(),
        plural: tail[0].to_string(),
        namespace,
        name: tail.get(1).map(|n| n.to_string()),
        sub: tail.get(2).map(|n| n.to_string()),
    }
}

pub(super) fn verb_of(method: &str, route: &Route, query: &Query, content_type: &str) -> Verb {
    match route {
        Route::Unknown => Verb::Other,
        Route::Resource { name, .. } => match (method, name.is_some()) {
            ("GET", true) => Verb::Get,
            ("GET", false) => {
                if matches!(query.get("watch"), Some("true" | "1")) {
                    Verb::Watch
                } else {
                    Verb::List
                }
            }
            ("POST", _) => Verb::Create,
            ("PUT", _) => Verb::Update,
            ("PATCH", _) if content_type.starts_with("application/apply-patch") => Verb::Apply,
            ("PATCH", _) => Verb::Patch,
            ("DELETE", true) => Verb::Delete,
            ("DELETE", false) => Verb::DeleteCollection,
            _ => Verb::Other,
        },
        _ => Verb::Discovery,
    }
}

/// Whether go-restful, which answers unknown routes with a Status, owns `path`: the core
/// API under `/api`, `/version`, and the groups compiled into the server (`/apis/<group>`).
/// Groups served from CRDs, unknown groups and everything else fall through to the plain
/// 404 handler (the apiextensions server delegates what no CRD claims).
fn under_builtin_root(defs: &[ResourceDef], path: &str) -> bool {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segs.as_slice() {
        ["api", ..] | ["version", ..] => true,
        ["apis", g, ..] => defs.iter().any(|d| d.group == *g && d.crd.is_none()),
        _ => false,
    }
}

fn not_found(defs: &[ResourceDef], path: &str) -> Outcome {
    if under_builtin_root(defs, path) {
        json_outcome(Err(ApiError::no_route()))
    } else {
        page_not_found()
    }
}

/// A request as the handlers see it: parsed once, borrowed from the connection's copy.
pub(crate) struct ApiRequest<'a> {
    pub(crate) method: &'a str,
    pub(crate) path: &'a str,
    pub(crate) route: &'a Route,
    pub(crate) verb: Verb,
    pub(crate) query: &'a Query,
    pub(crate) body: &'a [u8],
    pub(crate) content_type: &'a str,
    pub(crate) accept: &'a str,
    pub(crate) user_agent: &'a str,
    /// The impersonated user, `None` for the test server's admin.
    pub(crate) user: Option<&'a User>,
}

fn discovery_doc(shared: &Shared, core: bool, accept: &str) -> Outcome {
    let defs = shared.state.lock().defs.clone();
    if shared.aggregated_discovery {
        if let Some(v) = discovery::wants_aggregated(accept) {
            return Outcome {
                code: 200,
                payload: Payload::Json(discovery::aggregated(&defs, core, v)),
                content_type: format!(
                    "application/json;g=apidiscovery.k8s.io;v={v};as=APIGroupDiscoveryList"
                ),
                headers: vec![],
            };
        }
    }
    if !discovery::accepts_plain_json(accept) {
        return json_outcome(Err(ApiError::new(
            406,
            "NotAcceptable",
            format!("only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf (requested {accept})"),
        )));
    }
    let body = if core {
        discovery::api_versions()
    } else {
        discovery::api_group_list(&defs)
    };
    json_outcome(Ok((200, body)))
}

/// `POST selfsubjectaccessreviews`: the requester may do everything, except LIST namespaced
/// resources across all namespaces when [`Shared::deny_cluster_wide_lists`] is set; an
/// impersonated user what RBAC allows it. Nothing is stored (as on a real server).
fn access_review(shared: &Shared, r: &ApiRequest) -> Result<(u16, Value), ApiError> {
    if r.method != "POST" {
        return Err(ApiError::method_not_allowed());
    }
    let mut review: Value = serde_json::from_slice(r.body)
        .map_err(|e| ApiError::bad_request(format!("invalid SelfSubjectAccessReview: {e}")))?;
    let attrs = review
        .pointer("/spec/resourceAttributes")
        .cloned()
        .unwrap_or(Value::Null);
    let cluster_wide_list = attrs["verb"] == "list"
        && attrs["namespace"].as_str().unwrap_or("").is_empty()
        && namespaced(
            shared,
            attrs["group"].as_str().unwrap_or(""),
            attrs["resource"].as_str().unwrap_or(""),
        );
    let denied = match r.user {
        Some(user) => {
            rbac::authorize(&shared.state.lock(), user, &Attributes::of_review(&attrs)).is_err()
        }
        None => {
            cluster_wide_list
                && shared
                    .deny_cluster_wide_lists
                    .load(std::sync::atomic::Ordering::Relaxed)
        }
    };
    review["status"] = serde_json::json!({"allowed": !denied});
    Ok((201, review))
}

/// The authorization filter's decision; a server-side apply that would create the object
/// needs `create` as well (kube-apiserver's patch handler asks again before creating).
fn authorized(
    st: &crate::store::State,
    user: &User,
    attrs: &Attributes,
    verb: Verb,
) -> Result<(), ApiError> {
    rbac::authorize(st, user, attrs).map_err(|reason| rbac::forbidden(user, attrs, &reason))?;
    // A Namespace's attributes are in itself; it is stored without one.
    let stored_in = match attrs.resource.as_str() {
        "namespaces" => "",
        _ => &attrs.namespace,
    };
    let creates = verb == Verb::Apply
        && attrs.subresource.is_empty()
        && st
            .object(&attrs.group, &attrs.resource, stored_in, &attrs.name)
            .is_none();
    if creates {
        let create = attrs.as_create();
        rbac::authorize(st, user, &create)
            .map_err(|reason| rbac::forbidden_create_on_patch(&create, &reason))?;
    }
    Ok(())
}

/// Whether a served resource (any version) is namespaced.
fn namespaced(shared: &Shared, group: &str, plural: &str) -> bool {
    let st = shared.state.lock();
    st.defs
        .iter()
        .any(|d| d.group == group && d.plural == plural && d.namespaced)
}

pub(super) fn dispatch(shared: &Shared, r: &ApiRequest, count: &ByteCount) -> Outcome {
    if r.verb == Verb::Discovery && r.method != "GET" {
        return json_outcome(Err(ApiError::method_not_allowed()));
    }
    let defs = || shared.state.lock().defs.clone();
    let found = |v: Option<Value>| match v {
        Some(v) => json_outcome(Ok((200, v))),
        None => not_found(&defs(), r.path),
    };
    match r.route {
        Route::Version => json_outcome(Ok((200, discovery::version_info()))),
        Route::Api => discovery_doc(shared, true, r.accept),
        Route::Apis => discovery_doc(shared, false, r.accept),
        Route::CoreV1 => found(discovery::resource_list(&defs(), "", "v1")),
        Route::Group(g) => found(discovery::api_group(&defs(), g)),
        Route::GroupVersion(g, v) => found(discovery::resource_list(&defs(), g, v)),
        Route::Unknown => not_found(&defs(), r.path),
        Route::Resource {
            group,
            plural,
            namespace: None,
            ..
        } if group == "authorization.k8s.io" && plural == "selfsubjectaccessreviews" => {
            json_outcome(access_review(shared, r))
        }
        Route::Resource {
            group,
            version,
            plural,
            namespace,
            name,
            sub,
        } => {
            let rep = match negotiate(r.accept) {
                Ok(rep) => rep,
                Err(e) => return json_outcome(Err(e)),
            };
            let mut st = shared.state.lock();
            if let Some(user) = r.user {
                let attrs = Attributes::of_request(
                    r.verb,
                    group,
                    plural,
                    namespace.as_deref(),
                    name.as_deref(),
                    sub.as_deref(),
                );
                if let Err(e) = authorized(&st, user, &attrs, r.verb) {
                    return json_outcome(Err(e));
                }
            }
            let Some(def) = st.find_def(group, version, plural) else {
                return not_found(&st.defs, r.path);
            };
            if def.namespaced
                && namespace.is_none()
                && matches!(r.verb, Verb::List | Verb::Watch)
                && shared
                    .deny_cluster_wide_lists
                    .load(std::sync::atomic::Ordering::Relaxed)
            {
                let what = if group.is_empty() {
                    plural.clone()
                } else {
                    format!("{plural}.{group}")
                };
                return json_outcome(Err(ApiError::from_code(
                    403,
                    Some(format!(
                        "{what} is forbidden: User \"test\" cannot list resource \"{plural}\" in API group \"{group}\" at the cluster scope"
                    )),
                )));
            }
            // Scope mismatches are unknown paths on a real server; the apiextensions
            // server hands a namespaced path to a cluster-scoped CRD to the 404 page.
            if def.crd.is_some() && !def.namespaced && namespace.is_some() {
                return page_not_found();
            }
            if (!def.namespaced && namespace.is_some())
                || (def.namespaced && namespace.is_none() && name.is_some())
                || (def.namespaced && namespace.is_none() && r.verb == Verb::Create)
            {
                return json_outcome(Err(ApiError::no_route()));
            }
            let call = Call {
                def,
                namespace: namespace.clone(),
                name: name.clone(),
                subresource: sub.clone(),
                query: r.query,
                body: r.body,
                content_type: r.content_type,
                user_agent: r.user_agent,
                full_json: matches!(rep, Representation::Full),
            };
            if r.verb == Verb::Watch {
                return match st.watch(&call) {
                    Ok(start) => watch_outcome(start, r.query, rep, count.clone()),
                    Err(e) => json_outcome(Err(e)),
                };
            }
            let result = st.handle(&call, r.verb);
            let controller_work = st.next_controller_due().is_some();
            drop(st);
            if controller_work {
                shared.controllers.notify_one();
            }
            // The content type stays `application/json` for metadata-only answers too
            // (kube-apiserver names the serializer's media type, not the `as=` asked for).
            match result {
                Ok(Reply {
                    code,
                    written: Some(bytes),
                    ..
                }) => written_outcome(code, bytes),
                result => json_outcome(
                    result.and_then(|reply| Ok((reply.code, represent(reply.body, rep)?))),
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(
            route("/api/v1/namespaces/foo/status"),
            Route::Resource {
                group: "".into(),
                version: "v1".into(),
                plural: "namespaces".into(),
                namespace: None,
                name: Some("foo".into()),
                sub: Some("status".into())
            }
        );
        assert_eq!(
            route("/apis/apps/v1/namespaces/a/deployments/b/status"),
            Route::Resource {
                group: "apps".into(),
                version: "v1".into(),
                plural: "deployments".into(),
                namespace: Some("a".into()),
                name: Some("b".into()),
                sub: Some("status".into())
            }
        );
        assert_eq!(
            route("/api/v1/namespaces"),
            Route::Resource {
                group: "".into(),
                version: "v1".into(),
                plural: "namespaces".into(),
                namespace: None,
                name: None,
                sub: None
            }
        );
        assert_eq!(route("/foo"), Route::Unknown);
    }
}
