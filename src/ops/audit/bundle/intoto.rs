//! `provenance.intoto.json`: an in-toto Statement (SLSA provenance v1)
//! whose subjects are the release files, by sha256 (and blake3, assay's own
//! digest). Fields are declared in the byte order of their JSON names, so
//! the statement's bytes are those of a sorted JSON object.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use assay_engine::Digest;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

use super::format::{Bundle, BundleEnv, BundleProvenance};
use crate::ops::audit::finding::{Finding, finding};
use crate::release::AssayVersion;

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Statement {
    #[serde(rename = "_type")]
    type_: String,
    predicate: Predicate,
    #[serde(rename = "predicateType")]
    predicate_type: String,
    subject: Vec<Subject>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Predicate {
    build_definition: BuildDefinition,
    run_details: RunDetails,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BuildDefinition {
    build_type: String,
    external_parameters: ExternalParameters,
    internal_parameters: InternalParameters,
    resolved_dependencies: Vec<Subject>,
}

#[derive(Debug, Serialize, Deserialize)]
struct ExternalParameters {
    judges: BTreeMap<String, String>,
    release_node: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct InternalParameters {
    environments: BTreeMap<String, BundleEnv>,
}

#[derive(Debug, Serialize, Deserialize)]
struct RunDetails {
    builder: Builder,
    metadata: Metadata,
}

#[derive(Debug, Serialize, Deserialize)]
struct Builder {
    id: String,
    version: Option<AssayVersion>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    invocation_id: String,
}

/// A file, by name and digests.
#[derive(Debug, Serialize, Deserialize)]
struct Subject {
    digest: SubjectDigest,
    name: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct SubjectDigest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    blake3: Option<String>,
    #[serde(default)]
    sha256: Option<String>,
}

/// Only the subjects: what `verify` checks.
#[derive(Deserialize)]
struct Subjects {
    #[serde(default)]
    subject: Vec<Subject>,
}

/// A release file's two digests (hex), as its subject names them.
pub(super) struct Hashes {
    sha256: String,
    blake3: String,
}

impl Hashes {
    pub(super) fn of(bytes: &[u8]) -> Hashes {
        Hashes {
            sha256: sha256_hex(bytes),
            blake3: Digest::of(bytes).to_hex(),
        }
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

impl Statement {
    /// The statement of the release files `files` (name -> digests, in
    /// name order).
    pub(super) fn new(files: &BTreeMap<String, Hashes>, provenance: &BundleProvenance) -> Self {
        let subject = files
            .iter()
            .map(|(name, h)| Subject {
                name: format!("release/{name}"),
                digest: SubjectDigest {
                    sha256: Some(h.sha256.clone()),
                    blake3: Some(h.blake3.clone()),
                },
            })
            .collect();
        Statement {
            type_: "https://in-toto.io/Statement/v1".to_owned(),
            subject,
            predicate_type: "https://slsa.dev/provenance/v1".to_owned(),
            predicate: Predicate {
                build_definition: BuildDefinition {
                    build_type: "https://assay.dev/release/v1".to_owned(),
                    external_parameters: ExternalParameters {
                        release_node: provenance.release_node.clone(),
                        judges: provenance.judges.clone(),
                    },
                    internal_parameters: InternalParameters {
                        environments: provenance.environments.clone(),
                    },
                    resolved_dependencies: Vec::new(),
                },
                run_details: RunDetails {
                    builder: Builder {
                        id: "https://assay.dev/builder/assay".to_owned(),
                        version: provenance.assay.clone(),
                    },
                    metadata: Metadata {
                        invocation_id: provenance.release_digest.clone(),
                    },
                },
            },
        }
    }
}

/// `provenance.intoto.json`: every subject's sha256 must be its file's.
pub(super) fn check_statement(b: &Bundle, findings: &mut Vec<Finding>) {
    let Ok(bytes) = super::format::read_in(&b.dir, Path::new("provenance.intoto.json")) else {
        findings.push(finding("provenance.intoto.json", "missing"));
        return;
    };
    let subjects = serde_json::from_slice::<Subjects>(&bytes)
        .map(|s| s.subject)
        .unwrap_or_default();
    let named: BTreeSet<&str> = subjects.iter().map(|s| s.name.as_str()).collect();
    for name in b.files.sorted_names() {
        if !named.contains(format!("release/{name}").as_str()) {
            findings.push(finding(
                "provenance.intoto.json",
                format!("release/{name} is not a subject"),
            ));
        }
    }
    for s in &subjects {
        let name = &s.name;
        let file = name
            .strip_prefix("release/")
            .and_then(|n| b.files.sha256(n));
        let Some(sha) = file else {
            findings.push(finding(
                "provenance.intoto.json",
                format!("subject {name} is not a file of the bundle"),
            ));
            continue;
        };
        if s.digest.sha256.as_deref() != Some(sha) {
            findings.push(finding(
                "provenance.intoto.json",
                format!(
                    "subject {name}: sha256 {}, the file hashes to {sha}",
                    serde_json::to_string(&s.digest.sha256).unwrap_or_default()
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The statement and the provenance were `Value`s (keys sorted) before
    /// they were types: their fields keep that order, so a bundle exported
    /// by this assay has the bytes an older one wrote.
    #[test]
    fn the_statement_and_the_provenance_write_their_keys_sorted() {
        let env = BundleEnv {
            base_image: None,
            digest: Some("d".into()),
            executor: crate::model::config::ExecutorKind::Docker,
            image: Some("sha256:1".into()),
            key: "k".into(),
        };
        let provenance = BundleProvenance {
            assay: Some(AssayVersion {
                commit: "c".into(),
                version: "v".into(),
            }),
            environments: [("env:x".to_owned(), env)].into(),
            judges: [("j".to_owned(), "s".to_owned())].into(),
            pipeline: Some("p".into()),
            release_digest: "r".into(),
            release_node: "n".into(),
        };
        let files = [("summary.json".to_owned(), Hashes::of(b"{}"))].into();
        let statement = Statement::new(&files, &provenance);
        for text in [
            serde_json::to_string_pretty(&statement),
            serde_json::to_string_pretty(&provenance),
        ] {
            let text = text.expect("json");
            let tree: serde_json::Value = serde_json::from_str(&text).expect("json");
            assert_eq!(text, format!("{tree:#}"));
        }
    }
}
