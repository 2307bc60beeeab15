//! Helm charts rendered natively (SPEC 3.6, issue 23): Go's template language
//! ([`template`]), the functions Helm and Sprig give charts ([`funcs`]) and a chart's render
//! ([`chart`]). Pure: no I/O.

pub mod chart;
pub mod deps;
pub mod funcs;
pub mod hooks;
pub mod schema;
pub mod template;
pub mod values;

#[cfg(test)]
mod corpus_tests;
