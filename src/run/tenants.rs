//! Tenants (README "Coming from Flux"): a Flux unit with `spec.serviceAccountName` is
//! written as that ServiceAccount, so its repository cannot write outside what RBAC allows
//! it (`source::units::tenants` says which unit is whose). Before the first write of the run
//! (and in `diff`, which writes nothing), the tenant is asked, as itself, whether it may
//! create and patch each kind in each namespace it writes (SelfSubjectAccessReviews, two per
//! kind and namespace); the objects where it may not everywhere (a rule naming some objects,
//! say) are dry-run applied as the tenant, as they will be written, and one the server
//! refuses (403) fails the run at its file:line, naming the unit, the ServiceAccount, the
//! server's message and the way out. Reads of the cluster stay tend's own; prunes of what a
//! tenant wrote are the tenant's (`apply::prune`, from the ApplySet parent's record).

use crate::cluster::impersonation::{may, ServiceAccount};
use crate::cluster::{self, Session};
use crate::object::{split_api_version, Object, ObjectKey};
use crate::problem::{Problem, Problems};
use crate::source::units::{tenants, Expanded, Tenant};
use crate::Error;
use futures::stream::{self, StreamExt};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Dry runs in flight at once.
const CONCURRENCY: usize = 8;

/// Access reviews in flight at once: small requests the server answers from its RBAC cache,
/// two per kind and namespace a tenant writes (dozens for a tenant of a few namespaces), so
/// their round trips, not the server, set how long the check takes.
const REVIEWS_IN_FLIGHT: usize = 32;

/// Tell the session which objects are written as which tenant, and refuse the run when a
/// tenant may not write one of its objects.
pub async fn impersonate(
    session: &Session,
    expanded: &Expanded,
    objects: &[Object],
    default_account: Option<&str>,
) -> Result<(), Error> {
    let tenants = tenants(&expanded.units, default_account);
    if tenants.is_empty() {
        return Ok(());
    }
    let owned: Vec<(&Object, &Tenant)> = objects
        .iter()
        .filter_map(|o| Some((o, tenants.of_file(&o.origin.file)?)))
        .collect();
    let writers: HashMap<ObjectKey, ServiceAccount> = owned
        .iter()
        .map(|(o, t)| (o.key(), account_of(t)))
        .collect();
    session.write_as(writers);
    let own_kinds: Vec<Problem> = owned
        .iter()
        .filter(|(object, _)| object.group() == crate::GROUP)
        .map(|(object, tenant)| tend_kind_problem(object, tenant))
        .collect();
    if !own_kinds.is_empty() {
        return Err(crate::render::RenderError::Invalid(Problems(own_kinds)).into());
    }
    let allowed = allowed_everywhere(session, &owned).await;
    let doubtful = owned
        .into_iter()
        .filter(|(object, tenant)| !allowed.contains(&scope_of(object, tenant)));
    let results = stream::iter(doubtful.map(|(object, tenant)| async move {
        (object, tenant, refusal(session, object, tenant).await)
    }))
    .buffer_unordered(CONCURRENCY)
    .collect::<Vec<_>>()
    .await;
    let refused: Vec<(&Object, &Tenant, String)> = results
        .into_iter()
        .filter_map(|(object, tenant, refused)| Some((object, tenant, refused?)))
        .collect();
    let granted_later = granted_by_this_run(session, objects, &refused).await?;
    let mut problems = Vec::new();
    for (object, tenant, refused) in refused {
        let account = account_of(tenant);
        if granted_later.contains(&account) {
            // Its RoleBindings are written first (a tenant's unit starts after the unit
            // holding it); the server then decides each write.
            tracing::warn!(
                "{} of {} is refused to {account} before the run ({refused}); this run creates RoleBindings for it first, so it is written as {account} and the server decides",
                object.key().kind_and_name(),
                tenant.unit
            );
            continue;
        }
        problems.push(problem(object, tenant, &refused));
    }
    if problems.is_empty() {
        return Ok(());
    }
    problems.sort();
    Err(crate::render::RenderError::Invalid(Problems(problems)).into())
}

/// A tenant's right over a kind in a namespace: ServiceAccount, group, kind, namespace.
type Scope = (ServiceAccount, String, String, Option<String>);

fn scope_of(object: &Object, tenant: &Tenant) -> Scope {
    let key = object.key();
    (account_of(tenant), key.group, key.kind, key.namespace)
}

/// The scopes where the tenant may create and patch every object (two access reviews per
/// scope, not one request per object); only the objects of other scopes are dry-run.
async fn allowed_everywhere(session: &Session, owned: &[(&Object, &Tenant)]) -> BTreeSet<Scope> {
    let scopes: BTreeMap<Scope, &Object> = owned
        .iter()
        .map(|(object, tenant)| (scope_of(object, tenant), *object))
        .collect();
    let answers = stream::iter(scopes.into_iter().map(|(scope, object)| async move {
        let (group, version) = split_api_version(object.api_version());
        let Some(resource) = session.resources.get(group, version, object.kind()) else {
            return (scope, false);
        };
        let Ok(client) = session.client_as(&scope.0) else {
            return (scope, false);
        };
        let namespace = scope.3.as_deref();
        let (patch, create) = futures::join!(
            may(&client, resource, "patch", namespace),
            may(&client, resource, "create", namespace)
        );
        (scope, patch && create)
    }))
    .buffer_unordered(REVIEWS_IN_FLIGHT / 2)
    .collect::<Vec<_>>()
    .await;
    answers
        .into_iter()
        .filter_map(|(scope, allowed)| allowed.then_some(scope))
        .collect()
}

