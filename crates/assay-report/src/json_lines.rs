//! One line of a JSON-lines report (Go's `test2json`, libtest's JSON), as
//! both readers take it.

use serde::de::DeserializeOwned;

use crate::{Collector, ParseError};

/// Decodes line `number` into one of the producer's events. `Ok(None)` is a
/// line to skip: not an object (other output on a shared stream), an object
/// that is someone else's, or one cut off mid-write (noted in `out`). An
/// object that `owns` claims but whose fields have the wrong shape is a
/// [`ParseError::Schema`]: the producer is not the one this format reads.
pub(crate) fn event<T: DeserializeOwned>(
    out: &mut Collector,
    number: usize,
    line: &str,
    owns: impl FnOnce(&serde_json::Value) -> bool,
) -> Result<Option<T>, ParseError> {
    let line = line.trim();
    if !line.starts_with('{') {
        return Ok(None);
    }
    match serde_json::from_str(line) {
        Ok(event) => Ok(Some(event)),
        Err(e) if e.is_data() => match serde_json::from_str::<serde_json::Value>(line) {
            Ok(v) if owns(&v) => Err(ParseError::Schema {
                line: number,
                message: e.to_string(),
            }),
            _ => Ok(None),
        },
        Err(e) => {
            out.note(format!("line {number}: skipped malformed JSON ({e})"));
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Ev {
        n: u32,
    }

    fn read(line: &str) -> (Result<Option<Ev>, ParseError>, Vec<String>) {
        let mut out = Collector::new(Format::GoTestJson);
        let got = event(&mut out, 7, line, |v| v.get("n").is_some());
        (got, out.finish().notes)
    }

    #[test]
    fn a_line_is_an_event_a_line_to_skip_or_a_schema_error() {
        assert_eq!(read(r#" {"n": 3} "#).0.unwrap(), Some(Ev { n: 3 }));
        assert_eq!(read("cargo: compiling").0.unwrap(), None);
        // Someone else's object.
        assert_eq!(read(r#"{"other": true}"#).0.unwrap(), None);
        // Cut off mid-write: skipped, and said.
        let (got, notes) = read(r#"{"n": 3"#);
        assert_eq!(got.unwrap(), None);
        assert!(
            notes[0].starts_with("line 7: skipped malformed JSON"),
            "{notes:?}"
        );
        // Ours, of the wrong shape.
        let (got, _) = read(r#"{"n": "three"}"#);
        assert!(
            matches!(got, Err(ParseError::Schema { line: 7, .. })),
            "{got:?}"
        );
    }
}
