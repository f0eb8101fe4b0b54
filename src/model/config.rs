//! The words of a pipeline's configuration that records, rules and node
//! params carry: arms, the exclusion policy, executors, patch caps, tamper
//! rules and their allowances, metric counts. `pipeline` reads them from the file and
//! checks them; everything above names them from here.

use serde::{Deserialize, Serialize};

crate::words::words! {
    unit_variant;
    /// Which of a session's paths the grader leaves out (`[grade] exclusion`).
    /// In node params as serde's unit variant (its variant index).
    #[derive(Default)]
    pub(crate) enum Policy {
        /// Every test file the session touches, new or existing, and test
        /// infrastructure (`rules::policy::INFRA_GLOBS`): the default.
        #[default]
        TestsAndInfra = "tests-and-infra",
        NewTestFiles = "new-test-files",
        AllTestFiles = "all-test-files",
        ResetTestPatchFiles = "reset-test-patch-files",
        None = "none",
    }
}

crate::words::words! {
    /// A grading arm: `exclude` applies the exclusion policy, `keep` leaves
    /// out nothing (it only exposes the verifier). In node params and
    /// records as its word.
    pub(crate) enum Arm {
        Exclude = "exclude",
        Keep = "keep",
    }
}

impl Arm {
    /// The arm that scores.
    pub(crate) const SCORED: Arm = Arm::Exclude;
    /// The arm scored only when a session has no scored one.
    pub(crate) const CONTRAST: Arm = Arm::Keep;
}

crate::words::words! {
    /// An executor, by its word in `[env] executor`, `--executor` and the
    /// records (`executor`).
    #[derive(Default)]
    pub(crate) enum ExecutorKind {
        /// bubblewrap on this machine: the default.
        #[default]
        Local = "local",
        Docker = "docker",
        Slurm = "slurm",
    }
}

crate::words::words! {
    unit_variant;
    /// `[env] sandbox`: the local executor's sandbox (on this machine, or
    /// on a Slurm node). In node params as the derived enum it was (its
    /// variant index).
    #[derive(Default)]
    pub(crate) enum SandboxMode {
        /// bubblewrap: the default.
        #[default]
        Bwrap = "bwrap",
        /// Unconfined, on the maintainer's host: a warning on every build,
        /// and the release says so.
        None = "none",
    }
}

crate::words::words! {
    /// The sandbox a run had, as its record says it.
    #[derive(Default)]
    pub(crate) enum Sandbox {
        Bwrap = "bwrap",
        /// Graded unsandboxed (`sandbox = "none"`).
        None = "none",
        /// A locked-down container of the docker executor.
        Docker = "docker",
        /// A Harbor verifier's own container (`assay harbor verify`).
        Harbor = "harbor",
        /// A record written before runs named their sandbox.
        #[default]
        Unrecorded = "",
    }
}

impl From<SandboxMode> for Sandbox {
    fn from(mode: SandboxMode) -> Sandbox {
        match mode {
            SandboxMode::Bwrap => Sandbox::Bwrap,
            SandboxMode::None => Sandbox::None,
        }
    }
}

/// `[env] executor` and the keys of the executor it names, checked: which
/// executor, with its settings. The one list of executors: a new one is a
/// line here, its settings beside it and its parsing in `pipeline::env`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ExecutorSetting {
    /// This machine, under the [`SandboxMode`].
    #[default]
    Local,
    /// An image per environment, a fresh locked-down container per run.
    Docker(DockerSettings),
    /// The local sandbox on the nodes of a Slurm cluster, a job step per run.
    Slurm(SlurmSettings),
}

impl ExecutorSetting {
    /// Which executor it sets.
    pub(crate) fn kind(&self) -> ExecutorKind {
        match self {
            ExecutorSetting::Local => ExecutorKind::Local,
            ExecutorSetting::Docker(_) => ExecutorKind::Docker,
            ExecutorSetting::Slurm(_) => ExecutorKind::Slurm,
        }
    }

    /// Where its runs go: [`kind`](Self::kind), but slurm for a docker
    /// setting whose containers start on a cluster's nodes.
    pub(crate) fn placed(&self) -> ExecutorKind {
        match self {
            ExecutorSetting::Docker(d) if d.on_cluster.is_some() => ExecutorKind::Slurm,
            other => other.kind(),
        }
    }

    /// Whether a run under it is keyed as a local run: it sees what a
    /// local run sees (local, and slurm's local sandbox on a node).
    pub(crate) fn keyed_as_local(&self) -> bool {
        matches!(self, ExecutorSetting::Local | ExecutorSetting::Slurm(_))
    }
}

/// `[env]`'s executors, checked: the one it names and the settings of each,
/// so `build --executor` can pick another for one build without reading the
/// file again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExecutorChoice {
    /// `[env] executor` (local when absent).
    pub(crate) written: ExecutorKind,
    pub(crate) docker: DockerSettings,
    pub(crate) slurm: SlurmSettings,
}

