//! Lays out the benchmark's nodes: per candidate, triage → three trees →
//! `repeats` runs of each → screen → one task per topic and track; one env
//! node per distinct env key; one release node over every task.
//!
//! The graph is static: a declined candidate still has its nodes, which then
//! record "declined" in microseconds, so the DAG never depends on an output.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use assay_engine::{NodeSpec, encode_params};
use assay_git::{CandidateQuery, Source, TreeStore};
use serde::Serialize;

use super::env::EnvParams;
use super::run::RunParams;
use super::screen::ScreenParams;
use super::task::TaskParams;
use super::tree::{State, TreeParams};
use super::triage::{DEFAULT_DOCS_GLOBS, DEFAULT_TEST_GLOBS, TriageParams};
use super::{env, release, run, screen, task, tree, triage};
use crate::cli::Failure;
use crate::pipeline::{Pipeline, SourceConfig};

fn node<P: Serialize>(
    name: String,
    kind: &str,
    kind_version: u32,
    params: &P,
    deps: Vec<String>,
    observation: bool,
    job: std::sync::Arc<dyn assay_engine::Job>,
) -> NodeSpec {
    NodeSpec {
        name,
        kind: kind.to_owned(),
        kind_version,
        params: encode_params(params),
        params_json: serde_json::to_string(params).unwrap_or_default(),
        deps,
        observation,
        job,
    }
}

/// A candidate as the pipeline sees it, from git or from a candidates file.
#[derive(Debug, serde::Deserialize)]
struct CandidateLine {
    id: String,
    base: String,
    head: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: String,
}

