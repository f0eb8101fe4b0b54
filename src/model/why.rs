//! Why a red grade is red, at a glance: each failing test's own words (its
//! report's message: the assertion, expected/actual, the exception and its
//! first frames, read by `assay_report`'s parsers) kept with the run and
//! the grade, and the failures grouped by what they said.
//!
//! Two rules, both about what a reader can trust and afford:
//!
//! - **Capped.** The words come from the graded code, which prints what it
//!   likes. A test's message is capped by the parser
//!   ([`assay_report::TEST_MESSAGE_MAX_BYTES`]); a run keeps each distinct
//!   text once ([`Said`]), at most [`RUN_SAID_MAX_BYTES`] of them in all, so
//!   2,000 tests failing with one message cost one message, and 2,000
//!   different ones cost the cap. Tests past the cap are counted, never
//!   silently dropped.
//! - **Grouped by a normalised headline.** A message's headline is the line
//!   that says what went wrong (the exception or assertion, not a frame or
//!   runner's banner, [`headline`]); its numbers, addresses, paths and
//!   quoted values are made generic ([`normalise`]), so "1,870 tests:
//!   TypeError: match is not a function" is one group however the tests
//!   differ in ids and line numbers. Groups are ordered by size, largest
//!   first, then by their text: the same failures give the same page.
//!
//! The groups are computed where the words are kept (the run and grade
//! records), so a change to [`headline`] or [`normalise`] changes what
//! those records hold: bump the `run`, `recheck` and `grade` kinds'
//! `VERSION` with it.

use std::collections::BTreeMap;

use assay_report::Outcome;
use serde::{Deserialize, Serialize};

use crate::model::canary::{Planted, SealOutcome, SealReading, names_test, unrename};

/// The distinct messages a run (or a grade) keeps, in bytes, at most.
pub(crate) const RUN_SAID_MAX_BYTES: usize = 64 * 1024;

/// A group's label, in characters, at most.
const LABEL_MAX_CHARS: usize = 200;

/// Failing tests' words, each distinct text stored once, and every
/// failing test's group (its normalised headline), also stored once: the
/// groups stay whole when the texts reach the cap.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Said {
    /// The distinct messages, in the order of the first test (by name)
    /// that said each, [`RUN_SAID_MAX_BYTES`] in all at most.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) texts: Vec<String>,
    /// Test -> index of its message in `texts`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) of: BTreeMap<String, u32>,
    /// The distinct normalised headlines ([`normalise`] of [`headline`]),
    /// [`RUN_SAID_MAX_BYTES`] in all at most.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) groups: Vec<String>,
    /// Test -> index of its headline in `groups`: every test with words.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) group_of: BTreeMap<String, u32>,
    /// Tests whose message was left out of `texts`: the distinct messages
    /// had reached the cap (their group is kept).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) over_cap: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Distinct strings within a byte budget, each stored once.
#[derive(Default)]
struct Interned<'a> {
    index: BTreeMap<&'a str, u32>,
    bytes: usize,
}

impl<'a> Interned<'a> {
    /// The index of `text` in `all`, added if the budget allows.
    fn get(&mut self, text: &'a str, all: &mut Vec<String>) -> Option<u32> {
        if let Some(&i) = self.index.get(text) {
            return Some(i);
        }
        if self.bytes + text.len() > RUN_SAID_MAX_BYTES {
            return None;
        }
        self.bytes += text.len();
        let i = all.len() as u32;
        all.push(text.to_owned());
        self.index.insert(text, i);
        Some(i)
    }
}

