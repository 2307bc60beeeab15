//! Apply: the reconcile engine, one file per step. [`engine`] orchestrates ([`options`]: what
//! every step shares); [`prepare`]
//! resolves the desired set against discovery; [`observe`] reads the parent, LISTs and dry
//! runs ([`non_members`] the objects not in the ApplySet yet); the pure planner ([`crate::plan::planner`]) decides; [`stages`] applies in order
//! ([`replace`] deletes and recreates what the API refuses as immutable);
//! [`waves`] runs the stages wave by wave and [`hooks`] the Jobs and Pods around them;
//! [`prune`] deletes; [`parent`] keeps the ApplySet inventory and run record; [`wait`] waits;
//! [`lock`] serialises runs with a Lease.

pub mod engine;
mod established;
pub mod holder;
mod hook_needs;
pub mod hooks;
pub mod interrupted;
pub mod lists;
pub mod live;
pub mod lock;
mod non_members;
pub mod observe;
pub mod options;
pub mod parent;
pub mod prepare;
mod progress;
pub mod prune;
mod replace;
pub mod stages;
pub mod tend_kinds;
pub mod unit_waits;
pub mod wait;
pub mod waves;
mod writes;

use crate::object::ObjectKey;

/// Log one object's failure on stderr cut to its cause (a 422 can embed kilobytes of Go struct
/// dump); the full text at `-v`, as in the report.
pub(crate) fn log_object_error(key: &ObjectKey, error: &str) {
    if interrupted::is_stop(error) {
        // One line for the whole stopped run, not one per object (see `engine`).
        tracing::debug!("{key}: {error}");
        return;
    }
    let cause = crate::cluster::cause::cut(error);
    if cause == error {
        tracing::error!("{error}");
    } else if error.contains(crate::problem::SERVER_SAID) {
        // tend's own line already names the object; the server's text is for -v.
        tracing::error!("{cause}");
        tracing::debug!("{error}");
    } else {
        // The cause alone no longer names the object.
        tracing::error!("{key}: {cause}");
        tracing::debug!("{error}");
    }
}
