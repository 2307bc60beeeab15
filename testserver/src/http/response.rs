//! Responses: a body (a document or a watch's event stream), what a handler answers
//! ([`Outcome`]), and the byte counts the request log keeps.

use crate::errors::ApiError;
use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use hyper::Response;
use serde_json::Value;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// Counts bytes of a response body: the server-wide total and this request's own.
#[derive(Clone)]
pub(super) struct ByteCount {
    pub(super) total: Arc<AtomicU64>,
    pub(super) this: Arc<AtomicU64>,
}

impl ByteCount {
    pub(super) fn add(&self, n: usize) {
        self.total.fetch_add(n as u64, Ordering::Relaxed);
        self.this.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// A response body: a complete document, or a stream of watch events.
pub(crate) enum Body {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Bytes>),
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx) => rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::Stream(_) => SizeHint::default(),
        }
    }
}

pub(super) type Resp = Response<Body>;

/// What a response carries.
pub(super) enum Payload {
    Json(Value),
    /// A non-JSON body (the plain `404 page not found` of paths no API serves).
    Text(std::borrow::Cow<'static, str>),
    /// A JSON document already written.
    Written(Vec<u8>),
    /// A watch's event stream.
    Stream(mpsc::Receiver<Bytes>),
}

pub(super) struct Outcome {
    pub(super) code: u16,
    pub(super) payload: Payload,
    pub(super) content_type: String,
    pub(super) headers: Vec<(String, String)>,
}

impl Outcome {
    pub(super) fn into_response(self, count: &ByteCount) -> Resp {
        let mut b = Response::builder()
            .status(self.code)
            .header("content-type", self.content_type.as_str())
            .header("cache-control", "no-cache, private");
        for (k, v) in &self.headers {
            b = b.header(k.as_str(), v.as_str());
        }
        let body = match self.payload {
            Payload::Json(v) => {
                let bytes = serde_json::to_vec(&v).unwrap_or_default();
                count.add(bytes.len());
                Body::Full(Some(Bytes::from(bytes)))
            }
            Payload::Written(bytes) => {
                count.add(bytes.len());
                Body::Full(Some(Bytes::from(bytes)))
            }
            Payload::Text(t) => {
                count.add(t.len());
                Body::Full(Some(Bytes::from(t.into_owned())))
            }
            Payload::Stream(rx) => Body::Stream(rx),
        };
        b.body(body)
            .unwrap_or_else(|_| Response::new(Body::Full(None)))
    }
}

pub(super) fn json_outcome(r: Result<(u16, Value), ApiError>) -> Outcome {
    match r {
        Ok((code, body)) => Outcome {
            code,
            payload: Payload::Json(body),
            content_type: "application/json".into(),
            headers: vec![],
        },
        Err(e) => Outcome {
            code: e.code,
            payload: Payload::Json(e.to_json()),
            content_type: "application/json".into(),
            headers: e.headers.clone(),
        },
    }
}

/// A successful answer whose JSON is already written.
pub(super) fn written_outcome(code: u16, bytes: Vec<u8>) -> Outcome {
    Outcome {
        code,
        payload: Payload::Written(bytes),
        content_type: "application/json".into(),
        headers: vec![],
    }
}

/// kube-apiserver's answer for a path outside every API it serves: the Go mux's plain
/// text, not a Status (unknown resources inside a served group version get a Status).
pub(super) fn page_not_found() -> Outcome {
    Outcome {
        code: 404,
        payload: Payload::Text("404 page not found\n".into()),
        content_type: "text/plain; charset=utf-8".into(),
        headers: vec![],
    }
}

/// Go's `http.Error` as kube-apiserver's `responsewriters.InternalError` writes it (a bad
/// impersonation request, for one).
pub(super) fn internal_error(uri: &str, error: &str) -> Outcome {
    Outcome {
        code: 500,
        payload: Payload::Text(format!("Internal Server Error: {uri:?}: {error}\n").into()),
        content_type: "text/plain; charset=utf-8".into(),
        headers: vec![],
    }
}
