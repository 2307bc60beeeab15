//! Operations: what each command does, independent of argument parsing.

pub mod chaos;
pub mod load;
pub mod reconcile;
