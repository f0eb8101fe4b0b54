//! Certification's side: the planting of one file over the gold tree
//! (every test renamed, copied and mutated; or every sealable site
//! sealed), and what its reading keeps.

use std::collections::{BTreeMap, BTreeSet};

use assay_report::Outcome;

use super::mutant::{
    CERTIFY_CAP, Certified, Change, Mutant, Names, Rewritten, SITES, Sealing, Trial, assemble,
    canary_of, report_name, seal_originals, window,
};
use crate::model::canary::seal;
use crate::model::canary::shape::{Lang, Rng};
use crate::model::canary::source::{TestRef, blocks, strings};

/// Certification's planting of one file: every test renamed, copied, and
/// mutated at up to [`SITES`] sites, a window of values each.
pub(crate) fn certify_file(
    lang: Lang,
    path: &str,
    text: &str,
    beside: &str,
    rng: &mut Rng,
) -> Option<Rewritten> {
    let lines: Vec<&str> = text.lines().collect();
    let blocks = blocks(lang, text);
    if blocks.is_empty() {
        return None;
    }
    let mut names = Names::new(lang, &blocks, text, beside);
    let mut pool = strings(lang, text);
    for s in strings(lang, beside) {
        if !pool.contains(&s) {
            pool.push(s);
        }
    }
    let mut renames = BTreeMap::new();
    let mut renamed = BTreeMap::new();
    let mut inserts = Vec::new();
    let mut trials = Vec::new();
    let mut canaries = Vec::new();
    let mut planted = 0;
    for b in &blocks {
        let fresh = names.fresh(rng);
        renamed.insert(fresh.clone(), b.name.clone());
        renames.insert(b.def_line, fresh);
        let of = TestRef {
            file: path.to_owned(),
            class: b.class.clone(),
            test: b.name.clone(),
            id: String::new(),
        };
        let mut plant = |mutant: Option<Mutant>, rng: &mut Rng| {
            let Some((insert, canary)) = canary_of(
                path,
                &lines,
                &blocks,
                b,
                &mut names,
                rng,
                mutant.as_ref(),
                None,
            ) else {
                return;
            };
            inserts.push(insert);
            trials.push(Trial {
                name: canary.name.clone(),
                of: of.clone(),
                mutant,
            });
            canaries.push(canary);
        };
        plant(None, rng);
        for site in b.windows.iter().take(SITES) {
            if planted >= CERTIFY_CAP {
                break;
            }
            for to in window(lang, &site.text, &pool, rng) {
                planted += 1;
                let m = Mutant {
                    of: of.clone(),
                    line: site.line as u32,
                    col: site.col as u32,
                    also: Change::of(&site.also, &to),
                    from: site.text.clone(),
                    to,
                    fail_to_pass: false,
                };
                plant(Some(m), rng);
            }
        }
    }
    let text = assemble(&lines, &blocks, &renames, inserts);
    Some(Rewritten {
        text,
        canaries,
        renamed,
        trials,
        bits: 0.0,
        sealed: Vec::new(),
        kin: BTreeMap::new(),
    })
}

/// Certification's sealed reading of one file: every sealable assertion
/// of every test sealed, nothing renamed or planted besides; `None` when
/// there is none (or the file already uses a name the helper declares).
pub(crate) fn seal_file(
    lang: Lang,
    path: &str,
    text: &str,
    beside: &str,
    rng: &mut Rng,
) -> Option<Rewritten> {
    if seal::clashes(lang, text, beside) {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let blocks = seal::sealed_blocks(lang, text);
    let mut sealing = Sealing {
        lang,
        path,
        sites: blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| !b.seals.is_empty())
            .map(|(k, b)| (k, b.seals.iter().collect()))
            .collect(),
        planted: Vec::new(),
    };
    if sealing.sites.is_empty() {
        return None;
    }
    let sealed = seal_originals(&lines, &blocks, &BTreeMap::new(), &mut sealing, rng);
    let refs: Vec<&str> = sealed.iter().map(String::as_str).collect();
    Some(Rewritten {
        text: seal::with_helper(
            lang,
            &assemble(&refs, &blocks, &BTreeMap::new(), Vec::new()),
        ),
        canaries: Vec::new(),
        renamed: BTreeMap::new(),
        trials: Vec::new(),
        bits: 0.0,
        sealed: sealing.planted,
        kin: BTreeMap::new(),
    })
}

/// What certification's reading says: the copies that passed and the
/// mutants that failed while their original passed, every original by its
/// report id; and the files whose originals all kept `gold`'s outcome
/// (passed when every gold reading passed them). `reading`: the certify
/// run's outcomes with the canaries taken out and the originals' names
/// given back; `seen`: each trial's outcome.
pub(crate) fn certified(
    trials: &[(Trial, Option<Outcome>)],
    reading: &BTreeMap<String, Outcome>,
    gold_passed: &BTreeSet<String>,
    files: &[String],
) -> Certified {
    // The report id of each original: the id naming its class and test.
    // A JavaScript id names its file first: a title of another file is
    // not this test.
    let id_of = |t: &TestRef| -> Option<String> {
        reading
            .keys()
            .filter(|id| !id.contains(" > ") || id.starts_with(&format!("{} > ", t.file)))
            .find(|id| {
                crate::model::canary::reading::names_test(
                    id,
                    &report_name(t.class.as_deref(), &t.test),
                )
            })
            .cloned()
    };
    let mut out = Certified::default();
    let mut broken: BTreeSet<&str> = BTreeSet::new();
    let mut ids: BTreeMap<&TestRef, Option<String>> = BTreeMap::new();
    for (t, _) in trials {
        ids.entry(&t.of).or_insert_with(|| id_of(&t.of));
    }
    for (t, id) in &ids {
        let now = id.as_ref().and_then(|id| reading.get(id));
        let was = id.as_ref().is_some_and(|id| gold_passed.contains(id));
        if was && now != Some(&Outcome::Passed) {
            broken.insert(&t.file);
        }
    }
    for (trial, seen) in trials {
        if broken.contains(trial.of.file.as_str()) {
            continue;
        }
        let Some(Some(id)) = ids.get(&trial.of) else {
            continue;
        };
        if !gold_passed.contains(id) || reading.get(id) != Some(&Outcome::Passed) {
            continue;
        }
        let of = TestRef {
            id: id.clone(),
            ..trial.of.clone()
        };
        match (&trial.mutant, seen) {
            (None, Some(Outcome::Passed)) => out.copies.push(of),
            (Some(m), Some(Outcome::Failed | Outcome::Error)) => {
                out.mutants.push(Mutant { of, ..m.clone() })
            }
            _ => {}
        }
    }
    out.renamed = files
        .iter()
        .filter(|f| !broken.contains(f.as_str()) && trials.iter().any(|(t, _)| t.of.file == **f))
        .cloned()
        .collect();
    out.mutants.sort();
    out.copies.sort();
    out.copies.dedup();
    out
}
