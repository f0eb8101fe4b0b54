//! Canaries made of the hidden test files' own tests (docs/security.md,
//! "Canaries"): a must-pass canary is a real test under a fresh name; a
//! must-fail canary is a real test whose expected integer is changed, one
//! of a window of values around the right one. Telling them from the real
//! tests takes the right answer: their bodies are the file's own.
//!
//! Two plantings, over the same reader ([`super::source`]):
//!
//! - **Certification** (once per candidate, at screening, over the gold
//!   tree): every test renamed, copied once and mutated at up to
//!   [`SITES`] sites, [`WINDOW`] values a site. [`certified`] keeps the
//!   copies that passed and the mutants that failed while their original
//!   passed, and the files whose renamed tests kept their outcomes.
//! - **A graded run** (fresh randomness each run): the file's tests
//!   renamed, and for each FAIL_TO_PASS test with certified mutants, one
//!   site's whole window, its original among them under a fresh name too;
//!   one mutant of a few PASS_TO_PASS tests; copies of tests with no
//!   mutant in the run. All placed among the tests of the original's
//!   class or module, at random positions.
//!
//! A test's copy and its mutants are never planted together (the copy's
//! value, written twice, would name the right one), nor two sites of one
//! test (the value shared by both windows would).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::reading::{Canary, Must};
use super::seal::{self, Seal, Sealed};
use super::shape::{Lang, Rng, words_of};
pub(crate) use super::source::TestRef;
use super::source::{Also, Block, SealSite};

/// Values in a site's window besides the right one: a forger that cannot
/// tell the right value guesses one of `WINDOW + 1`.
pub(crate) const WINDOW: i64 = 15;
/// Sites of a test mutated at certification.
pub(crate) const SITES: usize = 2;
/// The most mutants certification plants in one file.
pub(super) const CERTIFY_CAP: usize = 600;
/// The most canaries a graded run plants (their cost bounds the run's).
pub(crate) const RUN_CAP: usize = 80;
/// PASS_TO_PASS tests a graded run mutates once each.
const P2P_MUTANTS: usize = 4;
/// Copies of real tests a graded run plants.
const COPIES: usize = 2;

/// A certified mutant: `test` with the literal `from` at `line` (counted
/// from the test's first line) and byte `col` replaced by `to`; it failed
/// at gold while `test` passed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Mutant {
    pub(crate) of: TestRef,
    pub(crate) line: u32,
    pub(crate) col: u32,
    pub(crate) from: String,
    pub(crate) to: String,
    /// Whether `of` is a FAIL_TO_PASS test of the task (set by the task).
    #[serde(default)]
    pub(crate) fail_to_pass: bool,
    /// The other places of the test that write the value, changed with it
    /// (its messages, comments, other expected places: [`super::source`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) also: Vec<Change>,
}

/// One more change a mutant makes: `from` at `line` (counted from the
/// test's first line) and byte `col` becomes `to`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Change {
    pub(crate) line: u32,
    pub(crate) col: u32,
    pub(crate) from: String,
    pub(crate) to: String,
}

impl Change {
    /// The changes that write `to` wherever the site's value is written
    /// again (`also`): its literal whole, or its body inside a message or
    /// comment.
    pub(super) fn of(also: &[Also], to: &str) -> Vec<Change> {
        let inner = |s: &str| s.get(1..s.len().saturating_sub(1)).unwrap_or("").to_owned();
        also.iter()
            .map(|a| Change {
                line: a.line as u32,
                col: a.col as u32,
                from: a.text.clone(),
                to: if a.body { inner(to) } else { to.to_owned() },
            })
            .collect()
    }
}

impl Mutant {
    fn site(&self) -> (u32, u32) {
        (self.line, self.col)
    }

    /// The lines of its test it changes.
    fn lines(&self) -> Vec<usize> {
        std::iter::once(self.line)
            .chain(self.also.iter().map(|c| c.line))
            .map(|l| l as usize)
            .collect()
    }
}

/// What certification gives a task's graded runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Certified {
    pub(crate) mutants: Vec<Mutant>,
    /// Real tests a run may copy as must-pass canaries.
    pub(crate) copies: Vec<TestRef>,
    /// Files whose tests keep their outcomes when renamed: a run renames
    /// them all.
    pub(crate) renamed: Vec<String>,
    /// Sealed assertions ([`super::seal`]): their expected values never
    /// enter a graded tree. Left out when none, so a record without one
    /// keeps its bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) seals: Vec<Seal>,
}

