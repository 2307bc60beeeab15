//! The words of tend's messages that every stage shares.

use std::fmt::Display;

/// `1 object`, `3 objects`: a number and its noun, plural unless the number is one (every
/// noun tend counts takes an `s`).
pub fn count<N: Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    let s = if n == N::from(1) { "" } else { "s" };
    format!("{n} {noun}{s}")
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn one_is_singular_and_the_rest_plural() {
        assert_eq!(count(0usize, "object"), "0 objects");
        assert_eq!(count(1usize, "object"), "1 object");
        assert_eq!(count(2i64, "extra replica"), "2 extra replicas");
        assert_eq!(count(-1i64, "replica"), "-1 replicas");
    }
}
