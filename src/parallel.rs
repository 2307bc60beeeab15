//! The one thread budget of a run, and the one way the stages below the executor use
//! several threads: [`map`], a map over independent items whose results come back in item
//! order, as if computed one after the other. Parsing files, rendering Helm releases and
//! building kustomize units all go through it; nothing else below [`crate::run`] starts a
//! thread for work (see ARCHITECTURE.md "Where concurrency lives").

use std::sync::atomic::{AtomicUsize, Ordering};

/// More threads than this stop paying off: the work is short and memory grows with each.
const MAX_THREADS: usize = 8;

/// Threads a parallel step may use: the machine's cores, at most [`MAX_THREADS`].
pub fn budget() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_THREADS)
}

/// `work` over `items` on up to `threads` threads (the calling one among them), results in
/// item order. Items are handed out `batch` at a time as threads ask for them, not in one
/// share per thread: the run's other threads (reading the cluster) take cores at times, and
/// a thread that fell behind would otherwise be left with the rest of its share. A panic in
/// `work` is raised again on the calling thread.
pub fn map<T, R, F>(items: &[T], threads: usize, batch: usize, work: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let batch = batch.max(1);
    let threads = threads.min(items.len().div_ceil(batch));
    if threads < 2 {
        return items.iter().map(&work).collect();
    }
    let next = AtomicUsize::new(0);
    let take_batches = || {
        let mut done = Vec::new();
        loop {
            let start = next.fetch_add(batch, Ordering::Relaxed);
            if start >= items.len() {
                return done;
            }
            let end = (start + batch).min(items.len());
            done.push((
                start,
                items[start..end].iter().map(&work).collect::<Vec<_>>(),
            ));
        }
    };
    let mut batches: Vec<_> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(take_batches)).collect();
        let mut batches = take_batches();
        for helper in helpers {
            batches.extend(
                helper
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        batches
    });
    batches.sort_unstable_by_key(|(start, _)| *start);
    batches.into_iter().flat_map(|(_, done)| done).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_item_order_whatever_the_threads() {
        let items: Vec<usize> = (0..1000).collect();
        for threads in [1, 2, 3, 8] {
            for batch in [1, 7, 16, 5000] {
                let squares = map(&items, threads, batch, |i| i * i);
                assert_eq!(squares, items.iter().map(|i| i * i).collect::<Vec<_>>());
            }
        }
        assert!(map(&Vec::<u8>::new(), 4, 1, |b| *b).is_empty());
    }

    #[test]
    fn a_panic_in_the_work_reaches_the_caller() {
        let items: Vec<usize> = (0..64).collect();
        let caught = std::panic::catch_unwind(|| {
            map(&items, 4, 1, |i| {
                assert!(*i != 40, "item 40");
                *i
            })
        });
        assert!(caught.is_err());
    }

    #[test]
    fn the_budget_is_at_least_one_and_at_most_the_cap() {
        assert!((1..=MAX_THREADS).contains(&budget()));
    }
}
