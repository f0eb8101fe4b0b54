//! A test file's lines as the readers lex them: string and char literals
//! and `//` comments blanked with offsets kept, identifiers, indentation,
//! and a call's top-level arguments.

pub(super) fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

pub(super) fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The characters of one line that are code: string and char literals and
/// line comments blanked (each replaced by a space, so offsets hold).
pub(super) fn code_chars(line: &str) -> impl Iterator<Item = char> + '_ {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut comment = false;
    line.chars().map(move |c| {
        if comment {
            return ' ';
        }
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            return ' ';
        }
        match c {
            '"' | '`' => {
                quote = Some(c);
                ' '
            }
            '#' => {
                comment = true;
                ' '
            }
            _ => c,
        }
    })
}

/// A Go or Rust line with string and char literals and `//` comments
/// blanked (block comments are rare in tests and left as they are).
pub(super) fn braced_code(line: &str) -> String {
    blanked(line, false)
}

/// `line` with its string literals and `//` comment blanked, byte offsets
/// kept (each blanked character becomes as many spaces as its bytes). `"…"`
/// and `` `…` `` are strings; `'…'` is one too in JavaScript (`single`),
/// else only a Rust char literal (`'{'`, not a lifetime `'a`).
pub(super) fn blanked(line: &str, single: bool) -> String {
    let mut out = String::with_capacity(line.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let chars: Vec<char> = line.chars().collect();
    let blank = |out: &mut String, c: char| out.extend(std::iter::repeat_n(' ', c.len_utf8()));
    let mut k = 0;
    while k < chars.len() {
        let c = chars[k];
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            blank(&mut out, c);
            k += 1;
            continue;
        }
        if c == '/' && chars.get(k + 1) == Some(&'/') {
            for rest in &chars[k..] {
                blank(&mut out, *rest);
            }
            break;
        }
        if !single && c == '\'' && chars.get(k + 2) == Some(&'\'') {
            for lit in &chars[k..k + 3] {
                blank(&mut out, *lit);
            }
            k += 3;
            continue;
        }
        if c == '"' || c == '`' || (single && c == '\'') {
            quote = Some(c);
            blank(&mut out, c);
        } else {
            out.push(c);
        }
        k += 1;
    }
    out
}

/// A JavaScript line with its string literals (`'…'`, `"…"`, `` `…` ``)
/// and `//` comment blanked, offsets kept.
pub(super) fn js_code(line: &str) -> String {
    blanked(line, true)
}

/// The top-level arguments of a call whose `(` ends just before `at`, as
/// byte ranges, when the call closes on this line.
pub(super) fn top_level_args(code: &str, at: usize) -> Option<Vec<(usize, usize)>> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut from = at;
    for (k, c) in code[at..].char_indices() {
        let k = at + k;
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            ')' => {
                out.push((from, k));
                return Some(out);
            }
            ',' if depth == 0 => {
                out.push((from, k));
                from = k + 1;
            }
            _ => {}
        }
    }
    None
}
