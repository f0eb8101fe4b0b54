//! Byte positions inside JSON text, for diagnostics. serde_json reports
//! line/column only and no value spans, so this module turns line/column into
//! byte offsets and finds the keys and values of a top-level object by a small
//! scan. The scan is only trusted on text serde_json has already accepted as
//! JSON; on anything else it answers `None`.

use std::ops::Range;

/// The top-level object of a JSON document: its span and each key's spans.
#[derive(Debug, Default)]
pub(crate) struct ObjectSpans {
    /// From `{` to `}` inclusive.
    pub(crate) object: Range<usize>,
    /// (key, span of its value), in file order.
    pub(crate) members: Vec<(String, Range<usize>)>,
}

impl ObjectSpans {
    /// The span of `key`'s value (of the last one, should the key repeat).
    pub(crate) fn value(&self, key: &str) -> Option<Range<usize>> {
        self.members
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }
}

/// Scans the object that starts `text` (after whitespace).
pub(crate) fn object_spans(text: &str) -> Option<ObjectSpans> {
    let b = text.as_bytes();
    let start = skip_ws(b, 0);
    if b.get(start) != Some(&b'{') {
        return None;
    }
    let mut spans = ObjectSpans::default();
    let mut i = start + 1;
    loop {
        i = skip_ws(b, i);
        match b.get(i)? {
            b'}' => {
                spans.object = start..i + 1;
                return Some(spans);
            }
            b',' => i += 1,
            b'"' => {
                let key_end = skip_string(b, i)?;
                let key: String = serde_json::from_str(text.get(i..key_end)?).ok()?;
                let colon = skip_ws(b, key_end);
                if b.get(colon) != Some(&b':') {
                    return None;
                }
                let value_start = skip_ws(b, colon + 1);
                let value_end = skip_value(b, value_start)?;
                spans.members.push((key, value_start..value_end));
                i = value_end;
            }
            _ => return None,
        }
    }
}

/// The spans of the elements of the array that starts `text` (after
/// whitespace), in order.
pub(crate) fn array_spans(text: &str) -> Option<Vec<Range<usize>>> {
    let b = text.as_bytes();
    let start = skip_ws(b, 0);
    if b.get(start) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = start + 1;
    loop {
        i = skip_ws(b, i);
        match b.get(i)? {
            b']' => return Some(out),
            b',' => i += 1,
            _ => {
                let end = skip_value(b, i)?;
                out.push(i..end);
                i = end;
            }
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// `b[i]` is the opening quote; returns the index after the closing quote.
fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match b.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// Returns the index after the value starting at `b[i]`.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while let Some(c) = b.get(j) {
                if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// Byte offset of 1-based `line` and `column` (serde_json's convention: the
/// column counts bytes, and points just past the offending byte; 0 means the
/// start of the line).
pub(crate) fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        text.match_indices('\n')
            .nth(line - 2)
            .map_or(text.len(), |(i, _)| i + 1)
    };
    floor_char_boundary(text, line_start + column.saturating_sub(1))
}

/// A one-character span at `offset` (empty at the end of the text).
pub(crate) fn point(text: &str, offset: usize) -> Range<usize> {
    let offset = floor_char_boundary(text, offset);
    let len = text[offset..].chars().next().map_or(0, char::len_utf8);
    offset..offset + len
}

/// Longest line an error shows whole; longer ones are cut (a JSONL line of
/// a whole patch would fill the screen).
const SHOWN_LINE: usize = 160;
/// Bytes kept either side of the span on a cut line.
const AROUND: usize = 60;

/// `text` as an error shows it, with `span` moved to match: every line over
/// [`SHOWN_LINE`] bytes cut — the span's own line to a window around the
/// span, the others to their start — with `…` where something was left
/// out. Shorter lines are kept as they are.
pub(crate) fn excerpt(text: &str, span: Range<usize>) -> (String, Range<usize>) {
    let mut out = String::with_capacity(text.len().min(64 << 10));
    let mut moved = span.clone();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let end = start + line.len();
        let body = line.trim_end_matches('\n');
        let newline = &line[body.len()..];
        let has_span = span.start >= start && span.start <= start + body.len();
        if body.len() <= SHOWN_LINE {
            if has_span {
                moved = out.len() + (span.start - start)..out.len() + (span.end.min(end) - start);
            }
            out.push_str(line);
        } else if has_span {
            let (s, e) = (span.start - start, span.end.min(start + body.len()) - start);
            let w0 = floor_char_boundary(body, s.saturating_sub(AROUND));
            let w1 = floor_char_boundary(body, (e.max(s) + AROUND).min(body.len()));
            if w0 > 0 {
                out.push('…');
            }
            moved = out.len() + (s - w0)..out.len() + (e - w0);
            out.push_str(&body[w0..w1]);
            if w1 < body.len() {
                out.push('…');
            }
            out.push_str(newline);
        } else {
            out.push_str(&body[..floor_char_boundary(body, SHOWN_LINE)]);
            out.push('…');
            out.push_str(newline);
        }
        start = end;
    }
    if span.start >= text.len() {
        moved = out.len()..out.len();
    }
    (crate::model::shown::printable(&out), moved)
}

fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_cut_around_the_span_and_the_span_follows() {
        let long = format!("{{\"model_patch\": \"{}\", \"oops\" 1}}", "x".repeat(600));
        let text = format!("{{\"short\": 1}}\n{long}\n{}\n", "y".repeat(500));
        let at = text.find("\"oops\"").unwrap();
        let (shown, span) = excerpt(&text, at..at + 6);
        assert_eq!(&shown[span.clone()], "\"oops\"");
        assert!(shown.len() < 2 * SHOWN_LINE + 3 * AROUND, "{}", shown.len());
        assert!(shown.starts_with("{\"short\": 1}\n…"), "{shown}");
        assert!(shown.lines().nth(2).unwrap().ends_with('…'));
        // Short texts are shown as they are.
        let (same, span) = excerpt("{\"a\": 1}\n", 2..3);
        assert_eq!((same.as_str(), span), ("{\"a\": 1}\n", 2..3));
    }

    #[test]
    fn finds_top_level_keys_and_values() {
        let text = "  {\"a\": 1, \"b\": {\"x\": [1, \"}\"]}, \"c\\\"\": \"s,t\" }\n";
        let spans = object_spans(text).expect("an object");
        assert_eq!(&text[spans.object.clone()], &text[2..text.len() - 1]);
        let keys: Vec<&str> = spans.members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c\""]);
        assert_eq!(&text[spans.value("a").expect("a")], "1");
        assert_eq!(&text[spans.value("b").expect("b")], "{\"x\": [1, \"}\"]}");
        assert_eq!(&text[spans.value("c\"").expect("c")], "\"s,t\"");
        assert!(object_spans("[1]").is_none());
    }

    #[test]
    fn line_and_column_become_offsets() {
        let text = "ab\ncdé\nf";
        assert_eq!(offset_of(text, 1, 1), 0);
        assert_eq!(offset_of(text, 2, 2), 4);
        assert_eq!(offset_of(text, 3, 0), 8);
        assert_eq!(&text[point(text, 5)], "é");
        assert_eq!(point(text, 99), 9..9);
    }
}
