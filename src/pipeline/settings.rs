//! The pipeline file turned into typed settings, validated once (as
//! ripgrep's low args become high args): every glob, pattern, directory,
//! policy and arm is checked here, with a diagnostic pointing into the file,
//! so the layout that builds nodes from them never checks anything again.
//!
//! Sources and topic splits are checked in `sources`, environments in `env`
//! (an environment's confinement and executors in `confine`; what the
//! machine has is probed by `plan::envs` and the executors, not here).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use super::env::EnvSpec;
use super::file::{PipelineFile, StepConfig};
use super::sources::{Bounds, SourceSettings, TopicSplitSettings};
use super::{ConfigError, Origin};
use crate::model::config::{Arm, ExecutorKind, PatchCaps, Policy};

/// Test layouts of Python, JS/TS, Go, Rust and Java, plus snapshots and fixtures.
pub(crate) const DEFAULT_TEST_GLOBS: &[&str] = &[
    "tests/**",
    "test/**",
    "**/tests/**",
    "**/test/**",
    "**/test_*.py",
    "**/*_test.py",
    "**/conftest.py",
    "**/*_test.go",
    "**/testdata/**",
    "**/*.test.*",
    "**/*.spec.*",
    "**/__tests__/**",
    "**/__snapshots__/**",
    "**/snapshots/**",
    "**/fixtures/**",
    "src/test/**",
    "**/*Test.java",
    "**/*Tests.java",
];

pub(crate) const DEFAULT_DOCS_GLOBS: &[&str] = &[
    "**/*.md",
    "**/*.rst",
    "docs/**",
    "doc/**",
    "CHANGELOG*",
    "CHANGES*",
    "LICENSE*",
    "AUTHORS*",
    ".github/**",
];

/// `[triage]`, checked: the globs as written (they are part of node keys).
#[derive(Clone, Debug, Default)]
pub(crate) struct TriageSettings {
    /// `test_globs` (or the defaults) followed by `extra_test_globs`.
    pub(crate) test_globs: Vec<String>,
    pub(crate) docs_globs: Vec<String>,
    pub(crate) max_files: usize,
}

/// `[grade]`, checked.
#[derive(Clone, Debug, Default)]
pub(crate) struct GradeSettings {
    pub(crate) policy: Policy,
    /// In file order; never empty.
    pub(crate) arms: Vec<Arm>,
    pub(crate) reruns: u32,
    pub(crate) rerun_command: Option<String>,
    pub(crate) check_command: Option<String>,
    pub(crate) caps: PatchCaps,
    /// A task's graded runs time out at this many times its slowest
    /// screening reading (0: at the environment's `timeout`).
    pub(crate) timeout_factor: u32,
    /// …but never before this many seconds.
    pub(crate) timeout_floor: u64,
    /// `[[grade.allow_tamper]]`, in file order.
    pub(crate) allow_tamper: Vec<super::AllowTamper>,
}

/// `[[step]]`: a generic command node (see `nodes::step`).
#[derive(Clone, Debug)]
pub(crate) struct StepSettings {
    /// Its node is `step:<name>`; errors about the step point here.
    pub(crate) name: Spanned<String>,
    pub(crate) run: String,
    /// Files copied in, as written (relative to the pipeline file); an
    /// unreadable one is pointed at when the step is laid out.
    pub(crate) inputs: Vec<Spanned<String>>,
    /// The names of the steps whose outputs it reads.
    pub(crate) deps: Vec<String>,
    pub(crate) timeout: Duration,
}

