//! What a build of `[[harbor_dataset]]`s leaves: `harbor-tasks.jsonl` read
//! back, and the screening containers it must not leave.

use std::process::Command;

use serde_json::Value;

use super::Project;

/// `release/harbor-tasks.jsonl` of `p`: its text and its lines.
pub fn harbor_tasks(p: &Project) -> (String, Vec<Value>) {
    let text = std::fs::read_to_string(p.path().join("release/harbor-tasks.jsonl")).unwrap();
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (text, lines)
}

/// The line of `folder`.
pub fn by_folder(lines: &[Value], folder: &str) -> Value {
    lines
        .iter()
        .find(|l| l["folder"] == folder)
        .unwrap_or_else(|| panic!("no line for {folder}"))
        .clone()
}

/// No screening container of the tasks `lines` released outlives the
/// build: none made from their images (other builds on the same daemon
/// screen tasks of their own meanwhile).
pub fn assert_no_screening_containers(lines: &[Value]) {
    for image in lines
        .iter()
        .filter_map(|l| l["environment"]["image"].as_str())
    {
        let left = Command::new("docker")
            .args(["ps", "-aq", "--filter", "label=assay.harbor=screen"])
            .args(["--filter", &format!("ancestor={image}")])
            .output()
            .unwrap();
        assert!(left.status.success());
        assert!(
            String::from_utf8_lossy(&left.stdout).trim().is_empty(),
            "screening containers of {image} left behind"
        );
    }
}

/// Removes, when dropped, the environment images the builds of `p` made
/// (labelled with its cache) and the layers beneath them: a test leaves no
/// image behind, and touches no other build's.
pub struct BuiltImages(String);

impl BuiltImages {
    pub fn of(p: &Project) -> BuiltImages {
        BuiltImages(format!("label=assay.cache={}", p.cache().display()))
    }

    /// The ids of the images still there.
    pub fn ids(&self) -> Vec<String> {
        let out = Command::new("docker")
            .args([
                "images",
                "-q",
                "--no-trunc",
                "--filter",
                "label=assay.harbor=environment",
            ])
            .args(["--filter", &self.0])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for BuiltImages {
    fn drop(&mut self) {
        let ids = self.ids();
        if !ids.is_empty() {
            let _ = Command::new("docker")
                .arg("rmi")
                .arg("-f")
                .args(&ids)
                .output();
        }
    }
}
