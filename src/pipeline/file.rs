//! The pipeline file as written (ripgrep's "low args"): serde structs that
//! mirror `pipeline.toml` table by table, every table rejecting unknown keys,
//! with the spans later checks point at. Nothing here decides anything:
//! `settings` turns this into the checked settings the stages use.

use serde::Deserialize;
use toml::Spanned;

/// The file as written. Every table rejects unknown keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PipelineFile {
    /// Cache directory, relative to the pipeline file. Default `cache`.
    pub(crate) cache: Option<String>,
    /// Release directory, relative to the pipeline file. Default `release`.
    pub(crate) release: Option<String>,
    /// Generic command steps: a small make-like DAG run through the same engine.
    #[serde(default)]
    pub(crate) step: Vec<StepConfig>,
    /// Repositories whose merged pull requests become tasks.
    #[serde(default)]
    pub(crate) source: Vec<SourceConfig>,
    #[serde(default)]
    pub(crate) triage: TriageConfig,
    /// Candidates split into several tasks by test-name patterns.
    #[serde(default)]
    pub(crate) topic_split: Vec<TopicSplit>,
    /// How environments are prepared and tests run: one `[env]`, or one
    /// `[env.NAME]` per environment (see [`EnvSection`]).
    pub(crate) env: Option<EnvSection>,
    #[serde(default)]
    pub(crate) screen: ScreenConfig,
    /// Directory of `<task id>.md` statements (and `<task id>.spec.md` for the spec track).
    pub(crate) statements: Option<Spanned<String>>,
    /// Directory of agent sessions (docs/sessions.md).
    pub(crate) sessions: Option<Spanned<String>>,
    #[serde(default)]
    pub(crate) grade: GradeConfig,
    /// Secrets to redact from evidence, beyond the built-in key shapes.
    #[serde(default)]
    pub(crate) redact: RedactFileConfig,
    /// model label -> token kind -> USD per million tokens.
    #[serde(default)]
    pub(crate) prices: std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>>,
    /// LLM judges (docs/judge.md); `rubric` here names a file.
    #[serde(default)]
    pub(crate) judge: Vec<Spanned<assay_judge::Settings>>,
    /// Seed of the judges' blind labels. Default 0.
    pub(crate) judge_seed: Option<u64>,
    /// Agents assay runs itself on every released task (docs/agents.md).
    #[serde(default)]
    pub(crate) agent: Vec<Spanned<AgentConfig>>,
    /// Directories of Harbor task folders certified with their own oracle
    /// and no-op controls (docs/harbor.md).
    #[serde(default)]
    pub(crate) harbor_dataset: Vec<HarborDatasetConfig>,
    /// SWE-bench-family instance files, each row a candidate task
    /// (docs/instances.md).
    #[serde(default)]
    pub(crate) instances: Vec<InstancesConfig>,
    /// Quality metrics counted by the project's own tools on every graded
    /// tree and its task's gold tree (docs/pipeline.md, `[[metric]]`).
    #[serde(default)]
    pub(crate) metric: Vec<MetricConfig>,
    /// Deployed-app tasks: built, started, probed and used in a browser
    /// (docs/pipeline.md, `[[app]]`).
    #[serde(default)]
    pub(crate) app: Vec<AppConfig>,
}

/// `[[app]]`: an app task on the pipeline's source repository.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AppConfig {
    /// The task id.
    pub(crate) name: Spanned<String>,
    /// The commit (or ref) the agent starts from.
    pub(crate) base: String,
    /// The reference commit (or ref): the controls' passing tree.
    pub(crate) reference: String,
    /// The statement file, relative to the pipeline file.
    pub(crate) statement: Option<String>,
    pub(crate) build: Option<String>,
    #[serde(default)]
    pub(crate) admission: crate::model::rules::app::Admission,
    pub(crate) start: AppStartConfig,
    #[serde(default)]
    pub(crate) probe: Vec<ProbeConfig>,
    #[serde(default)]
    pub(crate) flow: Vec<assay_browser::Flow>,
    /// Seconds each flow has. Default 60.
    pub(crate) flow_s: Option<u64>,
}