/// One canary as certification planted it, before its outcome is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Trial {
    pub(crate) name: String,
    pub(crate) of: TestRef,
    /// `None`: a copy.
    pub(crate) mutant: Option<Mutant>,
}

/// A file's new text and what was planted in it.
pub(crate) struct Rewritten {
    pub(crate) text: String,
    pub(crate) canaries: Vec<Canary>,
    /// Fresh name -> declared name of each renamed test.
    pub(crate) renamed: BTreeMap<String, String>,
    pub(crate) trials: Vec<Trial>,
    /// log2 of the guesses a forger needs for this file's FAIL_TO_PASS
    /// tests (`log2(window + 1)` each).
    pub(crate) bits: f64,
    /// The seals planted, each with the test it is of.
    pub(crate) sealed: Vec<(Sealed, TestRef)>,
    /// A test's name as the run declares it (fresh where renamed) -> the
    /// names of its canaries in this run: a command that names the test
    /// names them too.
    pub(crate) kin: BTreeMap<String, Vec<String>>,
}

/// Fresh names for one file: built of the words of its own test names,
/// never a name of the file, of the files beside it, or given before.
pub(crate) struct Names<'a> {
    lang: Lang,
    words: Vec<String>,
    text: &'a str,
    beside: &'a str,
    given: BTreeSet<String>,
}

impl<'a> Names<'a> {
    pub(crate) fn new(lang: Lang, blocks: &[Block], text: &'a str, beside: &'a str) -> Names<'a> {
        let names: Vec<String> = blocks.iter().map(|b| b.name.clone()).collect();
        Names {
            lang,
            words: words_of(&names),
            text,
            beside,
            given: BTreeSet::new(),
        }
    }

    pub(crate) fn fresh(&mut self, rng: &mut Rng) -> String {
        for tries in 0.. {
            let mut words = rng.pick_words(&self.words);
            // A crowded file: longer names.
            for _ in 0..tries / 64 {
                let extra = rng.pick_words(&self.words);
                words.extend(extra.into_iter().take(1));
            }
            let name = self.lang.name(&words);
            if !self.text.contains(&name)
                && !self.beside.contains(&name)
                && self.given.insert(name.clone())
            {
                return name;
            }
        }
        unreachable!("the loop returns")
    }
}

/// A canary or a renamed original to write: its source lines and where.
pub(super) struct Insert {
    /// Insert before this line (the file's line count: at the end of the
    /// container's last test).
    before: usize,
    lines: Vec<String>,
}

/// The test's lines with `mutant`'s literal changed, its sealed sites
/// sealed (`seal`, over the block's own offsets), renamed to `name`.
fn copy_of(
    lines: &[&str],
    b: &Block,
    name: &str,
    mutant: Option<&Mutant>,
    seal: &mut dyn FnMut(&mut [String], &[usize]),
) -> Option<Vec<String>> {
    let mut out: Vec<String> = lines[b.start..b.end]
        .iter()
        .map(|l| (*l).to_owned())
        .collect();
    if let Some(m) = mutant {
        let site = Change {
            line: m.line,
            col: m.col,
            from: m.from.clone(),
            to: m.to.clone(),
        };
        // Right to left on each line, so the offsets of the others hold.
        let mut changes: Vec<&Change> = m.also.iter().chain([&site]).collect();
        changes.sort_by_key(|c| std::cmp::Reverse((c.line, c.col)));
        for c in changes {
            let line = out.get_mut(c.line as usize)?;
            let (col, len) = (c.col as usize, c.from.len());
            (line.get(col..col + len)? == c.from).then_some(())?;
            line.replace_range(col..col + len, &c.to);
        }
    }
    let touched: Vec<usize> = mutant.map_or_else(Vec::new, Mutant::lines);
    seal(&mut out, &touched);
    let def = b.def_line - b.start;
    out[def] = renamed_line(&out[def], b, name);
    Some(out)
}

/// What sealing a file's tests needs: its language and path, the sites
/// to seal by block, and the seals planted so far.
pub(crate) struct Sealing<'a> {
    pub(crate) lang: Lang,
    pub(crate) path: &'a str,
    pub(crate) sites: BTreeMap<usize, Vec<&'a SealSite>>,
    pub(crate) planted: Vec<(Sealed, TestRef)>,
}

