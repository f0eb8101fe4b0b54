//! The files that grow with the sessions, split past their limits: the
//! matrix on pages of its own, an agent's grades on several pages, every
//! link still leading somewhere; under the limits, the same bytes as with
//! nothing split.

use super::tests_scale::input;
use super::*;

/// 4 tasks × 30 sessions, with limits small enough to split them.
fn split_small() -> (BTreeMap<String, Vec<u8>>, BTreeMap<String, Vec<u8>>) {
    let input = input(4);
    let limits = Limits {
        agent_rows: 5,
        matrix_sessions: 40,
        ..Limits::RELEASE
    };
    (
        publish_within(&input, &limits),
        publish_within(&input, &Limits::NONE),
    )
}

#[test]
fn a_large_matrix_is_on_pages_of_its_own() {
    let (files, whole) = split_small();
    let report = String::from_utf8_lossy(&files["report.html"]);
    assert!(
        !report.contains("id=\"matrix\""),
        "the matrix is still in report.html"
    );
    let pages: Vec<&String> = files
        .keys()
        .filter(|n| n.starts_with("pages/matrix-"))
        .collect();
    // 30 sessions a task, at most 40 a page: one task a page.
    assert_eq!(pages.len(), 4, "{pages:?}");
    assert!(report.contains("href=\"pages/matrix-0004.html\""));
    let cells = |text: &str| text.matches(" title=\"agent-").count();
    let on_pages: usize = pages
        .iter()
        .map(|p| cells(&String::from_utf8_lossy(&files[*p])))
        .sum();
    let whole_report = String::from_utf8_lossy(&whole["report.html"]);
    assert_eq!(on_pages, 120);
    assert_eq!(cells(&whole_report), 120);
    assert_eq!(links::dangling(&files), Vec::<String>::new());
}

#[test]
fn an_agent_with_many_grades_has_several_pages() {
    let (files, _) = split_small();
    let first = pages::agent("agent-0", "m");
    let second = pages::agent_part("agent-0", "m", 1);
    // 12 grades, 5 a page.
    assert!(files.contains_key(&pages::agent_part("agent-0", "m", 2)));
    assert!(!files.contains_key(&pages::agent_part("agent-0", "m", 3)));
    let text = String::from_utf8_lossy(&files[&second]);
    assert!(text.contains("12 grades on 3 pages"), "{text}");
    assert!(text.contains(&format!("href=\"{}\"", pages::from_page(&first))));
    assert_eq!(links::dangling(&files), Vec::<String>::new());
}

#[test]
fn under_the_limits_nothing_is_split() {
    let input = input(4);
    assert_eq!(
        publish_within(&input, &Limits::RELEASE),
        publish_within(&input, &Limits::NONE)
    );
}

/// Past its limit results.csv is written as parts, each the header and the
/// next whole rows, at most the part's bytes: read one after the other
/// they are the whole file's rows, in order; each part is in the manifest
/// with its digest, and results.csv itself is not written.
#[test]
fn a_large_results_csv_is_written_as_parts_of_whole_rows() {
    let input = input(4);
    let whole = publish_within(&input, &Limits::NONE);
    let whole_csv = String::from_utf8(whole["results.csv"].clone()).unwrap();
    let header = whole_csv.split_inclusive('\n').next().unwrap().to_owned();
    let per = 4 * 1024;
    let limits = Limits {
        csv_above: whole_csv.len() - 1,
        csv_bytes: per,
        ..Limits::RELEASE
    };
    let files = publish_within(&input, &limits);
    assert!(!files.contains_key("results.csv"));
    let parts: Vec<&String> = files.keys().filter(|n| n.starts_with("results/")).collect();
    assert!(parts.len() > 2, "{parts:?}");
    let mut rows = String::new();
    for (i, name) in parts.iter().enumerate() {
        assert_eq!(**name, format!("results/{i:04}.csv"));
        let text = String::from_utf8(files[*name].clone()).unwrap();
        assert!(text.len() <= per, "{name}: {} bytes", text.len());
        let body = text
            .strip_prefix(&header)
            .expect("each part starts with the header");
        assert!(!body.is_empty(), "{name} holds no row");
        rows.push_str(body);
    }
    assert_eq!(format!("{header}{rows}"), whole_csv);
    let manifest: serde_json::Value = serde_json::from_slice(&files["manifest.json"]).unwrap();
    for name in &parts {
        assert_eq!(
            manifest["files"][name.as_str()],
            blake3::hash(&files[*name]).to_hex().to_string(),
            "{name}"
        );
    }
    assert!(manifest["files"].get("results.csv").is_none());
}

/// A row is never cut, even one larger than a part: it is a part alone.
#[test]
fn a_row_larger_than_a_part_is_a_part_of_its_own() {
    let input = input(1);
    let limits = Limits {
        csv_above: 0,
        csv_bytes: 1,
        ..Limits::RELEASE
    };
    let files = publish_within(&input, &limits);
    let whole = publish_within(&input, &Limits::NONE);
    let rows = String::from_utf8_lossy(&whole["results.csv"])
        .lines()
        .count()
        - 1;
    let parts = files.keys().filter(|n| n.starts_with("results/")).count();
    assert_eq!(parts, rows);
}