impl ExecutorChoice {
    /// The executor `chosen` names (the written one when `None`), with its
    /// settings.
    pub(crate) fn setting(&self, chosen: Option<ExecutorKind>) -> ExecutorSetting {
        match chosen.unwrap_or(self.written) {
            ExecutorKind::Local => ExecutorSetting::Local,
            ExecutorKind::Docker => ExecutorSetting::Docker(self.docker.clone()),
            ExecutorKind::Slurm => ExecutorSetting::Slurm(self.slurm.clone()),
        }
    }
}

/// The docker executor's settings that change what a run sees. Keyed with
/// the image layout and the import guard's digest
/// (`run::executor::docker`'s `Serialize`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DockerSettings {
    /// The base image as written (tag or id); the environment's output
    /// records the image id it became.
    pub(crate) base_image: String,
    /// CPU of a setup or run in thousandths (`cpus = 1.5` is 1500).
    pub(crate) cpu_millis: Option<u32>,
    /// Where the containers of runs start: `None` on this machine's daemon,
    /// else on the nodes of this Slurm cluster, each on its node's daemon
    /// (a task image's runs under `executor = "slurm"`). Not keyed: a
    /// container of one image sees the same on any machine.
    pub(crate) on_cluster: Option<SlurmSettings>,
}

/// The default `[env] base_image`.
pub(crate) const DEFAULT_BASE_IMAGE: &str = "assay-base:bookworm";

impl Default for DockerSettings {
    fn default() -> DockerSettings {
        DockerSettings {
            base_image: DEFAULT_BASE_IMAGE.to_owned(),
            cpu_millis: None,
            on_cluster: None,
        }
    }
}

/// The slurm executor's settings: where its allocation goes. None of it
/// changes what a run sees, so none of it is keyed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct SlurmSettings {
    pub(crate) partition: Option<String>,
    pub(crate) nodes: u32,
    pub(crate) time: String,
    pub(crate) account: Option<String>,
    pub(crate) qos: Option<String>,
    pub(crate) sbatch: Vec<String>,
    /// The node-local cache's root on every node (`[env] slurm.node_cache`):
    /// environments unpacked once per node, runs' private directories.
    pub(crate) node_cache: std::path::PathBuf,
    /// The coordinator's address as the nodes reach it (`[env]
    /// slurm.proxy_address`): where an attempt's relay on a node reaches
    /// the egress proxy.
    pub(crate) proxy_address: core::net::IpAddr,
}

impl SlurmSettings {
    /// The allocation's time limit when `[env] slurm.time` is not set.
    pub(crate) const DEFAULT_TIME: &str = "1:00:00";
    /// The node-local cache's root when `[env] slurm.node_cache` is not set.
    pub(crate) const DEFAULT_NODE_CACHE: &str = "/tmp/assay-node-cache";
    /// The proxy's address for the nodes when `[env] slurm.proxy_address`
    /// is not set: a cluster on this machine.
    pub(crate) const DEFAULT_PROXY_ADDRESS: core::net::IpAddr =
        core::net::IpAddr::V4(core::net::Ipv4Addr::LOCALHOST);
}

impl Default for SlurmSettings {
    fn default() -> SlurmSettings {
        SlurmSettings {
            partition: None,
            nodes: 1,
            time: SlurmSettings::DEFAULT_TIME.into(),
            account: None,
            qos: None,
            sbatch: Vec::new(),
            node_cache: SlurmSettings::DEFAULT_NODE_CACHE.into(),
            proxy_address: SlurmSettings::DEFAULT_PROXY_ADDRESS,
        }
    }
}

/// The limits of one run, all in bytes or counts (docs/pipeline.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RunLimits {
    pub(crate) memory: u64,
    pub(crate) processes: u64,
    pub(crate) open_files: u64,
    pub(crate) file_size: u64,
    pub(crate) tmp: u64,
    pub(crate) home: u64,
    /// Bytes a test run may add to its tree (`write_limit`); its `/tmp`
    /// and `HOME` are bounded by their own sizes. Left out of the key at
    /// its default, so that keys (and task digests) stay what they were
    /// before the limit existed; any other value enters it.
    #[serde(skip_serializing_if = "is_default_write", default = "default_write")]
    pub(crate) write: u64,
}

/// The default `write_limit`: 1 GiB.
const DEFAULT_WRITE: u64 = 1 << 30;

fn default_write() -> u64 {
    DEFAULT_WRITE
}

fn is_default_write(write: &u64) -> bool {
    *write == DEFAULT_WRITE
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            memory: 4 << 30,
            processes: 1024,
            open_files: 4096,
            file_size: 1 << 30,
            tmp: 1 << 30,
            home: 512 << 20,
            write: DEFAULT_WRITE,
        }
    }
}

/// The confinement of a run: part of its key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Confinement {
    /// The local executor's sandbox (`bwrap` elsewhere: unused there).
    pub(crate) sandbox: SandboxMode,
    pub(crate) limits: RunLimits,
    /// Left out of the key when keyed as local: a local key is its
    /// sandbox and limits alone.
    #[serde(skip_serializing_if = "ExecutorSetting::keyed_as_local")]
    pub(crate) executor: ExecutorSetting,
}

