//! The cache against a careless user and a damaged disk: a `--cache` that is
//! not an assay cache is refused before anything in it is touched, and a
//! damaged index stops a build instead of feeding it stale rows.

#![allow(clippy::unwrap_used)]

mod util;

use util::Project;

fn steps(n: usize) -> String {
    let mut toml = String::new();
    for i in 0..n {
        toml.push_str(&format!(
            "[[step]]\nname = \"s{i}\"\nrun = \"echo {i}-{}\"\n\n",
            "x".repeat(200)
        ));
    }
    toml
}

#[test]
fn a_cache_dir_that_is_not_an_assay_cache_is_refused_and_left_alone() {
    let p = Project::new().pipeline(&steps(2));
    let other = p.path().join("photos");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("holiday.jpg"), "precious").unwrap();
    let dir = other.display().to_string();
    for args in [
        vec!["--cache", dir.as_str(), "build"],
        vec!["--cache", dir.as_str(), "gc", "--apply"],
        vec!["--cache", dir.as_str(), "plan"],
    ] {
        let out = p.run(&args).code(5);
        assert!(
            out.stderr.contains("is not an assay cache"),
            "{}",
            out.stderr
        );
    }
    let left: Vec<_> = std::fs::read_dir(&other)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["holiday.jpg"], "the directory was changed");
    // An empty directory, or a real cache, is fine; a cache is tagged.
    p.build_json(&[]).code(0);
    assert!(p.cache().join("CACHEDIR.TAG").is_file());
    let root = p.run(&["--cache", "/", "plan"]).code(5);
    assert!(
        root.stderr.contains("cannot be a cache directory"),
        "{}",
        root.stderr
    );
}

#[test]
fn a_damaged_index_page_stops_build_and_plan_with_exit_5() {
    let p = Project::new().pipeline(&steps(300));
    p.build_json(&[]).code(0);
    let index = p.cache().join("index.sqlite");
    // Fold the write-ahead log in, so the damage lands in the pages read.
    let conn = rusqlite::Connection::open(&index).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    drop(conn);
    let page = 4096;
    let mut bytes = std::fs::read(&index).unwrap();
    assert!(bytes.len() > 4 * page, "the index has several pages");
    // Damage the root page of the `builds` table: not a page a build reads
    // to decide its hits, so only a real integrity check notices in time.
    let root: i64 = rusqlite::Connection::open(&index)
        .unwrap()
        .query_row(
            "SELECT rootpage FROM sqlite_master WHERE name = 'builds'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let root = usize::try_from(root).unwrap();
    assert!(root > 1 && root * page <= bytes.len(), "root page {root}");
    let at = (root - 1) * page;
    bytes[at..at + 8].copy_from_slice(&[0x5a; 8]);
    std::fs::write(&index, &bytes).unwrap();
    for cmd in ["build", "plan"] {
        let out = p.run(&[cmd]).code(5);
        assert!(
            out.stderr.contains("damaged") || out.stderr.contains("malformed"),
            "{cmd}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
}

/// A pipeline with one source, `[env]`, and `extra` spliced in where `@`
/// stands in the template.
fn with(env_extra: &str, top: &str, tail: &str) -> String {
    format!(
        "{top}\n[[source]]\nname = \"p\"\npath = \"repo\"\n\n[env]\ntest_command = \"python3 -m unittest -v\"\nreport = \"unittest\"\n{env_extra}\n\n{tail}\n"
    )
}

#[test]
fn senseless_values_are_config_errors_pointing_into_the_file() {
    let cases: &[(&str, String, &str)] = &[
        (
            "timeout = 0",
            with("timeout = 0", "", ""),
            "`timeout` cannot be 0",
        ),
        (
            "log_cap = 0",
            with("log_cap = 0", "", ""),
            "`log_cap` cannot be 0",
        ),
        (
            "test_command",
            with("", "", "").replace("\"python3 -m unittest -v\"", "\"  \""),
            "`test_command` is empty",
        ),
        (
            "repeats = 0",
            with("", "", "[screen]\nrepeats = 0"),
            "`repeats` cannot be 0",
        ),
        (
            "reruns = 1000",
            with("", "", "[grade]\nreruns = 1000"),
            "reruns the suite up to 1000 times",
        ),
        (
            "patterns = [\"\"]",
            with("", "", "[redact]\npatterns = [\"\"]"),
            "matches the empty string",
        ),
        (
            "patterns = [\"x*\"]",
            with("", "", "[redact]\npatterns = [\"x*\"]"),
            "matches the empty string",
        ),
        (
            "input = -1.0",
            with("", "", "[prices.m]\ninput = -1.0"),
            "price `input` of `m` is -1",
        ),
        (
            "output = nan",
            with("", "", "[prices.m]\noutput = nan"),
            "price `output` of `m` is NaN",
        ),
        (
            "name = \"p\"",
            with("", "", "[[source]]\nname = \"p\"\npath = \"other\""),
            "two sources are named `p`",
        ),
        (
            "report_file = \"../r.xml\"",
            with("report_file = \"../r.xml\"", "", ""),
            "is not a path inside the staged tree",
        ),
        (
            "report_file = \"/tmp/r.xml\"",
            with("report_file = \"/tmp/r.xml\"", "", ""),
            "is not a path inside the staged tree",
        ),
        (
            "cache = \"/\"",
            with("", "cache = \"/\"", ""),
            "would make the filesystem root",
        ),
    ];
    for (shown, toml, message) in cases {
        let p = Project::new().pipeline(toml);
        let out = p.run(&["plan"]).code(3);
        assert!(out.stderr.contains(message), "{shown}: {}", out.stderr);
        // The diagnostic quotes the offending line of the file.
        assert!(
            out.stderr.contains(shown),
            "{shown} not quoted: {}",
            out.stderr
        );
        assert!(
            !p.path().join("cache").exists(),
            "{shown}: a cache was made"
        );
    }
}
