//! End-to-end tests of the `tend` binary, one module per area.

mod architecture;
mod canary;
mod chaos;
mod common;
mod crds;
mod engine;
mod faults;
mod git;
mod helm;
mod kinds;
mod kustomize;
mod lists;
mod load_errors;
mod namespace_race;
mod outages;
mod output;
mod policies;
mod quickstart;
mod reads;
mod render;
mod run;
mod shipping;
mod sops;
mod version;
mod wait;
mod waves;
