//! Reading the release's CSV files (RFC 4180) into rows and records.

use std::collections::BTreeMap;

/// RFC 4180: fields separated by commas, optionally quoted (`""` inside a
/// quoted field is one quote; quoted fields may hold commas, CR and LF),
/// records ended by CRLF or LF.
pub fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' => {
                assert!(
                    field.is_empty(),
                    "a quote inside an unquoted field: {field:?}"
                );
                quoted = true;
            }
            ',' => row.push(std::mem::take(&mut field)),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                any = false;
            }
            c => field.push(c),
        }
    }
    assert!(!quoted, "unterminated quoted field");
    if any {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// A CSV with a header row as maps from column name to value.
pub fn csv_records(text: &str) -> Vec<BTreeMap<String, String>> {
    let rows = parse_csv(text);
    let Some((header, body)) = rows.split_first() else {
        return Vec::new();
    };
    body.iter()
        .map(|r| {
            assert_eq!(r.len(), header.len(), "row width: {r:?}");
            header.iter().cloned().zip(r.iter().cloned()).collect()
        })
        .collect()
}
