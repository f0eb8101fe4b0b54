//! How a published release file differs from its recomputation, named for
//! a reader: a number's path in a JSON file, a row and column of
//! results.csv (or of one of its parts), else the first differing line.
//! The JSON is compared as generic trees (`Value`): any two documents,
//! whatever their schema.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::finding::{Finding, finding};

/// Published against recomputed, naming the file and the first differing
/// field (a number's path in summary.json, a column of results.csv).
pub(super) fn compare_files(
    published: &BTreeMap<String, Vec<u8>>,
    recomputed: &BTreeMap<String, Vec<u8>>,
    findings: &mut Vec<Finding>,
) {
    for (name, bytes) in recomputed {
        let what = format!("release/{name}");
        match published.get(name) {
            None => findings.push(finding(what, "recomputed, but missing from the bundle")),
            Some(have) if have == bytes => {}
            Some(have) => findings.push(finding(what, difference(name, have, bytes))),
        }
    }
    for name in published.keys() {
        if !recomputed.contains_key(name) {
            findings.push(finding(
                format!("release/{name}"),
                "in the bundle, but not a file of the release",
            ));
        }
    }
}

/// How release file `name` as published (`have`) differs from its
/// recomputation (`bytes`): the first differing field of a JSON file or of
/// results.csv, else the first differing line.
pub(super) fn difference(name: &str, have: &[u8], bytes: &[u8]) -> String {
    let field = match name {
        "summary.json" | "manifest.json" | "funnel.json" => {
            let a: Value = serde_json::from_slice(have).unwrap_or_default();
            let b: Value = serde_json::from_slice(bytes).unwrap_or_default();
            let root = if name == "summary.json" {
                "summary"
            } else {
                ""
            };
            first_json_difference(&a, &b, root.to_owned())
        }
        csv if csv == "results.csv" || csv.starts_with("results/") => {
            first_csv_difference(have, bytes)
        }
        _ => None,
    };
    match field {
        Some(f) => format!("field {f}"),
        None => first_difference(have, bytes),
    }
}

fn segment(key: &str) -> String {
    if !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        format!(".{key}")
    } else {
        format!("[{key}]")
    }
}

/// The path of the first value that differs, with both values.
fn first_json_difference(a: &Value, b: &Value, path: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_json_difference(p, q, format!("{path}{}", segment(k))),
                (p, q) => Some(format!(
                    "{path}{}: published {}, recomputed {}",
                    segment(k),
                    p.map_or("(absent)".to_owned(), Value::to_string),
                    q.map_or("(absent)".to_owned(), Value::to_string)
                )),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_json_difference(p, q, format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: published {a}, recomputed {b}")),
    }
}

/// Splits one CSV line (RFC 4180 quoting).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                if let Some(f) = out.last_mut() {
                    f.push('"');
                }
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            c => {
                if let Some(f) = out.last_mut() {
                    f.push(c);
                }
            }
        }
    }
    out
}

/// "row N (session …, arm …) column C: published …, recomputed …", or a row
/// missing or added.
fn first_csv_difference(published: &[u8], recomputed: &[u8]) -> Option<String> {
    let a = String::from_utf8_lossy(published);
    let b = String::from_utf8_lossy(recomputed);
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let header = csv_fields(b.first()?);
    let label = |fields: &[String]| {
        let col = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .and_then(|i| fields.get(i))
                .cloned()
                .unwrap_or_default()
        };
        format!("session {}, arm {}", col("session"), col("arm"))
    };
    for i in 0..a.len().max(b.len()) {
        match (a.get(i), b.get(i)) {
            (Some(x), Some(y)) if x == y => {}
            (Some(_), Some(y)) if a.len() < b.len() && a[i..] == b[i + 1..] => {
                return Some(format!("row {i} ({}) is missing", label(&csv_fields(y))));
            }
            (Some(x), Some(_)) if a.len() > b.len() && a[i + 1..] == b[i..] => {
                return Some(format!(
                    "row {i} ({}) is not in the recomputation",
                    label(&csv_fields(x))
                ));
            }
            (Some(x), Some(y)) => {
                let (fx, fy) = (csv_fields(x), csv_fields(y));
                let col = (0..fx.len().max(fy.len())).find(|&c| fx.get(c) != fy.get(c))?;
                return Some(format!(
                    "row {i} ({}) column {}: published `{}`, recomputed `{}`",
                    label(&fy),
                    header.get(col).map_or("?", String::as_str),
                    fx.get(col).map_or("", String::as_str),
                    fy.get(col).map_or("", String::as_str)
                ));
            }
            (None, Some(y)) => {
                return Some(format!("row {i} ({}) is missing", label(&csv_fields(y))));
            }
            (Some(x), None) => {
                return Some(format!(
                    "row {i} ({}) is not in the recomputation",
                    label(&csv_fields(x))
                ));
            }
            (None, None) => {}
        }
    }
    None
}

/// "line N: published `…`, recomputed `…`".
pub(super) fn first_difference(published: &[u8], recomputed: &[u8]) -> String {
    let a = String::from_utf8_lossy(published);
    let b = String::from_utf8_lossy(recomputed);
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            let cut = |s: &str| s.chars().take(120).collect::<String>();
            return format!(
                "differs from its recomputation at line {}: published `{}`, recomputed `{}`",
                i + 1,
                cut(x.trim()),
                cut(y.trim())
            );
        }
    }
    format!(
        "differs from its recomputation in length ({} vs {} bytes)",
        published.len(),
        recomputed.len()
    )
}
#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn csv_fields_follow_rfc_4180_quoting() {
        assert_eq!(
            csv_fields(r#"a,"b,c","d""e",,f"#),
            ["a", "b,c", "d\"e", "", "f"]
        );
    }

    #[test]
    fn the_first_json_difference_is_named_by_its_path() {
        let a = json!({"agents": {"a/m": {"n": 2, "rate": 0.5}}, "x": [1, 2]});
        let mut b = a.clone();
        b["agents"]["a/m"]["rate"] = json!(0.25);
        assert_eq!(
            first_json_difference(&b, &a, "summary".into()).as_deref(),
            Some("summary.agents[a/m].rate: published 0.25, recomputed 0.5")
        );
        assert_eq!(first_json_difference(&a, &a, "summary".into()), None);
        b = a.clone();
        b["x"] = json!([1]);
        assert!(
            first_json_difference(&b, &a, "summary".into())
                .is_some_and(|d| d.starts_with("summary.x: published [1]"))
        );
    }

    #[test]
    fn a_missing_csv_row_is_named_by_its_session_and_arm() {
        let full = b"session,arm,verdict\ns1,exclude,resolved\ns2,exclude,unresolved\n";
        let dropped = b"session,arm,verdict\ns2,exclude,unresolved\n";
        assert_eq!(
            first_csv_difference(dropped, full).as_deref(),
            Some("row 1 (session s1, arm exclude) is missing")
        );
        let edited = b"session,arm,verdict\ns1,exclude,unresolved\ns2,exclude,unresolved\n";
        assert_eq!(
            first_csv_difference(edited, full).as_deref(),
            Some(
                "row 1 (session s1, arm exclude) column verdict: published `unresolved`, recomputed `resolved`"
            )
        );
    }
}
