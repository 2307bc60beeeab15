//! The object model the pipeline works on lives in [`crate::object`], below render and
//! tend's kinds alike; re-exported here for the stages that name it through render.

pub use crate::object::{split_api_version, Object, ObjectKey, Origin};
pub use crate::problem::Problem;
