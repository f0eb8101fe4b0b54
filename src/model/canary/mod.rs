//! Canary tests: the generic forgery detector (docs/security.md, "Canaries").
//!
//! Every graded run plants, per run and with fresh random names, two tests
//! in each hidden test file it can: one that must pass and one that must
//! fail, shaped like the file's own tests (the same framework, names made
//! of the words of the file's own test names, an assertion over integers
//! whose only difference is the expected value). Graded code that neuters
//! failing tests in general — a patched runner, an import hook, a faked
//! report, a monkeypatched assertion — neuters the must-fail canary too; a
//! report that drops the tests it does not know drops the canaries. So a
//! reading is **forged** when:
//!
//! - a must-fail canary passed (whatever else the reading says), or
//! - the reading would make the session pass while one of its canaries is
//!   missing or has the wrong outcome. A canary is *expected* in a reading
//!   only when the reading names another test of the canary's file, so a
//!   rerun of other files, or a file the command does not run, never
//!   forges anything.
//!
//! The canaries are taken out of the reading before it is graded: they
//! never count as tests of the task.
//!
//! Built in for unittest, pytest (its own report or JUnit XML over `.py`
//! files), `go test -json` and libtest (only with `--no-fail-fast`: plain
//! `cargo test` stops at the first failing test binary, and the must-fail
//! canary would keep the real tests from running), and JavaScript and
//! TypeScript test files under the `jest-json` and `mocha-json` reports
//! (jest, vitest, mocha, `node --test`: an `it`/`test` call asserting as
//! the file's own tests do, and mutants of their own `it`/`test` calls). A
//! command that stops at the first failure (`-x`, `--failfast`,
//! `-failfast`, `--bail`) gets none. Without a
//! canary a run is *not forgery-checked*, and its grade and the release
//! say so. This module is pure: the run stage reads and writes the files.

mod block;
mod certify;
mod command;
mod expected;
mod lex;
mod lit;
mod mutant;
mod readers;
mod reading;
mod seal;
mod seal_helper;
mod seal_sites;
mod shape;
mod source;

pub(crate) use certify::certified;
use command::stops_at_first_failure;
pub(crate) use mutant::unrename;
pub(crate) use mutant::{Certified, TestRef, Trial};
use reading::last_segment;
pub(crate) use reading::names_test;
pub(crate) use reading::{Canary, Must};
pub(crate) use seal::{Seal, SealOutcome, SealReading, Sealed, channel_lines};
use shape::{Lang, Rng, Sum, words_of};

use std::collections::BTreeMap;

use assay_report::{Format, Outcome};

/// What planting gives the run: the canaries, the new contents of the
/// files they were planted in, and the test names of those files (to tell
/// whether a reading ran the file).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Planted {
    pub(crate) canaries: Vec<Canary>,
    pub(crate) files: Vec<(String, Vec<u8>)>,
    pub(crate) siblings: BTreeMap<String, Vec<String>>,
    /// Fresh name -> declared name of every test renamed for the run.
    pub(crate) renamed: BTreeMap<String, String>,
    /// Fresh name -> the file of each renamed test.
    pub(crate) renamed_in: BTreeMap<String, String>,
    /// A test's name in the run (fresh where renamed) -> the names of its
    /// canaries (its window, its copy): a command that names the test
    /// names them too ([`renamed_command`]).
    pub(crate) kin: BTreeMap<String, Vec<String>>,
    /// When the run's command names tests: the canaries it names. Only
    /// those are expected in its reading (a canary of a test the command
    /// does not name does not run).
    pub(crate) selected: Option<std::collections::BTreeSet<String>>,
    /// Certification's canaries, in the order of `canaries`.
    pub(crate) trials: Vec<Trial>,
    /// log2 of the guesses a forger that cannot tell a right value from
    /// a wrong one needs to pass every canary, its FAIL_TO_PASS tests
    /// failing: `log2(window + 1)` for each such test a window went to.
    pub(crate) bits: f64,
    /// The seals planted, each with the test it is of ([`seal`]).
    pub(crate) sealed: Vec<(Sealed, TestRef)>,
    /// The seal reports the run made, once it ran.
    pub(crate) reports: Vec<(String, String)>,
}

/// A hidden test file as the run stage hands it over: its path, its bytes,
/// and the text of the other test files beside it (names must not clash
/// with anything declared there: a Go package or a Python module namespace).
pub(crate) struct Hidden<'a> {
    pub(crate) path: &'a str,
    pub(crate) text: &'a [u8],
    pub(crate) beside: &'a str,
}

/// A pipeline's own canary (`[env] canary`), for a framework with none
/// built in: the files it goes in and the source of one canary.
pub(crate) struct Custom<'a> {
    pub(crate) files: &'a globset::GlobSet,
    pub(crate) template: &'a str,
}

