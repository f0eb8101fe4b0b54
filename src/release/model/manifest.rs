//! `manifest.json`: the release's files and shards, the numbers that name
//! them, and the provenance of the build.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A key, digest or id a number names, shared with its other numbers.
pub(crate) type Name = std::sync::Arc<str>;

/// `manifest.json` (format: [`super::manifest`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// File name -> blake3 (hex) of its bytes.
    pub(crate) files: BTreeMap<String, String>,
    /// Judge name -> settings digest; absent without `[[judge]]`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) judges: Option<BTreeMap<String, String>>,
    /// Every number of summary.json, by path.
    pub(crate) numbers: Vec<Number>,
    /// Sealed by the release node (`run::provenance`); `None` in a manifest
    /// that holds none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) provenance: Option<ManifestProvenance>,
    pub(crate) release_digest: String,
    /// A large manifest's shards, in order (`super::shards`); absent when
    /// manifest.json is one file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) shards: Vec<Shard>,
    /// `instance_id/track` -> task digest.
    pub(crate) tasks: BTreeMap<String, String>,
}

/// One shard as the index names it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Shard {
    /// blake3 (hex) of the shard's bytes.
    pub(crate) blake3: String,
    /// Its path in the release (`manifest/0000.json`).
    pub(crate) file: String,
    /// How many `files` entries and `numbers` (or parts of one) it holds.
    pub(crate) files: usize,
    pub(crate) numbers: usize,
}

/// A shard's bytes: its part of the manifest's `files` and `numbers`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ManifestShard {
    pub(crate) files: BTreeMap<String, String>,
    pub(crate) numbers: Vec<Number>,
}

impl Manifest {
    pub(crate) fn number(&self, path: &str) -> Option<&Number> {
        self.numbers.iter().find(|n| n.path == path)
    }

    /// Pretty JSON with a final newline (the bytes `release_digest` covers).
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        pretty(self)
    }

    /// Sets `release_digest` to the blake3 of the bytes with it empty
    /// (hashed as they are printed: a large manifest's are gigabytes).
    pub(crate) fn seal_digest(&mut self) {
        self.release_digest = String::new();
        self.release_digest = Printed::of(self).hex();
    }
}

/// One published number with what it was computed from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Number {
    /// Grade node keys.
    pub(crate) grades: Vec<Name>,
    pub(crate) path: String,
    /// Judge node keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) readings: Vec<Name>,
    /// Session ids (ungraded sessions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) sessions: Vec<Name>,
    /// Task digests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) tasks: Vec<Name>,
    /// Grade node keys the number leaves out on purpose (docs/verdicts.md,
    /// "Attempts").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) left_out: Vec<Name>,
    pub(crate) value: serde_json::Number,
}

impl Number {
    /// Every node key it names: grades, readings and tasks.
    pub(crate) fn node_keys(&self) -> impl Iterator<Item = (&'static str, &str)> + '_ {
        [
            ("grades", &self.grades),
            ("readings", &self.readings),
            ("tasks", &self.tasks),
        ]
        .into_iter()
        .flat_map(|(field, list)| list.iter().map(move |k| (field, &**k)))
    }
}

/// `manifest.provenance`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ManifestProvenance {
    pub(crate) assay: AssayVersion,
    /// Environment name -> where it ran.
    pub(crate) environments: BTreeMap<String, ProvenanceEnv>,
    /// blake3 of `pipeline.toml`.
    pub(crate) pipeline: String,
    pub(crate) release_node: String,
    /// Cluster node -> the graded runs (graded run, checks, reruns) that
    /// executed on it, by their grades' receipts; absent when every run
    /// was on this machine (the field is then left out of the manifest).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) graded_on: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct AssayVersion {
    pub(crate) commit: String,
    pub(crate) version: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProvenanceEnv {
    pub(crate) executor: crate::model::config::ExecutorKind,
    pub(crate) image: Option<String>,
}

/// Pretty JSON (two-space indent) with a final newline: the release's one
/// JSON formatting.
pub(crate) fn pretty(value: &impl Serialize) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(value).unwrap_or_default();
    out.push(b'\n');
    out
}

/// What [`pretty`] would print, hashed and counted as it is printed and
/// never held.
pub(crate) struct Printed {
    hasher: blake3::Hasher,
    pub(crate) len: usize,
}

impl Printed {
    pub(crate) fn of(value: &impl Serialize) -> Printed {
        use std::io::Write;
        let empty = || Printed {
            hasher: blake3::Hasher::new(),
            len: 0,
        };
        let mut w = std::io::BufWriter::with_capacity(1 << 16, empty());
        // As `pretty`: what does not print counts as nothing printed. The
        // writer itself never fails.
        let printed = serde_json::to_writer_pretty(&mut w, value).is_ok() && w.flush().is_ok();
        let mut out = if printed { w.into_parts().0 } else { empty() };
        let _ = out.write_all(b"\n");
        out
    }

    pub(crate) fn hex(&self) -> String {
        self.hasher.finalize().to_hex().to_string()
    }
}

impl std::io::Write for Printed {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.hasher.update(bytes);
        self.len += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
