//! The blobs of a bundle, each hashed against its name.

use std::collections::BTreeMap;
use std::path::Path;

use assay_engine::Digest;

/// Every file under `blobs/`, hashed (on two threads): name -> whether its
/// bytes hash to its name.
pub(super) fn hash_blobs(dir: &Path) -> BTreeMap<String, Result<(), String>> {
    let mut paths = Vec::new();
    for shard in std::fs::read_dir(dir.join("blobs"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let prefix = shard.file_name().to_string_lossy().into_owned();
        for f in std::fs::read_dir(shard.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            paths.push((
                format!("{prefix}{}", f.file_name().to_string_lossy()),
                f.path(),
            ));
        }
    }
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 8);
    let chunk = paths.len().div_ceil(threads).max(1);
    let mut out = BTreeMap::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|(name, path)| {
                            let r = match std::fs::read(path) {
                                Err(e) => Err(format!("unreadable: {e}")),
                                Ok(b) => {
                                    let got = Digest::of(&b).to_hex();
                                    if got == *name {
                                        Ok(())
                                    } else {
                                        Err(format!("its bytes hash to {got}"))
                                    }
                                }
                            };
                            (name.clone(), r)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            out.extend(h.join().unwrap_or_default());
        }
    });
    out
}