/// `[app.start]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AppStartConfig {
    pub(crate) command: String,
    pub(crate) port: Spanned<u16>,
    /// Default 30.
    pub(crate) ready_s: Option<u64>,
    /// Default 10.
    pub(crate) probe_s: Option<u64>,
    #[serde(default)]
    pub(crate) services: Vec<crate::model::rules::app::Service>,
}

/// `[[app.probe]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProbeConfig {
    pub(crate) name: Spanned<String>,
    /// Default `GET`.
    pub(crate) method: Option<Spanned<String>>,
    pub(crate) path: Spanned<String>,
    #[serde(default)]
    pub(crate) headers: std::collections::BTreeMap<String, String>,
    pub(crate) body: Option<String>,
    /// Default 200.
    pub(crate) status: Option<Spanned<u16>>,
    #[serde(default)]
    pub(crate) expect_headers: std::collections::BTreeMap<String, String>,
    pub(crate) body_contains: Option<String>,
    pub(crate) body_regex: Option<Spanned<String>>,
    #[serde(default)]
    pub(crate) json: std::collections::BTreeMap<String, serde_json::Value>,
}

/// `[[metric]]`: a command whose findings are counted, on the graded tree
/// and on the gold tree; the figure is what the session introduced.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MetricConfig {
    /// Names the metric in node names and release columns.
    pub(crate) name: Spanned<String>,
    /// A built-in recipe: `tsc`, `eslint`, `prettier`, `ruff`, `mypy`,
    /// `clippy`, `go-vet` (a command and how to count it), `ts-any`
    /// (`any` added in TypeScript, counted from the patches).
    pub(crate) preset: Option<Spanned<String>>,
    /// Run with `sh -c` at the root of the tree, in the task's
    /// environment, sandboxed like a test run.
    pub(crate) command: Option<Spanned<String>>,
    /// `lines` (lines matching `pattern`), `json` (the elements at `json`),
    /// `exit` (1 when the command exits non-zero), `added` (matches of
    /// `pattern` in the patch's added lines; no command).
    pub(crate) count: Option<Spanned<String>>,
    /// `lines`, `added`: a regular expression; a `path` group names the
    /// finding's file.
    pub(crate) pattern: Option<Spanned<String>>,
    /// `json`: the findings' place in the document, keys joined by `.`,
    /// `*` for every element of an array (`*.messages.*`).
    pub(crate) json: Option<Spanned<String>>,
    /// `json`: the key holding a finding's file, on the finding or the
    /// nearest object above it (`filePath`).
    pub(crate) path_key: Option<String>,
    /// Read the findings from this file of the tree (written by the
    /// command) instead of its output.
    pub(crate) file: Option<Spanned<String>>,
    /// `added`: only files matching these globs (default: every file).
    pub(crate) files: Option<Vec<Spanned<String>>>,
    /// Seconds before the command is killed. Default 300.
    pub(crate) timeout: Option<u64>,
}

/// `[[harbor_dataset]]`: a directory of Harbor task folders (a downloaded
/// Terminal-Bench dataset, an `assay export --harbor`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HarborDatasetConfig {
    /// Names its tasks in node names and the release (`<name>/<folder>`).
    pub(crate) name: Spanned<String>,
    /// The directory, relative to the pipeline file.
    pub(crate) path: Spanned<String>,
}

/// `[[instances]]`: a JSON or JSONL file of SWE-bench-family instances.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InstancesConfig {
    /// Names its tasks in node names and the release (`<name>/<instance_id>`).
    pub(crate) name: Spanned<String>,
    /// The file, relative to the pipeline file.
    pub(crate) path: Spanned<String>,
    /// `swe-bench`, `swe-rebench`, `swe-gym`, `swe-smith` or
    /// `multi-swe-bench`; default: inferred from the rows.
    pub(crate) family: Option<Spanned<String>>,
    /// The test command of instances whose repository the family's spec
    /// does not run, at the repository's root, with `report`.
    pub(crate) test_command: Option<Spanned<String>>,
    pub(crate) report: Option<Spanned<String>>,
}

