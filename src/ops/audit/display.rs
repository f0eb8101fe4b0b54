//! A node's display record, as the engine stores it beside its key record:
//! `{"params": <the params as JSON>, "deps": [<dependency names>]}`.

use std::collections::HashMap;

use assay_engine::{BuildManifest, Digest, DigestMap, ManifestEntry};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Default, Deserialize)]
pub(crate) struct NodeDisplay {
    /// The node kind's params as JSON: each kind has its own shape, so they
    /// stay a generic tree here (shown and diffed for a user; the release's
    /// are read into `ReleaseParams` where they are recomputed).
    #[serde(default)]
    pub(crate) params: Value,
    /// The dependencies' node names, in the key record's order.
    #[serde(default)]
    pub(crate) deps: Vec<String>,
}

impl NodeDisplay {
    /// An unreadable display reads as empty: no params, no names.
    pub(crate) fn parse(text: &str) -> NodeDisplay {
        serde_json::from_str(text).unwrap_or_default()
    }
}

/// A build manifest's entries indexed for [`Entries::inputs`]: by name, and
/// by output (the first entry by name of each output that has a key). An
/// export looks up every input of every node of the closure: a scan of the
/// manifest for each (`BuildManifest::find`) would grow as the square of
/// the build.
pub(crate) struct Entries<'m> {
    by_name: HashMap<&'m str, &'m ManifestEntry>,
    by_output: DigestMap<&'m ManifestEntry>,
}

impl<'m> Entries<'m> {
    pub(crate) fn of(manifest: &'m BuildManifest) -> Entries<'m> {
        let mut by_name = HashMap::with_capacity(manifest.entries.len());
        let mut by_output: DigestMap<&ManifestEntry> = DigestMap::default();
        for e in &manifest.entries {
            // The first of a name, as a scan finds it.
            by_name.entry(e.name.as_str()).or_insert(e);
            if let (Some(output), Some(_)) = (e.output, e.key) {
                by_output
                    .entry(output)
                    .and_modify(|first| {
                        if e.name < first.name {
                            *first = e;
                        }
                    })
                    .or_insert(e);
            }
        }
        Entries { by_name, by_output }
    }

    /// Each input of a node as the build has it: the entry of its recorded
    /// name when that entry made the recorded output, else the first entry
    /// (by name) of the same output. A node reused under another name (a
    /// renamed session file, a patch two sessions share) records the input
    /// names of the build that first made it, which may be gone.
    pub(crate) fn inputs(
        &self,
        names: &[String],
        outputs: &[Digest],
    ) -> Vec<Option<&'m ManifestEntry>> {
        names
            .iter()
            .zip(outputs)
            .map(|(name, output)| {
                self.by_name
                    .get(name.as_str())
                    .filter(|e| e.output == Some(*output))
                    .or_else(|| self.by_output.get(output))
                    .copied()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, key: Option<u8>, output: Option<u8>) -> ManifestEntry {
        ManifestEntry {
            name: name.into(),
            kind: "k".into(),
            key: key.map(|k| Digest([k; 32])),
            output: output.map(|o| Digest([o; 32])),
            status: "executed".into(),
        }
    }

    /// An input is found under its recorded name when that entry made the
    /// recorded output; else as the first entry by name of that output
    /// that has a key (never one without, never a later namesake).
    #[test]
    fn inputs_are_found_by_name_then_by_output() {
        let m = BuildManifest {
            entries: vec![
                entry("zeta", Some(1), Some(7)),
                entry("same", Some(2), Some(8)),
                entry("beta", Some(3), Some(7)),
                entry("alpha", None, Some(7)),
                entry("same", Some(4), Some(9)),
                entry("gone", Some(5), None),
            ],
        };
        let found = Entries::of(&m).inputs(
            &[
                "same".into(),
                "renamed".into(),
                "same".into(),
                "gone".into(),
                "zeta".into(),
            ],
            &[
                Digest([8; 32]),
                Digest([7; 32]),
                Digest([9; 32]),
                Digest([6; 32]),
                Digest([7; 32]),
            ],
        );
        let names: Vec<Option<(&str, Option<Digest>)>> = found
            .iter()
            .map(|e| e.map(|e| (e.name.as_str(), e.key)))
            .collect();
        assert_eq!(
            names,
            vec![
                Some(("same", Some(Digest([2; 32])))),
                // alpha has no key: beta is the first by name that has one.
                Some(("beta", Some(Digest([3; 32])))),
                // The first "same" made 8, not 9; nothing else made 9 with
                // a name before it, so the second "same" is found by output.
                Some(("same", Some(Digest([4; 32])))),
                None,
                Some(("zeta", Some(Digest([1; 32])))),
            ]
        );
    }
}
