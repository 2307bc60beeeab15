//! Helm charts rendered natively (SPEC 3.6, issue 23): Go's template language
//! ([`template`]) and the functions Helm and Sprig give charts ([`funcs`]). Pure: no I/O.

pub mod funcs;
pub mod template;
