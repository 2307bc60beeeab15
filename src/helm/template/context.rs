//! What one render draws on that is not its data, and what it used of it: the seeded stream
//! of random functions, the clock `now` reads, and the cluster's answers to `lookup`. Each
//! [`super::Engine`] owns one, and functions reach it through the template that calls them
//! ([`super::exec::Exec::context`]), so renders on different threads share nothing and the
//! caller reads afterwards whether the output depends on the seed, the time or the cluster.

use super::limits::{self, RenderLimits};
use crate::helm::facts::{Answer, ClusterFacts, LookupKey};
use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::sync::Arc;

#[derive(Debug, Default)]
pub struct RenderContext {
    random_state: Cell<u64>,
    random_used: Cell<bool>,
    now: Cell<i64>,
    now_used: Cell<bool>,
    /// `None` offline (as `helm template`): every lookup finds nothing.
    cluster: RefCell<Option<Arc<ClusterFacts>>>,
    lookups_missed: RefCell<BTreeSet<LookupKey>>,
    looked_up: Cell<bool>,
    /// The budgets of the render and what it spent of them.
    limits: Cell<RenderLimits>,
    steps: Cell<u64>,
    bytes: Cell<u64>,
}

impl RenderContext {
    /// Start the budgets of a render at `limits`, nothing spent.
    pub fn start_budget(&self, limits: RenderLimits) {
        self.limits.set(limits);
        self.steps.set(0);
        self.bytes.set(0);
    }

    pub fn limits(&self) -> RenderLimits {
        self.limits.get()
    }

    /// Spends `n` steps of the work budget.
    pub fn spend_steps(&self, n: u64) -> Result<(), String> {
        let spent = self.steps.get().saturating_add(n);
        self.steps.set(spent);
        if spent > self.limits.get().steps {
            return Err(limits::steps_spent(&self.limits.get()));
        }
        Ok(())
    }

    /// Spends `n` bytes of the memory budget (before making them, where the maker knows).
    pub fn spend_bytes(&self, n: u64) -> Result<(), String> {
        let spent = self.bytes.get().saturating_add(n);
        self.bytes.set(spent);
        if spent > self.limits.get().bytes {
            return Err(limits::bytes_spent(&self.limits.get()));
        }
        Ok(())
    }

    /// Bytes of the memory budget left.
    pub fn bytes_left(&self) -> u64 {
        self.limits.get().bytes.saturating_sub(self.bytes.get())
    }

    /// Start the random stream at `seed`, with no draw yet.
    pub fn start_random(&self, seed: u64) {
        self.random_state.set(seed);
        self.random_used.set(false);
    }

    /// The next number of the stream (splitmix64: small, and good enough for names and test
    /// data; keys and salts seed a CSPRNG from it, `funcs::crypto::keys::seeded_rng`).
    pub fn next_random(&self) -> u64 {
        self.random_used.set(true);
        let next = self.random_state.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        self.random_state.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Whether a random function drew since [`RenderContext::start_random`].
    pub fn random_used(&self) -> bool {
        self.random_used.get()
    }

    /// What `now` gives (Unix seconds), with no read yet.
    pub fn set_now(&self, unix_seconds: i64) {
        self.now.set(unix_seconds);
        self.now_used.set(false);
    }

    /// What `now` gives, in Unix seconds (and the render then depends on the time).
    pub fn now(&self) -> i64 {
        self.now_used.set(true);
        self.now.get()
    }

    /// Whether the render asked for the time since [`RenderContext::set_now`].
    pub fn now_used(&self) -> bool {
        self.now_used.get()
    }

    /// Answer lookups from `facts` (none: offline), with nothing missed or read yet.
    pub fn set_cluster(&self, facts: Option<Arc<ClusterFacts>>) {
        *self.cluster.borrow_mut() = facts;
        self.lookups_missed.borrow_mut().clear();
        self.looked_up.set(false);
    }

    /// The answer to `key`: `None` offline; `Some(None)` when the cluster was not asked
    /// yet (the key is then remembered as missed, see [`RenderContext::take_missed`]).
    pub fn answer(&self, key: &LookupKey) -> Option<Option<Answer>> {
        let cluster = self.cluster.borrow();
        let facts = cluster.as_ref()?;
        self.looked_up.set(true);
        let answer = facts.lookups.get(key).cloned();
        if answer.is_none() {
            self.lookups_missed.borrow_mut().insert(key.clone());
        }
        Some(answer)
    }

    /// The lookups not answered yet, taken.
    pub fn take_missed(&self) -> BTreeSet<LookupKey> {
        std::mem::take(&mut *self.lookups_missed.borrow_mut())
    }

    /// Whether the render read the cluster with a lookup (its output depends on what the
    /// cluster holds).
    pub fn looked_up(&self) -> bool {
        self.looked_up.get()
    }
}