impl Said {
    /// Keeps `(test, message)` pairs (in test order) within the caps.
    pub(crate) fn of<'a>(said: impl IntoIterator<Item = (&'a str, &'a str)>) -> Said {
        let pairs: Vec<(&str, &str, String)> = said
            .into_iter()
            .map(|(t, m)| (t, m, normalise(headline(m))))
            .collect();
        Said::build(pairs.iter().map(|(t, m, g)| (*t, Some(*m), g.as_str())))
    }

    /// Keeps `(test, message if kept, group)` entries within the caps.
    fn build<'a>(entries: impl IntoIterator<Item = (&'a str, Option<&'a str>, &'a str)>) -> Said {
        let mut out = Said::default();
        let (mut texts, mut groups) = (Interned::default(), Interned::default());
        for (test, text, group) in entries {
            if let Some(g) = groups.get(group, &mut out.groups) {
                out.group_of.insert(test.to_owned(), g);
            }
            match text.and_then(|t| texts.get(t, &mut out.texts)) {
                Some(i) => {
                    out.of.insert(test.to_owned(), i);
                }
                None => out.over_cap += 1,
            }
        }
        out
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.group_of.is_empty() && self.of.is_empty() && self.over_cap == 0
    }

    /// What the test `test` said, if kept.
    pub(crate) fn message(&self, test: &str) -> Option<&str> {
        let i = *self.of.get(test)?;
        self.texts.get(i as usize).map(String::as_str)
    }

    /// The group (normalised headline) of what `test` said, if it said
    /// anything.
    pub(crate) fn group(&self, test: &str) -> Option<&str> {
        let i = *self.group_of.get(test)?;
        self.groups.get(i as usize).map(String::as_str)
    }

    /// The words of `tests`, each from the first of `runs` that has them
    /// (pass the latest reading first: a rerun's words are the ones the
    /// verdict rests on), else `otherwise`'s (a unit that did not build:
    /// the compiler's), within the caps.
    pub(crate) fn of_tests(
        tests: &[String],
        runs: &[&Said],
        otherwise: impl Fn(&str) -> Option<String>,
    ) -> Said {
        let mut entries: Vec<(&str, Option<String>, String)> = Vec::new();
        for t in tests {
            if let Some(r) = runs.iter().find(|r| r.group(t).is_some()) {
                let group = r.group(t).unwrap_or_default().to_owned();
                entries.push((t, r.message(t).map(str::to_owned), group));
            } else if let Some(m) = otherwise(t) {
                let group = normalise(headline(&m));
                entries.push((t, Some(m), group));
            }
        }
        Said::build(
            entries
                .iter()
                .map(|(t, m, g)| (*t, m.as_deref(), g.as_str())),
        )
    }
}

/// Why one failing test has no words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Silent {
    /// No report named it: the runner stopped before it.
    NotRun,
    /// Its report carries no words for it (or they were over the cap).
    NoMessage,
}

impl Silent {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Silent::NotRun => "(did not run: no report named it)",
            Silent::NoMessage => "(the report gives no message)",
        }
    }
}

/// Failing tests that said the same thing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Group {
    /// The normalised headline, or why the tests said nothing.
    pub(crate) label: String,
    /// The tests, in name order.
    pub(crate) tests: Vec<String>,
}

/// Groups `failing` by the normalised headline of what each said; a test
/// with no words is grouped by why ([`Silent`], from `silent`). Largest
/// group first, then by label.
pub(crate) fn group(
    failing: &[String],
    said: &Said,
    silent: impl Fn(&str) -> Silent,
) -> Vec<Group> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for t in failing {
        let label = match said.group(t) {
            Some(g) => g.to_owned(),
            None => silent(t).label().to_owned(),
        };
        groups.entry(label).or_default().push(t.clone());
    }
    let mut out: Vec<Group> = groups
        .into_iter()
        .map(|(label, mut tests)| {
            tests.sort();
            Group { label, tests }
        })
        .collect();
    out.sort_by(|a, b| {
        b.tests
            .len()
            .cmp(&a.tests.len())
            .then(a.label.cmp(&b.label))
    });
    out
}

/// The line of a message that says what went wrong: pytest's first `E`
/// line, else the first line that is not a frame, a runner's banner or a
/// panic's location (`thread '…' panicked at …:`, `Traceback (most recent
/// call last):`, `at …`, `File "…"`, `=== RUN`). The whole first line when
/// every line is one of those.
pub(crate) fn headline(message: &str) -> &str {
    let lines = || message.lines().map(str::trim).filter(|l| !l.is_empty());
    if let Some(e) = lines().find_map(|l| l.strip_prefix("E ")) {
        return e.trim();
    }
    let frame = |l: &str| {
        (l.starts_with("thread '") && l.contains("panicked at"))
            || l.starts_with("Traceback (")
            || l.starts_with("at ")
            || l.starts_with("File \"")
            || l.starts_with('>')
            || l == "---"
            || l == "..."
            || l.starts_with("===")
    };
    lines()
        .find(|l| !frame(l))
        .or_else(|| lines().next())
        .unwrap_or("")
}

