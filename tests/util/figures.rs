//! The figures of a release's report.html and the names it shows for them:
//! a table cell or a span of class `n` carries its path in `title`, a
//! chart's number in an SVG `<title>`; `assay explain NAME` must answer each
//! with the figure's value.

use std::collections::BTreeSet;
use std::path::Path;

use super::links::unescape;
use super::project::Project;

/// Every name report.html shows for a figure; panics on a figure (a cell
/// or span of class `n` with a digit in it) that shows none.
pub fn names(html: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (open, close) in [
        ("<td class=\"n\"", "</td>"),
        ("<span class=\"n\"", "</span>"),
    ] {
        let mut row = "";
        for (i, cell) in html.split(open).enumerate() {
            if i == 0 {
                row = cell.rsplit("<tr>").next().unwrap_or_default();
                continue;
            }
            let (attrs, rest) = cell.split_once('>').unwrap();
            let text = rest.split(close).next().unwrap();
            let before = row;
            row = rest.rsplit("<tr>").next().unwrap_or_default();
            if !text.bytes().any(|b| b.is_ascii_digit()) {
                continue;
            }
            let name = attrs
                .split("title=\"")
                .nth(1)
                .and_then(|t| t.split('"').next())
                .unwrap_or_else(|| panic!("a figure without a name: `{text}` after `{before}`"));
            names.insert(unescape(name));
        }
    }
    for svg in html.split("<svg").skip(1) {
        let svg = svg.split("</svg>").next().unwrap();
        for text in svg.split("<text").skip(1) {
            let text = text.split("</text>").next().unwrap();
            let shown = text.rsplit('>').next().unwrap();
            if !shown.contains('%') || !text.contains("n=") {
                continue;
            }
            let name = text
                .split("<title>")
                .nth(1)
                .and_then(|t| t.split("</title>").next())
                .unwrap_or_else(|| panic!("a chart figure without a name: `{shown}`"));
            names.insert(unescape(name));
        }
    }
    names
}

/// Runs `assay [PRE…] explain NAME` on every name the report in `release`
/// shows (at least `at_least` of them, one containing each of `must`) and
/// checks each answers with the figure's value.
pub fn explained(
    project: &Project,
    pre: &[&str],
    release: &Path,
    at_least: usize,
    must: &[&str],
) -> BTreeSet<String> {
    let html = std::fs::read_to_string(release.join("report.html")).unwrap();
    let names = names(&html);
    assert!(names.len() >= at_least, "{names:#?}");
    for m in must {
        assert!(
            names.iter().any(|n| n.contains(m)),
            "no figure named `…{m}…`: {names:#?}"
        );
    }
    for name in &names {
        let args: Vec<&str> = pre
            .iter()
            .copied()
            .chain(["explain", name.as_str()])
            .collect();
        let run = project.run(&args);
        assert_eq!(run.code, 0, "explain {name}:\n{}", run.stderr);
        assert!(
            run.stdout.contains(&format!("{name} = ")),
            "explain {name}:\n{}",
            run.stdout
        );
    }
    names
}
