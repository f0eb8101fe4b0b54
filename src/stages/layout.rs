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
use super::grade::{self, GradeParams, Policy, SessionParams, StageParams};
use super::metrics::{self, MetricsParams};
use super::publish::Price;
use super::redact::RedactConfig;
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
    let redact = RedactConfig {
        patterns: pipeline
            .file
            .redact
            .patterns
            .iter()
            .map(|p| p.get_ref().clone())
            .collect(),
        env: pipeline.file.redact.env.clone(),
    };
    for p in &pipeline.file.redact.patterns {
        if let Err(e) = regex::bytes::Regex::new(p.get_ref()) {
            return Err(pipeline
                .error_at(
                    p.span(),
                    format!("invalid redact pattern: {e}"),
                    "this pattern",
                    "patterns are regular expressions",
                )
                .into());
        }
    }
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
    // (instance_id, track) -> (task node, env node)
    let mut task_nodes: BTreeMap<(String, String), (String, String)> = BTreeMap::new();
    let mut release_deps = Vec::new();
    let mut release_inputs = Vec::new();
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
                        redact: redact.clone(),
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
                        run::job(rp.clone(), format, store_dir.clone(), env_name.clone()),
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
                    task_nodes.insert(
                        (instance_id.clone(), track.to_owned()),
                        (task_name.clone(), env_name.clone()),
                    );
                    release_deps.push(task_name);
                    release_inputs.push(release::Input::Task(cid.clone()));
                }
            }
        }
    }
    // With bounds (since/limit) a split may name a candidate left out on purpose.
    let bounded = pipeline
        .file
        .source
        .iter()
        .any(|s| s.since.is_some() || s.limit.is_some());
    for t in &pipeline.file.topic_split {
        if !bounded && !seen_candidates.contains(t.candidate.get_ref()) {
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
    let ctx = GradeLayout {
        test_globs: &test_globs,
        env_cfg,
        format,
        timeout,
        log_cap,
        redact: &redact,
        store_dir: &store_dir,
        task_nodes: &task_nodes,
    };
    let not_graded = grade_nodes(
        pipeline,
        cache_dir,
        &ctx,
        out,
        &mut release_deps,
        &mut release_inputs,
    )?;
    let prices: BTreeMap<String, Price> = pipeline
        .file
        .prices
        .iter()
        .map(|(k, v)| (k.clone(), Price(v.clone())))
        .collect();
    let params = release::ReleaseParams {
        prices,
        not_graded,
        inputs: release_inputs,
    };
    out.push(node(
        "release".into(),
        "release",
        release::KIND_VERSION,
        &params,
        release_deps,
        false,
        release::job(params.clone()),
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
pub(crate) fn parse_date(s: &str) -> Option<i64> {
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

struct GradeLayout<'a> {
    test_globs: &'a [String],
    env_cfg: &'a crate::pipeline::EnvConfig,
    format: assay_report::Format,
    timeout: u64,
    log_cap: u64,
    redact: &'a RedactConfig,
    store_dir: &'a Path,
    task_nodes: &'a BTreeMap<(String, String), (String, String)>,
}

/// Per session: a session node, then per arm stage → run → grade, and one
/// metrics node. Returns the sessions that cannot be graded, with why.
fn grade_nodes(
    pipeline: &Pipeline,
    cache_dir: &Path,
    g: &GradeLayout<'_>,
    out: &mut Vec<NodeSpec>,
    release_deps: &mut Vec<String>,
    release_inputs: &mut Vec<release::Input>,
) -> Result<Vec<(String, String)>, Failure> {
    let Some(dir) = &pipeline.file.sessions else {
        return Ok(Vec::new());
    };
    let policy = match &pipeline.file.grade.exclusion {
        None => Policy::NewTestFiles,
        Some(s) => Policy::parse(s.get_ref()).ok_or_else(|| {
            pipeline.error_at(
                s.span(),
                format!("unknown exclusion policy `{}`", s.get_ref()),
                "here",
                "use new-test-files, all-test-files, reset-test-patch-files or none",
            )
        })?,
    };
    let mut arms = Vec::new();
    for a in pipeline.file.grade.arms.iter().flatten() {
        match a.get_ref().as_str() {
            "exclude" | "keep" => arms.push(a.get_ref().clone()),
            other => {
                return Err(pipeline
                    .error_at(
                        a.span(),
                        format!("unknown arm `{other}`"),
                        "here",
                        "arms are `exclude` (the policy applies) and `keep` (nothing excluded)",
                    )
                    .into());
            }
        }
    }
    if arms.is_empty() {
        arms.push("exclude".into());
    }
    let previous_tasks = previous_task_keys(cache_dir);
    let mut not_graded = Vec::new();
    for loaded in crate::sessions::load_dir(&pipeline.resolve(dir.get_ref())) {
        let s = match loaded {
            Ok(s) => s,
            Err(e) => {
                let id = e.id.clone();
                let why = e.message.clone();
                eprintln!("{:?}", miette::Report::new(e));
                not_graded.push((id.clone(), format!("unreadable session file: {why}")));
                let params = SessionParams {
                    id: id.clone(),
                    task: String::new(),
                    track: String::new(),
                    agent: String::new(),
                    model: String::new(),
                    patch: Vec::new(),
                    facts: Default::default(),
                    error: Some(why),
                };
                out.push(node(
                    format!("session:{id}"),
                    "session",
                    grade::SESSION_VERSION,
                    &params,
                    vec![],
                    false,
                    grade::session_job(params.clone()),
                ));
                continue;
            }
        };
        let track = s.track.clone().unwrap_or_else(|| "basic".into());
        let task_id = previous_tasks
            .get(&s.task)
            .cloned()
            .unwrap_or_else(|| s.task.clone());
        let Some((task_node, env_node)) = g.task_nodes.get(&(task_id.clone(), track.clone()))
        else {
            eprintln!(
                "warning: session {} ({}) names task `{}` ({track} track), which this pipeline does not release: not graded",
                s.id,
                s.file.display(),
                s.task
            );
            not_graded.push((
                s.id.clone(),
                format!("unknown task `{}` ({track} track)", s.task),
            ));
            continue;
        };
        let params = SessionParams {
            id: s.id.clone(),
            task: task_id,
            track,
            agent: s.agent,
            model: s.model,
            patch: s.patch,
            facts: s.facts,
            error: None,
        };
        let session_node = format!("session:{}", s.id);
        out.push(node(
            session_node.clone(),
            "session",
            grade::SESSION_VERSION,
            &params,
            vec![],
            false,
            grade::session_job(params.clone()),
        ));
        release_deps.push(session_node.clone());
        release_inputs.push(release::Input::Session);
        for arm in &arms {
            let arm_policy = if arm == "keep" { Policy::None } else { policy };
            let sp = StageParams {
                arm: arm.clone(),
                policy: arm_policy,
                test_globs: g.test_globs.to_vec(),
            };
            let stage_node = format!("stage:{}:{arm}", s.id);
            out.push(node(
                stage_node.clone(),
                "stage",
                grade::STAGE_VERSION,
                &sp,
                vec![task_node.clone(), session_node.clone()],
                false,
                grade::stage_job(sp.clone(), g.store_dir.to_owned()),
            ));
            let rp = RunParams {
                command: g.env_cfg.test_command.clone(),
                report: g.format.as_str().to_owned(),
                report_file: g.env_cfg.report_file.clone(),
                timeout_s: g.timeout,
                log_cap: g.log_cap,
                redact: g.redact.clone(),
                repeat: 0,
            };
            let run_node = format!("run:{}:{arm}", s.id);
            out.push(node(
                run_node.clone(),
                "run",
                run::KIND_VERSION,
                &rp,
                vec![stage_node.clone(), env_node.clone()],
                true,
                run::job(
                    rp.clone(),
                    g.format,
                    g.store_dir.to_owned(),
                    env_node.clone(),
                ),
            ));
            let gp = GradeParams {
                arm: arm.clone(),
                policy: arm_policy,
                test_globs: g.test_globs.to_vec(),
                reruns: pipeline.file.grade.reruns.unwrap_or(3),
                rerun_command: pipeline.file.grade.rerun_command.clone(),
                check_command: pipeline.file.grade.check_command.clone(),
                run: rp.clone(),
            };
            let grade_node = format!("grade:{}:{arm}", s.id);
            out.push(node(
                grade_node.clone(),
                "grade",
                grade::GRADE_VERSION,
                &gp,
                vec![
                    task_node.clone(),
                    session_node.clone(),
                    stage_node,
                    run_node,
                    env_node.clone(),
                ],
                false,
                grade::grade_job(gp.clone(), g.format, g.store_dir.to_owned()),
            ));
            release_deps.push(grade_node);
            release_inputs.push(release::Input::Grade);
        }
        let mp = MetricsParams {
            policy,
            test_globs: g.test_globs.to_vec(),
        };
        let metrics_node = format!("metrics:{}", s.id);
        out.push(node(
            metrics_node.clone(),
            "metrics",
            metrics::KIND_VERSION,
            &mp,
            vec![task_node.clone(), session_node],
            false,
            metrics::job(mp.clone()),
        ));
        release_deps.push(metrics_node);
        release_inputs.push(release::Input::Metrics);
    }
    Ok(not_graded)
}

/// Task digests of the last build, so a session may name its task by digest.
fn previous_task_keys(cache_dir: &Path) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let Ok(store) = assay_engine::Store::open(cache_dir) else {
        return map;
    };
    let Ok(builds) = store.builds(1) else {
        return map;
    };
    if let Some(Ok(Some(m))) = builds.first().map(|b| store.manifest(b)) {
        for e in m.entries.iter().filter(|e| e.kind == "task") {
            if let (Some(k), Some(id)) = (e.key, e.name.strip_prefix("task:")) {
                let id = id.split(':').next().unwrap_or(id).to_owned();
                map.insert(k.to_hex(), id);
            }
        }
    }
    map
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
