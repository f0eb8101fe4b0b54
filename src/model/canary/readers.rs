//! The test functions of a file, a reader per language: Python `def test…`
//! (in a class or at module level), Go and Rust braced functions, and
//! JavaScript `it(`/`test(` calls.

use super::block::Block;
use super::lex::{braced_code, code_chars, indent, is_ident, js_code};
use super::shape::Lang;

/// Python: `def test…` at module level or as a method of a class at module
/// level, its decorators with it; the body is every following line that is
/// blank or indented deeper.
pub(super) fn python(lines: &[&str]) -> Vec<Block> {
    let mut out = Vec::new();
    // (indent, name, line) of the class being read.
    let mut class: Option<(usize, String, usize)> = None;
    // The first line of the decorators above the next def, and the open
    // brackets of a decorator that spans lines.
    let mut decorated: Option<usize> = None;
    let mut depth: i32 = 0;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            i += 1;
            continue;
        }
        let ind = indent(line);
        if depth > 0 {
            depth += bracket_depth(t);
            i += 1;
            continue;
        }
        if let Some((ci, ..)) = &class
            && ind <= *ci
        {
            class = None;
        }
        if ind == 0
            && let Some(rest) = t.strip_prefix("class ")
        {
            let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            class = Some((0, name, i));
            decorated = None;
            i += 1;
            continue;
        }
        if t.starts_with('@') {
            decorated.get_or_insert(i);
            depth = bracket_depth(t).max(0);
            i += 1;
            continue;
        }
        let def = t
            .strip_prefix("def ")
            .or_else(|| t.strip_prefix("async def "));
        let at_level = match &class {
            None => ind == 0,
            Some((ci, ..)) => ind > *ci && class_body_indent(lines, class.as_ref()) == Some(ind),
        };
        let start = decorated.take().unwrap_or(i);
        match def {
            Some(rest) if rest.starts_with("test") && at_level => {
                let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
                let name_col = line.len() - rest.len();
                // The signature may span lines: the body starts after its `:`.
                let mut j = i;
                let mut d = bracket_depth(t);
                while d > 0 && j + 1 < lines.len() {
                    j += 1;
                    d += bracket_depth(lines[j]);
                }
                let mut end = j + 1;
                let mut k = j + 1;
                while k < lines.len() {
                    let l = lines[k];
                    if l.trim().is_empty() {
                        k += 1;
                        continue;
                    }
                    if indent(l) <= ind {
                        break;
                    }
                    k += 1;
                    end = k;
                }
                let (container, class_name) = match &class {
                    Some((_, n, at)) => (*at, Some(n.clone())),
                    None => (0, None),
                };
                out.push(Block {
                    name,
                    class: class_name,
                    container,
                    start,
                    end,
                    def_line: i,
                    name_col,
                    sites: Vec::new(),
                    seals: Vec::new(),
                    windows: Vec::new(),
                });
                i = end.max(i + 1);
            }
            _ => i += 1,
        }
    }
    out
}

/// The indentation of the first statement of the class at `class`.
fn class_body_indent(lines: &[&str], class: Option<&(usize, String, usize)>) -> Option<usize> {
    let (ci, _, at) = class?;
    lines[at + 1..]
        .iter()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| indent(l))
        .filter(|i| i > ci)
}

/// Open minus closed brackets of a line of code, strings and comments
/// left out.
fn bracket_depth(line: &str) -> i32 {
    let mut d = 0;
    for c in code_chars(line) {
        match c {
            '(' | '[' | '{' => d += 1,
            ')' | ']' | '}' => d -= 1,
            _ => {}
        }
    }
    d
}

/// Go and Rust: a test function from its attributes (Rust: `#[test]`
/// among them) or `func Test…(t *testing.T)` (Go) to its matching brace.
pub(super) fn braced(lines: &[&str], lang: Lang) -> Vec<Block> {
    let mut out = Vec::new();
    // Rust: the modules open at each depth, to tell containers apart.
    let mut depth: i32 = 0;
    let mut modules: Vec<(i32, usize)> = Vec::new();
    let mut attrs: Option<(usize, bool)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim_start();
        let code: String = braced_code(line);
        if lang == Lang::Rust && t.starts_with("#[") {
            let start = attrs.map_or(i, |(s, _)| s);
            let is_test = attrs.is_some_and(|(_, t)| t) || is_test_attr(t);
            let ignored = t.starts_with("#[should_panic") || t.starts_with("#[ignore");
            attrs = Some((
                start,
                is_test && !ignored && !attrs_ignored(lines, start, i),
            ));
            depth += brace_delta(&code);
            i += 1;
            continue;
        }
        let found = match lang {
            Lang::Go => t
                .strip_prefix("func Test")
                .filter(|rest| rest.contains("*testing.T") && indent(line) == 0)
                .map(|rest| {
                    (
                        format!("Test{}", leading_ident(rest)),
                        line.len() - rest.len() - 4,
                    )
                }),
            _ => match attrs {
                Some((_, true)) => rust_fn_name(line),
                _ => None,
            },
        };
        let start = attrs.take().map_or(i, |(s, _)| s);
        if let Some((name, name_col)) = found.filter(|(n, _)| !n.is_empty() && n != "TestMain") {
            // The function runs to the brace that closes its first `{`.
            let mut d = 0;
            let mut opened = false;
            let mut j = i;
            'scan: while j < lines.len() {
                for c in braced_code(lines[j]).chars() {
                    match c {
                        '{' => {
                            d += 1;
                            opened = true;
                        }
                        '}' => {
                            d -= 1;
                            if opened && d == 0 {
                                break 'scan;
                            }
                        }
                        _ => {}
                    }
                }
                j += 1;
            }
            if j >= lines.len() {
                break;
            }
            let container = modules.last().map_or(0, |(_, at)| *at);
            out.push(Block {
                name,
                class: None,
                container,
                start,
                end: j + 1,
                def_line: i,
                name_col,
                sites: Vec::new(),
                seals: Vec::new(),
                windows: Vec::new(),
            });
            i = j + 1;
            continue;
        }
        let c = code.trim_start();
        if lang == Lang::Rust
            && (c.starts_with("mod ") || c.starts_with("pub mod ") || c.contains(" mod "))
        {
            modules.push((depth, i));
        }
        depth += brace_delta(&code);
        while modules.last().is_some_and(|(d, _)| *d >= depth) {
            modules.pop();
        }
        i += 1;
    }
    out
}