/// A headline with what varies from test to test made generic: quoted
/// values (`'…'`, `"…"`, `` `…` ``) as `'…'`, paths (with their
/// `:line:col`) as `<path>`, hexadecimal addresses as `0x…`, numbers as
/// `N`; runs of blanks as one space; cut at [`LABEL_MAX_CHARS`].
pub(crate) fn normalise(headline: &str) -> String {
    let mut out = String::with_capacity(headline.len());
    for word in headline.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&generic_word(word));
    }
    let out = unquote(&out);
    match out.char_indices().nth(LABEL_MAX_CHARS) {
        Some((i, _)) => format!("{}…", &out[..i]),
        None => out,
    }
}

/// One blank-separated word made generic: a path or an address whole,
/// else its digit runs.
fn generic_word(word: &str) -> String {
    let core = word.trim_matches(|c: char| "()[]{},;".contains(c));
    let (lead, trail) = word.split_at(word.find(core).unwrap_or(0));
    let trail = &trail[core.len()..];
    // A file's path (`./x.go:12:5`, `/srv/app/user.py:120`, `src/lib.rs`),
    // not an import path or a module (`example.com/gocalc` names the unit).
    let file = core.split(':').next().unwrap_or(core);
    let is_path = ["/", "./", "../", "~/"].iter().any(|p| core.starts_with(p))
        && core.chars().any(|c| c.is_alphanumeric());
    let is_file = file
        .rsplit('/')
        .next()
        .and_then(|f| f.rsplit_once('.'))
        .is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && !ext.is_empty()
                && ext.len() <= 5
                && ext.bytes().all(|b| b.is_ascii_alphanumeric())
                && ext.bytes().any(|b| b.is_ascii_alphabetic())
                && (file.contains('/') || KNOWN_EXTENSIONS.contains(&ext))
        });
    if is_path || is_file {
        return format!("{lead}<path>{}", trail_of(core, trail));
    }
    if let Some(hex) = core.strip_prefix("0x")
        && !hex.is_empty()
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return format!("{lead}0x…{trail}");
    }
    let mut out = String::with_capacity(word.len());
    let mut in_number = false;
    for c in word.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
        } else {
            out.push(c);
        }
        in_number = c.is_ascii_digit();
    }
    collapse_numbers(&out)
}

/// Source files' extensions: a word ending in one is a file even without
/// a directory (`calc_test.go:21:`).
const KNOWN_EXTENSIONS: [&str; 15] = [
    "py", "go", "rs", "js", "ts", "mjs", "cjs", "jsx", "tsx", "java", "rb", "c", "h", "cc", "cpp",
];

/// A path's trailing `:` (as in `at x.go:12:` before a message) kept.
fn trail_of(core: &str, trail: &str) -> String {
    let colon = if core.ends_with(':') { ":" } else { "" };
    format!("{colon}{trail}")
}

/// `N.N` and `N,N` (decimals, thousands) as one `N`.
fn collapse_numbers(s: &str) -> String {
    let mut out = s.to_owned();
    for sep in [".", ","] {
        let pair = format!("N{sep}N");
        while out.contains(&pair) {
            out = out.replace(&pair, "N");
        }
    }
    out
}

