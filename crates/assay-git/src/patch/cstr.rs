//! C string helpers, for reading a patch as git's C code reads it.
//!
//! Invariant: reading past the end of a slice yields NUL, as git reads
//! into a NUL-terminated buffer; a NUL ends a C string.

/// git's `isspace` (the C locale's, without the NUL git's table adds).
pub(super) fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The byte at `i`, or NUL past the end (git reads into NUL padding).
pub(super) fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

/// The bytes of `s` before its first NUL (a C string).
pub(super) fn c_str(s: &[u8]) -> &[u8] {
    &s[..s.iter().position(|b| *b == 0).unwrap_or(s.len())]
}

/// `strncmp(a, b, n) == 0`.
pub(super) fn strn_eq(a: &[u8], b: &[u8], n: usize) -> bool {
    for i in 0..n {
        let (x, y) = (at(a, i), at(b, i));
        if x != y {
            return false;
        }
        if x == 0 {
            return true;
        }
    }
    true
}

/// C's `strtoul(s, &end, base)`: leading white space, a sign, digits
/// (saturating); None when no digit was read.
pub(super) fn strtoul_end(s: &[u8], base: u32) -> Option<(u64, usize)> {
    let mut i = 0;
    while is_space(at(s, i)) {
        i += 1;
    }
    let negative = match at(s, i) {
        b'-' => {
            i += 1;
            true
        }
        b'+' => {
            i += 1;
            false
        }
        _ => false,
    };
    let start = i;
    let mut v: u64 = 0;
    while let Some(d) = char::from(at(s, i)).to_digit(base) {
        v = v
            .saturating_mul(u64::from(base))
            .saturating_add(u64::from(d));
        i += 1;
    }
    if i == start {
        return None;
    }
    Some((if negative { v.wrapping_neg() } else { v }, i))
}