/// `[[agent]]`: an agent CLI run on the released tasks, each attempt a node.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentConfig {
    /// The agent label everything graded and judged names.
    pub(crate) label: Spanned<String>,
    /// The model label everything graded and judged names.
    pub(crate) model: Spanned<String>,
    /// The real model id (`{model_id}` in the command); default: the label.
    pub(crate) model_id: Option<String>,
    /// The agent's command line, run by `/bin/sh` in the workspace, with
    /// `{prompt_file}`, `{transcript}`, `{workspace}`, `{model_id}`,
    /// `{base_url}`, `{turns}`, `{time_limit}`, `{cost_limit}`, `{agent_env}`.
    pub(crate) command: Spanned<String>,
    /// The agent's own environment's setup (network on, cached like a task
    /// environment; read-only at `/assay/agent` during attempts).
    #[serde(default)]
    pub(crate) setup: Vec<String>,
    /// `claude-stream-json`, `mini-swe-agent` or `none` (default).
    pub(crate) transcript: Option<Spanned<String>>,
    /// The one endpoint an attempt may reach, through assay's proxy.
    pub(crate) base_url: Option<Spanned<String>>,
    /// The variable of assay's environment holding the endpoint's key.
    pub(crate) key_env: Option<String>,
    /// `authorization` (Bearer; default) or `x-api-key`.
    pub(crate) key_header: Option<Spanned<String>>,
    /// Attempts per task. Default 1.
    pub(crate) attempts: Option<u32>,
    /// Attempts of this agent running at once. Default 1.
    pub(crate) lanes: Option<u32>,
    /// Wall-clock seconds an attempt may run. Default 1800.
    pub(crate) time_limit: Option<u64>,
    /// `{turns}`: the agent's turn or step limit. Default 50.
    pub(crate) turns: Option<u32>,
    /// `{cost_limit}`: the agent's cost limit in USD. Default 3.
    pub(crate) cost_limit: Option<f64>,
    /// Tries after an attempt the infrastructure failed. Default 1.
    pub(crate) retries: Option<u32>,
    /// Tracks attempted: `basic` (default), `spec`.
    pub(crate) tracks: Option<Vec<String>>,
}

/// `[grade]`: how sessions are graded.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GradeConfig {
    /// `exclude` (the policy applies) and/or `keep` (nothing excluded). Default ["exclude"].
    pub(crate) arms: Option<Vec<Spanned<String>>>,
    /// tests-and-infra (default) | new-test-files | all-test-files | reset-test-patch-files | none
    pub(crate) exclusion: Option<Spanned<String>>,
    /// Reruns of a failing grade before it is `unresolved`. Default 3.
    pub(crate) reruns: Option<u32>,
    /// Command for reruns; `{files}` becomes the failing tests' files. Default: the test command.
    pub(crate) rerun_command: Option<String>,
    /// When set, the PASS_TO_PASS and FAIL_TO_PASS checks also run as their
    /// own commands (`{tests}` becomes the test ids) so each keeps its exit code.
    pub(crate) check_command: Option<String>,
    /// A session patch over this many bytes is `patch_apply_failed`. Default 10 MiB.
    pub(crate) max_patch_bytes: Option<Spanned<u64>>,
    /// A session patch of more file sections is `patch_apply_failed`. Default 5000.
    pub(crate) max_patch_files: Option<Spanned<u64>>,
    /// A task's graded runs time out at this many times its slowest
    /// screening reading (0: at `[env] timeout`). Default 10.
    pub(crate) timeout_factor: Option<u32>,
    /// …but never before this many seconds. Default 5 (`DEFAULT_TIMEOUT_FLOOR`).
    pub(crate) timeout_floor: Option<u64>,
    /// `[[grade.allow_tamper]]`: static tamper flags accepted for some
    /// tasks, each with its reason.
    #[serde(default)]
    pub(crate) allow_tamper: Vec<super::tamper::AllowTamperConfig>,
}

/// `[redact]`
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RedactFileConfig {
    #[serde(default)]
    pub(crate) patterns: Vec<Spanned<String>>,
    /// Environment variables whose values must never be stored.
    #[serde(default)]
    pub(crate) env: Vec<String>,
}