/// Everything of the file but the judges, valid.
#[derive(Clone, Debug, Default)]
pub(crate) struct Settings {
    /// The cache and release directories, resolved against the file's.
    pub(crate) cache_dir: PathBuf,
    pub(crate) release_dir: PathBuf,
    pub(crate) steps: Vec<StepSettings>,
    pub(crate) sources: Vec<SourceSettings>,
    pub(crate) triage: TriageSettings,
    pub(crate) topic_splits: Vec<TopicSplitSettings>,
    /// In file order: the one `[env]`, or each `[env.NAME]`.
    pub(crate) envs: Vec<EnvSpec>,
    /// Readings of each state at screening (at least 1).
    pub(crate) repeats: u32,
    /// `[screen] scope`: which tests the lists are drawn from.
    pub(crate) scope: crate::model::rules::screening::Scope,
    /// `[redact] patterns` (valid regular expressions) and `env`.
    pub(crate) redact_patterns: Vec<String>,
    pub(crate) redact_env: Vec<String>,
    /// The statements directory, which exists.
    pub(crate) statements: Option<PathBuf>,
    /// The sessions directory, which exists.
    pub(crate) sessions: Option<PathBuf>,
    pub(crate) grade: GradeSettings,
    /// model label -> token kind -> USD per million tokens (each finite, 0 or more).
    pub(crate) prices: BTreeMap<String, BTreeMap<String, f64>>,
    /// `build --executor NAME`: every environment's executor for one build,
    /// in place of the file's `executor` (a name of the CLI's closed list).
    pub(crate) executor_override: Option<ExecutorKind>,
    /// `[[agent]]`: the agents assay runs on the released tasks.
    pub(crate) agents: Vec<super::AgentSettings>,
    /// `[[harbor_dataset]]`: (name, existing directory).
    pub(crate) harbor_datasets: Vec<(String, PathBuf)>,
    /// `[[instances]]`: SWE-bench-family instance files.
    pub(crate) instances: Vec<super::InstancesSettings>,
    /// `[[metric]]`: quality figures counted on every graded tree.
    pub(crate) metrics: Vec<super::Metric>,
    /// `[[app]]`: deployed-app tasks.
    pub(crate) apps: Vec<super::AppSettings>,
}

impl Settings {
    pub(crate) fn of(pipeline: &Origin<'_>, f: &PipelineFile) -> Result<Settings, ConfigError> {
        let settings = Settings {
            cache_dir: pipeline.resolve(f.cache.as_deref().unwrap_or("cache")),
            release_dir: pipeline.resolve(f.release.as_deref().unwrap_or("release")),
            steps: f.step.iter().map(step).collect(),
            sources: super::sources::sources(pipeline, &f.source)?,
            triage: triage(pipeline, f)?,
            topic_splits: super::sources::topic_splits(pipeline, &f.topic_split)?,
            envs: super::env::envs(pipeline, f)?,
            repeats: f.screen.repeats.unwrap_or(2).max(1),
            scope: screen_scope(pipeline, f)?,
            redact_patterns: redact_patterns(pipeline, f)?,
            redact_env: f.redact.env.clone(),
            statements: existing_dir(
                pipeline,
                f.statements.as_ref(),
                "statements",
                "create it: tasks without a statement are held back as awaiting_statement",
            )?,
            sessions: existing_dir(
                pipeline,
                f.sessions.as_ref(),
                "sessions",
                "create it (an empty directory grades nothing), or remove `sessions`",
            )?,
            grade: grade(pipeline, f)?,
            executor_override: None,
            agents: super::agent::agents(pipeline, &f.agent)?,
            prices: f.prices.clone(),
            harbor_datasets: harbor_datasets(pipeline, f)?,
            instances: super::instances::instances(pipeline, &f.instances)?,
            metrics: super::metric::metrics(pipeline, &f.metric)?,
            apps: super::app::apps(pipeline, &f.app)?,
        };
        super::capability::check(
            pipeline,
            &settings.envs,
            settings.scope,
            f.screen.scope.as_ref(),
        )?;
        Ok(settings)
    }

    /// The command line's `--since` / `--limit`, in place of every source's own.
    pub(crate) fn bound_sources(&mut self, cli: Bounds) {
        for s in &mut self.sources {
            s.bounds = s.bounds.overridden_by(cli);
        }
    }

    /// Where a task image's containers start (a SWE-bench-family
    /// instance's): on the nodes of the build's Slurm cluster when its
    /// executor is slurm (`build --executor`, else the first environment's
    /// `executor`), with that environment's `[env] slurm` settings; else
    /// on this machine's daemon (`None`), whatever the executor.
    pub(crate) fn image_placement(&self) -> Option<crate::model::config::SlurmSettings> {
        let first = self.envs.first().map(|env| &env.confine.executors);
        let kind = self
            .executor_override
            .or(first.map(|choice| choice.written))
            .unwrap_or_default();
        (kind == ExecutorKind::Slurm).then(|| first.map(|c| c.slurm.clone()).unwrap_or_default())
    }

    /// The topics `candidate` is split into (none: one task).
    pub(crate) fn topics_of(&self, candidate: &str) -> Vec<(String, String)> {
        self.topic_splits
            .iter()
            .find(|t| t.candidate.get_ref() == candidate)
            .map(|t| t.topics.clone())
            .unwrap_or_default()
    }
}

