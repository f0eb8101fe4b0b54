//! The blobs of a bundle, each hashed against its name.

use std::collections::BTreeMap;
use std::path::Path;

use assay_engine::Digest;

/// Every file under `blobs/`, hashed (on two threads): name -> whether its
/// bytes hash to its name. A link, a FIFO or a device there is no blob:
/// unreadable ([`super::format::open_in`]).
pub(super) fn hash_blobs(dir: &Path) -> BTreeMap<String, Result<(), String>> {
    let mut paths = Vec::new();
    let blobs = dir.join("blobs");
    for shard in std::fs::read_dir(&blobs)
        .into_iter()
        .filter(|_| super::format::real_dir(&blobs))
        .flatten()
        .flatten()
    {
        let prefix = shard.file_name().to_string_lossy().into_owned();
        if !shard.file_type().is_ok_and(|t| t.is_dir()) {
            // Not listed: a link to a directory elsewhere is no shard.
            paths.push((prefix, Path::new("blobs").join(shard.file_name())));
            continue;
        }
        for f in std::fs::read_dir(shard.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            // Below the bundle, each part checked as it is opened.
            paths.push((
                format!("{prefix}{}", f.file_name().to_string_lossy()),
                Path::new("blobs")
                    .join(shard.file_name())
                    .join(f.file_name()),
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
                            let r = match super::format::read_in(dir, path) {
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
