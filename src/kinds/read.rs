//! How tend's kinds read the cluster: [`Reader`], implemented over the Kubernetes client by
//! the apply stage and over an in-memory cluster by the tests, so `kinds/` does no I/O.

use serde_json::Value;
use std::future::Future;

/// A LIST request: a kind, optionally limited to a namespace and by selectors.
#[derive(Debug, Clone, Copy)]
pub struct ReadQuery<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub namespace: Option<&'a str>,
    pub label_selector: Option<&'a str>,
    pub field_selector: Option<&'a str>,
    /// Only metadata is needed (names, labels, uids): the reader may fetch
    /// `PartialObjectMetadata`, a fraction of the bytes.
    pub metadata_only: bool,
}

impl<'a> ReadQuery<'a> {
    /// Every object of a kind, cluster-wide.
    pub fn all(group: &'a str, version: &'a str, kind: &'a str) -> Self {
        ReadQuery {
            group,
            version,
            kind,
            namespace: None,
            label_selector: None,
            field_selector: None,
            metadata_only: false,
        }
    }
}

/// Read access to the cluster, as tend's kinds need it.
pub trait Reader {
    type Error;

    /// The objects matching `query` (with apiVersion and kind set); `Ok(None)` when the
    /// cluster does not serve the kind.
    fn list(
        &self,
        query: ReadQuery<'_>,
    ) -> impl Future<Output = Result<Option<Vec<Value>>, Self::Error>> + Send;

    /// Whether `error` is the API's 404 Not Found.
    fn is_not_found(error: &Self::Error) -> bool;
}