impl Sealing<'_> {
    /// `body` (the lines of block `k`, from its start, not yet renamed)
    /// with its sealed sites sealed under fresh tokens, for the test
    /// reported as `report`; a site on `skip` (a mutant's line, whose
    /// offsets moved) is left as it is.
    fn seal(
        &mut self,
        k: usize,
        b: &Block,
        body: &mut [String],
        skip: &[usize],
        report: &str,
        rng: &mut Rng,
    ) {
        let Some(sites) = self.sites.get(&k) else {
            return;
        };
        let mut edits = Vec::new();
        for site in sites {
            let lines_touched = || std::iter::once(site.line).chain(site.scrub.iter().map(|s| s.0));
            if lines_touched().any(|t| skip.contains(&t)) {
                continue;
            }
            let Some(line) = body.get(site.line) else {
                continue;
            };
            let token = seal::token(rng);
            edits.extend(seal::site_edits(self.lang, line, site, &token));
            self.planted.push((
                Sealed {
                    token,
                    file: self.path.to_owned(),
                    test: report.to_owned(),
                    line: site.line as u32,
                    col: site.expected.0 as u32,
                    expected: site.text.clone(),
                },
                TestRef {
                    file: self.path.to_owned(),
                    class: b.class.clone(),
                    test: b.name.clone(),
                    id: String::new(),
                },
            ));
        }
        seal::apply_edits(body, edits);
    }

    /// Whether a mutant of block `k` on `line` would meet a sealed site's
    /// edits (its own line or a message it scrubs).
    fn touches(&self, k: usize, line: usize) -> bool {
        self.sites.get(&k).is_some_and(|sites| {
            sites
                .iter()
                .any(|s| s.line == line || s.scrub.iter().any(|x| x.0 == line))
        })
    }
}

/// A canary of `b`: its copy under a fresh name, `mutant`'s literal
/// changed (a must-fail canary) or none (a must-pass one), placed before a
/// random test of its container.
#[allow(clippy::too_many_arguments)]
pub(super) fn canary_of(
    path: &str,
    lines: &[&str],
    blocks: &[Block],
    b: &Block,
    names: &mut Names<'_>,
    rng: &mut Rng,
    mutant: Option<&Mutant>,
    mut sealing: Option<&mut Sealing<'_>>,
) -> Option<(Insert, Canary)> {
    let name = names.fresh(rng);
    let report = report_name(b.class.as_deref(), &name);
    let k = blocks.iter().position(|x| std::ptr::eq(x, b))?;
    let body = {
        let rng = &mut *rng;
        let mut seal = |body: &mut [String], skip: &[usize]| {
            if let Some(s) = sealing.as_deref_mut() {
                s.seal(k, b, body, skip, &report, rng);
            }
        };
        copy_of(lines, b, &name, mutant, &mut seal)?
    };
    let insert = Insert {
        before: position(blocks, b, rng),
        lines: body,
    };
    let canary = Canary {
        file: path.to_owned(),
        name: report,
        must: if mutant.is_some() {
            Must::Fail
        } else {
            Must::Pass
        },
        seen: None,
        expected: false,
        // A mutant's original by its report id (certification does not
        // know it yet).
        of: mutant.map(|m| m.of.id.clone()).filter(|id| !id.is_empty()),
        original: None,
    };
    Some((insert, canary))
}

fn renamed_line(line: &str, b: &Block, name: &str) -> String {
    let mut l = line.to_owned();
    l.replace_range(b.name_col..b.name_col + b.name.len(), name);
    l
}

/// Where a canary of `b` may go: before a test of its container, or after
/// the container's last test.
fn position(blocks: &[Block], b: &Block, rng: &mut Rng) -> usize {
    let slots: Vec<usize> = blocks
        .iter()
        .filter(|o| o.container == b.container && o.class == b.class)
        .map(|o| o.start)
        .chain(
            blocks
                .iter()
                .filter(|o| o.container == b.container && o.class == b.class)
                .map(|o| o.end)
                .max(),
        )
        .collect();
    slots[(rng.next() % slots.len() as u64) as usize]
}

