//! Controller objects (Argo CD's Applications and ApplicationSets) expanded into what
//! their controllers would sync.

pub mod argo_app;
pub mod argo_appset;
pub mod argo_jsonnet;
pub mod argo_match;
pub mod argo_template;