impl Default for Confinement {
    fn default() -> Self {
        Confinement {
            sandbox: SandboxMode::Bwrap,
            limits: RunLimits::default(),
            executor: ExecutorSetting::Local,
        }
    }
}

/// How large a session patch may be (`[grade] max_patch_bytes`,
/// `max_patch_files`), each at least 1. A larger one is refused before
/// anything is staged: staging, materialising and removing its tree for
/// every run, rerun and check is what a patch of 100,000 files costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct PatchCaps {
    pub(crate) bytes: u64,
    pub(crate) files: u64,
}

impl Default for PatchCaps {
    fn default() -> PatchCaps {
        PatchCaps {
            bytes: 10 << 20,
            files: 5000,
        }
    }
}

impl PatchCaps {
    /// Why a patch of `bytes` is over the cap, if it is.
    pub(crate) fn over_bytes(&self, bytes: u64) -> Option<String> {
        (bytes > self.bytes).then(|| {
            format!(
                "over the patch cap ({} bytes > {})",
                thousands(bytes),
                thousands(self.bytes)
            )
        })
    }

    /// Why a patch of `files` file sections is over the cap, if it is.
    pub(crate) fn over_files(&self, files: u64) -> Option<String> {
        (files > self.files).then(|| {
            format!(
                "over the patch cap ({} files > {})",
                thousands(files),
                thousands(self.files)
            )
        })
    }
}

/// `n` with its thousands separated by commas: 100,000.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// How a command's findings are counted.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub(crate) enum Count {
    /// Each line matching the pattern is a finding; its `path` group, if
    /// any, names the file.
    Lines { pattern: String },
    /// Each element at `at` (keys, `*` for every element of an array) is a
    /// finding; `path_key` names its file, on it or the nearest object
    /// above it.
    Json {
        at: Vec<String>,
        path_key: Option<String>,
    },
    /// One finding, with no file, when the command exits non-zero.
    Exit,
}

crate::words::words! {
    /// A family of constructs the static flags find in a compiled patch
    /// (docs/security.md, "Static flags for Rust and Go").
    pub(crate) enum TamperRule {
        RustMacroShadowing = "rust-macro-shadowing",
        RustConstructor = "rust-constructor",
        RustAsm = "rust-asm",
        RustSymbolOverride = "rust-symbol-override",
        RustFdRewrite = "rust-fd-rewrite",
        RustInclude = "rust-include",
        RustManifest = "rust-manifest",
        GoLinkname = "go-linkname",
        GoNativeCode = "go-native-code",
        GoFdRewrite = "go-fd-rewrite",
        GoTestingReach = "go-testing-reach",
        BinaryCode = "binary-code",
    }
}

/// What a grade is told: a rule it does not hold against the patch, and
/// why. Part of the grade's key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct Allowance {
    pub(crate) rule: TamperRule,
    pub(crate) reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records held these fields as strings: each word reads back as its
    /// value and writes the same bytes; node params keep the derived
    /// enum's encoding of the sandbox (its variant index).
    #[test]
    fn executor_and_sandbox_words_round_trip_with_the_bytes_records_held() {
        fn round_trip<T>(all: &[T], words: &[&str])
        where
            T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
        {
            assert_eq!(all.len(), words.len());
            for (value, word) in all.iter().zip(words) {
                let json = serde_json::to_string(value).unwrap();
                assert_eq!(json, format!("\"{word}\""));
                assert_eq!(&serde_json::from_str::<T>(&json).unwrap(), value);
            }
        }
        round_trip(ExecutorKind::ALL, &["local", "docker", "slurm"]);
        round_trip(Sandbox::ALL, &["bwrap", "none", "docker", "harbor", ""]);
        round_trip(SandboxMode::ALL, &["bwrap", "none"]);
        assert!(serde_json::from_str::<Sandbox>("\"podman\"").is_err());
        assert_eq!(Sandbox::default(), Sandbox::Unrecorded);
        assert_eq!(Sandbox::from(SandboxMode::None), Sandbox::None);

        // Node params hold a sandbox mode as a derived enum encodes it
        // (its variant index): the words keep that encoding.
        #[derive(serde::Serialize)]
        #[serde(rename_all = "lowercase")]
        enum Derived {
            Bwrap,
            None,
        }
        for (word, derived) in [
            (SandboxMode::Bwrap, Derived::Bwrap),
            (SandboxMode::None, Derived::None),
        ] {
            assert_eq!(
                assay_engine::encode_params(&word),
                assay_engine::encode_params(&derived)
            );
        }
    }

    #[test]
    fn a_patch_over_its_cap_says_by_how_much() {
        let caps = PatchCaps::default();
        assert_eq!(
            caps.over_files(100_000).as_deref(),
            Some("over the patch cap (100,000 files > 5,000)")
        );
        assert_eq!(caps.over_files(5000), None);
        assert_eq!(
            caps.over_bytes(16 << 20).as_deref(),
            Some("over the patch cap (16,777,216 bytes > 10,485,760)")
        );
        assert_eq!(caps.over_bytes(10 << 20), None);
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
    }
}