fn is_test_attr(t: &str) -> bool {
    let t: String = t.chars().filter(|c| !c.is_whitespace()).collect();
    t.starts_with("#[test]") || t.starts_with("#[tokio::test") || t.contains("::test]")
}

/// Whether an attribute between `start` and `at` ignores the test or
/// expects a panic (a mutant of it would pass).
fn attrs_ignored(lines: &[&str], start: usize, at: usize) -> bool {
    lines[start..at]
        .iter()
        .any(|l| l.contains("should_panic") || l.contains("#[ignore"))
}

/// `fn name(` on a line (after `pub`, `async`, …): the name and its offset.
fn rust_fn_name(line: &str) -> Option<(String, usize)> {
    let at = line.find("fn ")?;
    if at > 0 && is_ident(line[..at].chars().next_back()?) {
        return None;
    }
    let rest = &line[at + 3..];
    let name = leading_ident(rest);
    Some((name.to_owned(), at + 3))
}

fn leading_ident(s: &str) -> &str {
    let end = s.find(|c: char| !is_ident(c)).unwrap_or(s.len());
    &s[..end]
}

fn brace_delta(code: &str) -> i32 {
    code.chars()
        .map(|c| match c {
            '{' => 1,
            '}' => -1,
            _ => 0,
        })
        .sum()
}

/// JavaScript: each `it('title', …)` or `test('title', …)` call that starts
/// a line, to the line where its parentheses close; its name is its title
/// (a plain string: no escape, no `${`), its container the innermost
/// `describe(` around it.
pub(super) fn js(lines: &[&str]) -> Vec<Block> {
    let mut out = Vec::new();
    let mut depth: i32 = 0;
    // (line, depth before it) of each open describe.
    let mut describes: Vec<(usize, i32)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim_start();
        let code = js_code(line);
        let call = t.strip_prefix("it(").or_else(|| t.strip_prefix("test("));
        if let Some((name, name_col)) = call.and_then(|rest| js_title(line, rest)) {
            // The call runs to the line where its parentheses close.
            let mut d = 0;
            let mut j = i;
            'scan: while j < lines.len() {
                for c in js_code(lines[j]).chars() {
                    match c {
                        '(' => d += 1,
                        ')' => {
                            d -= 1;
                            if d == 0 {
                                break 'scan;
                            }
                        }
                        _ => {}
                    }
                }
                j += 1;
            }
            if j >= lines.len() {
                break;
            }
            out.push(Block {
                name,
                class: None,
                container: describes.last().map_or(0, |(at, _)| *at),
                start: i,
                end: j + 1,
                def_line: i,
                name_col,
                sites: Vec::new(),
                seals: Vec::new(),
                windows: Vec::new(),
            });
            i = j + 1;
            continue;
        }
        if t.starts_with("describe(") {
            describes.push((i, depth));
        }
        depth += code
            .chars()
            .map(|c| match c {
                '(' | '{' | '[' => 1,
                ')' | '}' | ']' => -1,
                _ => 0,
            })
            .sum::<i32>();
        while describes.last().is_some_and(|(_, d)| *d >= depth) {
            describes.pop();
        }
        i += 1;
    }
    out
}

/// The title a test call opens with (`rest`: the line after `it(`), and
/// its byte offset in `line`.
fn js_title(line: &str, rest: &str) -> Option<(String, usize)> {
    let q = rest
        .chars()
        .next()
        .filter(|c| matches!(c, '\'' | '"' | '`'))?;
    let body = &rest[1..];
    let end = body.find(q)?;
    let title = &body[..end];
    let plain = !title.is_empty() && !title.contains('\\') && !title.contains("${");
    plain.then(|| (title.to_owned(), line.len() - body.len()))
}
