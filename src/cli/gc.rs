//! `assay gc`: what is unreachable from the last N builds, and how much it frees.

use std::collections::HashSet;

use assay_engine::CacheLock;
use clap::Args;

use super::shared::{Failure, Global};
use crate::exit;
use crate::model::kind::NodeKind;
use crate::pipeline::Pipeline;

/// Report (or with --apply, delete) cache entries unreachable from the last N builds.
#[derive(Args, Debug)]
pub(crate) struct GcArgs {
    /// How many recent builds keep their nodes alive.
    #[arg(long, default_value_t = 3)]
    keep: usize,
    /// Delete instead of only reporting.
    #[arg(long)]
    apply: bool,
    /// Also the Docker images of Harbor task environments this cache built
    /// (labelled with it) that no kept build names. Needs the daemon.
    #[arg(long)]
    images: bool,
}

pub(crate) fn run(global: &Global, args: GcArgs) -> Result<i32, Failure> {
    let pipeline = Pipeline::load(&global.pipeline).ok();
    let dir = global.cache_dir(pipeline.as_ref());
    super::shared::check_cache_dir(&dir)?;
    let _lock = CacheLock::acquire(&dir, |_| {
        eprintln!("waiting for the build on this cache to finish")
    })
    .map_err(Failure::cache)?;
    let store = global.open_store(pipeline.as_ref())?;
    let mut keep = HashSet::new();
    let mut keep_blobs = HashSet::new();
    // Staged trees (outputs of `tree` and `stage` nodes) pin their objects in cache/git.
    let mut tree_nodes = HashSet::new();
    let mut harbor_nodes = HashSet::new();
    for b in store.builds(args.keep.max(1)).map_err(Failure::cache)? {
        if let Some(m) = b.manifest {
            keep_blobs.insert(m);
        }
        if let Some(m) = store.manifest(&b).map_err(Failure::cache)? {
            keep.extend(m.entries.iter().filter_map(|e| e.key));
            tree_nodes.extend(
                m.entries
                    .iter()
                    .filter(|e| NodeKind::parse(&e.kind).is_some_and(NodeKind::stages_a_tree))
                    .filter_map(|e| e.key),
            );
            harbor_nodes.extend(
                m.entries
                    .iter()
                    .filter(|e| e.kind == NodeKind::HarborTask)
                    .filter_map(|e| e.key),
            );
        }
    }
    let images = if args.images {
        let mut kept_images = HashSet::new();
        for key in &harbor_nodes {
            if let Some((_, _, row)) = store.key_record(key).map_err(Failure::cache)?
                && let Ok(bytes) = store.output_bytes(&row)
            {
                kept_images.extend(crate::ops::inspect::harbor_images(&bytes));
            }
        }
        Some(gc_images(store.dir(), &kept_images, args.apply)?)
    } else {
        None
    };
    let mut kept_trees = Vec::new();
    for key in &tree_nodes {
        if let Some((_, _, row)) = store.key_record(key).map_err(Failure::cache)?
            && let Ok(bytes) = store.output_bytes(&row)
            && let Some(tree) = crate::ops::inspect::staged_tree(&bytes)
        {
            kept_trees.push(tree);
        }
    }
    kept_trees.sort();
    kept_trees.dedup();
    let git_dir = store.dir().join("git");
    let objects = if git_dir.is_dir() {
        assay_git::TreeStore::open_or_init(&git_dir)
            .and_then(|t| t.prune(&kept_trees, args.apply))
            .map_err(Failure::cache)?
    } else {
        0
    };
    for (key, row) in store.load_index().map_err(Failure::cache)? {
        // Nodes that are the release's own pins stay too.
        if keep.contains(&key) {
            keep_blobs.insert(row.output);
        }
    }
    let (rows, blobs, bytes) = store
        .gc(&keep, &keep_blobs, args.apply)
        .map_err(Failure::cache)?;
    let (envs, env_bytes) = gc_envs(&store.dir().join("envs"), &keep, args.apply);
    let verb = if args.apply { "freed" } else { "would free" };
    println!(
        "{verb} {rows} index rows, {blobs} blobs and {envs} environment directories ({} bytes), and {objects} staged-tree objects, keeping what the last {} builds reached",
        bytes + env_bytes,
        args.keep.max(1)
    );
    if let Some((count, bytes)) = images {
        println!(
            "{verb} {count} Harbor environment images of this cache ({bytes} bytes in the daemon)"
        );
    }
    let images_left = images.is_some_and(|(count, _)| count > 0);
    if !args.apply && (rows > 0 || blobs > 0 || envs > 0 || objects > 0 || images_left) {
        let flags = if args.images { " --images" } else { "" };
        println!("run `assay gc --apply{flags}` to delete them");
    }
    Ok(exit::OK)
}

/// The Harbor environment images labelled with this cache that no kept
/// `harbor_task` record names: counted, and removed when `apply`. An image
/// another cache or tool built carries another label (or none) and is never
/// listed. Returns (images, bytes).
fn gc_images(
    cache_dir: &std::path::Path,
    kept: &HashSet<String>,
    apply: bool,
) -> Result<(usize, u64), Failure> {
    let labels = crate::ops::inspect::harbor_image_labels(cache_dir);
    let rt = super::shared::runtime()?;
    rt.block_on(async {
        let daemon = |e: assay_docker::DockerError| {
            Failure::from(crate::run::error::StageError::sandbox(
                e,
                "`gc --images` needs the Docker daemon (`docker info` checks it)",
            ))
        };
        let docker = assay_docker::Docker::connect().await.map_err(daemon)?;
        let (mut count, mut bytes) = (0, 0);
        for (id, size) in docker.labelled_images(&labels).await.map_err(daemon)? {
            if kept.contains(id.as_str()) {
                continue;
            }
            count += 1;
            bytes += size;
            if apply {
                docker.remove_image(&id).await.map_err(daemon)?;
            }
        }
        Ok((count, bytes))
    })
}

/// Environment directories are named by their env node's key: those no kept
/// build reached go too. Returns (directories, bytes).
fn gc_envs(
    dir: &std::path::Path,
    keep: &HashSet<assay_engine::Digest>,
    apply: bool,
) -> (usize, u64) {
    let (mut count, mut bytes) = (0, 0);
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let live = name
            .parse::<assay_engine::Digest>()
            .map(|d| keep.contains(&d))
            .unwrap_or(false);
        if live {
            continue;
        }
        count += 1;
        bytes += dir_size(&entry.path());
        if apply {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    (count, bytes)
}

fn dir_size(path: &std::path::Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| dir_size(&e.path()))
        .sum()
}
