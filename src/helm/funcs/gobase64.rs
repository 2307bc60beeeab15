//! Go's `base64.StdEncoding.DecodeString` (encoding/base64 `decodeQuantum`), which Sprig's
//! `b64dec` calls: line breaks (`\r`, `\n`) anywhere are skipped, padding is required, bits
//! after the last byte are ignored (the encoding is not `Strict`), and an error names the
//! offset of the first bad byte as Go's `CorruptInputError` does. Also Go's
//! `base32.StdEncoding.DecodeString` (`b32dec`): line breaks removed first, then 8-byte
//! quanta with RFC 4648's padding lengths.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn sextet(c: u8) -> Option<u32> {
    ALPHABET.iter().position(|&a| a == c).map(|p| p as u32)
}

fn is_break(c: u8) -> bool {
    c == b'\n' || c == b'\r'
}

/// The decoded bytes, or Go's error text (`illegal base64 data at input byte N`).
pub fn decode(src: &[u8]) -> Result<Vec<u8>, String> {
    let corrupt = |at: usize| format!("illegal base64 data at input byte {at}");
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    loop {
        let mut quantum = [0u32; 4];
        let mut len = 4;
        let mut j = 0;
        let mut trailing = None;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                // Padding is required: a quantum cut short is an error where it began.
                return Err(corrupt(si - j));
            }
            let c = src[si];
            si += 1;
            if let Some(v) = sextet(c) {
                quantum[j] = v;
                j += 1;
                continue;
            }
            if is_break(c) {
                continue;
            }
            if c != b'=' || j < 2 {
                return Err(corrupt(si - 1));
            }
            if j == 2 {
                // "==" is expected; the first is read.
                while si < src.len() && is_break(src[si]) {
                    si += 1;
                }
                if si == src.len() {
                    return Err(corrupt(src.len()));
                }
                if src[si] != b'=' {
                    return Err(corrupt(si - 1));
                }
                si += 1;
            }
            while si < src.len() && is_break(src[si]) {
                si += 1;
            }
            if si < src.len() {
                trailing = Some(si);
            }
            len = j;
            break;
        }
        let value = quantum[0] << 18 | quantum[1] << 12 | quantum[2] << 6 | quantum[3];
        let bytes = [(value >> 16) as u8, (value >> 8) as u8, value as u8];
        out.extend_from_slice(&bytes[..len - 1]);
        if let Some(at) = trailing {
            return Err(corrupt(at));
        }
        if len < 4 {
            return Ok(out);
        }
    }
}

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// Go's base32 `StdEncoding.DecodeString`, or its error text.
pub fn decode_base32(text: &[u8]) -> Result<Vec<u8>, String> {
    let src: Vec<u8> = text.iter().copied().filter(|&c| !is_break(c)).collect();
    let corrupt = |at: usize| format!("illegal base32 data at input byte {at}");
    let olen = src.len();
    let mut rest = &src[..];
    let mut out = Vec::with_capacity(olen / 8 * 5);
    let mut end = false;
    while !rest.is_empty() && !end {
        let mut quantum = [0u8; 8];
        let mut len = 8;
        let mut j = 0;
        while j < 8 {
            let Some((&c, tail)) = rest.split_first() else {
                // Padding is required.
                return Err(corrupt(olen - rest.len() - j));
            };
            rest = tail;
            if c == b'=' && j >= 2 && rest.len() < 8 {
                if rest.len() + j < 7 {
                    return Err(corrupt(olen));
                }
                for k in 0..7 - j {
                    if rest.len() > k && rest[k] != b'=' {
                        return Err(corrupt(olen - rest.len() + k - 1));
                    }
                }
                (len, end) = (j, true);
                // 1, 3 and 6 characters carry no whole byte (RFC 4648 section 6).
                if matches!(len, 1 | 3 | 6) {
                    return Err(corrupt(olen - rest.len() - 1));
                }
                break;
            }
            match BASE32.iter().position(|&a| a == c) {
                Some(v) => quantum[j] = v as u8,
                None => return Err(corrupt(olen - rest.len() - 1)),
            }
            j += 1;
        }
        let q = quantum;
        let bytes = [
            q[0] << 3 | q[1] >> 2,
            q[1] << 6 | q[2] << 1 | q[3] >> 4,
            q[3] << 4 | q[4] >> 1,
            q[4] << 7 | q[5] << 2 | q[6] >> 3,
            q[6] << 5 | q[7],
        ];
        let count = match len {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            _ => 1,
        };
        out.extend_from_slice(&bytes[..count]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{decode, decode_base32};

    fn text(src: &str) -> Result<String, String> {
        decode(src.as_bytes()).map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// Results of Go's `base64.StdEncoding.DecodeString` for the same input.
    #[test]
    fn decodes_as_go_std_encoding() {
        assert_eq!(text("YWJj"), Ok("abc".into()));
        assert_eq!(text("YWI="), Ok("ab".into()));
        assert_eq!(text("YQ=="), Ok("a".into()));
        assert_eq!(text(""), Ok("".into()));
        // Line breaks anywhere are skipped (wrapped PEM bodies decode).
        assert_eq!(text("YW\nJj\r\nZA\n==\n"), Ok("abcd".into()));
        // Not strict: bits after the last byte are ignored.
        assert_eq!(text("YR=="), Ok("a".into()));
        assert_eq!(
            text("!!"),
            Err("illegal base64 data at input byte 0".into())
        );
        assert_eq!(
            text("YWJ"),
            Err("illegal base64 data at input byte 0".into())
        );
        assert_eq!(
            text("YWJjZA"),
            Err("illegal base64 data at input byte 4".into())
        );
        assert_eq!(
            text("YQ="),
            Err("illegal base64 data at input byte 3".into())
        );
        assert_eq!(
            text("Y==="),
            Err("illegal base64 data at input byte 1".into())
        );
        assert_eq!(
            text("YQ==YQ=="),
            Err("illegal base64 data at input byte 4".into())
        );
        assert_eq!(
            text("YWJj YQ=="),
            Err("illegal base64 data at input byte 4".into())
        );
        assert_eq!(
            text("YQ=a"),
            Err("illegal base64 data at input byte 2".into())
        );
    }

    /// Results of Go's `base32.StdEncoding.DecodeString` for the same input.
    #[test]
    fn decodes_base32_as_go_std_encoding() {
        let b32 =
            |s: &str| decode_base32(s.as_bytes()).map(|b| String::from_utf8_lossy(&b).into_owned());
        assert_eq!(b32("NBUQ===="), Ok("hi".into()));
        assert_eq!(b32("MFRGG==="), Ok("abc".into()));
        assert_eq!(b32("MFRG\nG===\n"), Ok("abc".into()));
        assert_eq!(b32("MFRGGZDF"), Ok("abcde".into()));
        assert_eq!(b32(""), Ok("".into()));
        assert_eq!(
            b32("MFRGG"),
            Err("illegal base32 data at input byte 0".into())
        );
        assert_eq!(
            b32("NBUQ==="),
            Err("illegal base32 data at input byte 7".into())
        );
        // Go reports the byte before the bad one here (`olen - len(src) + k - 1`).
        assert_eq!(
            b32("MFRGG=A="),
            Err("illegal base32 data at input byte 5".into())
        );
        assert_eq!(
            b32("M1======"),
            Err("illegal base32 data at input byte 1".into())
        );
        assert_eq!(
            b32("MFR====="),
            Err("illegal base32 data at input byte 3".into())
        );
    }
}