pub(super) fn nodes(
    pipeline: &Pipeline,
    cache_dir: &Path,
    out: &mut Vec<NodeSpec>,
) -> Result<(), Failure> {
    if pipeline.file.source.is_empty() {
        return Ok(());
    }
    let Some(env_cfg) = &pipeline.file.env else {
        let span = pipeline.file.source[0].name.span();
        return Err(pipeline
            .error_at(
                span,
                "a [[source]] needs an [env] table",
                "this source",
                "add [env] with test_command and report (see docs/pipeline.md)",
            )
            .into());
    };
    let format: assay_report::Format = env_cfg.report.get_ref().parse().map_err(|_| {
        pipeline.error_at(
            env_cfg.report.span(),
            format!("unknown report format `{}`", env_cfg.report.get_ref()),
            "here",
            "use one of: junit, pytest, unittest, libtest, libtest-json, go-test-json, tap",
        )
    })?;
    let store_dir = cache_dir.join("git");
    let tree_store = TreeStore::open_or_init(&store_dir).map_err(Failure::cache)?;
    let triage_cfg = &pipeline.file.triage;
    let test_globs: Vec<String> = match &triage_cfg.test_globs {
        Some(g) => g.iter().map(|s| s.get_ref().clone()).collect(),
        None => DEFAULT_TEST_GLOBS.iter().map(|s| s.to_string()).collect(),
    };
    let mut test_globs = test_globs;
    test_globs.extend(
        triage_cfg
            .extra_test_globs
            .iter()
            .map(|s| s.get_ref().clone()),
    );
    let docs_globs: Vec<String> = match &triage_cfg.docs_globs {
        Some(g) => g.iter().map(|s| s.get_ref().clone()).collect(),
        None => DEFAULT_DOCS_GLOBS.iter().map(|s| s.to_string()).collect(),
    };
    for (globs, which) in [
        (&triage_cfg.test_globs, "test_globs"),
        (&triage_cfg.docs_globs, "docs_globs"),
    ] {
        for g in globs
            .iter()
            .flatten()
            .chain(triage_cfg.extra_test_globs.iter())
        {
            if let Err(e) = globset::Glob::new(g.get_ref()) {
                return Err(pipeline
                    .error_at(
                        g.span(),
                        format!("invalid glob in {which}: {e}"),
                        "this glob",
                        "globs use `*`, `**`, `?` and `[...]`",
                    )
                    .into());
            }
        }
    }
    let repeats = pipeline.file.screen.repeats.unwrap_or(2).max(1);
    let timeout = env_cfg.timeout.unwrap_or(300);
    let log_cap = env_cfg.log_cap.unwrap_or(64 << 20);
    let statements_dir = pipeline
        .file
        .statements
        .as_ref()
        .map(|s| pipeline.resolve(s.get_ref()));
    let splits: BTreeMap<&String, Vec<(String, String)>> = pipeline
        .file
        .topic_split
        .iter()
        .map(|t| {
            (
                t.candidate.get_ref(),
                t.topics
                    .get_ref()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )
        })
        .collect();
    for t in &pipeline.file.topic_split {
        for (name, pat) in t.topics.get_ref() {
            if let Err(e) = regex::Regex::new(pat) {
                return Err(pipeline
                    .error_at(
                        t.topics.span(),
                        format!("topic `{name}`: invalid pattern: {e}"),
                        "in these topics",
                        "patterns are regular expressions over test names",
                    )
                    .into());
            }
        }
    }

    let mut env_nodes: HashSet<String> = HashSet::new();
    let mut release_deps = Vec::new();
    let mut release_candidates = Vec::new();
    let mut seen_candidates = HashSet::new();
    for src in &pipeline.file.source {
        let (source, candidates) = open_source(pipeline, src)?;
        tree_store
            .add_alternate(&source.objects_dir())
            .map_err(Failure::cache)?;
        for c in candidates {
            if !seen_candidates.insert(c.id.clone()) {
                continue;
            }
            let cid = c.id.clone();
            // Environment: spec + key files' content at the base commit.
            let mut key_files = Vec::new();
            let mut files = Vec::new();
            for kf in &env_cfg.key_files {
                match source.read_file(&c.base, kf).map_err(Failure::cache)? {
                    Some(bytes) => {
                        key_files.push((kf.clone(), blake3::hash(&bytes).to_hex().to_string()));
                        files.push((kf.clone(), bytes));
                    }
                    None => key_files.push((kf.clone(), "absent".into())),
                }
            }
            let env_params = EnvParams {
                setup: env_cfg.setup.clone(),
                key_files,
            };
            let env_name = format!(
                "env:{}",
                &blake3::hash(&encode_params(&env_params)).to_hex()[..12]
            );
            if env_nodes.insert(env_name.clone()) {
                out.push(node(
                    env_name.clone(),
                    "env",
                    env::KIND_VERSION,
                    &env_params,
                    vec![],
                    false,
                    env::job(
                        env_params.clone(),
                        files,
                        Duration::from_secs(timeout.max(600)),
                        cache_dir.to_owned(),
                    ),
                ));
            }
            let triage_name = format!("triage:{cid}");
            let tp = TriageParams {
                repo: src.name.get_ref().clone(),
                id: cid.clone(),
                base: c.base.clone(),
                head: c.head.clone(),
                title: c.title.clone(),
                body: c.body.clone(),
                test_globs: test_globs.clone(),
                docs_globs: docs_globs.clone(),
                max_files: triage_cfg.max_files.unwrap_or(50),
            };
            out.push(node(
                triage_name.clone(),
                "triage",
                triage::KIND_VERSION,
                &tp,
                vec![],
                false,
                triage::job(tp.clone(), source.path().to_owned()),
            ));
            let mut screen_deps = vec![triage_name.clone()];
            for state in State::ALL {
                let tree_name = format!("tree:{cid}:{}", state.as_str());
                out.push(node(
                    tree_name.clone(),
                    "tree",
                    tree::KIND_VERSION,
                    &TreeParams { state },
                    vec![triage_name.clone()],
                    false,
                    tree::job(state, store_dir.clone()),
                ));
                for r in 0..repeats {
                    let rp = RunParams {
                        command: env_cfg.test_command.clone(),
                        report: format.as_str().to_owned(),
                        report_file: env_cfg.report_file.clone(),
                        timeout_s: timeout,
                        log_cap,
                        repeat: r,
                    };
                    let run_name = format!("run:{cid}:{}:r{r}", state.as_str());
                    out.push(node(
                        run_name.clone(),
                        "run",
                        run::KIND_VERSION,
                        &rp,
                        vec![tree_name.clone(), env_name.clone()],
                        true,
                        run::job(rp.clone(), format, store_dir.clone()),
                    ));
                    screen_deps.push(run_name);
                }
            }
            let screen_name = format!("screen:{cid}");
            out.push(node(
                screen_name.clone(),
                "screen",
                screen::KIND_VERSION,
                &ScreenParams { repeats },
                screen_deps,
                false,
                screen::job(repeats),
            ));
            let topics = splits.get(&cid).cloned().unwrap_or_default();
            let topic_list: Vec<Option<String>> = if topics.is_empty() {
                vec![None]
            } else {
                topics.iter().map(|(n, _)| Some(n.clone())).collect()
            };
            for topic in topic_list {
                let instance_id = match &topic {
                    Some(t) => format!("{cid}-{t}"),
                    None => cid.clone(),
                };
                let statement = read_statement(statements_dir.as_deref(), &instance_id, "md");
                let spec = read_statement(statements_dir.as_deref(), &instance_id, "spec.md");
                let mut tracks = vec![("basic", None)];
                if spec.is_some() {
                    tracks.push(("spec", spec));
                }
                for (track, spec) in tracks {
                    let params = TaskParams {
                        instance_id: instance_id.clone(),
                        track: track.to_owned(),
                        statement: statement.clone(),
                        spec,
                        topic: topic.clone(),
                        topics: topics.clone(),
                        env: env_name.clone(),
                    };
                    let task_name = if track == "basic" {
                        format!("task:{instance_id}")
                    } else {
                        format!("task:{instance_id}:{track}")
                    };
                    out.push(node(
                        task_name.clone(),
                        "task",
                        task::KIND_VERSION,
                        &params,
                        vec![triage_name.clone(), screen_name.clone()],
                        false,
                        task::job(params.clone()),
                    ));
                    release_deps.push(task_name);
                    release_candidates.push(cid.clone());
                }
            }
        }
    }
    for t in &pipeline.file.topic_split {
        if !seen_candidates.contains(t.candidate.get_ref()) {
            return Err(pipeline
                .error_at(
                    t.candidate.span(),
                    format!("no candidate `{}` in the sources", t.candidate.get_ref()),
                    "not a candidate",
                    "candidate ids are `<source name>-<PR number>`; `assay plan --all` lists them",
                )
                .into());
        }
    }
    out.push(node(
        "release".into(),
        "release",
        release::KIND_VERSION,
        &(),
        release_deps,
        false,
        release::job(release_candidates),
    ));
    Ok(())
}

