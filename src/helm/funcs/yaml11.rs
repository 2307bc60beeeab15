//! The three patterns of go-yaml v2's `resolve` that decide whether a plain scalar reads
//! back as a number or a timestamp, matched by hand: compiling them as regexes cost a
//! Helm render ~0.5 MiB of resident code and heap, and more time than matching them.
//! Each function matches the whole text, as the anchored regex in its comment does.

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
pub fn is_float(s: &str) -> bool {
    let mut c = Cursor::new(s);
    c.sign();
    if c.eat(b'.') {
        if c.digits(usize::MAX) == 0 {
            return false;
        }
    } else {
        if c.digits(usize::MAX) == 0 {
            return false;
        }
        if c.eat(b'.') {
            c.digits(usize::MAX);
        }
    }
    if c.eat(b'e') || c.eat(b'E') {
        c.sign();
        if c.digits(usize::MAX) == 0 {
            return false;
        }
    }
    c.done()
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`
pub fn is_base60(s: &str) -> bool {
    let mut c = Cursor::new(s);
    c.sign();
    if c.digits(1) == 0 {
        return false;
    }
    c.digits_or_underscores();
    let mut groups = 0;
    while c.eat(b':') {
        // `[0-5]?[0-9]`: two digits only when the first is 0-5; what follows a group is
        // never a digit, so taking the longest is the only way to match.
        let two = matches!(c.peek(0), Some(b'0'..=b'5')) && c.peek(1).is_some_and(is_digit);
        if !c.peek(0).is_some_and(is_digit) {
            return false;
        }
        c.pos += if two { 2 } else { 1 };
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if c.eat(b'.') {
        c.digits_or_underscores();
    }
    c.done()
}

/// `^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]| )[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]*)?(?:Z|[-+][0-9]{1,2}:[0-9]{2})?)?$`
pub fn is_timestamp(s: &str) -> bool {
    let mut c = Cursor::new(s);
    let date =
        c.digits(4) == 4 && c.eat(b'-') && c.digits(2) >= 1 && c.eat(b'-') && c.digits(2) >= 1;
    if !date {
        return false;
    }
    if c.done() {
        return true;
    }
    let time = (c.eat(b'T') || c.eat(b't') || c.eat(b' '))
        && c.digits(2) >= 1
        && c.eat(b':')
        && c.digits(2) >= 1
        && c.eat(b':')
        && c.digits(2) >= 1;
    if !time {
        return false;
    }
    if c.eat(b'.') {
        c.digits(usize::MAX);
    }
    if c.eat(b'Z') {
        return c.done();
    }
    if c.sign() {
        return c.digits(2) >= 1 && c.eat(b':') && c.digits(2) == 2 && c.done();
    }
    c.done()
}

fn is_digit(b: u8) -> bool {
    b.is_ascii_digit()
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Self {
        Cursor {
            bytes: s.as_bytes(),
            pos: 0,
        }
    }

    fn peek(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek(0) == Some(b);
        self.pos += usize::from(hit);
        hit
    }

    /// `[-+]?`
    fn sign(&mut self) -> bool {
        self.eat(b'-') || self.eat(b'+')
    }

    /// Up to `max` ASCII digits; how many.
    fn digits(&mut self, max: usize) -> usize {
        let n = self.bytes[self.pos..]
            .iter()
            .take(max)
            .take_while(|b| b.is_ascii_digit())
            .count();
        self.pos += n;
        n
    }

    /// `[0-9_]*`
    fn digits_or_underscores(&mut self) {
        let rest = &self.bytes[self.pos..];
        self.pos += rest
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'_')
            .count();
    }

    fn done(&self) -> bool {
        self.pos == self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use regex::Regex;

    use std::sync::LazyLock;

    // The regexes go-yaml v2's resolve.go uses (and tend used before).
    static FLOAT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$").unwrap()
    });
    static BASE60: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$").unwrap()
    });
    static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:(?:[Tt]| )[0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]*)?(?:Z|[-+][0-9]{1,2}:[0-9]{2})?)?$").unwrap()
    });

    #[test]
    fn known_texts() {
        for s in ["1", "-1.5", ".5", "1.", "1e5", "+2.5E-3", "007"] {
            assert!(is_float(s), "{s}");
        }
        for s in ["", ".", "e5", "1e", "1.5.5", "0x1F", "1_000", " 1"] {
            assert!(!is_float(s), "{s}");
        }
        for s in ["1:20", "-190:20:30.15", "1_0:5:59", "1:60"] {
            assert_eq!(is_base60(s), s != "1:60", "{s}");
        }
        for s in [
            "2024-01-02",
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14 21:59:43Z",
        ] {
            assert!(is_timestamp(s), "{s}");
        }
        for s in [
            "2024-01-02T",
            "24-01-02",
            "2024-01-02 1:2:3+5:0",
            "2024-001-02",
        ] {
            assert!(!is_timestamp(s), "{s}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        // Texts made of the patterns' own characters, where a mismatch would show.
        #[test]
        fn same_as_the_regexes(s in "[0-9_.:eE+\\-Tt Z5x]{0,14}") {
            prop_assert_eq!(is_float(&s), FLOAT.is_match(&s));
            prop_assert_eq!(is_base60(&s), BASE60.is_match(&s));
            prop_assert_eq!(is_timestamp(&s), TIMESTAMP.is_match(&s));
        }

        #[test]
        fn timestamps_as_the_regex(
            s in "[0-9]{4}-[0-9]{1,3}-[0-9]{1,2}([Tt ][0-9]{1,3}:[0-9]{1,2}:[0-9]{1,2}(\\.[0-9]{0,2})?(Z|[-+][0-9]{1,3}:[0-9]{1,3})?)?"
        ) {
            prop_assert_eq!(is_timestamp(&s), TIMESTAMP.is_match(&s));
        }

        #[test]
        fn base60_as_the_regex(s in "[-+]?[0-9_]{1,3}(:[0-9]{1,3}){0,3}(\\.[0-9_]{0,2})?") {
            prop_assert_eq!(is_base60(&s), BASE60.is_match(&s));
        }
    }
}
