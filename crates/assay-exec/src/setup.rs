//! An environment's setup as one shell script, so that `cd` and variables
//! carry from one command to the next, which says which command failed: an
//! exit trap writes the failing step's index and exit code to a file
//! ([`failed_step`] reads it back).

use std::fmt::Write as _;

/// `commands` as one `set -e` script whose exit trap writes `STEP CODE` to
/// `record_to` when a command fails (`ASSAY_STEP` is the command's index).
pub fn script(commands: &[String], record_to: &str) -> String {
    let mut script = format!(
        "set -e\ntrap 'rc=$?; [ \"$rc\" -eq 0 ] || echo \"${{ASSAY_STEP:-}} $rc\" >{record_to}' EXIT\n"
    );
    for (step, command) in commands.iter().enumerate() {
        let _ = writeln!(script, "ASSAY_STEP={step}");
        script.push_str(command);
        script.push('\n');
    }
    script
}

/// The failing step the trap of [`script`] recorded, from the file's text.
pub fn failed_step(recorded: &str) -> Option<usize> {
    recorded.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trap_names_the_failing_step() {
        let d = tempfile::tempdir().unwrap();
        let at = d.path().join("failed");
        let commands = ["cd /".to_owned(), "X=3".to_owned(), "exit $X".to_owned()];
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(script(&commands, &at.display().to_string()))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        let recorded = std::fs::read_to_string(&at).unwrap();
        assert_eq!(recorded.trim(), "2 3");
        assert_eq!(failed_step(&recorded), Some(2));
        let ok = ["true".to_owned()];
        let _ = std::fs::remove_file(&at);
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(script(&ok, &at.display().to_string()))
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(!at.exists());
    }
}