fn read_statement(dir: Option<&Path>, id: &str, ext: &str) -> Option<String> {
    std::fs::read_to_string(dir?.join(format!("{id}.{ext}"))).ok()
}

/// Opens a source (creating it with its `create` script when missing) and lists its candidates.
fn open_source(
    pipeline: &Pipeline,
    src: &SourceConfig,
) -> Result<(Source, Vec<CandidateLine>), Failure> {
    let path: PathBuf = pipeline.resolve(src.path.get_ref());
    if let (false, Some(create)) = (path.exists(), &src.create) {
        {
            let script = pipeline.resolve(create.get_ref());
            let status = std::process::Command::new("bash")
                .arg(&script)
                .arg(&path)
                .stdout(std::process::Stdio::null())
                .status();
            if !matches!(status, Ok(s) if s.success()) {
                return Err(pipeline
                    .error_at(
                        create.span(),
                        format!(
                            "the create script for source `{}` failed ({status:?})",
                            src.name.get_ref()
                        ),
                        "this script",
                        "run it by hand to see its output",
                    )
                    .into());
            }
        }
    }
    let source = Source::open(&path).map_err(|e| {
        pipeline.error_at(
            src.path.span(),
            format!("cannot open source `{}`: {e}", src.name.get_ref()),
            "this repository",
            "point `path` at a git repository (or add `create` to make it)",
        )
    })?;
    if let Some(file) = &src.candidates {
        let p = pipeline.resolve(file.get_ref());
        let text = std::fs::read_to_string(&p).map_err(|e| {
            pipeline.error_at(
                file.span(),
                format!("cannot read candidates file: {e}"),
                "this file",
                "give a JSONL file of {id, base, head, title, body}",
            )
        })?;
        let mut list = Vec::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let c: CandidateLine = serde_json::from_str(line).map_err(|e| {
                let offset: usize = text.lines().take(i).map(|l| l.len() + 1).sum();
                crate::pipeline::ConfigError::at(
                    &p.display().to_string(),
                    &text,
                    offset..offset + line.len(),
                    format!("invalid candidate on line {}: {e}", i + 1),
                    "this line",
                    "each line is a JSON object with id, base, head (and optional title, body)",
                )
            })?;
            let base = source.resolve(&c.base).map_err(Failure::cache)?;
            let head = source.resolve(&c.head).map_err(Failure::cache)?;
            list.push(CandidateLine { base, head, ..c });
        }
        return Ok((source, list));
    }
    let squash = match &src.squash_pattern {
        Some(p) => Some(regex::Regex::new(p.get_ref()).map_err(|e| {
            pipeline.error_at(
                p.span(),
                format!("invalid squash_pattern: {e}"),
                "this pattern",
                "a regex whose first group is the PR number, e.g. '\\(#(\\d+)\\)\\s*$'",
            )
        })?),
        None => regex::Regex::new(r"\(#(\d+)\)\s*$").ok(),
    };
    let since = match &src.since {
        None => None,
        Some(s) => Some(parse_date(s.get_ref()).ok_or_else(|| {
            pipeline.error_at(
                s.span(),
                "`since` is not a date",
                "here",
                "write it as YYYY-MM-DD",
            )
        })?),
    };
    let query = CandidateQuery {
        branch: src.branch.clone(),
        id_prefix: src.name.get_ref().clone(),
        squash_pattern: squash,
        since,
        limit: src.limit,
    };
    let list = source
        .candidates(&query)
        .map_err(|e| {
            pipeline.error_at(
                src.branch_span(),
                format!("cannot list candidates of `{}`: {e}", src.name.get_ref()),
                "this source",
                "check `branch`",
            )
        })?
        .into_iter()
        .map(|c| CandidateLine {
            id: c.id,
            base: c.base,
            head: c.head,
            title: c.title,
            body: c.body,
        })
        .collect();
    Ok((source, list))
}

/// Days since 1970-01-01 of a proleptic Gregorian YYYY-MM-DD, in seconds.
fn parse_date(s: &str) -> Option<i64> {
    let mut it = s.split('-');
    let (y, m, d): (i64, i64, i64) = (
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || it.next().is_some() {
        return None;
    }
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some((era * 146097 + doe - 719468) * 86400)
}

#[cfg(test)]
mod tests {
    #[test]
    fn parse_date_matches_known_epochs() {
        assert_eq!(super::parse_date("1970-01-01"), Some(0));
        assert_eq!(super::parse_date("2026-01-05"), Some(1_767_571_200));
        assert_eq!(super::parse_date("2026-13-05"), None);
        assert_eq!(super::parse_date("yesterday"), None);
    }
}