/// Writes `lines` with the originals renamed and the inserts placed.
pub(super) fn assemble(
    lines: &[&str],
    blocks: &[Block],
    renames: &BTreeMap<usize, String>,
    mut inserts: Vec<Insert>,
) -> String {
    inserts.sort_by_key(|i| i.before);
    let mut out = String::new();
    let mut next = inserts.into_iter().peekable();
    let def_of: BTreeMap<usize, &Block> = blocks.iter().map(|b| (b.def_line, b)).collect();
    let push_insert = |out: &mut String, ins: Insert| {
        for l in ins.lines {
            out.push_str(&l);
            out.push('\n');
        }
        out.push('\n');
    };
    for (n, line) in lines.iter().enumerate() {
        while next.peek().is_some_and(|i| i.before == n) {
            push_insert(&mut out, next.next().expect("peeked"));
        }
        match (def_of.get(&n), renames.get(&n)) {
            (Some(b), Some(fresh)) => out.push_str(&renamed_line(line, b, fresh)),
            _ => out.push_str(line),
        }
        out.push('\n');
        // A test ending the file, or followed directly by another: a blank
        // line before what is inserted after it.
    }
    for ins in next {
        out.push('\n');
        push_insert(&mut out, ins);
    }
    out
}

/// The report name of a canary `name` in class `class`.
pub(super) fn report_name(class: Option<&str>, name: &str) -> String {
    match class {
        Some(c) => format!("{c}.{name}"),
        None => name.to_owned(),
    }
}

/// The wrong values of a literal's window, drawn so that nothing but the
/// right answer tells the right value from them:
///
/// - an integer: [`WINDOW`] + 1 consecutive values, the right one at a
///   rank drawn first and uniformly. Where the window would then need a
///   negative value for a value that is not negative in Go or Rust (its
///   type may be unsigned, where a negative literal does not compile, and
///   one mutant that does not compile spoils its file's certification),
///   the site gets no window at all: it is never shifted or clamped to
///   start at 0, which would put a 0 at the window's edge every time. So a
///   window seen says nothing of the right value's rank: every member was
///   as likely to be drawn into that window as the right one (Python and
///   JavaScript integers have no unsigned type and always get one).
/// - a string: up to [`WINDOW`] other plain string literals of the same
///   file or of the test files beside it (`pool`: real words and phrases,
///   as the right one is), in the site's quotes; fewer where there are
///   fewer, and the window's odds say so.
pub(super) fn window(lang: Lang, literal: &str, pool: &[String], rng: &mut Rng) -> Vec<String> {
    let r = rng.next();
    if let Ok(v) = literal.parse::<i64>() {
        let rank = (r % (WINDOW as u64 + 1)) as i64;
        let start = v - rank;
        let maybe_unsigned = matches!(lang, Lang::Go | Lang::Rust) && v >= 0;
        if start < 0 && maybe_unsigned {
            return Vec::new();
        }
        return (start..=start + WINDOW)
            .filter(|to| *to != v)
            .map(|to| to.to_string())
            .collect();
    }
    let Some(q) = literal
        .chars()
        .next()
        .filter(|q| matches!(q, '"' | '\'' | '`'))
    else {
        return Vec::new();
    };
    let inner = &literal[1..literal.len().saturating_sub(1).max(1)];
    let others: Vec<&String> = pool
        .iter()
        .filter(|s| s.as_str() != inner && !s.contains(q))
        .collect();
    shuffled(others, rng)
        .into_iter()
        .take(WINDOW as usize)
        .map(|s| format!("{q}{s}{q}"))
        .collect()
}

/// The file's lines with every sealed site of the tests themselves sealed
/// (each test reported by its fresh name where `renames` gives one).
pub(super) fn seal_originals(
    lines: &[&str],
    blocks: &[Block],
    renames: &BTreeMap<usize, String>,
    sealing: &mut Sealing<'_>,
    rng: &mut Rng,
) -> Vec<String> {
    let mut owned: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    for (k, b) in blocks.iter().enumerate() {
        if !sealing.sites.contains_key(&k) {
            continue;
        }
        let name = renames.get(&b.def_line).unwrap_or(&b.name);
        let report = report_name(b.class.as_deref(), name);
        let mut body: Vec<String> = owned[b.start..b.end].to_vec();
        sealing.seal(k, b, &mut body, &[], &report, rng);
        owned.splice(b.start..b.end, body);
    }
    owned
}

