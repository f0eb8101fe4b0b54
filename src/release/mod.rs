//! The release files built from grades: `results.csv`, `summary.json`,
//! `report.html` and `manifest.json`.
//!
//! [`publish`] is a pure function: the same input gives the same bytes, in
//! whatever order the input lists its grades, sessions, metrics or tasks.
//! Everything is sorted, maps are BTreeMaps, no clock is read, and published
//! floats are rounded to six decimals (see [`stats::round6`]) so an auditor in any
//! language can reproduce them.
//!
//! Scoring rules (what summary.json counts):
//! - each session is scored once, on its `exclude` arm; a session graded only
//!   on the `keep` arm is scored on that one;
//! - a grade on a task released as uncertified never scores an agent: the
//!   session is listed under `not_graded` with the reason `task uncertified`;
//! - `resolved_after_rerun` is counted apart and is not in the resolved rate;
//! - empty-patch sessions stay in `n` (they score zero) and are also counted
//!   apart as `empty_patch`;
//! - where a session's `exclude` and `keep` arms disagree, it is listed in
//!   `verifier_suspects`: the verifier, not the agent, is the suspect.
//!
//! Files, one concern each, none importing this root:
//! - `input` (what it is computed from) → `judged` (the readings, indexed)
//!   → `index` (the input sorted and cross-referenced once);
//! - `model`: the release as types (`Summary`, `Manifest`);
//! - `summary` + `judge_summary`: the assembly of the model, recording the
//!   sources of its numbers (`sources`); `stats`: the arithmetic;
//! - `quality`: the `[[metric]]` figures, each session's against its gold;
//! - one renderer per file: `csv` (results.csv), `html` + `html_chart` +
//!   `html_leaderboard` + `html_judge` (report.html, with `markup`), the
//!   pages beside it (`pages`: `html_transcript`, and `html_nav` for a page
//!   per task, holding its sessions' sections from `detail`, and per
//!   agent), `manifest` (manifest.json); `links` (tests only) follows every
//!   link of a release.

mod apps;
mod csv;
mod detail;
mod html;
mod html_about;
mod html_chart;
mod html_harbor;
mod html_judge;
mod html_leaderboard;
mod html_matrix;
mod html_nav;
mod html_transcript;
mod index;
mod input;
mod instances;
mod judge_summary;
mod judged;
mod leaderboard;
mod limits;
#[cfg(test)]
mod links;
mod manifest;
mod markup;
mod model;
mod pages;
mod paths;
mod quality;
mod shards;
mod sources;
mod stats;
mod summary;
mod summary_checks;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_harbor;
#[cfg(test)]
mod tests_instances;
#[cfg(test)]
mod tests_judge;
#[cfg(test)]
mod tests_scale;
#[cfg(test)]
mod tests_split;
mod trials;

use std::collections::BTreeMap;

pub(crate) use csv::DIR as RESULTS_DIR;
pub(crate) use input::{About, HarborScreen, InstanceReading, Price, PublishInput};
pub(crate) use limits::Limits;
#[cfg(test)]
pub(crate) use model::Summary;
pub(crate) use model::{AssayVersion, Funnel, InstanceFunnel, Manifest, Name, Number, pretty};
pub(crate) use paths::{segment as path_segment, value_at};

/// File name -> blake3 (hex) of every file a publish made.
pub(crate) type Listed = BTreeMap<String, String>;

/// Where [`publish_into`] puts each release file as soon as it is made, so
/// that a release is never whole in memory: the blob store in the release
/// node, a map for `assay verify` and the tests, a directory for the scale
/// bench.
pub(crate) trait Sink {
    type Error;
    /// Keeps `bytes` as the file `name`; returns their blake3 (hex).
    fn put(&mut self, name: &str, bytes: Vec<u8>) -> Result<String, Self::Error>;
}

/// Every file kept in memory, by name.
impl Sink for BTreeMap<String, Vec<u8>> {
    type Error = std::convert::Infallible;

    fn put(&mut self, name: &str, bytes: Vec<u8>) -> Result<String, Self::Error> {
        let hex = assay_engine::Digest::of(&bytes).to_hex();
        self.insert(name.to_owned(), bytes);
        Ok(hex)
    }
}

/// File name -> bytes: `results.csv` (or its parts, `results/…`),
/// `summary.json`, `report.html`, the report's pages (`pages/…`),
/// `manifest.json` (and its shards, `manifest/…`).
#[cfg(test)]
pub(crate) fn publish(input: &PublishInput) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let Ok(_) = publish_into(input, &Limits::RELEASE, &mut files);
    files
}

/// [`publish`] within other limits.
#[cfg(test)]
fn publish_within(input: &PublishInput, limits: &Limits) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let Ok(_) = publish_into(input, limits, &mut files);
    files
}

/// A sink and what has been put into it.
struct Out<'s, S> {
    sink: &'s mut S,
    listed: Listed,
}

impl<S: Sink> Out<'_, S> {
    /// Puts one file; returns its digest.
    fn put(&mut self, name: String, bytes: Vec<u8>) -> Result<String, S::Error> {
        let hex = self.sink.put(&name, bytes)?;
        self.listed.insert(name, hex.clone());
        Ok(hex)
    }

    fn put_all(
        &mut self,
        files: impl IntoIterator<Item = (String, Vec<u8>)>,
    ) -> Result<(), S::Error> {
        files
            .into_iter()
            .try_for_each(|(n, b)| self.put(n, b).map(drop))
    }
}

/// The files of [`publish`], each handed to `sink` as it is made (a page
/// at a time); returns every file's name and digest.
pub(crate) fn publish_into<S: Sink>(
    input: &PublishInput,
    limits: &Limits,
    sink: &mut S,
) -> Result<Listed, S::Error> {
    let mut ph = crate::run::phase::Phases::new("publish");
    let mut out = Out {
        sink,
        listed: BTreeMap::new(),
    };
    let index = index::Index::new(input);
    ph.mark("index");
    csv::files(&index, limits.csv_above, limits.csv_bytes, &mut |n, b| {
        out.put(n, b).map(drop)
    })?;
    ph.mark("csv");
    let (summary, sources) = summary::summary(&index);
    ph.mark("summary");
    let html = html::report(&index, &summary, limits);
    ph.mark("report.html");
    out.put("summary.json".to_owned(), pretty(&summary))?;
    out.put("report.html".to_owned(), html.into_bytes())?;
    ph.mark("summary.json");
    out.put_all(html_transcript::pages(&index, html::CSS))?;
    ph.mark("transcript pages");
    html_nav::pages(&index, html::CSS, limits.agent_rows, &mut |n, b| {
        out.put(n, b).map(drop)
    })?;
    // A page of the matrix is about `matrix_sessions` cells: all of them
    // are a small part of the release.
    out.put_all(html_matrix::pages(
        &index,
        html::CSS,
        limits.matrix_sessions,
    ))?;
    ph.mark("nav pages");
    let mut manifest = manifest::manifest(&index, &out.listed, &summary, sources);
    drop(summary);
    ph.mark("manifest");
    if let Some(p) = &input.about.provenance {
        manifest::seal(
            &mut manifest,
            p,
            &input.about.release_node,
            &input.tasks,
            &input.grades,
        );
    }
    ph.mark("seal");
    shards::split(
        manifest,
        limits.shard_above,
        limits.shard_bytes,
        &mut |n, b| out.put(n, b),
    )?;
    ph.mark("manifest.json");
    Ok(out.listed)
}