fn step(s: &StepConfig) -> StepSettings {
    StepSettings {
        name: s.name.clone(),
        run: s.run.clone(),
        inputs: s.inputs.clone(),
        deps: s.deps.iter().map(|d| d.get_ref().clone()).collect(),
        timeout: Duration::from_secs(s.timeout.unwrap_or(600)),
    }
}

fn triage(pipeline: &Origin<'_>, f: &PipelineFile) -> Result<TriageSettings, ConfigError> {
    let t = &f.triage;
    for (globs, which) in [
        (t.test_globs.as_deref().unwrap_or_default(), "test_globs"),
        (t.docs_globs.as_deref().unwrap_or_default(), "docs_globs"),
        (t.extra_test_globs.as_slice(), "extra_test_globs"),
    ] {
        for g in globs {
            if let Err(e) = globset::Glob::new(g.get_ref()) {
                return Err(pipeline.error_at(
                    g.span(),
                    format!("invalid glob in {which}: {e}"),
                    "this glob",
                    "globs use `*`, `**`, `?` and `[...]`",
                ));
            }
        }
    }
    let written = |g: &Option<Vec<toml::Spanned<String>>>, defaults: &[&str]| -> Vec<String> {
        match g {
            Some(g) => g.iter().map(|s| s.get_ref().clone()).collect(),
            None => defaults.iter().map(|s| s.to_string()).collect(),
        }
    };
    let mut test_globs = written(&t.test_globs, DEFAULT_TEST_GLOBS);
    test_globs.extend(t.extra_test_globs.iter().map(|s| s.get_ref().clone()));
    Ok(TriageSettings {
        test_globs,
        docs_globs: written(&t.docs_globs, DEFAULT_DOCS_GLOBS),
        max_files: t.max_files.unwrap_or(50),
    })
}

fn redact_patterns(pipeline: &Origin<'_>, f: &PipelineFile) -> Result<Vec<String>, ConfigError> {
    let mut out = Vec::new();
    for p in &f.redact.patterns {
        if let Err(e) = regex::bytes::Regex::new(p.get_ref()) {
            return Err(pipeline.error_at(
                p.span(),
                format!("invalid redact pattern: {e}"),
                "this pattern",
                "patterns are regular expressions",
            ));
        }
        out.push(p.get_ref().clone());
    }
    Ok(out)
}

fn harbor_datasets(
    pipeline: &Origin<'_>,
    f: &PipelineFile,
) -> Result<Vec<(String, PathBuf)>, ConfigError> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for d in &f.harbor_dataset {
        let name = d.name.get_ref();
        let plain = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !plain || out.iter().any(|(n, _)| n == name) {
            return Err(pipeline.error_at(
                d.name.span(),
                format!("`{name}` cannot name a Harbor dataset"),
                "here",
                "a unique name of letters, digits, `-`, `_` and `.`",
            ));
        }
        let dir = existing_dir(
            pipeline,
            Some(&d.path),
            "Harbor dataset",
            "point `path` at a directory of Harbor task folders",
        )?
        .unwrap_or_default();
        out.push((name.clone(), dir));
    }
    Ok(out)
}

fn existing_dir(
    pipeline: &Origin<'_>,
    written: Option<&toml::Spanned<String>>,
    what: &str,
    help: &str,
) -> Result<Option<PathBuf>, ConfigError> {
    let Some(s) = written else { return Ok(None) };
    let dir = pipeline.resolve(s.get_ref());
    if !dir.is_dir() {
        return Err(pipeline.error_at(
            s.span(),
            format!("the {what} directory {} does not exist", dir.display()),
            "this directory",
            help,
        ));
    }
    Ok(Some(dir))
}

/// `[grade] timeout_factor` and `timeout_floor` by default: ten times the
/// slowest screening reading, never under 5 s. The factor covers a machine
/// that grades slower than it screened; the time a run waits for a CPU is
/// not counted against it where the executor measures it (docs/verdicts.md,
/// "Timeouts"); the floor covers a start-up cost that a very short suite's
/// reading barely shows.
pub(crate) const DEFAULT_TIMEOUT_FACTOR: u32 = 10;
pub(crate) const DEFAULT_TIMEOUT_FLOOR: u64 = 5;

