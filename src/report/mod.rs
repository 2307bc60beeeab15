//! Printing results for people and machines. Secret values are masked here, once, for every
//! format: nothing that prints an object bypasses [`objects::mask_secret`].

pub mod objects;
pub mod plan;
pub mod run;
