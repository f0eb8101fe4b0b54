//! The bundled example as a project of its own: a copy of the repository's
//! `pipeline.toml`, `examples/` and the tracked files of `cache/`, as a fresh
//! clone has them (the example repository is created by the build).

use std::path::Path;

use super::Project;

/// The root of this repository.
pub const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A temp project holding the bundled example, not yet built.
pub fn example_project() -> Project {
    let root = Path::new(ROOT);
    let project = Project::new();
    std::fs::copy(
        root.join("pipeline.toml"),
        project.path().join("pipeline.toml"),
    )
    .unwrap();
    copy_tree(&root.join("examples"), &project.path().join("examples"));
    std::fs::create_dir_all(project.cache()).unwrap();
    for tracked in ["cache/README.md", "cache/CACHEDIR.TAG"] {
        std::fs::copy(root.join(tracked), project.path().join(tracked)).unwrap();
    }
    project
}

/// Copies `from` into `to`, leaving out the example repository a build of
/// the source tree may have created (the copy creates its own).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dest) = (e.path(), to.join(e.file_name()));
        if src == Path::new(ROOT).join("examples/calc/repo") {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy_tree(&src, &dest);
        } else {
            std::fs::copy(&src, &dest).unwrap();
        }
    }
}