fn grade(pipeline: &Origin<'_>, f: &PipelineFile) -> Result<GradeSettings, ConfigError> {
    let g = &f.grade;
    let policy = match &g.exclusion {
        None => Policy::TestsAndInfra,
        Some(s) => Policy::parse(s.get_ref()).ok_or_else(|| {
            pipeline.error_at(
                s.span(),
                format!("unknown exclusion policy `{}`", s.get_ref()),
                "here",
                "use tests-and-infra (the default), new-test-files, all-test-files, reset-test-patch-files or none",
            )
        })?,
    };
    let mut arms = Vec::new();
    for a in g.arms.iter().flatten() {
        let arm = Arm::parse(a.get_ref()).ok_or_else(|| {
            pipeline.error_at(
                a.span(),
                format!("unknown arm `{}`", a.get_ref()),
                "here",
                "arms are `exclude` (the policy applies) and `keep` (nothing excluded)",
            )
        })?;
        arms.push(arm);
    }
    if arms.is_empty() {
        arms.push(Arm::SCORED);
    }
    let d = PatchCaps::default();
    let cap = |v: &Option<toml::Spanned<u64>>, default: u64, what: &str| {
        pipeline.nonzero(
            v,
            default,
            what,
            "a cap of 0 would refuse every session patch",
        )
    };
    Ok(GradeSettings {
        policy,
        arms,
        reruns: g.reruns.unwrap_or(3),
        rerun_command: g.rerun_command.clone(),
        check_command: g.check_command.clone(),
        caps: PatchCaps {
            bytes: cap(&g.max_patch_bytes, d.bytes, "max_patch_bytes")?,
            files: cap(&g.max_patch_files, d.files, "max_patch_files")?,
        },
        timeout_factor: g.timeout_factor.unwrap_or(DEFAULT_TIMEOUT_FACTOR),
        timeout_floor: g.timeout_floor.unwrap_or(DEFAULT_TIMEOUT_FLOOR),
        allow_tamper: super::tamper::check(pipeline, &g.allow_tamper)?,
    })
}