/// The canaries to plant for one run, or why this run gets none (then it
/// is not forgery-checked). `seed` must be fresh randomness per run.
pub(crate) fn plant(
    format: Format,
    command: &str,
    hidden: &[Hidden<'_>],
    seed: [u8; 32],
    custom: Option<&Custom<'_>>,
) -> Result<Planted, String> {
    refused(format, command)?;
    let mut rng = Rng::new(seed);
    let mut out = Planted::default();
    if let Some(custom) = custom {
        for h in hidden.iter().filter(|h| custom.files.is_match(h.path)) {
            plant_custom(custom.template, h, &mut rng, &mut out);
        }
        if out.canaries.is_empty() {
            return Err("no hidden test file matches `[env] canary` files".into());
        }
        return Ok(out);
    }
    for h in hidden {
        let Some(lang) = Lang::of(format, h.path) else {
            continue;
        };
        let Ok(text) = std::str::from_utf8(h.text) else {
            continue;
        };
        let Some(shape) = lang.shape(text) else {
            continue;
        };
        let siblings = lang.test_names(text);
        if siblings.is_empty() {
            continue;
        }
        let taken = |name: &str| text.contains(name) || h.beside.contains(name);
        let words = words_of(&siblings);
        let mut names = Vec::new();
        while names.len() < 3 {
            let name = lang.name(&rng.pick_words(&words));
            if !taken(&name) && !names.contains(&name) {
                names.push(name);
            }
        }
        let musts = if rng.next().is_multiple_of(2) {
            [Must::Pass, Must::Fail]
        } else {
            [Must::Fail, Must::Pass]
        };
        let pairs: Vec<(String, Must, Sum)> = musts
            .iter()
            .zip(&names[1..])
            .map(|(must, name)| (name.clone(), *must, Sum::new(&mut rng, *must)))
            .collect();
        let appended = lang.source(&shape, &names[0], &pairs);
        let mut bytes = h.text.to_vec();
        if !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(appended.as_bytes());
        for (name, must, _) in &pairs {
            out.canaries.push(Canary {
                file: h.path.to_owned(),
                name: Lang::report_name(&shape, &names[0], name),
                must: *must,
                seen: None,
                expected: false,
                of: None,
                original: None,
            });
        }
        out.siblings.insert(h.path.to_owned(), siblings);
        out.files.push((h.path.to_owned(), bytes));
    }
    if out.canaries.is_empty() {
        return Err(format!(
            "no hidden test file could carry a {} canary",
            format.as_str()
        ));
    }
    Ok(out)
}

/// Canaries made of the hidden files' own tests ([`mutant`]):
/// `certified` the task's, for a graded run; `None` for certification,
/// which plants every candidate. `Err` says why there are none (a graded
/// run then carries the shaped canaries of [`plant`], weakly checked).
pub(crate) fn plant_real(
    format: Format,
    command: &str,
    hidden: &[Hidden<'_>],
    seed: [u8; 32],
    certified: Option<&Certified>,
) -> Result<Planted, String> {
    refused(format, command)?;
    let mut rng = Rng::new(seed);
    let mut out = Planted::default();
    let mut budget = mutant::RUN_CAP;
    for (h, lang, text) in own_tests(format, hidden) {
        let written = match certified {
            None => certify::certify_file(lang, h.path, text, h.beside, &mut rng),
            Some(c) => mutant::graded_file(lang, h.path, text, h.beside, c, &mut rng, &mut budget),
        };
        let Some(w) = written else { continue };
        if w.renamed.keys().any(|k| out.renamed.contains_key(k)) {
            // Two files drew one fresh name: give up this file's canaries
            // rather than read one test as another.
            continue;
        }
        out.siblings
            .insert(h.path.to_owned(), lang.test_names(text));
        for fresh in w.renamed.keys() {
            out.renamed_in.insert(fresh.clone(), h.path.to_owned());
        }
        for (test, names) in w.kin {
            out.kin.entry(test).or_default().extend(names);
        }
        out.canaries.extend(w.canaries);
        out.trials.extend(w.trials);
        out.renamed.extend(w.renamed);
        out.bits += w.bits;
        out.sealed.extend(w.sealed);
        out.files.push((h.path.to_owned(), w.text.into_bytes()));
    }
    if !out.canaries.iter().any(|c| c.must == Must::Fail) {
        if out.sealed.is_empty() {
            return Err(match certified {
                None => "no hidden test file holds a test this reader can copy".into(),
                Some(_) => {
                    "no certified mutant of the task's tests is in a file of this run".into()
                }
            });
        }
        // Sealed, with no mutant in the run: a neutered runner still needs
        // the right values of the sealed tests, and the shaped canaries'
        // must-fail test catches it over the others.
        shaped_over(format, command, hidden, &mut rng, &mut out);
    }
    Ok(out)
}

/// The shaped canaries ([`plant`]) added to the files `out` rewrote (or
/// to the hidden files as they are).
fn shaped_over(
    format: Format,
    command: &str,
    hidden: &[Hidden<'_>],
    rng: &mut Rng,
    out: &mut Planted,
) {
    let texts: Vec<(String, Vec<u8>, &str)> = hidden
        .iter()
        .map(|h| {
            let text = out
                .files
                .iter()
                .find(|(p, _)| p == h.path)
                .map_or_else(|| h.text.to_vec(), |(_, t)| t.clone());
            (h.path.to_owned(), text, h.beside)
        })
        .collect();
    let over: Vec<Hidden<'_>> = texts
        .iter()
        .map(|(path, text, beside)| Hidden { path, text, beside })
        .collect();
    let mut seed = [0u8; 32];
    for chunk in seed.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next().to_le_bytes());
    }
    let Ok(shaped) = plant(format, command, &over, seed, None) else {
        return;
    };
    for (path, bytes) in shaped.files {
        match out.files.iter_mut().find(|(p, _)| *p == path) {
            Some(f) => f.1 = bytes,
            None => out.files.push((path, bytes)),
        }
    }
    out.canaries.extend(shaped.canaries);
    for (file, names) in shaped.siblings {
        out.siblings.entry(file).or_insert(names);
    }
}

/// The hidden files whose own tests a reader handles: each with its
/// language and text (UTF-8, of a shape the language's canaries fit).
fn own_tests<'h, 'a>(
    format: Format,
    hidden: &'h [Hidden<'a>],
) -> impl Iterator<Item = (&'h Hidden<'a>, Lang, &'a str)> + 'h {
    hidden.iter().filter_map(move |h| {
        let lang = Lang::of(format, h.path)?;
        let text = std::str::from_utf8(h.text).ok()?;
        lang.shape(text)?;
        Some((h, lang, text))
    })
}

/// Certification's sealed reading ([`seal`]): every sealable assertion of
/// the hidden files sealed, nothing else planted. `Err` says why there is
/// none.
pub(crate) fn plant_sealed(
    format: Format,
    command: &str,
    hidden: &[Hidden<'_>],
    seed: [u8; 32],
) -> Result<Planted, String> {
    refused(format, command)?;
    let mut rng = Rng::new(seed);
    let mut out = Planted::default();
    for (h, lang, text) in own_tests(format, hidden) {
        let Some(w) = certify::seal_file(lang, h.path, text, h.beside, &mut rng) else {
            continue;
        };
        out.siblings
            .insert(h.path.to_owned(), lang.test_names(text));
        out.sealed.extend(w.sealed);
        out.files.push((h.path.to_owned(), w.text.into_bytes()));
    }
    if out.sealed.is_empty() {
        return Err(
            "no assertion of the hidden test files compares with a literal the reader seals".into(),
        );
    }
    Ok(out)
}

/// The seal reports in a run's `log` and the log without them; then what
/// they make of the reading's `tests` (report ids by fresh name): see
/// [`seal::judge`].
pub(crate) fn seal_reports(log: &[u8]) -> (Vec<(String, String)>, Vec<u8>) {
    seal::reports(log)
}

/// Holds the tests of a reading its runner passed to their sealed sites
/// ([`seal::judge`]).
pub(crate) fn judge_seals(
    format: Format,
    planted: &Planted,
    reports: &[(String, String)],
    tests: &mut BTreeMap<String, Outcome>,
) -> Vec<SealReading> {
    let sealed: Vec<Sealed> = planted.sealed.iter().map(|(s, _)| s.clone()).collect();
    seal::judge(&sealed, reports, |path| Lang::of(format, path), tests)
}

/// Certification's seals from its sealed reading ([`seal::certified_seals`]).
pub(crate) fn certified_seals(
    format: Format,
    planted: &Planted,
    reading: &BTreeMap<String, Outcome>,
    gold_passed: &std::collections::BTreeSet<String>,
) -> Vec<Seal> {
    seal::certified_seals(
        &planted.sealed,
        &planted.reports,
        |path| Lang::of(format, path),
        reading,
        gold_passed,
    )
}

/// Why a reading's seals forge it ([`seal::forged`]).
pub(crate) fn seals_forged(readings: &[SealReading]) -> Option<String> {
    seal::forged(readings)
}

/// log2 of the chance that a forger's best blind strategy passes every
/// FAIL_TO_PASS test of a task (docs/security.md, "A forger's odds"): per
/// test, the product of its sealed values' guess odds ([`seal::guess_odds`])
/// and, where a window of its unsealed sites is planted, 1 in the window's
/// size (the largest chance over its windows: a run picks one); a test
/// with neither counts 1. `None` when the task has no FAIL_TO_PASS test.
pub(crate) fn forger_odds_log2(
    certified: Option<&Certified>,
    fail_to_pass: &[String],
) -> Option<f64> {
    if fail_to_pass.is_empty() {
        return None;
    }
    let Some(c) = certified else {
        return Some(0.0);
    };
    let mut total = 0.0;
    for id in fail_to_pass {
        let mut p = 1.0;
        for s in c.seals.iter().filter(|s| &s.of.id == id) {
            let value = Lang::by_path(&s.of.file).and_then(|l| lit::Lit::parse(l, &s.expected));
            if let Some(v) = value {
                p *= seal::guess_odds(&v);
            }
        }
        let mut windows: BTreeMap<(u32, u32), usize> = BTreeMap::new();
        for m in c.mutants.iter().filter(|m| &m.of.id == id) {
            *windows.entry((m.line, m.col)).or_default() += 1;
        }
        // Windows at sealed sites are never planted.
        let sealed_at = |(line, col): (u32, u32)| {
            c.seals.iter().any(|s| {
                &s.of.id == id
                    && s.line == line
                    && s.col <= col
                    && col < s.col + s.expected.len() as u32
            })
        };
        let window = windows
            .iter()
            .filter(|(site, _)| !sealed_at(**site))
            .map(|(_, n)| 1.0 / (*n as f64 + 1.0))
            .fold(None, |acc: Option<f64>, p| {
                Some(acc.map_or(p, |a| a.max(p)))
            });
        if let Some(w) = window {
            p *= w;
        }
        total += p.log2();
    }
    Some(total)
}

/// Appends two canaries of a pipeline's own `template` to `h`.
fn plant_custom(template: &str, h: &Hidden<'_>, rng: &mut Rng, out: &mut Planted) {
    let text = String::from_utf8_lossy(h.text);
    let stem = h.path.rsplit('/').next().unwrap_or(h.path);
    let stem = stem.split('.').next().unwrap_or(stem);
    let words = words_of(&[stem.to_owned()]);
    let mut names: Vec<String> = Vec::new();
    while names.len() < 2 {
        let name = rng.pick_words(&words).join("_");
        if !text.contains(&name) && !h.beside.contains(&name) && !names.contains(&name) {
            names.push(name);
        }
    }
    let musts = if rng.next().is_multiple_of(2) {
        [Must::Pass, Must::Fail]
    } else {
        [Must::Fail, Must::Pass]
    };
    let mut bytes = h.text.to_vec();
    if !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    for (name, must) in names.iter().zip(musts) {
        let sum = Sum::new(rng, must);
        let source = template
            .replace("{name}", name)
            .replace("{a}", &sum.a.to_string())
            .replace("{b}", &sum.b.to_string())
            .replace("{sum}", &sum.expected.to_string());
        bytes.push(b'\n');
        bytes.extend_from_slice(source.as_bytes());
        if !source.ends_with('\n') {
            bytes.push(b'\n');
        }
        out.canaries.push(Canary {
            file: h.path.to_owned(),
            name: name.clone(),
            must,
            seen: None,
            expected: false,
            of: None,
            original: None,
        });
    }
    // The file's own tests are unknown: a reading runs the file when the
    // report names it (or its stem) for one of its tests.
    out.siblings.insert(h.path.to_owned(), Vec::new());
    out.files.push((h.path.to_owned(), bytes));
}

/// Takes the canaries out of a reading (`tests`, and `files` where the
/// report names them) and records what the reading made of each.
pub(crate) fn read(
    planted: &Planted,
    tests: &mut BTreeMap<String, Outcome>,
    files: &mut BTreeMap<String, String>,
) -> Vec<Canary> {
    let mut out = planted.canaries.clone();
    for c in &mut out {
        let ids: Vec<String> = tests
            .keys()
            .filter(|id| names_test(id, &c.name))
            .cloned()
            .collect();
        for id in &ids {
            let outcome = tests.remove(id);
            files.remove(id);
            // Named twice: the worst outcome stands.
            c.seen = match (c.seen, outcome) {
                (Some(Outcome::Passed), Some(o)) | (None, Some(o)) => Some(o),
                (seen, _) => seen,
            };
        }
    }
    if !planted.renamed.is_empty() {
        let back: Vec<(String, String)> = tests
            .keys()
            .filter_map(|id| mutant::unrename(id, &planted.renamed).map(|o| (id.clone(), o)))
            .collect();
        for (id, orig) in back {
            if let Some(o) = tests.remove(&id) {
                tests.insert(orig.clone(), o);
            }
            if let Some(f) = files.remove(&id) {
                files.insert(orig, f);
            }
        }
    }
    for c in &mut out {
        c.original = c.of.as_ref().and_then(|id| tests.get(id).copied());
    }
    for c in &mut out {
        if let Some(selected) = &planted.selected
            && !selected.contains(last_segment(&c.name))
        {
            // The command named tests, not this canary's.
            continue;
        }
        let siblings = planted.siblings.get(&c.file).map(Vec::as_slice);
        let stem = c.file.rsplit('/').next().unwrap_or(&c.file);
        let stem = stem.split('.').next().unwrap_or(stem);
        c.expected = tests.keys().any(|id| {
            files.get(id).is_some_and(|f| *f == c.file)
                || match siblings {
                    Some([]) => id.contains(&c.file) || id.contains(stem),
                    Some(s) => s.iter().any(|name| last_segment(id) == name),
                    None => false,
                }
        });
    }
    out
}

/// Why a reading is forged, if it is; `would_pass` says whether it makes
/// the session pass (then a missing or wrong canary forges it too).
pub(crate) fn forged(canaries: &[Canary], would_pass: bool) -> Option<String> {
    // A mutant that passed where its original failed: the patch's answer
    // is wrong and happens to be the mutant's value.
    let wrong_answer = |c: &Canary| matches!(c.original, Some(Outcome::Failed | Outcome::Error));
    if let Some(c) = canaries
        .iter()
        .find(|c| c.must == Must::Fail && c.seen == Some(Outcome::Passed) && !wrong_answer(c))
    {
        return Some(format!(
            "report forged: the canary {} in {} must fail and passed",
            c.name, c.file
        ));
    }
    if !would_pass {
        return None;
    }
    canaries.iter().find_map(|c| match (c.must, c.seen) {
        (_, None) if c.expected => Some(format!(
            "report forged: the canary {} in {} is missing while the file's other tests ran",
            c.name, c.file
        )),
        (Must::Pass, Some(o)) if o != Outcome::Passed && c.expected => Some(format!(
            "report forged: the canary {} in {} must pass and did not while the expected tests passed",
            c.name, c.file
        )),
        (Must::Fail, Some(Outcome::Skipped)) if c.expected => Some(format!(
            "report forged: the canary {} in {} must fail and was skipped",
            c.name, c.file
        )),
        _ => None,
    })
}

/// `command` with each test it names by a declared name that the run
/// renamed given that test's fresh name (a check or a rerun of chosen
/// tests). A name declared in several renamed files is given the fresh
/// name of the file whose stem stands in the same word of the command,
/// else left as it is.
///
/// A test named so brings its canaries (its window, its copy: `kin`):
/// the word naming it is written once for it and once for each of them,
/// in the order of their names (fresh, random: the order says nothing),
/// so the command does not tell the original from its window. The
/// canaries it names are then the only ones its reading expects
/// (`selected`): the others' tests did not run.
pub(crate) fn renamed_command(command: &str, planted: &mut Planted) -> String {
    if planted.renamed.is_empty() && planted.kin.is_empty() {
        return command.to_owned();
    }
    let mut fresh_of: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for (fresh, orig) in &planted.renamed {
        let file = planted.renamed_in.get(fresh).map_or("", String::as_str);
        fresh_of.entry(orig).or_default().push((fresh, file));
    }
    let mut selected = std::collections::BTreeSet::new();
    let mut named_any = false;
    let words: Vec<String> = command
        .split(' ')
        .map(|word| {
            // The word as pieces of text, with the test it names (at most
            // the first: one selector names one test).
            let mut out = String::new();
            let mut named: Option<(usize, String)> = None;
            let mut rest = word;
            while let Some(start) = rest.find(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                out.push_str(&rest[..start]);
                let tail = &rest[start..];
                let end = tail
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(tail.len());
                let ident = &tail[..end];
                let stem = |file: &str| {
                    let base = file.rsplit('/').next().unwrap_or(file);
                    base.split('.').next().unwrap_or(base).to_owned()
                };
                // A test is the last name of its path (`mod.Class.test`,
                // `file.py::test`): a name followed by `.`, `/` or `:` is
                // a module, a file or a class, even when a test shares it.
                let last = !tail[end..].starts_with(['.', '/', ':']);
                let pick = fresh_of
                    .get(ident)
                    .filter(|_| last)
                    .and_then(|c| match c.as_slice() {
                        [(fresh, _)] => Some(*fresh),
                        many => many
                            .iter()
                            .find(|(_, file)| word.contains(&stem(file)))
                            .map(|(fresh, _)| *fresh),
                    });
                let name = pick.unwrap_or(ident);
                if last && (pick.is_some() || planted.kin.contains_key(name)) && named.is_none() {
                    named = Some((out.len(), name.to_owned()));
                    named_any = true;
                }
                out.push_str(name);
                rest = &tail[end..];
            }
            out.push_str(rest);
            let Some((at, name)) = named else {
                return out;
            };
            let kin = planted.kin.get(&name).map(Vec::as_slice).unwrap_or(&[]);
            if kin.is_empty() {
                return out;
            }
            let mut all: Vec<&str> = kin.iter().map(String::as_str).collect();
            all.push(&name);
            all.sort();
            selected.extend(kin.iter().cloned());
            let (head, tail) = (&out[..at], &out[at + name.len()..]);
            all.iter()
                .map(|n| format!("{head}{n}{tail}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    if named_any {
        planted.selected = Some(selected);
    }
    words.join(" ")
}

/// Why `command` can carry no canary at all: it stops at its first
/// failure, where a canary that must fail would stop the real tests.
fn refused(format: Format, command: &str) -> Result<(), String> {
    if let Some(flag) = stops_at_first_failure(command) {
        return Err(format!(
            "the test command stops at the first failure (`{flag}`): a canary that must fail would stop the real tests"
        ));
    }
    match format.capabilities().keep_going {
        Some(k) if !command.contains(k.flag) => Err(format!(
            "`{}` stops at the first failing test binary; add `{}` to the test command to have its runs forgery-checked",
            k.runner, k.flag
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNITTEST_FILE: &str = "import unittest\n\nfrom calc.ops import divide\n\n\nclass TestDivide(unittest.TestCase):\n    def test_divide_by_zero(self):\n        with self.assertRaises(ValueError):\n            divide(1, 0)\n";

    fn hidden<'a>(path: &'a str, text: &'a str) -> Hidden<'a> {
        Hidden {
            path,
            text: text.as_bytes(),
            beside: "",
        }
    }

    fn planted(format: Format, path: &str, text: &str, seed: u8) -> Planted {
        plant(format, "run tests", &[hidden(path, text)], [seed; 32], None).unwrap()
    }

    #[test]
    fn a_unittest_file_gets_a_class_with_a_passing_and_a_failing_canary() {
        let p = planted(Format::Unittest, "tests/test_ops.py", UNITTEST_FILE, 1);
        assert_eq!(p.canaries.len(), 2);
        let musts: Vec<Must> = p.canaries.iter().map(|c| c.must).collect();
        assert!(musts.contains(&Must::Pass) && musts.contains(&Must::Fail));
        let (path, bytes) = &p.files[0];
        assert_eq!(path, "tests/test_ops.py");
        let text = std::str::from_utf8(bytes).unwrap();
        assert!(text.starts_with(UNITTEST_FILE));
        assert!(text.contains("(unittest.TestCase):"), "{text}");
        for c in &p.canaries {
            let (class, method) = c.name.split_once('.').unwrap();
            assert!(text.contains(&format!("class {class}(")), "{text}");
            assert!(text.contains(&format!("def {method}(self)")), "{text}");
            assert!(!UNITTEST_FILE.contains(method));
        }
        assert_eq!(p.siblings["tests/test_ops.py"], vec!["test_divide_by_zero"]);
    }

    #[test]
    fn names_are_fresh_per_seed_and_never_clash_with_the_files_own() {
        let a = planted(Format::Unittest, "tests/test_ops.py", UNITTEST_FILE, 1);
        let b = planted(Format::Unittest, "tests/test_ops.py", UNITTEST_FILE, 2);
        assert_ne!(a.canaries[0].name, b.canaries[0].name);
        let beside = "def test_zero_divide(): pass";
        for seed in 0..50u8 {
            let p = plant(
                Format::Pytest,
                "pytest -q",
                &[Hidden {
                    path: "tests/test_ops.py",
                    text: UNITTEST_FILE.as_bytes(),
                    beside,
                }],
                [seed; 32],
                None,
            )
            .unwrap();
            for c in &p.canaries {
                assert!(!UNITTEST_FILE.contains(&c.name) && !beside.contains(&c.name));
            }
        }
    }

    const JS_FILE: &str = "'use strict';\n\nconst { describe, it } = require('node:test');\nconst assert = require('node:assert');\n\ndescribe('stats', () => {\n  it('averages nothing to zero', () => {\n    assert.strictEqual(0 / 1, 0);\n  });\n});\n";

    /// A JavaScript test file's canaries, run for real by `node --test`
    /// through the node preset's reporter and read back from its report:
    /// the must-pass passes, the must-fail fails, both named `file > title`
    /// and taken out of the reading. Skipped where there is no `node`.
    #[test]
    fn javascript_canaries_run_under_node_test_and_read_back_by_title() {
        let p = planted(Format::JestJson, "test/stats.test.js", JS_FILE, 5);
        assert_eq!(p.canaries.len(), 2);
        let text = String::from_utf8(p.files[0].1.clone()).unwrap();
        assert_eq!(text.matches("\nit('").count(), 2, "{text}");
        assert_eq!(text.matches("assert.strictEqual(").count(), 3, "{text}");
        for c in &p.canaries {
            assert!(c.name.contains(' ') && !JS_FILE.contains(&c.name), "{c:?}");
        }
        // jest/vitest style files assert with `expect`.
        let jest = "test('adds', () => {\n  expect(1 + 1).toBe(2);\n});\n";
        let pj = planted(Format::JestJson, "src/__tests__/add.ts", jest, 5);
        let jtext = String::from_utf8(pj.files[0].1.clone()).unwrap();
        assert_eq!(jtext.matches("\ntest('").count(), 2, "{jtext}");
        assert_eq!(jtext.matches(").toBe(").count(), 3, "{jtext}");
        // Not a test file by its name: no canary.
        assert!(
            plant(
                Format::JestJson,
                "x",
                &[hidden("src/add.js", jest)],
                [0; 32],
                None
            )
            .is_err()
        );

        if std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("no node: the run half of this test is skipped");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("test")).unwrap();
        std::fs::write(dir.path().join("test/stats.test.js"), &text).unwrap();
        let reporter = dir.path().join("reporter.mjs");
        std::fs::write(
            &reporter,
            include_str!("../../pipeline/presets/node-reporter.mjs"),
        )
        .unwrap();
        let out = std::process::Command::new("node")
            .arg("--test")
            .arg(format!("--test-reporter={}", reporter.display()))
            .arg("--test-reporter-destination=report.json")
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let bytes = std::fs::read(dir.path().join("report.json")).unwrap();
        let report = assay_report::parse_under(Format::JestJson, &bytes, &[dir.path()]).unwrap();
        let mut tests: BTreeMap<String, Outcome> = report
            .tests
            .iter()
            .map(|t| (t.name.clone(), t.outcome))
            .collect();
        let mut files: BTreeMap<String, String> = report
            .tests
            .iter()
            .filter_map(|t| Some((t.name.clone(), t.file.clone()?)))
            .collect();
        let read = read(&p, &mut tests, &mut files);
        for c in &read {
            let want = match c.must {
                Must::Pass => Outcome::Passed,
                Must::Fail => Outcome::Failed,
            };
            assert_eq!((c.seen, c.expected), (Some(want), true), "{c:?}");
        }
        assert_eq!(
            tests.keys().collect::<Vec<_>>(),
            ["test/stats.test.js > stats > averages nothing to zero"]
        );
        assert_eq!(forged(&read, true), None);
    }

    #[test]
    fn the_canaries_run_as_their_framework_says() {
        let go = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n";
        let p = planted(Format::GoTestJson, "calc_test.go", go, 3);
        let text = String::from_utf8(p.files[0].1.clone()).unwrap();
        assert!(
            text.contains("(t *testing.T) {\n\tif got, want := "),
            "{text}"
        );
        assert!(p.canaries.iter().all(|c| c.name.starts_with("Test")));
        // A build-constrained file may not run: no canary there.
        let tagged = format!("//go:build integration\n\n{go}");
        assert!(
            plant(
                Format::GoTestJson,
                "go test",
                &[hidden("x_test.go", &tagged)],
                [0; 32],
                None,
            )
            .is_err()
        );
        let rust = "#[test]\nfn parses_empty() {\n    assert!(true);\n}\n";
        let cargo = "cargo test --no-fail-fast";
        let p = plant(
            Format::Libtest,
            cargo,
            &[hidden("tests/parse.rs", rust)],
            [4; 32],
            None,
        )
        .unwrap();
        let text = String::from_utf8(p.files[0].1.clone()).unwrap();
        assert_eq!(text.matches("#[test]").count(), 3, "{text}");
        let refused = plant(
            Format::Libtest,
            "cargo test",
            &[hidden("tests/parse.rs", rust)],
            [4; 32],
            None,
        );
        assert!(refused.unwrap_err().contains("--no-fail-fast"));
        let failfast = plant(
            Format::Pytest,
            "pytest -x",
            &[hidden("tests/test_a.py", UNITTEST_FILE)],
            [0; 32],
            None,
        );
        assert!(failfast.unwrap_err().contains("`-x`"));
    }

    /// Every Deep-SWE task was weakly checked: assay's own wrapper says
    /// `rm -f` and `[ -f … ]`, which the check took for unittest's `-f`.
    #[test]
    fn a_wrappers_rm_f_and_file_tests_are_no_fail_fast_flags() {
        let wrapper = "bash -c 'ASSAY_TREE=\"$PWD\"\nrm -f \"$ASSAY_TREE/report.json\"\n\
            [ -f \"$ASSAY_ENV/image.env\" ] && . \"$ASSAY_ENV/image.env\"\nset -x\n\
            if [[ -f x ]]; then tar -xf a.tar; fi\n\
            run_log python3 -m pytest tests/ -k \"not slow\" --junitxml=/tmp/r.xml\n'";
        assert_eq!(stops_at_first_failure(wrapper), None);
        assert_eq!(
            stops_at_first_failure("rm -f x && [ -f y ] && go test ./..."),
            None
        );
        // The runners' own flags are still refused, wrapped or not.
        for (command, flag) in [
            ("python -m unittest -f tests", "-f"),
            ("bash -c 'rm -f r.xml\npython -m unittest -f tests'", "-f"),
            (
                "bash -c 'rm -f r.xml; go test -failfast ./...'",
                "-failfast",
            ),
            ("python -m unittest --failfast", "--failfast"),
            ("pytest -k \"a or b\" -x", "-x"),
            ("FOO=1 /usr/bin/python3 -m pytest -x", "-x"),
            ("npx mocha --bail", "--bail"),
        ] {
            assert_eq!(stops_at_first_failure(command), Some(flag), "{command}");
        }
        assert!(
            refused(Format::Ctrf, wrapper).is_ok(),
            "the wrapper alone is no reason to refuse canaries"
        );
    }

    #[test]
    fn a_pipelines_own_template_plants_two_canaries_in_the_files_it_names() {
        let js = "test('adds', () => { expect(add(1, 2)).toBe(3); });\n";
        let files = crate::model::rules::policy::globset(&["**/*.test.js".to_owned()]).unwrap();
        let custom = Custom {
            files: &files,
            template: "test('{name}', () => { expect({a} + {b}).toBe({sum}); });",
        };
        let p = plant(
            Format::Junit,
            "npx jest",
            &[hidden("src/add.test.js", js), hidden("src/add.js", "x")],
            [9; 32],
            Some(&custom),
        )
        .unwrap();
        assert_eq!(p.canaries.len(), 2);
        assert_eq!(p.files.len(), 1, "only the matching file");
        let text = String::from_utf8(p.files[0].1.clone()).unwrap();
        for c in &p.canaries {
            assert!(text.contains(&format!("test('{}', ", c.name)), "{text}");
        }
        // Read back from a JUnit report that names the file.
        let mut tests: BTreeMap<String, Outcome> = p
            .canaries
            .iter()
            .map(|c| {
                (
                    format!("src/add.test.js.{}", c.name),
                    honest(c.must).unwrap(),
                )
            })
            .collect();
        tests.insert("src/add.test.js.adds".into(), Outcome::Passed);
        let c = read(&p, &mut tests, &mut BTreeMap::new());
        assert!(c.iter().all(|c| c.expected && c.seen.is_some()), "{c:?}");
        assert_eq!(forged(&c, true), None);
        let none = crate::model::rules::policy::globset(&["**/*.spec.ts".to_owned()]).unwrap();
        let custom = Custom {
            files: &none,
            template: "x",
        };
        let missing = plant(
            Format::Junit,
            "jest",
            &[hidden("a.test.js", js)],
            [1; 32],
            Some(&custom),
        );
        assert!(missing.is_err());
    }

    /// A reading with the file's real test and the two canaries, as the
    /// canary outcomes say.
    fn reading(
        p: &Planted,
        real: Outcome,
        outcome: impl Fn(Must) -> Option<Outcome>,
    ) -> BTreeMap<String, Outcome> {
        let mut tests = BTreeMap::new();
        tests.insert(
            "tests.test_ops.TestDivide.test_divide_by_zero".to_owned(),
            real,
        );
        for c in &p.canaries {
            if let Some(o) = outcome(c.must) {
                tests.insert(format!("tests.test_ops.{}", c.name), o);
            }
        }
        tests
    }

    fn honest(m: Must) -> Option<Outcome> {
        Some(match m {
            Must::Pass => Outcome::Passed,
            Must::Fail => Outcome::Failed,
        })
    }

    #[test]
    fn an_honest_reading_is_not_forged_and_loses_its_canaries() {
        let p = planted(Format::Unittest, "tests/test_ops.py", UNITTEST_FILE, 5);
        let mut tests = reading(&p, Outcome::Passed, honest);
        let read_back = read(&p, &mut tests, &mut BTreeMap::new());
        assert_eq!(tests.len(), 1, "only the real test is left: {tests:?}");
        assert!(read_back.iter().all(|c| c.expected && c.seen.is_some()));
        assert_eq!(forged(&read_back, true), None);
    }

    #[test]
    fn a_must_fail_canary_that_passed_forges_the_reading_whatever_else_it_says() {
        let p = planted(Format::Unittest, "tests/test_ops.py", UNITTEST_FILE, 6);
        let mut tests = reading(&p, Outcome::Failed, |_| Some(Outcome::Passed));
        let c = read(&p, &mut tests, &mut BTreeMap::new());
        let why = forged(&c, false).expect("forged");
        assert!(why.contains("must fail and passed"), "{why}");
    }

    #[test]
    fn a_missing_or_wrong_canary_forges_a_reading_only_when_it_would_pass() {
        let p = planted(Format::Unittest, "tests/test_ops.py", UNITTEST_FILE, 7);
        let mut tests = reading(&p, Outcome::Passed, |_| None);
        let c = read(&p, &mut tests, &mut BTreeMap::new());
        assert!(forged(&c, true).unwrap().contains("is missing"));
        assert_eq!(forged(&c, false), None);
        // Told apart and failed on purpose: the must-pass did not pass.
        let mut tests = reading(&p, Outcome::Passed, |_| Some(Outcome::Failed));
        let c = read(&p, &mut tests, &mut BTreeMap::new());
        assert!(forged(&c, true).unwrap().contains("must pass"));
        // A reading that ran none of the file's tests expects no canary.
        let mut tests = BTreeMap::from([("tests.test_x.T.test_other".to_owned(), Outcome::Passed)]);
        let c = read(&p, &mut tests, &mut BTreeMap::new());
        assert!(c.iter().all(|c| !c.expected));
        assert_eq!(forged(&c, true), None);
    }

    #[test]
    fn a_command_naming_renamed_tests_names_them_as_the_run_does() {
        let mut planted = Planted {
            renamed: BTreeMap::from([
                ("test_zero_value".to_owned(), "test_add".to_owned()),
                ("test_value_range".to_owned(), "test_add".to_owned()),
                ("test_order_case".to_owned(), "test_sub".to_owned()),
            ]),
            renamed_in: BTreeMap::from([
                ("test_zero_value".to_owned(), "tests/test_ops.py".to_owned()),
                (
                    "test_value_range".to_owned(),
                    "tests/test_more.py".to_owned(),
                ),
                ("test_order_case".to_owned(), "tests/test_ops.py".to_owned()),
            ]),
            ..Planted::default()
        };
        let command = "python3 -m unittest -v tests.test_ops.TestOps.test_sub tests.test_more.T.test_add tests.test_ops.TestOps.test_add_two";
        assert_eq!(
            renamed_command(command, &mut planted),
            "python3 -m unittest -v tests.test_ops.TestOps.test_order_case tests.test_more.T.test_value_range tests.test_ops.TestOps.test_add_two"
        );
        assert_eq!(
            renamed_command("go test -run '^(TestA)$'", &mut Planted::default()),
            "go test -run '^(TestA)$'"
        );
    }

    /// A check or rerun naming a test names its window's members too, so
    /// the command does not single out the original among them.
    #[test]
    fn a_command_naming_a_test_names_its_window_too_in_an_order_that_tells_nothing() {
        let file = "tests/test_ops.py";
        let canary = |name: &str, must| Canary {
            file: file.to_owned(),
            name: format!("TestOps.{name}"),
            must,
            seen: None,
            expected: false,
            of: None,
            original: None,
        };
        let mut planted = Planted {
            canaries: vec![
                canary("test_zero_case", Must::Fail),
                canary("test_add_value", Must::Fail),
                canary("test_value_case", Must::Pass),
            ],
            siblings: BTreeMap::from([(
                file.to_owned(),
                vec!["test_sub".into(), "test_add".into()],
            )]),
            renamed: BTreeMap::from([
                ("test_value_range".to_owned(), "test_sub".to_owned()),
                ("test_order_case".to_owned(), "test_add".to_owned()),
            ]),
            kin: BTreeMap::from([
                (
                    "test_value_range".to_owned(),
                    vec!["test_zero_case".to_owned(), "test_add_value".to_owned()],
                ),
                (
                    "test_order_case".to_owned(),
                    vec!["test_value_case".to_owned()],
                ),
            ]),
            ..Planted::default()
        };
        let mut whole = planted.clone();
        assert_eq!(
            renamed_command(
                "pytest tests/test_ops.py::TestOps::test_sub -q",
                &mut planted
            ),
            "pytest tests/test_ops.py::TestOps::test_add_value tests/test_ops.py::TestOps::test_value_range tests/test_ops.py::TestOps::test_zero_case -q"
        );
        // Only the named test's canaries are expected in its reading.
        let mut tests = BTreeMap::from([
            (
                "tests/test_ops.py::TestOps::test_value_range".to_owned(),
                Outcome::Passed,
            ),
            (
                "tests/test_ops.py::TestOps::test_zero_case".to_owned(),
                Outcome::Failed,
            ),
            (
                "tests/test_ops.py::TestOps::test_add_value".to_owned(),
                Outcome::Failed,
            ),
        ]);
        let c = read(&planted, &mut tests, &mut BTreeMap::new());
        let expected: Vec<bool> = c.iter().map(|c| c.expected).collect();
        assert_eq!(expected, [true, true, false]);
        assert_eq!(forged(&c, true), None);
        assert_eq!(
            tests.keys().collect::<Vec<_>>(),
            ["tests/test_ops.py::TestOps::test_sub"]
        );
        // A command that names no test expects every canary of a file it ran.
        assert_eq!(renamed_command("pytest -q", &mut whole), "pytest -q");
        assert_eq!(whole.selected, None);
    }

    #[test]
    fn a_file_or_module_named_like_a_renamed_test_keeps_its_name() {
        let mut planted = Planted {
            renamed: BTreeMap::from([("test_zero_value".to_owned(), "test_mul".to_owned())]),
            ..Planted::default()
        };
        assert_eq!(
            renamed_command(
                "python3 -m unittest -v tests/test_mul.py tests.test_mul.T.test_mul",
                &mut planted
            ),
            "python3 -m unittest -v tests/test_mul.py tests.test_mul.T.test_zero_value"
        );
    }

    #[test]
    fn report_ids_name_a_canary_in_every_framework_spelling() {
        assert!(names_test(
            "tests.test_x.TestValueOrder.test_value_order",
            "TestValueOrder.test_value_order"
        ));
        assert!(names_test(
            "tests/test_x.py::test_value_order",
            "test_value_order"
        ));
        assert!(names_test(
            "tests/test_x.py::test_value_order[1]",
            "test_value_order"
        ));
        assert!(names_test(
            "example.com/calc.TestValueOrder",
            "TestValueOrder"
        ));
        assert!(names_test("tests::value_order", "value_order"));
        assert!(!names_test(
            "tests.test_x.T.test_value_order_two",
            "test_value_order"
        ));
        assert!(!names_test(
            "tests.test_x.T.xtest_value_order",
            "test_value_order"
        ));
        assert_eq!(last_segment("tests/test_x.py::test_a[1]"), "test_a");
        assert_eq!(last_segment("pkg.TestA"), "TestA");
    }
}
