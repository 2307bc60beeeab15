//! Helm's and Sprig's template functions.

use super::template::Engine;

/// Registers every Helm and Sprig function tend supports on `engine`.
pub fn register(_engine: &mut Engine) {}
