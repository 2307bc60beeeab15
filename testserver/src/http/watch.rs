//! Watches: a stream of JSON-line events, with bookmarks, until the watch times out or the
//! client goes away.

use super::response::{ByteCount, Outcome, Payload};
use crate::errors::ApiError;
use crate::negotiate::{partial, Representation};
use crate::store::{Query, WatchStart};
use bytes::Bytes;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};

/// How often a watch that allows bookmarks gets one (kube-apiserver's cacher: every
/// minute, and once 2 s before the watch's timeout).
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// Streams watch events as JSON lines until `timeoutSeconds` (default 30 min) or the
/// client goes away. With `allowWatchBookmarks`, BOOKMARK events carry the latest
/// resourceVersion every minute and 2 s before the timeout.
pub(super) fn watch_outcome(
    start: WatchStart,
    query: &Query,
    rep: Representation,
    count: ByteCount,
) -> Outcome {
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(1800);
    let bookmarks = matches!(
        query.get("allowWatchBookmarks"),
        Some("true" | "1" | "t" | "T" | "TRUE" | "True")
    );
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let WatchStart {
        initial,
        mut feed,
        filter,
        rv,
    } = start;
    let line = move |mut v: Value| {
        if let Representation::Partial { version, .. } = rep {
            if v["type"] != "ERROR" {
                v["object"] = partial(&v["object"], version);
            }
        }
        let mut b = serde_json::to_vec(&v).unwrap_or_default();
        b.push(b'\n');
        count.add(b.len());
        Bytes::from(b)
    };
    tokio::spawn(async move {
        for v in initial {
            if tx.send(line(v)).await.is_err() {
                return;
            }
        }
        let started = tokio::time::Instant::now();
        let deadline = started + Duration::from_secs(timeout);
        let pretimeout = deadline.checked_sub(Duration::from_secs(2));
        let next_after = |now: tokio::time::Instant| {
            let t = match pretimeout {
                Some(p) => (now + BOOKMARK_INTERVAL).min(p),
                None => now + BOOKMARK_INTERVAL,
            };
            (bookmarks && t > now).then_some(t)
        };
        let mut next_bookmark = next_after(started);
        let mut last_rv = rv;
        loop {
            let bookmark_at = next_bookmark.unwrap_or(deadline);
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tx.closed() => return,
                _ = tokio::time::sleep_until(bookmark_at), if next_bookmark.is_some() => {
                    if tx.send(line(filter.bookmark(last_rv))).await.is_err() {
                        return;
                    }
                    next_bookmark = next_after(tokio::time::Instant::now());
                }
                ev = feed.recv() => match ev {
                    Ok(e) => {
                        last_rv = last_rv.max(e.rv);
                        if let Some(v) = filter.render(&e) {
                            if tx.send(line(v)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let gone = ApiError::new(410, "Expired", "watch fell behind; resume with a new list");
                        let _ = tx.send(line(json!({"type": "ERROR", "object": gone.to_json()}))).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    });
    Outcome {
        code: 200,
        payload: Payload::Stream(rx),
        content_type: "application/json".into(),
        headers: vec![],
    }
}
