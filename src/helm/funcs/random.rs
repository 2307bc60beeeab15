//! The seeded stream every random function of a render draws from (`randAlphaNum`, `uuidv4`,
//! the keys of `genCA`, ...), and whether one did. A leaf: function modules import it, it
//! imports none of them.

use std::cell::Cell;

thread_local! {
    /// The state of the random functions of the render running on this thread (functions are
    /// plain `fn`s, so their state can't be captured).
    static RANDOM_SEED: Cell<u64> = const { Cell::new(0) };
    /// Whether a random function ran since [`reset`].
    static RANDOM_USED: Cell<bool> = const { Cell::new(false) };
}

/// Starts the stream of this thread at `seed`, with no draw yet.
pub fn reset(seed: u64) {
    RANDOM_SEED.with(|s| s.set(seed));
    RANDOM_USED.with(|u| u.set(false));
}

/// Whether the render on this thread used a random function since `register_random`.
pub fn random_used() -> bool {
    RANDOM_USED.with(Cell::get)
}

/// splitmix64: small, and good enough for names and test data; keys and salts seed a CSPRNG
/// from it (`crypto::keys::seeded_rng`).
pub fn next_random() -> u64 {
    RANDOM_USED.with(|u| u.set(true));
    RANDOM_SEED.with(|s| {
        let next = s.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        s.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}
