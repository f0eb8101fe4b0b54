//! Text that someone else wrote, made fit for a terminal: a run's log,
//! an agent's patch, a session file quoted by an error, a bundle's names.
//! Its escape sequences would reach the reader's terminal (a title set,
//! the clipboard written, a line erased, a finding hidden).

/// `text` without terminal escapes (CSI sequences such as colours, OSC
/// sequences such as titles and links, and two-byte escapes) or other
/// control characters but newlines and tabs: a reason read in a file, a
/// browser or a terminal, where a raw escape is noise or a way to hide text.
pub(crate) fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ST (ESC \\).
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            chars.next_if_eq(&'\\');
                            break;
                        }
                    }
                }
                _ => {}
            },
            // The C1 CSI, and every other control character.
            '\u{9b}' => {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            '\n' | '\t' => out.push(c),
            '\r' => {}
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` with every control character but a newline, a tab and the `\r`
/// of a `\r\n` made `?` (as many as its bytes: every offset into the
/// text stays where it was). An error shows a file someone else wrote,
/// and its escapes would reach the reader's terminal: a title set, a line
/// erased, a finding hidden.
pub(crate) fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let kept = match c {
            '\n' | '\t' => true,
            '\r' => chars.peek() == Some(&'\n'),
            c => !c.is_control(),
        };
        if kept {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('?', c.len_utf8()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_are_stripped_from_reasons() {
        let raw = "\u{1b}[1;31mError:\u{1b}[0m step 3\r\n\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{7}\u{9b}2Kdone\u{7}";
        assert_eq!(clean(raw), "Error: step 3\nlinkdone");
    }

    /// Every control character but a newline, a tab and a `\r\n`'s `\r`
    /// becomes as many `?` as its bytes: offsets into the text stay put.
    #[test]
    fn printable_keeps_every_offset() {
        let text = "a\u{1b}[2Kb\r\nc\rd\u{9b}e\tf\u{7}\n";
        let shown = printable(text);
        assert_eq!(shown, "a?[2Kb\r\nc?d??e\tf?\n");
        assert_eq!(shown.len(), text.len());
        let at = text.find('e').unwrap();
        assert_eq!(&shown[at..=at], "e");
    }
}
