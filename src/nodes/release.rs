//! `release`: the published set. Its output names each release file by blob
//! digest (the files are its attachments); the CLI writes them to `release/`.
//! `tasks.jsonl` holds the released tasks (SWE-bench field names plus `digest`,
//! the task node's key); `funnel.json` counts candidates → eligible → screened
//! → certified with the reasons for every loss. What the node is given is
//! in `release_inputs`, what it reads of each input in `release_gather`.

use std::collections::BTreeMap;
use std::sync::Arc;

use assay_engine::{Digest, JobCtx, KeyRecord, SCHEMA_VERSION, encode_params};
use serde::{Deserialize, Serialize};

use super::adapter::{Kind, Made, NodeKind, Raw};
use super::release_gather::Gathered;
pub(crate) use super::release_inputs::{Input, InstanceRows, ReleaseInputs, ReleaseParams};
use crate::release::{About, Funnel, Limits, Listed, PublishInput, Sink, publish_into};
use crate::run::error::{Context, Kinded, NodeError};

/// 3: a release without sessions publishes too (summary.json, report.html
/// with the tasks, the funnel and what to do next, manifest.json), so a
/// first build has a page to open and a digest to anchor it.
/// 4: results.csv writes a list over 4,096 characters by its count.
pub(crate) const KIND_VERSION: u32 = 4;

/// The files the release node writes beside what publish makes, which
/// manifest.json does not list (the recomputation checks them): the tasks
/// (`tasks.jsonl`, SWE-bench-loadable), the funnel, the uncertified tasks
/// and a `[[harbor_dataset]]`'s tasks.
pub(crate) const BESIDE_MANIFEST: [&str; 4] = [
    "tasks.jsonl",
    "funnel.json",
    "tasks.uncertified.jsonl",
    "harbor-tasks.jsonl",
];

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ReleaseRecord {
    /// File name -> blob digest.
    pub(crate) files: BTreeMap<String, String>,
    pub(crate) funnel: Funnel,
}

/// The release node: every task, session, grade, metrics and judge reading,
/// described in its params' `inputs`, made into the release files.
pub(crate) struct Release(pub(crate) ReleaseParams);

impl Kind for Release {
    const NAME: &'static str = NodeKind::Release.as_str();
    /// 2: manifest.json carries the provenance.
    const VERSION: u32 = KIND_VERSION;
    type Params = ReleaseParams;
    type Inputs = Raw;
    type Record = ReleaseRecord;

    fn params(&self) -> &ReleaseParams {
        &self.0
    }

    async fn run(self: Arc<Self>, raw: Raw, ctx: JobCtx) -> Result<Made<ReleaseRecord>, NodeError> {
        let mut ph = crate::run::phase::Phases::new("release");
        let inputs: Vec<(&[u8], Digest)> = raw.0.iter().map(|(b, k)| (b.as_slice(), *k)).collect();
        // Each file goes to the blob store as soon as it is made: a large
        // release is never whole in memory.
        let mut sink = ToBlobs {
            blobs: &ctx.blobs,
            attachments: Vec::new(),
        };
        let (files, funnel) = assemble(&self.0, &inputs, &read_from(&ctx.blobs), &mut sink)?;
        ph.mark("assemble");
        Ok(Made {
            record: ReleaseRecord { files, funnel },
            attachments: sink.attachments,
        })
    }
}

/// The release node's [`Sink`]: the blob store, each file an attachment.
struct ToBlobs<'b> {
    blobs: &'b assay_engine::Blobs,
    attachments: Vec<Digest>,
}

impl Sink for ToBlobs<'_> {
    type Error = NodeError;

    fn put(&mut self, _name: &str, bytes: Vec<u8>) -> Result<String, NodeError> {
        let d = self.blobs.put(&bytes).cache()?;
        self.attachments.push(d);
        Ok(d.to_hex())
    }
}

/// Reads a content-addressed blob by its hex digest: the blob store for the
/// job and `verify --release`, an audit bundle's `blobs/` for `verify --bundle`.
pub(crate) type ReadBlob<'a> = &'a dyn Fn(&str) -> Result<Vec<u8>, NodeError>;

/// The [`ReadBlob`] of a blob store: a name that is no digest is the
/// record's (its input), a blob that does not read the cache's.
pub(crate) fn read_from(
    blobs: &assay_engine::Blobs,
) -> impl Fn(&str) -> Result<Vec<u8>, NodeError> + '_ {
    move |hex: &str| {
        let d: Digest = hex.parse().input()?;
        blobs.get(&d).cache()
    }
}