/// Quoted values as `'…'`: a quote opened by `'`, `"` or `` ` `` at the
/// start of a word (or after `(`, `[`, `=`, `:`) and closed by the same
/// character before a word's end. An apostrophe inside a word (`don't`)
/// opens nothing.
fn unquote(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let opens = matches!(c, '\'' | '"' | '`')
            && (i == 0 || matches!(chars[i - 1], ' ' | '(' | '[' | '=' | ':' | '{' | ','));
        if opens && let Some(len) = chars[i + 1..].iter().position(|&d| d == c) {
            let after = chars.get(i + 1 + len + 1).copied();
            if after.is_none_or(|a| !a.is_alphanumeric()) {
                out.push_str("'…'");
                i += len + 2;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// A reading's words ([`Said`]) as its
/// outcomes are after [`read`](crate::model::canary::read): the canaries' left out, renamed tests (and
/// their fresh names in any text) under their declared names.
pub(crate) fn said_without_canaries(planted: &Planted, said: &Said) -> Said {
    let pairs: Vec<(String, String)> = said
        .of
        .keys()
        .filter(|id| !planted.canaries.iter().any(|c| names_test(id, &c.name)))
        .filter_map(|id| {
            let text = said.message(id)?;
            let id = unrename(id, &planted.renamed).unwrap_or_else(|| id.clone());
            let text = unrename(text, &planted.renamed).unwrap_or_else(|| text.to_owned());
            Some((id, text))
        })
        .collect();
    Said::of(pairs.iter().map(|(t, m)| (t.as_str(), m.as_str())))
}

/// [`said_without_canaries`] with the words of each test its seals failed (docs/security.md,
/// "Sealed expectations"): the runner passed it, so the report holds none.
pub(crate) fn said_with_seals(
    said: &Said,
    seals: &[SealReading],
    tests: &BTreeMap<String, Outcome>,
) -> Said {
    if seals.is_empty() {
        return said.clone();
    }
    let mut pairs: Vec<(String, String)> = said
        .of
        .keys()
        .filter_map(|id| Some((id.clone(), said.message(id)?.to_owned())))
        .collect();
    for r in seals.iter().filter(|r| !r.test.is_empty()) {
        let words = match r.outcome {
            SealOutcome::Mismatched => format!(
                "sealed assertion (line {} of the test): expected {}, got {}",
                r.line + 1,
                r.expected,
                r.got.join(", ")
            ),
            SealOutcome::Missing => format!(
                "sealed assertion (line {} of the test): passed without handing over its value",
                r.line + 1
            ),
            SealOutcome::Malformed => format!(
                "sealed assertion (line {} of the test): a value assay cannot read ({})",
                r.line + 1,
                r.got.join(", ")
            ),
            SealOutcome::Matched => continue,
        };
        for id in tests.keys().filter(|id| names_test(id, &r.test)) {
            if !pairs.iter().any(|(t, _)| t == id) {
                pairs.push((id.clone(), words.clone()));
            }
        }
    }
    Said::of(pairs.iter().map(|(t, m)| (t.as_str(), m.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("t{i:05}")).collect()
    }

    #[test]
    fn one_message_for_two_thousand_tests_is_kept_once() {
        let tests = names(2000);
        let said = Said::of(
            tests
                .iter()
                .map(|t| (t.as_str(), "TypeError: match is not a function")),
        );
        assert_eq!(said.texts.len(), 1);
        assert_eq!(said.of.len(), 2000);
        assert_eq!(said.over_cap, 0);
        assert_eq!(
            said.message("t01999"),
            Some("TypeError: match is not a function")
        );
    }

    #[test]
    fn distinct_messages_stop_at_the_cap_and_are_counted() {
        let tests = names(2000);
        let texts: Vec<String> = tests
            .iter()
            .map(|t| format!("{t}: {}", "x".repeat(100)))
            .collect();
        let said = Said::of(
            tests
                .iter()
                .zip(&texts)
                .map(|(t, m)| (t.as_str(), m.as_str())),
        );
        let bytes: usize = said.texts.iter().map(String::len).sum();
        assert!(bytes <= RUN_SAID_MAX_BYTES, "{bytes}");
        assert_eq!(said.of.len() as u64 + said.over_cap, 2000);
        assert!(said.over_cap > 0);
        // Every test keeps its group.
        assert_eq!(said.group_of.len(), 2000);
        assert_eq!(said.groups, [format!("tN: {}", "x".repeat(100))]);
        // The serialized form stays small.
        let json = serde_json::to_string(&said).unwrap();
        assert!(
            json.len() < RUN_SAID_MAX_BYTES + 2000 * 20,
            "{}",
            json.len()
        );
    }

    #[test]
    fn a_grade_takes_the_latest_readings_words() {
        let first = Said::of([("a", "first words"), ("b", "b's words")]);
        let rerun = Said::of([("a", "rerun words")]);
        let failing = vec!["a".to_owned(), "b".to_owned(), "c".to_owned()];
        let g = Said::of_tests(&failing, &[&rerun, &first], |_| None);
        assert_eq!(g.message("a"), Some("rerun words"));
        assert_eq!(g.message("b"), Some("b's words"));
        assert_eq!(g.message("c"), None);
        let unbuilt =
            |t: &str| (t == "c").then(|| "calc does not build: x.go:1:1: oops".to_owned());
        let g = Said::of_tests(&failing, &[&rerun, &first], unbuilt);
        assert_eq!(g.message("c"), Some("calc does not build: x.go:1:1: oops"));
        assert_eq!(g.message("a"), Some("rerun words"));
        assert!(Said::default().is_empty());
        assert_eq!(serde_json::to_string(&Said::default()).unwrap(), "{}");
    }

    #[test]
    fn headlines_say_what_went_wrong() {
        for (message, want) in [
            (
                ">       assert 3 - 1 == 1\nE       assert (3 - 1) == 1\ntests/t.py:9: AssertionError",
                "assert (3 - 1) == 1",
            ),
            (
                "thread 'tests::x' (10136) panicked at src/lib.rs:22:9:\nassertion `left == right` failed\n  left: 4",
                "assertion `left == right` failed",
            ),
            (
                "TypeError: match is not a function\n    at Context.<anonymous> (test/a.js:4:36)",
                "TypeError: match is not a function",
            ),
            (
                "AssertionError: 3.5 != 3\nTraceback (most recent call last):",
                "AssertionError: 3.5 != 3",
            ),
            (
                "  ---\n  message: 'expected 3'\n  ...",
                "message: 'expected 3'",
            ),
            (
                "    calc_test.go:21: expected error, got 0",
                "calc_test.go:21: expected error, got 0",
            ),
            (
                "Traceback (most recent call last):",
                "Traceback (most recent call last):",
            ),
        ] {
            assert_eq!(headline(message), want, "{message}");
        }
    }

    #[test]
    fn normalising_makes_what_varies_generic() {
        for (headline, want) in [
            (
                "TypeError: match is not a function",
                "TypeError: match is not a function",
            ),
            ("AssertionError: 3.5 != 3", "AssertionError: N != N"),
            ("expected 1,870 got 12", "expected N got N"),
            (
                "calc_test.go:21: expected error, got 0",
                "<path>: expected error, got N",
            ),
            (
                "KeyError: 'user_42' at /srv/app/models/user.py:120",
                "KeyError: '…' at <path>",
            ),
            (
                "object at 0x7fbcfe7aad90 is not \"ready\"",
                "object at 0x… is not '…'",
            ),
            ("can't parse `1 + 2`", "can't parse '…'"),
            (
                "example.com/gocalc does not build: ./stats.go:15:13: too many return values",
                "example.com/gocalc does not build: <path>: too many return values",
            ),
            ("at test/a.spec.js:4:36", "at <path>"),
            ("expected 1/2 got 3/4", "expected N/N got N/N"),
            ("src/lib.rs:22:9:", "<path>:"),
            ("  lots   of\tblanks  ", "lots of blanks"),
        ] {
            assert_eq!(normalise(headline), want, "{headline}");
        }
        let long = "x".repeat(1000);
        assert_eq!(normalise(&long).chars().count(), LABEL_MAX_CHARS + 1);
    }

    #[test]
    fn two_thousand_failures_make_a_few_groups_largest_first() {
        let tests = names(2000);
        let texts: Vec<String> = tests
            .iter()
            .enumerate()
            .map(|(i, t)| match i % 100 {
                0 => format!(
                    "AssertionError: expected {i} to equal {}\n    at {t} (test/x.js:{i}:5)",
                    i + 1
                ),
                _ => format!("TypeError: match is not a function\n    at {t} (test/x.js:{i}:5)"),
            })
            .collect();
        // The last ten said nothing: one did not run, nine gave no message.
        let said = Said::of(
            tests
                .iter()
                .zip(&texts)
                .take(1990)
                .map(|(t, m)| (t.as_str(), m.as_str())),
        );
        // Each stack differs: the texts reach the cap, the groups do not.
        assert!(said.over_cap > 0);
        let silent = |t: &str| {
            if t == "t01999" {
                Silent::NotRun
            } else {
                Silent::NoMessage
            }
        };
        let groups = group(&tests, &said, silent);
        let summary: Vec<(usize, &str)> = groups
            .iter()
            .map(|g| (g.tests.len(), g.label.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                (1970, "TypeError: match is not a function"),
                (20, "AssertionError: expected N to equal N"),
                (9, Silent::NoMessage.label()),
                (1, Silent::NotRun.label()),
            ]
        );
        assert_eq!(groups[0].tests[0], "t00001");
    }
}
