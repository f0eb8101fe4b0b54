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
