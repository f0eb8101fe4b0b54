//! A failing test's own words: what a person needs to see first on a red
//! grade (the assertion, expected and actual, the exception and the first
//! frames), read by each format's parser where the format carries them.
//!
//! The words come from the graded code (hostile: it prints what it likes),
//! so each message is capped here, in lines and bytes, and the run keeps a
//! total cap of its own (`src/model/rules/why.rs`): a test that prints a
//! megabyte costs the record 2 KiB.

/// At most this many lines of a test's message are kept …
pub const TEST_MESSAGE_MAX_LINES: usize = 40;
/// … and at most this many bytes.
pub const TEST_MESSAGE_MAX_BYTES: usize = 2048;

/// A test's message from its `lines` within the caps, or `None` when it
/// says nothing.
pub(crate) fn capped(lines: &[String]) -> Option<String> {
    let start = lines
        .iter()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(lines.len());
    let m = cut(
        &lines[start..],
        TEST_MESSAGE_MAX_LINES,
        TEST_MESSAGE_MAX_BYTES,
    );
    (!m.trim().is_empty()).then_some(m)
}

/// Joins `lines` (without trailing blank lines, each without trailing
/// blanks) into at most `max_lines` lines and `max_bytes` bytes; a
/// cut message ends with a line `…`.
pub(crate) fn cut(lines: &[String], max_lines: usize, max_bytes: usize) -> String {
    const MORE: &str = "…";
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    let lines: Vec<&str> = lines[..end].iter().map(|l| l.trim_end()).collect();
    let total: usize = lines.iter().map(|l| l.len() + 1).sum();
    if lines.len() <= max_lines && total <= max_bytes + 1 {
        return lines.join("\n");
    }
    let budget = max_bytes - MORE.len() - 1;
    let mut out = String::new();
    for line in lines.iter().take(max_lines - 1) {
        let room = budget.saturating_sub(out.len());
        if line.len() < room {
            out.push_str(line);
            out.push('\n');
        } else {
            let mut cut = room;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            out.push_str(&line[..cut]);
            out.push('\n');
            break;
        }
    }
    out.push_str(MORE);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn a_message_is_trimmed_and_capped() {
        assert_eq!(
            capped(&lines("\n\nAssertionError: 3 != 4  \n\n")).as_deref(),
            Some("AssertionError: 3 != 4")
        );
        assert_eq!(capped(&lines(" \n\t\n")), None);
        let flood: Vec<String> = (0..10_000).map(|i| format!("frame {i}")).collect();
        let m = capped(&flood).unwrap();
        assert!(m.len() <= TEST_MESSAGE_MAX_BYTES, "{}", m.len());
        assert_eq!(m.lines().count(), TEST_MESSAGE_MAX_LINES);
        assert!(m.ends_with("frame 38\n…"), "{m}");
        let wide = capped(&["x".repeat(1 << 20)]).unwrap();
        assert!(wide.len() <= TEST_MESSAGE_MAX_BYTES);
        assert!(wide.ends_with('…'));
    }
}