/// `[[source]]`: a git repository and the branch whose history is mined.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SourceConfig {
    /// Prefix of candidate ids (`<name>-<PR number>`).
    pub(crate) name: Spanned<String>,
    pub(crate) path: Spanned<String>,
    #[serde(default = "default_branch")]
    pub(crate) branch: String,
    /// A script run as `<script> <path>` when `path` does not exist yet.
    pub(crate) create: Option<Spanned<String>>,
    /// Regex recognising squash merges; its first group is the PR number.
    pub(crate) squash_pattern: Option<Spanned<String>>,
    /// A JSONL file of explicit candidates: {id, base, head, title, body}.
    pub(crate) candidates: Option<Spanned<String>>,
    /// Only candidates merged on or after this date (YYYY-MM-DD).
    pub(crate) since: Option<Spanned<String>>,
    /// At most this many candidates (newest first).
    pub(crate) limit: Option<usize>,
    /// The `[env.NAME]` this source's tasks run in.
    pub(crate) env: Option<Spanned<String>>,
    /// SWE-bench's `repo` of its tasks (`owner/name`); default: `name`.
    /// Ids keep the `name` prefix whatever this says.
    pub(crate) repo: Option<String>,
    /// SWE-bench's `version` of its tasks; default "0".
    pub(crate) version: Option<String>,
}

fn default_branch() -> String {
    "main".into()
}

/// `[triage]`: which paths are tests, which are docs, and the size limit.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TriageConfig {
    /// Replaces the default test globs.
    pub(crate) test_globs: Option<Vec<Spanned<String>>>,
    /// Added to the test globs.
    #[serde(default)]
    pub(crate) extra_test_globs: Vec<Spanned<String>>,
    /// Replaces the default docs/release globs.
    pub(crate) docs_globs: Option<Vec<Spanned<String>>>,
    /// Candidates touching more files than this are declined. Default 50.
    pub(crate) max_files: Option<usize>,
}

/// `[[topic_split]]`: one candidate becomes one task per topic.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TopicSplit {
    pub(crate) candidate: Spanned<String>,
    /// topic name -> regex over FAIL_TO_PASS test names.
    pub(crate) topics: Spanned<std::collections::BTreeMap<String, String>>,
}