/// `[screen] scope`: a word of [`crate::model::rules::screening::Scope`]
/// (whether every environment's report can select by file is
/// `capability::check`'s). An environment's `touched_command` runs only
/// the touched files, so it needs this scope: under `suite` it would leave
/// most of PASS_TO_PASS unrun.
fn screen_scope(
    pipeline: &Origin<'_>,
    f: &PipelineFile,
) -> Result<crate::model::rules::screening::Scope, ConfigError> {
    use crate::model::rules::screening::Scope;
    let scope = match &f.screen.scope {
        None => Scope::default(),
        Some(word) => Scope::parse(word.get_ref()).ok_or_else(|| {
            pipeline.error_at(
                word.span(),
                format!("unknown scope `{}`", word.get_ref()),
                "here",
                "use \"suite\" (every test the readings name) or \"touched-files\" (the test files the test patch touches: SWE-bench's convention; docs/verdicts.md)",
            )
        })?,
    };
    if scope.is_suite()
        && let Some(touched) = f
            .envs()
            .into_iter()
            .find_map(|(_, env)| env.touched_command.as_ref())
    {
        return Err(pipeline.error_at(
            touched.span(),
            "touched_command runs only the touched test files, and [screen] scope is \"suite\": PASS_TO_PASS would hold tests it never runs",
            "this command",
            "set [screen] scope = \"touched-files\" (the lists drawn from the same files), or remove touched_command to run the whole suite (docs/stages.md, \"Scope\")",
        ));
    }
    Ok(scope)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;

    /// The diagnostic a pipeline file gives, rendered as text (no colour).
    fn error_of(toml: &str, dirs: &[&str]) -> String {
        let tmp = tempfile::tempdir().unwrap();
        for d in dirs {
            std::fs::create_dir_all(tmp.path().join(d)).unwrap();
        }
        let path = tmp.path().join("pipeline.toml");
        std::fs::write(&path, toml).unwrap();
        match Pipeline::load(&path) {
            Ok(_) => String::new(),
            Err(e) => format!("{:?}", miette::Report::new(e)),
        }
    }

    /// A task image's containers start on the cluster exactly when the
    /// build's executor is slurm, with the first environment's settings.
    #[test]
    fn task_images_start_on_the_cluster_the_build_runs_on() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pipeline.toml");
        let load = |toml: &str| {
            std::fs::write(&path, toml).unwrap();
            Pipeline::load(&path).unwrap().settings
        };
        let mut none = load("");
        assert_eq!(none.image_placement(), None);
        none.executor_override = Some(ExecutorKind::Slurm);
        let placed = none.image_placement().unwrap();
        assert_eq!(placed, crate::model::config::SlurmSettings::default());
        let mut written = load(
            "[env]\ntest_command = \"true\"\nreport = \"tap\"\nexecutor = \"slurm\"\nslurm = { node_cache = \"/scratch/n\" }\n",
        );
        let placed = written.image_placement().unwrap();
        assert_eq!(placed.node_cache, std::path::Path::new("/scratch/n"));
        for other in [ExecutorKind::Local, ExecutorKind::Docker] {
            written.executor_override = Some(other);
            assert_eq!(written.image_placement(), None, "{other:?}");
        }
    }

    #[test]
    fn defaults_need_nothing_written() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pipeline.toml");
        std::fs::write(&path, "").unwrap();
        let s = Pipeline::load(&path).unwrap().settings;
        assert_eq!(s.triage.test_globs.len(), DEFAULT_TEST_GLOBS.len());
        assert_eq!(s.triage.max_files, 50);
        assert_eq!(s.repeats, 2);
        assert_eq!(s.grade.policy, Policy::TestsAndInfra);
        assert_eq!(s.grade.arms, [Arm::Exclude]);
        assert_eq!(s.grade.reruns, 3);
        assert_eq!(
            s.grade.caps,
            PatchCaps {
                bytes: 10 << 20,
                files: 5000
            }
        );
        assert!(s.statements.is_none() && s.sessions.is_none());
    }

    #[test]
    fn a_patch_cap_of_zero_is_pointed_at() {
        let e = error_of("[grade]\nmax_patch_files = 0\n", &[]);
        assert!(e.contains("`max_patch_files` cannot be 0"), "{e}");
        assert!(e.contains("here"), "{e}");
        let e = error_of("[grade]\nmax_patch_bytes = 0\n", &[]);
        assert!(e.contains("`max_patch_bytes` cannot be 0"), "{e}");
        assert!(error_of("[grade]\nmax_patch_files = 7\n", &[]).is_empty());
    }

    #[test]
    fn extra_test_globs_follow_the_written_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pipeline.toml");
        std::fs::write(
            &path,
            "[triage]\ntest_globs = [\"t/**\"]\nextra_test_globs = [\"spec/**\"]\n",
        )
        .unwrap();
        let s = Pipeline::load(&path).unwrap().settings;
        assert_eq!(s.triage.test_globs, ["t/**", "spec/**"]);
    }

    #[test]
    fn an_invalid_glob_is_pointed_at_with_its_key() {
        let e = error_of("[triage]\nextra_test_globs = [\"a/[b\"]\n", &[]);
        assert!(e.contains("invalid glob in extra_test_globs"), "{e}");
        assert!(e.contains("this glob"), "{e}");
    }

    #[test]
    fn an_invalid_redact_pattern_is_pointed_at() {
        let e = error_of("[redact]\npatterns = [\"(unclosed\"]\n", &[]);
        assert!(e.contains("invalid redact pattern"), "{e}");
        assert!(e.contains("this pattern"), "{e}");
    }

    #[test]
    fn a_missing_directory_is_named() {
        let e = error_of("statements = \"nope\"\n", &[]);
        assert!(
            e.contains("the statements directory") && e.contains("does not exist"),
            "{e}"
        );
        let e = error_of("sessions = \"gone\"\n", &[]);
        assert!(e.contains("the sessions directory"), "{e}");
        assert!(error_of("sessions = \"here\"\n", &["here"]).is_empty());
    }

    #[test]
    fn an_invalid_topic_pattern_names_the_topic() {
        let e = error_of(
            "[[topic_split]]\ncandidate = \"c-1\"\ntopics = { parse = \"(\" }\n",
            &[],
        );
        assert!(e.contains("topic `parse`: invalid pattern"), "{e}");
    }

    #[test]
    fn unknown_policies_and_arms_list_the_known_ones() {
        let e = error_of("[grade]\nexclusion = \"some\"\n", &[]);
        assert!(e.contains("unknown exclusion policy `some`"), "{e}");
        assert!(e.contains("reset-test-patch-files"), "{e}");
        let e = error_of("[grade]\narms = [\"exclude\", \"both\"]\n", &[]);
        assert!(e.contains("unknown arm `both`"), "{e}");
    }

    #[test]
    fn every_policy_parses_back_from_its_name() {
        for p in Policy::ALL {
            assert_eq!(Policy::parse(p.as_str()), Some(*p));
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
    }

    #[test]
    fn an_unknown_report_format_is_refused_at_load_even_without_sources() {
        let e = error_of("[env]\ntest_command = \"t\"\nreport = \"xunit\"\n", &[]);
        assert!(e.contains("unknown report format `xunit`"), "{e}");
        assert!(e.contains("use one of: junit"), "{e}");
    }

    #[test]
    fn a_screen_scope_is_a_known_word_and_touched_files_needs_files_in_reports() {
        let e = error_of("[screen]\nscope = \"touched\"\n", &[]);
        assert!(e.contains("unknown scope `touched`"), "{e}");
        assert!(e.contains("touched-files"), "{e}");
        let e = error_of(
            "[screen]\nscope = \"touched-files\"\n[env]\ntest_command = \"cargo test\"\nreport = \"libtest\"\n",
            &[],
        );
        assert!(
            e.contains("cannot select tests in `libtest` reports"),
            "{e}"
        );
        assert_eq!(
            error_of(
                "[screen]\nscope = \"touched-files\"\n[env]\ntest_command = \"pytest\"\nreport = \"pytest\"\n",
                &[]
            ),
            ""
        );
    }

    /// `[env] touched_command` runs only the touched test files: it must
    /// say where they go, and it needs the scope that draws the lists from
    /// the same files.
    #[test]
    fn a_touched_command_needs_its_placeholder_and_the_touched_files_scope() {
        let env = |command: &str, report: &str| {
            format!(
                "[env]\ntest_command = \"t\"\nreport = \"{report}\"\ntouched_command = \"{command}\"\n"
            )
        };
        let scoped = "[screen]\nscope = \"touched-files\"\n";
        let ok = format!("{scoped}{}", env("python -m pytest -rA {files}", "pytest"));
        assert_eq!(error_of(&ok, &[]), "");
        let go = format!(
            "{scoped}{}",
            env("go test -json {packages}", "go-test-json")
        );
        assert_eq!(error_of(&go, &[]), "");

        // Under the default scope, and under a written "suite".
        for screen in ["", "[screen]\nscope = \"suite\"\n"] {
            let e = error_of(
                &format!("{screen}{}", env("python -m pytest -rA {files}", "pytest")),
                &[],
            );
            assert!(
                e.contains("touched_command runs only the touched test files"),
                "{e}"
            );
            assert!(e.contains("this command"), "{e}");
            assert!(e.contains("scope = \"touched-files\""), "{e}");
        }
        let e = error_of(
            &format!("{scoped}{}", env("python -m pytest -rA", "pytest")),
            &[],
        );
        assert!(
            e.contains("[env] touched_command: the command names no touched test file"),
            "{e}"
        );
        assert!(e.contains("this command"), "{e}");
        assert!(
            e.contains("touched_command = \"python -m pytest -rA {files}\""),
            "{e}"
        );
        let e = error_of(
            &format!("{scoped}{}", env("go test -json ./...", "go-test-json")),
            &[],
        );
        assert!(e.contains("go test -json {packages}"), "{e}");
        let e = error_of(
            &format!("{scoped}{}", env("pytest {packages}", "pytest")),
            &[],
        );
        assert!(e.contains("`{packages}` selects Go packages"), "{e}");
    }

    #[test]
    fn sources_are_checked_and_bounded_on_the_settings() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pipeline.toml");
        let source = "[[source]]\nname = \"p\"\npath = \"repo\"\nlimit = 4\n";
        std::fs::write(&path, format!("{source}since = \"2026-01-05\"\n")).unwrap();
        let mut s = Pipeline::load(&path).unwrap().settings;
        let src = &s.sources[0];
        assert_eq!(
            (src.repo_of(tmp.path()), src.version.as_str()),
            ("p".to_owned(), "0")
        );
        assert_eq!(src.bounds.since, Some(1_767_571_200));
        assert!(src.squash.is_match("Fix it (#12)"));
        s.bound_sources(super::super::Bounds {
            since: None,
            limit: Some(1),
        });
        assert_eq!(s.sources[0].bounds.limit, Some(1));
        assert_eq!(s.sources[0].bounds.since, Some(1_767_571_200));

        std::fs::write(&path, format!("{source}since = \"last week\"\n")).unwrap();
        let e = format!(
            "{:?}",
            miette::Report::new(Pipeline::load(&path).unwrap_err())
        );
        assert!(e.contains("`since` is not a date"), "{e}");
        std::fs::write(&path, format!("{source}squash_pattern = \"(\"\n")).unwrap();
        let e = format!(
            "{:?}",
            miette::Report::new(Pipeline::load(&path).unwrap_err())
        );
        assert!(e.contains("invalid squash_pattern"), "{e}");
    }
}
