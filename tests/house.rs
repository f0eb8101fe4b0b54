//! The house's own checks (docs/architecture.md): `scripts/import-cycles.py`
//! holds the layers' order and finds circles of files and folders,
//! `scripts/sizes.py` the size limits. Each is run on this crate (clean)
//! and on a small tree written here with the fault it must find.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn python(script: &Path, args: &[&str]) -> Output {
    Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 runs")
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, body) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
}

#[test]
fn the_crate_keeps_its_layers_and_its_sizes() {
    let cycles = python(
        &repo().join("scripts/import-cycles.py"),
        &["--check", repo().join("src").to_str().unwrap()],
    );
    let said = text(&cycles);
    assert!(cycles.status.success(), "{said}");
    for line in [
        "0 import circle(s) of 0 files",
        "0 folder circle(s) of 0 folders",
        "0 back-up arrow(s)",
    ] {
        assert!(said.contains(line), "{line} not in:\n{said}");
    }
    let sizes = python(&repo().join("scripts/sizes.py"), &["--check"]);
    let said = text(&sizes);
    assert!(sizes.status.success(), "{said}");
    assert!(said.contains("files over 600 code lines: 0"), "{said}");
    assert!(said.contains("functions over 150 lines: 0"), "{said}");
}

/// A tree in the crate's layers with one of each fault: a `mod.rs` and
/// its child that use each other, a lower layer naming a higher one, and
/// two folders whose files import each other's (no two files in a loop).
const FAULTY: &[(&str, &str)] = &[
    (
        "main.rs",
        "mod model;\nmod nodes;\nmod run;\nfn main() {}\n",
    ),
    (
        "model/mod.rs",
        "pub(crate) mod child;\nuse child::Child;\npub(crate) struct Base(Child);\n",
    ),
    (
        "model/child.rs",
        "pub(crate) struct Child;\npub(crate) fn base(b: &super::Base) -> &super::Base { b }\n",
    ),
    (
        "run/mod.rs",
        "pub(crate) fn go() { crate::nodes::kind(); }\n",
    ),
    (
        "nodes/mod.rs",
        "pub(crate) mod sub;\npub(crate) mod x;\npub(crate) mod y;\npub(crate) fn kind() {}\n",
    ),
    ("nodes/x.rs", "pub(crate) fn x() { super::sub::s::s(); }\n"),
    ("nodes/y.rs", "pub(crate) fn y() {}\n"),
    ("nodes/sub/mod.rs", "pub(crate) mod s;\npub(crate) mod t;\n"),
    ("nodes/sub/s.rs", "pub(crate) fn s() {}\n"),
    (
        "nodes/sub/t.rs",
        "pub(crate) fn t() { crate::nodes::y::y(); }\n",
    ),
];

#[test]
fn the_import_checker_finds_a_parent_child_circle_an_upward_import_and_a_folder_circle() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    write(&src, FAULTY);
    let script = repo().join("scripts/import-cycles.py");
    let out = python(&script, &["--check", "--arrows", src.to_str().unwrap()]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("2 files: model/child.rs, model/mod.rs"),
        "{said}"
    );
    assert!(
        said.contains("back-up arrow: run/mod.rs (run) -> nodes/mod.rs (nodes)"),
        "{said}"
    );
    assert!(said.contains("2 folders: nodes, nodes/sub"), "{said}");
    assert!(said.contains("1 folder circle(s) of 2 folders"), "{said}");

    // Each fault mended: the shared type in a sibling, the call made from
    // above, one folder's import dropped. The same tree then passes.
    let mended = tempfile::tempdir().unwrap();
    let src = mended.path().join("src");
    write(&src, FAULTY);
    write(
        &src,
        &[
            (
                "model/mod.rs",
                "pub(crate) mod base;\npub(crate) mod child;\n",
            ),
            ("model/base.rs", "pub(crate) struct Base;\n"),
            (
                "model/child.rs",
                "pub(crate) fn base(b: &super::base::Base) -> &super::base::Base { b }\n",
            ),
            ("run/mod.rs", "pub(crate) fn go() {}\n"),
            ("nodes/sub/t.rs", "pub(crate) fn t() {}\n"),
        ],
    );
    let out = python(&script, &["--check", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn the_size_checker_counts_production_code_and_leaves_tests_out() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("scripts")).unwrap();
    std::fs::copy(
        repo().join("scripts/sizes.py"),
        tmp.path().join("scripts/sizes.py"),
    )
    .unwrap();
    let body: String = (0..160)
        .map(|i| format!("    let _v{i} = {i};\n"))
        .collect();
    let tests: String = (0..700).map(|i| format!("    fn t{i}() {{}}\n")).collect();
    let comments: String = (0..700).map(|i| format!("// note {i}\n")).collect();
    write(
        tmp.path(),
        &[
            (
                "src/main.rs",
                &format!(
                    "{comments}fn main() {{\n{body}}}\n\n#[cfg(test)]\nmod tests {{\n{tests}}}\n"
                ),
            ),
            ("src/small.rs", "pub(crate) fn small() {}\n"),
        ],
    );
    let out = python(&tmp.path().join("scripts/sizes.py"), &["--check"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("functions over 150 lines: 1"), "{said}");
    assert!(said.contains("main"), "{said}");
    // 700 comment lines and a 700-line test module are not code lines.
    assert!(said.contains("files over 600 code lines: 0"), "{said}");
}
