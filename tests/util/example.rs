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
pub fn copy_tree(from: &Path, to: &Path) {
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

/// The tasks of a built release (certified and not), by instance id.
pub fn released_tasks(project: &Project) -> std::collections::BTreeMap<String, serde_json::Value> {
    ["release/tasks.jsonl", "release/tasks.uncertified.jsonl"]
        .iter()
        .map(|rel| std::fs::read_to_string(project.path().join(rel)).unwrap())
        .collect::<String>()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["instance_id"].as_str().unwrap().to_owned(), v)
        })
        .collect()
}

/// The rows of a built release's results.csv, by (session, arm).
pub fn released_results(
    project: &Project,
) -> std::collections::BTreeMap<(String, String), std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(project.path().join("release/results.csv")).unwrap();
    super::csv_records(&text)
        .into_iter()
        .map(|r| ((r["session"].clone(), r["arm"].clone()), r))
        .collect()
}

/// Makes a language example's repository with its own `make-repo.sh` at
/// `repo` in `project` and checks the README's pinned `main` commit.
pub fn make_repo(project: &Project, example: &Path, pinned: &str) {
    let made = std::process::Command::new(example.join("make-repo.sh"))
        .arg(project.path().join("repo"))
        .output()
        .unwrap();
    assert!(made.status.success(), "make-repo.sh: {made:?}");
    assert_eq!(
        String::from_utf8_lossy(&made.stdout).trim(),
        pinned,
        "the README's pinned main commit"
    );
}

/// [`make_repo`], then builds the project; panics with the build's stderr
/// if it fails.
pub fn make_and_build(project: &Project, example: &Path, pinned: &str) {
    make_repo(project, example, pinned);
    let b = project.build_json(&[]);
    assert_eq!(
        b.run.code, 0,
        "build failed\n--- stderr\n{}\n--- summary\n{:?}",
        b.run.stderr, b.summary
    );
}
