//! End-to-end tests of the `tend` binary, one module per area.

mod chaos;
mod common;
mod crds;
mod engine;
mod faults;
mod kinds;
mod git;
mod load_errors;
mod render;
mod shipping;
mod version;