/// A graded run's planting of one file from the task's certified canaries.
pub(crate) fn graded_file(
    lang: Lang,
    path: &str,
    text: &str,
    beside: &str,
    certified: &Certified,
    rng: &mut Rng,
    budget: &mut usize,
) -> Option<Rewritten> {
    let lines: Vec<&str> = text.lines().collect();
    let blocks = seal::sealed_blocks(lang, text);
    let find = |t: &TestRef| {
        blocks
            .iter()
            .find(|b| b.name == t.test && b.class == t.class)
    };
    let mine = |t: &TestRef| t.file == path;
    let clash = seal::clashes(lang, text, beside);
    let mut sealing = Sealing {
        lang,
        path,
        sites: if clash {
            BTreeMap::new()
        } else {
            seal::certified_sites(&blocks, path, &certified.seals)
        },
        planted: Vec::new(),
    };
    // A sealed site gets no window: its value is not in the tree; nor does
    // a site on a line a seal rewrites.
    let sealed_at = |m: &Mutant| {
        blocks
            .iter()
            .position(|b| b.name == m.of.test && b.class == m.of.class)
            .is_some_and(|k| m.lines().into_iter().any(|l| sealing.touches(k, l)))
    };
    let mut names = Names::new(lang, &blocks, text, beside);
    let mut renames = BTreeMap::new();
    let mut renamed = BTreeMap::new();
    if certified.renamed.iter().any(|f| f == path) {
        for b in &blocks {
            let fresh = names.fresh(rng);
            renamed.insert(fresh.clone(), b.name.clone());
            renames.insert(b.def_line, fresh);
        }
    }
    // Mutants by test, then by site.
    let mut by_test: BTreeMap<&TestRef, BTreeMap<(u32, u32), Vec<&Mutant>>> = BTreeMap::new();
    for m in certified
        .mutants
        .iter()
        .filter(|m| mine(&m.of) && !sealed_at(m))
    {
        by_test
            .entry(&m.of)
            .or_default()
            .entry(m.site())
            .or_default()
            .push(m);
    }
    let mut chosen: Vec<&Mutant> = Vec::new();
    let mut bits = 0.0;
    let (f2p, p2p): (Vec<_>, Vec<_>) = by_test
        .iter()
        .partition(|(_, sites)| sites.values().flatten().any(|m| m.fail_to_pass));
    let mut mutated: BTreeSet<&TestRef> = BTreeSet::new();
    for (t, sites) in shuffled(f2p, rng) {
        let window: Vec<&Vec<&Mutant>> = sites.values().collect();
        let pick = window[(rng.next() % window.len() as u64) as usize];
        if pick.len() > *budget {
            continue;
        }
        *budget -= pick.len();
        bits += ((pick.len() + 1) as f64).log2();
        chosen.extend(pick.iter().copied());
        mutated.insert(t);
    }
    for (t, sites) in shuffled(p2p, rng).into_iter().take(P2P_MUTANTS) {
        let all: Vec<&Mutant> = sites.values().flatten().copied().collect();
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        chosen.push(all[(rng.next() % all.len() as u64) as usize]);
        mutated.insert(t);
    }
    let copies: Vec<&TestRef> = certified
        .copies
        .iter()
        .filter(|t| mine(t) && !mutated.contains(t))
        .collect();
    let copies: Vec<&TestRef> = shuffled(copies, rng).into_iter().take(COPIES).collect();
    let mut inserts = Vec::new();
    let mut canaries = Vec::new();
    let planned = chosen
        .into_iter()
        .map(|m| (&m.of, Some(m)))
        .chain(copies.into_iter().map(|t| (t, None)));
    let mut kin: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (t, mutant) in planned {
        let Some(b) = find(t) else { continue };
        let sealing = Some(&mut sealing);
        if let Some((insert, canary)) =
            canary_of(path, &lines, &blocks, b, &mut names, rng, mutant, sealing)
        {
            let declared = renames.get(&b.def_line).unwrap_or(&b.name);
            let bare = canary.name.rsplit('.').next().unwrap_or(&canary.name);
            kin.entry(declared.clone())
                .or_default()
                .push(bare.to_owned());
            inserts.push(insert);
            canaries.push(canary);
        }
    }
    let sealed = seal_originals(&lines, &blocks, &renames, &mut sealing, rng);
    if canaries.is_empty() && renames.is_empty() && sealing.planted.is_empty() {
        // A file of the task's renamed all the same: a test blanked by
        // its published name is not found in any file.
        return None;
    }
    let refs: Vec<&str> = sealed.iter().map(String::as_str).collect();
    let mut text = assemble(&refs, &blocks, &renames, inserts);
    if !sealing.planted.is_empty() {
        text = seal::with_helper(lang, &text);
    }
    Some(Rewritten {
        text,
        canaries,
        renamed,
        trials: Vec::new(),
        bits,
        sealed: sealing.planted,
        kin,
    })
}