fn account_of(tenant: &Tenant) -> ServiceAccount {
    ServiceAccount {
        namespace: tenant.account.0.clone(),
        name: tenant.account.1.clone(),
    }
}

/// The server's 403 for a dry-run apply of `object` as its tenant, if it refuses it. Other
/// failures (a namespace this run creates first, a kind whose CRD it installs) are the
/// engine's to report.
async fn refusal(session: &Session, object: &Object, tenant: &Tenant) -> Option<String> {
    let (group, version) = split_api_version(object.api_version());
    let resource = session.resources.get(group, version, object.kind())?;
    let client = match session.client_as(&account_of(tenant)) {
        Ok(client) => client,
        Err(err) => return Some(err.to_string()),
    };
    let dry_run = cluster::apply(
        &client,
        resource,
        &object.value,
        crate::FIELD_MANAGER,
        true,
        true,
    )
    .await;
    match dry_run {
        Err(err) if err.code() == Some(403) => {
            Some(err.server_message().unwrap_or("forbidden").to_string())
        }
        _ => None,
    }
}

fn problem(object: &Object, tenant: &Tenant, refused: &str) -> Problem {
    let key = object.key();
    let account = account_of(tenant);
    let place = match &key.namespace {
        Some(ns) => format!("a RoleBinding in namespace {ns}"),
        None => "a ClusterRoleBinding".to_string(),
    };
    Problem::new(
        &object.origin.file,
        object.origin.line,
        format!(
            "{} of {} (at {}:{}) would be written as {account}, and the cluster refuses it: {refused}; grant {account} what it needs with {place}, or move the object to a unit allowed to write it",
            key.kind_and_name(),
            tenant.unit,
            tenant.file.display(),
            tenant.line,
        ),
    )
}

/// The refused tenants' ServiceAccounts a RoleBinding or ClusterRoleBinding of the desired
/// state names that the cluster does not hold yet: what they may do is only known once this
/// run has written it.
async fn granted_by_this_run(
    session: &Session,
    objects: &[Object],
    refused: &[(&Object, &Tenant, String)],
) -> Result<BTreeSet<ServiceAccount>, Error> {
    let accounts: BTreeSet<ServiceAccount> =
        refused.iter().map(|(_, t, _)| account_of(t)).collect();
    let mut granted = BTreeSet::new();
    for binding in objects.iter().filter(|o| is_binding(o)) {
        let named: Vec<&ServiceAccount> = accounts
            .iter()
            .filter(|a| !granted.contains(*a) && binds(&binding.value, a))
            .collect();
        if named.is_empty() {
            continue;
        }
        let (group, version) = split_api_version(binding.api_version());
        let Some(resource) = session.resources.get(group, version, binding.kind()) else {
            continue;
        };
        let key = binding.key();
        let live = cluster::get(
            &session.client,
            resource,
            key.namespace.as_deref(),
            &key.name,
        )
        .await
        .map_err(Error::Cluster)?;
        if live.is_none() {
            granted.extend(named.into_iter().cloned());
        }
    }
    Ok(granted)
}

fn is_binding(object: &Object) -> bool {
    object.group() == "rbac.authorization.k8s.io"
        && matches!(object.kind(), "RoleBinding" | "ClusterRoleBinding")
}

/// Whether a binding's subjects name the ServiceAccount (or the groups it is in).
fn binds(binding: &Value, account: &ServiceAccount) -> bool {
    let own_namespace = binding
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let subjects = binding.get("subjects").and_then(Value::as_array);
    subjects.into_iter().flatten().any(|s| {
        let text = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
        match text("kind") {
            "ServiceAccount" => {
                let ns = match text("namespace") {
                    "" => own_namespace,
                    ns => ns,
                };
                ns == account.namespace && text("name") == account.name
            }
            "Group" => {
                let name = text("name");
                name == "system:serviceaccounts"
                    || name == format!("system:serviceaccounts:{}", account.namespace)
            }
            _ => false,
        }
    })
}

/// tend's own kinds act with tend's rights, not the writer's (a CopyRule reads any
/// namespace, a RegistryMirror runs on every node): a tenant's unit may not hold them.
fn tend_kind_problem(object: &Object, tenant: &Tenant) -> Problem {
    Problem::new(
        &object.origin.file,
        object.origin.line,
        format!(
            "{} is one of tend's kinds, in {} (written as {}): tend carries them out with its own rights, which would take the tenant past its RBAC; move it to a unit of the platform (one tend writes as itself)",
            object.key().kind_and_name(),
            tenant.unit,
            account_of(tenant),
        ),
    )
}