/// `[env]`: the environment every task of the pipeline runs in.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnvConfig {
    /// Commands run once per environment key, in the environment directory ($ASSAY_ENV).
    #[serde(default)]
    pub(crate) setup: Vec<String>,
    /// Files whose content at the base commit decides the environment (lockfiles).
    #[serde(default)]
    pub(crate) key_files: Vec<String>,
    /// Run with `sh -c` at the root of the staged tree.
    #[serde(default)]
    pub(crate) test_command: String,
    /// The test command over the test files the test patch touches
    /// (`{files}`; `{packages}` for `go test`): what graded runs run with
    /// `[screen] scope = "touched-files"` (docs/stages.md, "Scope").
    pub(crate) touched_command: Option<Spanned<String>>,
    /// Report format: a word of `assay_report::Format` (docs/languages.md).
    pub(crate) report: Option<Spanned<String>>,
    /// A recipe for a language's environment (`cargo`): its setup runs
    /// before the table's own, and it gives the key files, test command,
    /// report and warm caches the table leaves out (docs/languages.md).
    pub(crate) preset: Option<Spanned<String>>,
    /// `false` leaves out the preset's dependency install (the node preset's
    /// `npm ci`/`pnpm`/`yarn`/`npm install`): for a package whose tests need
    /// nothing but what the machine has (Node's built-ins, Debian's
    /// `/usr/share/nodejs`). Default true.
    pub(crate) preset_install: Option<Spanned<bool>>,
    /// Where the command writes its report, relative to the tree; default: its output.
    pub(crate) report_file: Option<String>,
    /// Seconds before a run's whole process group is killed. Default 300.
    pub(crate) timeout: Option<u64>,
    /// Bytes of log kept as evidence. Default 64 MiB.
    pub(crate) log_cap: Option<u64>,
    /// Runs of one environment one at a time (default true): its directory is
    /// shared state. `false` lets them run in parallel (up to `--jobs`).
    pub(crate) serial: Option<bool>,
    /// `bwrap` (default) or `none` (unsandboxed: a warning on every build,
    /// and the release says so). docs/security.md.
    pub(crate) sandbox: Option<Spanned<String>>,
    /// Memory of a run in bytes (default 4 GiB).
    pub(crate) memory: Option<Spanned<u64>>,
    /// Processes of a run (default 1024).
    pub(crate) processes: Option<Spanned<u64>>,
    /// Open files of each process (default 4096).
    pub(crate) open_files: Option<Spanned<u64>>,
    /// Largest file a run may write, in bytes (default 1 GiB).
    pub(crate) file_size: Option<Spanned<u64>>,
    /// Size of a run's private /tmp in bytes (default 1 GiB).
    pub(crate) tmp_size: Option<Spanned<u64>>,
    /// Size of a run's private HOME in bytes (default 512 MiB).
    pub(crate) home_size: Option<Spanned<u64>>,
    /// Bytes a test run may add to its tree (default 1 GiB).
    pub(crate) write_limit: Option<Spanned<u64>>,
    /// `local` (default: bubblewrap on this machine), `docker` (an image
    /// per environment, a container per run) or `slurm` (the local sandbox
    /// on the nodes of a Slurm cluster). docs/security.md, docs/executors.md.
    pub(crate) executor: Option<Spanned<String>>,
    /// The docker executor's base image, by tag or id; never pulled.
    /// Default `assay-base:bookworm` (scripts/base-image.sh).
    pub(crate) base_image: Option<Spanned<String>>,
    /// CPUs of a docker setup or run (e.g. 1.5); default: no limit.
    pub(crate) cpus: Option<Spanned<f64>>,
    /// Save the environment image into the cache as a blob (docker), so it
    /// can be loaded back when the daemon loses it. Default false.
    pub(crate) export: Option<Spanned<bool>>,
    /// The canary tests of a framework assay has none built in for
    /// (docs/security.md, "Canaries"): which hidden test files carry them,
    /// and the source appended per canary.
    pub(crate) canary: Option<Spanned<CanaryTemplate>>,
    /// The slurm executor's allocation (docs/executors.md).
    pub(crate) slurm: Option<Spanned<SlurmConfig>>,
    /// Toolchain caches the setup warms and every run starts from, each run
    /// on a copy of its own: variable -> directory in the environment
    /// (`warm = { GOCACHE = "go-cache" }`; docs/languages.md).
    pub(crate) warm: Option<Spanned<std::collections::BTreeMap<String, String>>>,
    /// Workspace packages rebuilt before the tests when a run's tree
    /// changes them: `[{ paths = "packages/core/**", command = "tsc -p
    /// packages/core" }]` (docs/pipeline.md, docs/languages.md). Absent
    /// under the node preset: read from the workspace manifest.
    pub(crate) rebuild: Option<Vec<Spanned<RebuildConfig>>>,
}

/// One `[env] rebuild` rule as written: `paths`, one glob or a list, over
/// repo-relative paths; `command`, one line of `sh` run at the tree's root.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RebuildConfig {
    pub(crate) paths: Globs,
    pub(crate) command: String,
}

/// One glob, or a list of them.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub(crate) enum Globs {
    One(String),
    Many(Vec<String>),
}

impl Globs {
    pub(crate) fn to_vec(&self) -> Vec<String> {
        match self {
            Globs::One(g) => vec![g.clone()],
            Globs::Many(gs) => gs.clone(),
        }
    }
}

/// `[env] slurm = { partition = "…", nodes = 2, time = "2:00:00", … }`:
/// the allocation the slurm executor runs its job steps in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SlurmConfig {
    /// `sbatch --partition`; default: the cluster's default partition.
    pub(crate) partition: Option<String>,
    /// Nodes of the allocation at most (`sbatch --nodes 1-N`); default 1.
    pub(crate) nodes: Option<u32>,
    /// The allocation's time limit (`sbatch --time`, e.g. `"2:00:00"`);
    /// default 1 hour. A backstop: each run's timeout is assay's own.
    pub(crate) time: Option<String>,
    pub(crate) account: Option<String>,
    pub(crate) qos: Option<String>,
    /// More `sbatch` flags, each one argument (`["--constraint=avx2"]`).
    #[serde(default)]
    pub(crate) sbatch: Vec<String>,
    /// Where each node keeps its unpacked environments and runs' private
    /// directories (a local disk); default `/tmp/assay-node-cache`.
    pub(crate) node_cache: Option<std::path::PathBuf>,
    /// The coordinator's address as the nodes reach it, where an agent's
    /// attempt on a node reaches the egress proxy (an IP address); default
    /// `127.0.0.1`, for a cluster on this machine.
    pub(crate) proxy_address: Option<String>,
}