fn shuffled<T>(mut v: Vec<T>, rng: &mut Rng) -> Vec<T> {
    for i in (1..v.len()).rev() {
        let j = (rng.next() % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
    v
}

/// Gives renamed tests their declared names back in a report id: the
/// fresh name, a whole identifier of the id, becomes the original's.
pub(crate) fn unrename(id: &str, renamed: &BTreeMap<String, String>) -> Option<String> {
    // A JavaScript id ends in the test's title, which may hold spaces.
    if let Some((head, title)) = id.rsplit_once(" > ")
        && let Some(orig) = renamed.get(title)
    {
        return Some(format!("{head} > {orig}"));
    }
    let mut out = String::with_capacity(id.len());
    let mut changed = false;
    let mut start = None;
    let mut copied = 0;
    let bytes = id.as_bytes();
    for k in 0..=bytes.len() {
        let ident = k < bytes.len() && (bytes[k].is_ascii_alphanumeric() || bytes[k] == b'_');
        match (ident, start) {
            (true, None) => start = Some(k),
            (false, Some(s)) => {
                if let Some(orig) = renamed.get(&id[s..k]) {
                    out.push_str(&id[copied..s]);
                    out.push_str(orig);
                    copied = k;
                    changed = true;
                }
                start = None;
            }
            _ => {}
        }
    }
    out.push_str(&id[copied..]);
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use crate::model::canary::certify::certify_file;
    use assay_report::Outcome;

    use super::*;
    use crate::model::canary::source::blocks;

    const FILE: &str = "import unittest\n\nfrom calc.ops import area\n\n\nclass TestAdd(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(area(7), 154)\n\n    def test_add_neg(self):\n        self.assertEqual(area(-1), 3)\n";

    #[test]
    fn certification_renames_copies_and_mutates_every_test_among_its_class() {
        let mut rng = Rng::new([1; 32]);
        let r = certify_file(Lang::Unittest, "tests/test_add.py", FILE, "", &mut rng).unwrap();
        // Two copies and a window of WINDOW values at one site each.
        assert_eq!(r.trials.len(), 2 * (1 + WINDOW as usize));
        assert_eq!(r.renamed.len(), 2);
        assert!(!r.text.contains("def test_add(self)"), "{}", r.text);
        // Every canary is a method of the original's class: nothing after it.
        let tail = r.text.split("class TestAdd").nth(1).unwrap();
        assert_eq!(tail.matches("def test_").count(), 2 + r.trials.len());
        for t in &r.trials {
            let method = t.name.split_once('.').unwrap().1;
            assert!(
                r.text.contains(&format!("    def {method}(self):")),
                "{}",
                r.text
            );
        }
        let values: BTreeSet<i64> = r
            .trials
            .iter()
            .filter_map(|t| t.mutant.as_ref())
            .filter(|m| m.of.test == "test_add")
            .map(|m| m.to.parse().unwrap())
            .collect();
        assert_eq!(values.len(), WINDOW as usize);
        assert!(!values.contains(&154));
        let (lo, hi) = (*values.first().unwrap(), *values.last().unwrap());
        assert!(
            hi - lo <= WINDOW && lo <= 154 + 1 && hi >= 154 - 1,
            "{values:?}"
        );
    }

    /// Pearson's statistic of `counts` against a uniform spread.
    fn chi_square(counts: &[u64]) -> f64 {
        let n: u64 = counts.iter().sum();
        let e = n as f64 / counts.len() as f64;
        counts.iter().map(|c| (*c as f64 - e).powi(2) / e).sum()
    }

    /// The rank of `v` in its window (the window's values and `v`).
    fn rank(v: i64, window: &[String]) -> usize {
        window
            .iter()
            .filter(|w| w.parse::<i64>().unwrap() < v)
            .count()
    }

    /// chi-square with 15 degrees of freedom: above 37.7 one time in a
    /// thousand for a uniform rank. The seeds are fixed, so the test is too.
    const CHI2_15: f64 = 37.7;

    #[test]
    fn a_right_value_sits_at_a_uniformly_random_rank_even_at_zero() {
        for v in [0i64, 3, 154, -2] {
            let mut counts = [0u64; 16];
            for seed in 0..1600u32 {
                let mut seed_bytes = [0u8; 32];
                seed_bytes[..4].copy_from_slice(&seed.to_le_bytes());
                let w = window(
                    Lang::Unittest,
                    &v.to_string(),
                    &[],
                    &mut Rng::new(seed_bytes),
                );
                assert_eq!(w.len(), WINDOW as usize, "{v}: never dropped in Python");
                counts[rank(v, &w)] += 1;
            }
            let chi = chi_square(&counts);
            assert!(chi < CHI2_15, "{v}: {counts:?} (chi-square {chi:.1})");
            // A 0 is at the window's edge one time in 16, not every time.
            assert!(counts[0] < 1600 / 16 * 3 / 2, "{v}: {counts:?}");
        }
    }

    /// Go and Rust: a window that would need a negative value for a value
    /// that may be unsigned is dropped, never moved. What a forger sees
    /// then tells it nothing: among the windows starting at one value, the
    /// right value's rank is uniform (right values uniform over 0..=40;
    /// windows starting at 25 or below, all of whose members are in it).
    #[test]
    fn a_window_that_would_go_below_zero_is_dropped_not_clamped() {
        let mut counts = [0u64; 16];
        let mut zero = 0;
        for v in 0..=40i64 {
            for seed in 0..400u32 {
                let mut seed_bytes = [0u8; 32];
                seed_bytes[..4].copy_from_slice(&seed.to_le_bytes());
                seed_bytes[4] = v as u8;
                let w = window(Lang::Go, &v.to_string(), &[], &mut Rng::new(seed_bytes));
                if w.is_empty() {
                    assert!(v < WINDOW, "{v}");
                    continue;
                }
                let values: Vec<i64> = w.iter().map(|x| x.parse().unwrap()).collect();
                assert!(values.iter().all(|x| *x >= 0), "{v}: {values:?}");
                let start = values.iter().copied().min().unwrap().min(v);
                if v == 0 {
                    zero += 1;
                }
                if start <= 25 {
                    counts[rank(v, &w)] += 1;
                }
            }
        }
        let chi = chi_square(&counts);
        assert!(chi < CHI2_15, "{counts:?} (chi-square {chi:.1})");
        // A 0 gets a window one draw in 16 (rank 0 drawn), never more.
        assert!((10..=45).contains(&zero), "{zero} of 400");
        // A negative value may go lower: never dropped.
        let w = window(Lang::Rust, "-3", &[], &mut Rng::new([5; 32]));
        assert_eq!(w.len(), WINDOW as usize);
    }

    #[test]
    fn a_string_is_mutated_into_other_strings_of_its_file_not_swapped_letters() {
        let pool: Vec<String> = ["division by zero", "empty input", "it's here", "overflow"]
            .map(str::to_owned)
            .to_vec();
        let w = window(
            Lang::Unittest,
            "'division by zero'",
            &pool,
            &mut Rng::new([3; 32]),
        );
        let mut got = w.clone();
        got.sort();
        // The site's quotes; never itself; never a string holding them.
        assert_eq!(got, ["'empty input'", "'overflow'"]);
        // Fewer strings than a window: fewer mutants, never made-up words.
        assert!(window(Lang::Go, "\"x\"", &[], &mut Rng::new([3; 32])).is_empty());
    }

    #[test]
    fn fresh_names_given_back_in_every_report_spelling() {
        let renamed = BTreeMap::from([("test_add_neg_value".to_owned(), "test_add".to_owned())]);
        assert_eq!(
            unrename("tests.test_x.TestAdd.test_add_neg_value", &renamed).as_deref(),
            Some("tests.test_x.TestAdd.test_add")
        );
        assert_eq!(
            unrename("tests/test_x.py::test_add_neg_value[1-2]", &renamed).as_deref(),
            Some("tests/test_x.py::test_add[1-2]")
        );
        assert_eq!(
            unrename("tests.test_x.TestAdd.test_add_neg_value_two", &renamed),
            None
        );
        assert_eq!(
            unrename(
                "test_add_neg_value (tests.test_x.TestAdd.test_add_neg_value)",
                &renamed
            )
            .as_deref(),
            Some("test_add (tests.test_x.TestAdd.test_add)")
        );
    }

    /// A generated unittest file: `n` tests in one or two classes, each
    /// asserting a computed integer or string against its literal.
    fn generated(rng: &mut Rng, n: usize) -> String {
        let mut s = String::from("import unittest\n\n\nclass TestGenA(unittest.TestCase):\n");
        for i in 0..n {
            if i == n / 2 && n > 2 {
                s.push_str("\n\nclass TestGenB(unittest.TestCase):\n");
            }
            let (a, b) = ((rng.next() % 50) as i64 - 10, (rng.next() % 50) as i64);
            let body = match rng.next() % 5 {
                0 => format!("        self.assertEqual({a} + {b}, {})\n", a + b),
                1 => format!(
                    "        x = {a} * {b}\n        self.assertEqual(x, {})\n",
                    a * b
                ),
                2 => format!("        self.assertEqual(str({b}) + \"k\", \"{b}k\")\n"),
                // Its value again in a comment and a message.
                3 => {
                    let n = 6 + (rng.next() % 20) as i64;
                    let sum = n * (n - 1) / 2;
                    format!(
                        "        # the sum below is {sum}\n        self.assertEqual(sum(range({n})), {sum}, \"sum is {sum}\")\n"
                    )
                }
                _ => format!("        assert [{a}, {b}] == [{a}, {b}]\n"),
            };
            s.push_str(&format!(
                "\n    def test_case_{i}_{}(self):\n{body}",
                rng.next() % 1000
            ));
        }
        s
    }

    /// The canaries' property: for generated test files, every
    /// canary's body is one of the file's own (renamed, one literal
    /// changed at most), the copies pass and the mutants fail when the
    /// file's own tests pass, and the renamed originals keep passing.
    /// Runs python3 on each planted file, for real.
    #[test]
    fn canaries_are_the_files_own_tests_and_certify_as_they_must() {
        let dir = tempfile::tempdir().unwrap();
        let mut seeds = Rng::new([42; 32]);
        for round in 0..12u8 {
            let n = 1 + (seeds.next() % 6) as usize;
            let text = generated(&mut seeds, n);
            let mut rng = Rng::new([round; 32]);
            let r = certify_file(Lang::Unittest, "test_gen.py", &text, "", &mut rng).unwrap();
            // Every canary is an original block, renamed, at most one line changed.
            let own = blocks(Lang::Unittest, &text);
            let planted = blocks(Lang::Unittest, &r.text);
            let lines: Vec<&str> = text.lines().collect();
            let new_lines: Vec<&str> = r.text.lines().collect();
            for t in &r.trials {
                let method = t.name.split_once('.').unwrap().1;
                let c = planted.iter().find(|b| b.name == method).unwrap();
                let o = own.iter().find(|b| b.name == t.of.test).unwrap();
                assert_eq!(c.class, o.class, "{}", r.text);
                let (cb, ob) = (
                    &new_lines[c.def_line + 1..c.end],
                    &lines[o.def_line + 1..o.end],
                );
                assert_eq!(cb.len(), ob.len());
                let changed = cb.iter().zip(ob).filter(|(x, y)| x != y).count();
                // The site's line and every other line writing its value.
                let lines_of = |m: &Mutant| {
                    let mut l: BTreeSet<u32> = m.also.iter().map(|c| c.line).collect();
                    l.insert(m.line);
                    l.len()
                };
                assert_eq!(changed, t.mutant.as_ref().map_or(0, lines_of), "{}", r.text);
                // No line of a mutant still writes the right value.
                if let Some(m) = &t.mutant
                    && m.from.parse::<i64>().is_ok()
                {
                    for l in cb.iter().filter(|l| !l.trim_start().starts_with("def ")) {
                        assert!(!l.contains(&m.from) || ob.contains(l), "{l}\n{}", r.text);
                    }
                }
            }
            std::fs::write(dir.path().join("test_gen.py"), &r.text).unwrap();
            let out = std::process::Command::new("python3")
                .args(["-m", "unittest", "-v", "test_gen"])
                .current_dir(dir.path())
                .output()
                .unwrap();
            let report = assay_report::parse(assay_report::Format::Unittest, &out.stderr).unwrap();
            let outcome = |name: &str| {
                report
                    .tests
                    .iter()
                    .find(|t| super::super::reading::names_test(&t.name, name))
                    .map(|t| t.outcome)
            };
            for t in &r.trials {
                let want = if t.mutant.is_some() {
                    Outcome::Failed
                } else {
                    Outcome::Passed
                };
                assert_eq!(outcome(&t.name), Some(want), "{t:?}\n{}", r.text);
            }
            for (fresh, orig) in &r.renamed {
                assert_eq!(outcome(fresh), Some(Outcome::Passed), "{orig}");
            }
        }
    }
}
