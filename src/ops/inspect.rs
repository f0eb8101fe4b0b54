//! What the commands read back from a build's records: a re-executed
//! grade's verdict change, a tree record's staged tree, a Harbor task's
//! images, and the environments whose contents no longer match their
//! record.

use assay_engine::Store;

use crate::model::kind::NodeKind;
use crate::model::records;
use crate::run::error::StageError;
use crate::run::executor;
use crate::run::harbor;

/// For `verify --reexecute`: how a re-executed grade's verdict (a mined
/// task's, or a Harbor task verifier's) differs from
/// the stored one (`None` when it does not, or `kind` is not a grade).
pub(crate) fn verdict_change(
    kind: &str,
    stored: Option<&[u8]>,
    new: Option<&[u8]>,
) -> Option<String> {
    if kind != NodeKind::Grade && kind != NodeKind::HarborGrade {
        return None;
    }
    let read = |b: Option<&[u8]>| {
        b.and_then(|b| serde_json::from_slice::<records::GradeRecord>(b).ok())
            .map(|g| (g.verdict, g.fault))
    };
    let (before, after) = (read(stored)?, read(new)?);
    (before != after).then(|| {
        format!(
            "stored {} (fault {}), re-executed {} (fault {})",
            before.0, before.1, after.0, after.1
        )
    })
}

/// For `gc`: the staged tree a node of a kind that
/// [stages a tree](NodeKind::stages_a_tree) names in its output, if any.
pub(crate) fn staged_tree(output: &[u8]) -> Option<String> {
    /// Only the tree of a `TreeRecord`: a record whose other fields an
    /// older assay wrote otherwise still pins its tree.
    #[derive(serde::Deserialize)]
    struct Staged {
        tree: Option<String>,
    }
    serde_json::from_slice::<Staged>(output).ok()?.tree
}

/// For `gc --images`: the environment images a `harbor_task` node's output
/// names (the first build's and the rebuild's).
pub(crate) fn harbor_images(output: &[u8]) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Image {
        image: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Rebuilt {
        environment: Image,
    }
    #[derive(serde::Deserialize)]
    struct Screened {
        environment: Image,
        rebuild: Option<Rebuilt>,
    }
    let Ok(r) = serde_json::from_slice::<Screened>(output) else {
        return Vec::new();
    };
    [
        r.environment.image,
        r.rebuild.and_then(|b| b.environment.image),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The labels of the Harbor environment images built for the cache at
/// `cache_dir` (the first build's and the rebuild's).
pub(crate) fn harbor_image_labels(cache_dir: &std::path::Path) -> Vec<String> {
    harbor::screen::image_labels(cache_dir).to_vec()
}

/// For `verify`: every prepared environment directory whose contents no
/// longer match the digest recorded when it was set up, with why; an
/// index that cannot be read is [`StageError::Cache`].
pub(crate) fn damaged_environments(store: &Store) -> Result<Vec<(String, String)>, StageError> {
    let mut out = Vec::new();
    let index = store.load_index().map_err(StageError::cache)?;
    for key in store
        .keys_of_kind(NodeKind::Env.as_str())
        .map_err(StageError::cache)?
    {
        let Some(row) = index.get(&key) else { continue };
        let Ok(bytes) = store.output_bytes(row) else {
            continue;
        };
        let Ok(rec) = serde_json::from_slice::<records::EnvRecord>(&bytes) else {
            continue;
        };
        let executor::EnvHandle::HostDir(dir) = executor::EnvHandle::of(&rec, store.dir()) else {
            continue;
        };
        if !rec.ok || rec.digest.is_empty() || !dir.is_dir() {
            continue;
        }
        match executor::local::dir_digest(&dir) {
            Ok(d) if d == rec.digest => {}
            Ok(d) => out.push((
                rec.dir.clone(),
                format!("contents hash to {d}, recorded {} at setup", rec.digest),
            )),
            Err(e) => out.push((rec.dir.clone(), format!("cannot be read: {e}"))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_staged_tree_is_read_from_a_tree_record_whatever_else_it_holds() {
        assert_eq!(
            staged_tree(br#"{"tree":"abc","skipped":null,"hidden":["t.py"]}"#).as_deref(),
            Some("abc")
        );
        assert_eq!(staged_tree(br#"{"tree":null,"skipped":"x"}"#), None);
        assert_eq!(staged_tree(b"not json"), None);
    }
}
