//! The planner: given the prepared desired objects, what the LISTs returned and what the
//! server's dry runs answered, decide per object what a run does. Pure: the engine does the
//! requests and hands the answers in.
//!
//! A run plans in two steps: [`triage`] settles every object it can from the LIST data alone
//! (the fast path) and names those that need the server; after the dry runs, [`plan`] turns
//! everything into a [`Plan`], including prunes and the guards that keep some of them.

mod prune;

pub use prune::{check_prune_limits, prune_guard, PruneLimits};

use super::{fast_path, normalize::normalize, Action, Change};
use crate::kinds::immortal_container::pod::{
    decision as immortal_decision, is_immortal_pod, PodDecision,
};
use crate::object::{Object, ObjectKey};
use crate::render::builtin::stage_of;
use crate::render::policy;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// One desired object, ready for the cluster.
#[derive(Debug, Clone, Copy)]
pub struct Desired<'a> {
    pub object: &'a Object,
    /// Whether the cluster serves its kind now (false for kinds whose CRD this run creates).
    pub served: bool,
}

/// What the fast path says about one desired object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Triage {
    /// Desired fields equal the live ones: no request needed.
    Unchanged,
    /// Its kind is not served yet (CRD created by this run): created as desired.
    CreateUnserved,
    /// An ImmortalContainer pod to (re)create, for this reason.
    Recreate(String),
    /// An ImmortalContainer pod whose place is taken by a pod tend did not create.
    Conflict(String),
    /// Only the server can say what applying it changes.
    NeedsServer,
}

/// Decide what the LIST data alone can settle.
pub fn triage(desired: Desired<'_>, live: Option<&Value>) -> Triage {
    // ImmortalContainer pods are recreated, never patched (a pod's spec is immutable).
    if is_immortal_pod(desired.object) {
        return match immortal_decision(desired.object, live) {
            PodDecision::Keep => Triage::Unchanged,
            PodDecision::Conflict(message) => Triage::Conflict(message),
            PodDecision::Create(reason) => Triage::Recreate(reason),
        };
    }
    match live {
        _ if !desired.served => Triage::CreateUnserved,
        // `tend.dev/apply: if-not-present`: whatever the live object holds now is kept.
        Some(live)
            if policy::if_not_present(&desired.object.value)
                && live.pointer("/metadata/deletionTimestamp").is_none() =>
        {
            Triage::Unchanged
        }
        Some(live)
            if fast_path::is_unchanged(&desired.object.value, live, crate::FIELD_MANAGER) =>
        {
            Triage::Unchanged
        }
        _ => Triage::NeedsServer,
    }
}

/// The server's answer to a dry-run apply of one object.
#[derive(Debug, Clone)]
pub enum DryRun {
    /// The object as it would be after the apply.
    Applied(Value),
    /// 404 because the object's namespace is created by this same run.
    NamespaceNotYetCreated,
    /// 422: the update changes immutable fields; the one-line cause
    /// (`spec.template: field is immutable`).
    Immutable {
        /// One line: `spec.selector: field is immutable`.
        cause: String,
        /// The server's full message (kept for `-v` and `-o json`).
        server: String,
    },
    /// Any other failure, as a message.
    Failed(String),
}

/// Everything the planner needs.
#[derive(Debug)]
pub struct PlanInput<'a> {
    pub desired: &'a [Desired<'a>],
    /// Live objects read (desired ones that may change, ApplySet members), by key.
    pub live: &'a HashMap<ObjectKey, Value>,
    /// Desired objects already settled as unchanged while reading (their live state need not
    /// be kept).
    pub unchanged: &'a HashSet<ObjectKey>,
    /// Dry-run answers for the objects [`triage`] said need the server.
    pub dry_runs: &'a HashMap<ObjectKey, DryRun>,
    /// Objects that need the server but were not dry-run: a real apply writes them next and
    /// takes the result from the apply itself.
    pub pending: &'a BTreeSet<ObjectKey>,
    /// The ApplySet id: live objects labelled with it are members.
    pub applyset_id: &'a str,
}

/// What a run does.
#[derive(Debug, Default)]
pub struct Plan {
    /// In apply order: by stage, then identity; prunes last.
    pub changes: Vec<Change>,
    /// Applied without a dry run first: their `after` comes from the apply response.
    pub pending: BTreeSet<ObjectKey>,
    /// ImmortalContainer pods to (re)create, with the reason.
    pub recreate: BTreeMap<ObjectKey, String>,
    /// Per-object planning errors (a dry run rejected, a conflict), by key.
    pub errors: BTreeMap<ObjectKey, String>,
    /// Members to delete.
    pub prune: BTreeSet<ObjectKey>,
    /// Members no longer desired that a guard keeps: key → reason. Also listed in `changes`
    /// as prunes, so reports show them as skipped.
    pub kept: BTreeMap<ObjectKey, String>,
}

