//! Helm charts rendered natively, as
//! README "HelmChart — a Helm chart rendered by tend itself" describes: Go's template language
//! ([`template`]), the functions Helm and Sprig give charts ([`funcs`]) and a chart's render
//! ([`chart`]). Pure: no I/O.

pub mod chart;
pub mod deps;
pub mod facts;
pub mod funcs;
pub mod hooks;
pub mod lookup;
mod node;
pub mod schema;
pub mod template;
pub mod template_text;
pub mod values;

#[cfg(test)]
mod corpus_tests;
