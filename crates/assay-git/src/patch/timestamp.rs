//! The timestamps GNU diff writes after a traditional name, as git
//! recognises them (`diff_timestamp_len`, `has_epoch_timestamp`).
//!
//! Invariant: a byte-for-byte port of git's matching (its regex for the
//! epoch included); a name line it does not recognise has no timestamp.

use super::cstr::at;

fn digit(s: &[u8], i: usize) -> bool {
    at(s, i).is_ascii_digit()
}

fn sane_tz(s: &[u8], len: usize) -> usize {
    if len < 6 || s[len - 6] != b' ' {
        return 0;
    }
    let tz = len - 6;
    if s[tz + 1] != b'+' && s[tz + 1] != b'-' {
        return 0;
    }
    if (tz + 2..len).any(|i| !digit(s, i)) {
        return 0;
    }
    6
}

fn tz_with_colon(s: &[u8], len: usize) -> usize {
    if len < 7 || s[len - 3] != b':' {
        return 0;
    }
    let tz = len - 7;
    if s[tz] != b' ' || (s[tz + 1] != b'+' && s[tz + 1] != b'-') {
        return 0;
    }
    let p = tz + 2;
    if !digit(s, p) || !digit(s, p + 1) || s[p + 2] != b':' || !digit(s, p + 3) {
        return 0;
    }
    if !digit(s, p + 4) {
        return 0;
    }
    7
}

fn date(s: &[u8], len: usize) -> usize {
    if len < 8 || s[len - 3] != b'-' {
        return 0;
    }
    let mut d = len - 8;
    let p = d;
    let shape = [true, true, false, true, true, false, true, true];
    for (k, is_digit) in shape.iter().enumerate() {
        let ok = if *is_digit {
            digit(s, p + k)
        } else {
            s[p + k] == b'-'
        };
        if !ok {
            return 0;
        }
    }
    if d >= 2 && digit(s, d - 1) && digit(s, d - 2) {
        d -= 2;
    }
    len - d
}

fn short_time(s: &[u8], len: usize) -> usize {
    if len < 9 || s[len - 3] != b':' {
        return 0;
    }
    let p = len - 9;
    let shape = b" dd:dd:dd";
    for (k, want) in shape.iter().enumerate() {
        let ok = if *want == b'd' {
            digit(s, p + k)
        } else {
            s[p + k] == *want
        };
        if !ok {
            return 0;
        }
    }
    9
}

fn fractional_time(s: &[u8], len: usize) -> usize {
    if len == 0 || !digit(s, len - 1) {
        return 0;
    }
    let mut p = len - 1;
    while p > 0 && digit(s, p) {
        p -= 1;
    }
    if s[p] != b'.' {
        return 0;
    }
    match short_time(s, p) {
        0 => 0,
        n => len - p + n,
    }
}

fn trailing_spaces(s: &[u8], len: usize) -> usize {
    if len == 0 || s[len - 1] != b' ' {
        return 0;
    }
    let mut p = len;
    while p != 0 {
        p -= 1;
        if s[p] != b' ' {
            return len - (p + 1);
        }
    }
    len
}

/// How many bytes at the end of `s` (a name line without its line
/// end) are a timestamp, with the tab or spaces before it.
pub(super) fn len(s: &[u8]) -> usize {
    let len = s.len();
    if len == 0 || !digit(s, len - 1) {
        return 0;
    }
    let mut end = len;
    let mut n = sane_tz(s, end);
    if n == 0 {
        n = tz_with_colon(s, end);
    }
    end -= n;
    let mut n = short_time(s, end);
    if n == 0 {
        n = fractional_time(s, end);
    }
    end -= n;
    let n = date(s, end);
    if n == 0 {
        return 0;
    }
    end -= n;
    if end == 0 {
        return 0;
    }
    if s[end - 1] == b'\t' {
        return len - (end - 1);
    }
    if s[end - 1] != b' ' {
        return 0;
    }
    end -= trailing_spaces(s, end);
    len - end
}

/// Whether the name line (up to its line end) ends with a tab and the
/// epoch, which GNU diff writes for a file that does not exist.
pub(super) fn is_epoch(s: &[u8]) -> bool {
    let line = &s[..s.iter().position(|b| *b == b'\n').unwrap_or(s.len())];
    let Some(tab) = line.iter().rposition(|b| *b == b'\t') else {
        return false;
    };
    // The regex matches up to the line end, which must be there.
    let t = &s[tab + 1..];
    let (epoch_hour, t) = if let Some(t) = t.strip_prefix(b"1969-12-31 ") {
        (24, t)
    } else if let Some(t) = t.strip_prefix(b"1970-01-01 ") {
        (0, t)
    } else {
        return false;
    };
    // ^[0-2][0-9]:([0-5][0-9]):00(\.0+)? ([-+][0-2][0-9]:?[0-5][0-9])\n
    let range = |i: usize, lo: u8, hi: u8| (lo..=hi).contains(&at(t, i));
    if !(range(0, b'0', b'2') && digit(t, 1) && at(t, 2) == b':') {
        return false;
    }
    if !(range(3, b'0', b'5') && digit(t, 4) && at(t, 5) == b':') {
        return false;
    }
    if !(at(t, 6) == b'0' && at(t, 7) == b'0') {
        return false;
    }
    let mut i = 8;
    if at(t, i) == b'.' && at(t, i + 1) == b'0' {
        i += 1;
        while at(t, i) == b'0' {
            i += 1;
        }
    }
    if at(t, i) != b' ' {
        return false;
    }
    let sign = at(t, i + 1);
    if sign != b'+' && sign != b'-' {
        return false;
    }
    let z = i + 2;
    if !(range(z, b'0', b'2') && digit(t, z + 1)) {
        return false;
    }
    let colon = at(t, z + 2) == b':';
    let m = if colon { z + 3 } else { z + 2 };
    if !(range(m, b'0', b'5') && digit(t, m + 1) && at(t, m + 2) == b'\n') {
        return false;
    }
    let num =
        |a: usize, b: usize| -> i64 { t[a..b].iter().fold(0, |v, d| v * 10 + i64::from(d - b'0')) };
    let hour = num(0, 2);
    let minute = num(3, 5);
    let mut zone = if colon {
        num(z, z + 2) * 60 + num(m, m + 2)
    } else {
        let all = num(z, m + 2);
        (all / 100) * 60 + all % 100
    };
    if sign == b'-' {
        zone = -zone;
    }
    hour * 60 + minute - zone == epoch_hour * 60
}