/// Classify every desired object and every member no longer desired.
pub fn plan(input: PlanInput<'_>) -> Plan {
    let mut plan = Plan::default();
    let mut desired_keys = BTreeSet::new();
    for d in input.desired {
        let key = d.object.key();
        desired_keys.insert(key.clone());
        let live = input.live.get(&key);
        let triaged = match input.unchanged.contains(&key) {
            true => Triage::Unchanged,
            false => triage(*d, live),
        };
        let change = match triaged {
            Triage::Unchanged => change_of_keyed(key.clone(), d.object, Action::Unchanged),
            Triage::CreateUnserved => change_of(
                d.object,
                Action::Create,
                None,
                Some(normalize(&d.object.value)),
            ),
            Triage::Conflict(message) => {
                plan.errors.insert(key, message);
                let normal = live.map(normalize);
                change_of(d.object, Action::Update, normal.clone(), normal)
            }
            Triage::Recreate(reason) => {
                plan.recreate.insert(key, reason);
                change_of(
                    d.object,
                    create_or_update(live),
                    live.map(normalize),
                    Some(normalize(&d.object.value)),
                )
            }
            Triage::NeedsServer if input.pending.contains(&key) => {
                plan.pending.insert(key);
                change_of(d.object, create_or_update(live), live.map(normalize), None)
            }
            Triage::NeedsServer => {
                let answer = input.dry_runs.get(&key).cloned().unwrap_or_else(|| {
                    DryRun::Failed(format!("{key}: no dry-run result (internal error)"))
                });
                change_from_dry_run(d.object, live, answer, &mut plan.errors)
            }
        };
        plan.changes.push(change);
    }

    for (key, value) in input.live {
        if desired_keys.contains(key) || !super::inventory::is_member(value, input.applyset_id) {
            continue;
        }
        match prune_guard(key, value) {
            Some(reason) => {
                plan.kept.insert(key.clone(), reason);
            }
            None => {
                plan.prune.insert(key.clone());
            }
        }
        plan.changes.push(Change {
            key: key.clone(),
            api_version: value["apiVersion"].as_str().unwrap_or("").to_string(),
            action: Action::Prune,
            origin: None,
            before: Some(normalize(value)),
            after: None,
            reason: None,
            drift: Vec::new(),
        });
    }
    plan.changes.sort_by_cached_key(|c| {
        (
            c.action == Action::Prune,
            stage_of(&c.key.group, &c.key.kind),
            c.key.clone(),
        )
    });
    plan
}

/// The change for an object the server dry-ran.
fn change_from_dry_run(
    object: &Object,
    live: Option<&Value>,
    answer: DryRun,
    errors: &mut BTreeMap<ObjectKey, String>,
) -> Change {
    let before = live.map(normalize);
    match answer {
        DryRun::Applied(after) => {
            let after = normalize(&after);
            let action = match &before {
                None => Action::Create,
                Some(b) if *b == after => Action::Unchanged,
                Some(_) => Action::Update,
            };
            let drift = match (live, &before) {
                (Some(live), Some(b)) if action == Action::Update => super::drift::drift(
                    live,
                    b,
                    &after,
                    crate::FIELD_MANAGER,
                    &object.origin.sealed,
                ),
                _ => Vec::new(),
            };
            Change {
                drift,
                ..change_of(object, action, before, Some(after))
            }
        }
        // The server cannot dry-run objects in a namespace that does not exist yet: show the
        // desired object as the creation.
        DryRun::NamespaceNotYetCreated => {
            change_of(object, Action::Create, None, Some(normalize(&object.value)))
        }
        DryRun::Immutable { cause, server } => {
            match (policy::replace_on_immutable(&object.value), live) {
                (Some(why), Some(live)) => {
                    let mut change = change_of(
                        object,
                        Action::Replace,
                        before,
                        Some(normalize(&overlay(live, &object.value))),
                    );
                    change.reason = Some(format!("{cause} ({why})"));
                    change
                }
                _ => {
                    let message = format!(
                    "cannot dry-run apply {}: {cause}; annotate it {}: {} to have tend delete and recreate it",
                    object.key().kind_and_name(),
                    policy::REPLACE_ANNOTATION,
                    policy::ON_IMMUTABLE
                );
                    let message = crate::problem::with_server_text(message, Some(&server));
                    change_from_dry_run(object, live, DryRun::Failed(message), errors)
                }
            }
        }
        DryRun::Failed(message) => {
            errors.insert(object.key(), message);
            let action = create_or_update(live);
            // No server view of the result: no diff for an update, the object for a create.
            let after = match &before {
                Some(b) => b.clone(),
                None => normalize(&object.value),
            };
            change_of(object, action, before, Some(after))
        }
    }
}

fn create_or_update(live: Option<&Value>) -> Action {
    if live.is_some() {
        Action::Update
    } else {
        Action::Create
    }
}

fn change_of(
    object: &Object,
    action: Action,
    before: Option<Value>,
    after: Option<Value>,
) -> Change {
    Change {
        before,
        after,
        ..change_of_keyed(object.key(), object, action)
    }
}

/// A change without before and after, with the key the caller read (once per object: it
/// costs a few lookups and copies, and the planner runs for every object of every cluster).
fn change_of_keyed(key: ObjectKey, object: &Object, action: Action) -> Change {
    Change {
        key,
        api_version: object.api_version().to_string(),
        action,
        origin: Some(object.origin.clone()),
        before: None,
        after: None,
        reason: None,
        drift: Vec::new(),
    }
}

/// What a replaced object will look like, for its diff: the server cannot dry-run creating an
/// object that exists, so git's fields are laid over the live object (maps merged, lists of
/// the same length merged item by item, anything else taken from git). The old object's
/// server defaults then show as context rather than as removals.
fn overlay(live: &Value, desired: &Value) -> Value {
    match (live, desired) {
        (Value::Object(l), Value::Object(d)) => {
            let mut out = l.clone();
            for (k, v) in d {
                let merged = match l.get(k) {
                    Some(lv) => overlay(lv, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(l), Value::Array(d)) if l.len() == d.len() => {
            Value::Array(l.iter().zip(d).map(|(lv, dv)| overlay(lv, dv)).collect())
        }
        (_, d) => d.clone(),
    }
}

#[cfg(test)]
mod tests;