/// `[env] canary = { files = [...], template = "..." }`: a canary planted
/// in each hidden test file matching `files`, appended as `template` with
/// `{name}` (a fresh snake_case name, unique in the report), `{a}`, `{b}`
/// and `{sum}` (`a + b` for the canary that must pass, one more for the one
/// that must fail) filled in.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CanaryTemplate {
    pub(crate) files: Vec<String>,
    pub(crate) template: String,
}

/// `[env]`: either the one environment of every source (`[env]` with the
/// keys of [`EnvConfig`]), or named environments (`[env.NAME]` tables) that
/// each `[[source]]` chooses with `env = "NAME"`. Which it is, the first
/// key says: a key of [`EnvConfig`] means one environment.
///
/// Hand-written because serde's `untagged` and `flatten` buffer the input
/// and lose the spans every config error points with.
#[derive(Debug)]
pub(crate) enum EnvSection {
    One(Box<EnvConfig>),
    Named(Vec<(Spanned<String>, EnvConfig)>),
}

impl<'de> Deserialize<'de> for EnvSection {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(SectionVisitor)
    }
}

struct SectionVisitor;

impl<'de> serde::de::Visitor<'de> for SectionVisitor {
    type Value = EnvSection;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an [env] table, or [env.NAME] tables")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<EnvSection, A::Error> {
        use serde::de::value::MapAccessDeserializer;
        let Some(first) = map.next_key::<Spanned<String>>()? else {
            // An empty [env]: the missing keys are the error.
            return EnvConfig::deserialize(MapAccessDeserializer::new(map))
                .map(|env| EnvSection::One(Box::new(env)));
        };
        if env_keys().contains(&first.get_ref().as_str()) {
            let rest = Prepend {
                first: Some(first.into_inner()),
                map,
            };
            return EnvConfig::deserialize(MapAccessDeserializer::new(rest))
                .map(|env| EnvSection::One(Box::new(env)));
        }
        let mut named = vec![(first, map.next_value::<NamedEnv>()?.0)];
        while let Some((name, env)) = map.next_entry::<Spanned<String>, NamedEnv>()? {
            named.push((name, env.0));
        }
        Ok(EnvSection::Named(named))
    }
}

/// A map whose first key was already read.
struct Prepend<A> {
    first: Option<String>,
    map: A,
}

impl<'de, A: serde::de::MapAccess<'de>> serde::de::MapAccess<'de> for Prepend<A> {
    type Error = A::Error;

    fn next_key_seed<K: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.first.take() {
            Some(key) => seed
                .deserialize(serde::de::value::StringDeserializer::<A::Error>::new(key))
                .map(Some),
            None => self.map.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// `[env.NAME]`; anything but a table there is a misspelt key of `[env]`.
struct NamedEnv(EnvConfig);

impl<'de> Deserialize<'de> for NamedEnv {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = NamedEnv;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(
                    f,
                    "a key of [env] (one of {}) or an [env.NAME] table",
                    env_keys().join(", ")
                )
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<NamedEnv, A::Error> {
                EnvConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(NamedEnv)
            }
        }
        d.deserialize_map(V)
    }
}

/// The keys of [`EnvConfig`], as its derived `Deserialize` knows them.
fn env_keys() -> &'static [&'static str] {
    let mut probe = FieldsProbe(None);
    let _ = EnvConfig::deserialize(&mut probe);
    probe.0.unwrap_or(&[])
}

/// A deserializer that only records the field names a struct asks for.
struct FieldsProbe(Option<&'static [&'static str]>);