/// The release files from the release node's inputs (each with its node
/// key), in input order, each handed to `sink` as it is made; returns
/// every file's name and digest. A pure function, shared by the job and
/// `assay verify`.
/// The only blobs it reads are the session patches and transcripts (for the
/// report), which the session records name by digest: the release key
/// covers them. A record that does not read is an [`ErrorKind::Input`]
/// failure: under `verify --bundle` the records are the bundle's.
///
/// [`ErrorKind::Input`]: crate::run::error::ErrorKind::Input
pub(crate) fn assemble<S: Sink>(
    params: &ReleaseParams,
    inputs: &[(&[u8], Digest)],
    read: ReadBlob<'_>,
    sink: &mut S,
) -> Result<(Listed, Funnel), NodeError>
where
    NodeError: From<S::Error>,
{
    if inputs.len() != params.inputs.len() {
        return Err(NodeError::input(format!(
            "{} inputs, but the params describe {}",
            inputs.len(),
            params.inputs.len()
        )));
    }
    let mut ph = crate::run::phase::Phases::new("assemble");
    let mut gathered = Gathered::new(params);
    for ((bytes, key), kind) in inputs.iter().map(|(b, k)| (*b, k)).zip(&params.inputs) {
        gathered.take(params, kind, bytes, key)?;
    }
    ph.mark("inputs");
    let Gathered {
        mut funnel,
        lines,
        uncertified_lines,
        harbor_lines,
        per_candidate,
        mut publish_input,
    } = gathered;
    funnel.candidates = per_candidate.len();
    for p in per_candidate.values() {
        match &p.declined {
            Some(reason) => *funnel.declined.entry(reason.clone()).or_default() += 1,
            None => {
                funnel.eligible += 1;
                funnel.screened += usize::from(p.screened);
                funnel.certified += usize::from(p.certified);
            }
        }
    }
    let jsonl = |mut lines: Vec<(String, String, String)>| {
        lines.sort();
        let mut out = String::new();
        for (_, _, l) in lines {
            out.push_str(&l);
            out.push('\n');
        }
        out.into_bytes()
    };
    let funnel_json = serde_json::to_vec_pretty(&funnel).map_err(NodeError::internal)?;
    let mut files = BTreeMap::new();
    let mut put = |name: &str, bytes: Vec<u8>| -> Result<(), NodeError> {
        files.insert(name.to_owned(), sink.put(name, bytes)?);
        Ok(())
    };
    let [tasks, funnel_file, uncertified, harbor] = BESIDE_MANIFEST;
    put(tasks, jsonl(lines))?;
    put(funnel_file, funnel_json)?;
    // Uncertified tasks never score an agent: a file of their own (always
    // written, so no stale one survives), and the SWE-bench-loadable
    // `tasks.jsonl` holds only tasks whose controls hold.
    put(uncertified, jsonl(uncertified_lines))?;
    // A `[[harbor_dataset]]`'s tasks, certified or not, with their readings.
    if !harbor_lines.is_empty() {
        put(harbor, jsonl(harbor_lines))?;
    }
    publish_input.not_graded.sort();
    publish_input.not_graded.dedup();
    read_blobs(&mut publish_input, read)?;
    ph.mark("patches");
    let key = release_key(params, inputs);
    ph.mark("key");
    publish_input.about = About {
        funnel: funnel.clone(),
        provenance: params.provenance.clone(),
        release_node: key.to_hex(),
        harbor_changed: params.harbor_changed.values().max().cloned(),
    };
    publish_input.harbor_screens.sort_by(|a, b| a.id.cmp(&b.id));
    // With provenance, publish seals it into manifest.json.
    files.extend(publish_into(&publish_input, &Limits::RELEASE, sink)?);
    Ok((files, funnel))
}

/// The blobs the report shows, read once each: the sessions' patches and
/// transcripts, and the app grades' failing screenshots.
fn read_blobs(publish_input: &mut PublishInput, read: ReadBlob<'_>) -> Result<(), NodeError> {
    for s in &publish_input.sessions {
        if !s.patch.is_empty() && !publish_input.patches.contains_key(&s.patch) {
            let patch = read(&s.patch).with_context(|| format!("session {}: patch", s.id))?;
            publish_input.patches.insert(s.patch.clone(), patch);
        }
        if let Some(t) = &s.transcript
            && !publish_input.transcripts.contains_key(t)
        {
            let bytes = read(t).with_context(|| format!("session {}: transcript", s.id))?;
            publish_input.transcripts.insert(t.clone(), bytes);
        }
    }
    for (g, _) in &publish_input.app_grades {
        if let Some(shot) = g.failing_shot.as_ref().filter(|s| !s.png.is_empty())
            && !publish_input.shots.contains_key(&shot.png)
        {
            let png =
                read(&shot.png).with_context(|| format!("session {}: screenshot", g.session))?;
            publish_input.shots.insert(shot.png.clone(), png);
        }
    }
    Ok(())
}

/// The release node's key, from its params and its inputs' bytes: what the
/// engine computes for it.
fn release_key(params: &ReleaseParams, inputs: &[(&[u8], Digest)]) -> Digest {
    KeyRecord {
        schema: SCHEMA_VERSION,
        kind: NodeKind::Release.as_str().to_owned(),
        kind_version: KIND_VERSION,
        params: encode_params(params),
        deps: inputs.iter().map(|(b, _)| Digest::of(b)).collect(),
    }
    .key()
}