impl<'de> serde::Deserializer<'de> for &mut FieldsProbe {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("only struct fields are probed"))
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = Some(fields);
        Err(serde::de::Error::custom("probed"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

impl PipelineFile {
    /// Every environment the file defines: `(None, [env])` or
    /// `(Some(NAME), [env.NAME])`, in file order.
    pub(crate) fn envs_mut(&mut self) -> Vec<&mut EnvConfig> {
        match &mut self.env {
            None => Vec::new(),
            Some(EnvSection::One(env)) => vec![&mut **env],
            Some(EnvSection::Named(named)) => named.iter_mut().map(|(_, e)| e).collect(),
        }
    }

    pub(crate) fn envs(&self) -> Vec<(Option<&Spanned<String>>, &EnvConfig)> {
        match &self.env {
            None => Vec::new(),
            Some(EnvSection::One(env)) => vec![(None, &**env)],
            Some(EnvSection::Named(named)) => named.iter().map(|(n, e)| (Some(n), e)).collect(),
        }
    }
}

/// `[screen]`: how often each state is read.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScreenConfig {
    /// Readings of each state (base, test patch only, test + gold). Default 2.
    pub(crate) repeats: Option<u32>,
    /// `suite` (default): the lists come from every test the readings name;
    /// `touched-files`: only from the test files the test patch touches.
    pub(crate) scope: Option<Spanned<String>>,
}

/// `[[step]]`: runs `run` with `sh -c` in a scratch directory holding copies of
/// its `inputs` (under `inputs/`) and its deps' outputs (under `deps/<name>`);
/// its stdout is its output.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StepConfig {
    pub(crate) name: Spanned<String>,
    pub(crate) run: String,
    #[serde(default)]
    pub(crate) inputs: Vec<Spanned<String>>,
    #[serde(default)]
    pub(crate) deps: Vec<Spanned<String>>,
    /// Seconds before the step's process group is killed. Default 600.
    pub(crate) timeout: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<PipelineFile, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn the_env_keys_are_the_fields_of_env_config() {
        let keys = env_keys();
        for key in ["setup", "test_command", "report", "executor", "export"] {
            assert!(keys.contains(&key), "{keys:?}");
        }
    }

    #[test]
    fn one_env_keeps_its_spans() {
        let text = "[env]\nreport = \"tap\"\ntest_command = \"true\"\n";
        let Ok(file) = parse(text) else {
            panic!("{text}");
        };
        let envs = file.envs();
        assert_eq!(envs.len(), 1);
        let (name, env) = envs[0];
        assert!(name.is_none());
        assert_eq!(&text[env.report.as_ref().unwrap().span()], "\"tap\"");
    }

    #[test]
    fn named_envs_keep_their_names_and_spans() {
        let text = "[env.b]\ntest_command = \"b\"\nreport = \"tap\"\n\n[env.a]\ntest_command = \"a\"\nreport = \"junit\"\n";
        let Ok(file) = parse(text) else {
            panic!("{text}");
        };
        let mut seen: Vec<(String, String, String)> = file
            .envs()
            .into_iter()
            .map(|(name, env)| {
                let name = name.map(|n| text[n.span()].to_owned()).unwrap_or_default();
                (
                    name,
                    env.test_command.clone(),
                    text[env.report.as_ref().unwrap().span()].to_owned(),
                )
            })
            .collect();
        seen.sort();
        assert_eq!(
            seen,
            [
                ("a".to_owned(), "a".to_owned(), "\"junit\"".to_owned()),
                ("b".to_owned(), "b".to_owned(), "\"tap\"".to_owned()),
            ]
        );
    }

    #[test]
    fn a_key_of_env_that_is_not_a_table_among_named_envs_is_an_error_at_it() {
        let text = "[env]\nrepot = \"tap\"\n[env.a]\ntest_command = \"a\"\nreport = \"tap\"\n";
        let Err(e) = parse(text) else {
            panic!("accepted {text}");
        };
        assert!(e.message().contains("expected a key of [env]"), "{e}");
        assert_eq!(e.span().map(|s| &text[s]), Some("\"tap\""));
    }
}
