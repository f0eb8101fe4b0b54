//! The JSON schema the judge must answer in, built per prompt (its labels are
//! the property names) and serialised with its properties in a fixed order.
//!
//! Order matters: constrained decoders and OpenAI's strict mode generate
//! properties in schema order, so a rationale is written before its score
//! and `overall` comes last. `serde_json::Value` sorts keys, so the schema is
//! its own small type.
//!
//! Shape (for labels `P`, `Q`; a single review has only `P` and no
//! `preferred`):
//!
//! ```json
//! { "type": "object", "additionalProperties": false,
//!   "required": ["reviews", "preferred"],
//!   "properties": {
//!     "reviews": { "type": "object", "additionalProperties": false,
//!       "required": ["P", "Q"],
//!       "properties": { "P": REVIEW, "Q": REVIEW } },
//!     "preferred": { "type": "string", "enum": ["P", "Q"] } } }
//! REVIEW = { "type": "object", "additionalProperties": false,
//!   "required": ["correctness", "scope", "consistency", "simplicity", "cleanliness", "overall"],
//!   "properties": { "correctness": SCORE, …, "overall": SCORE } }
//! SCORE = { "type": "object", "additionalProperties": false,
//!   "required": ["rationale", "quote", "score"],
//!   "properties": {
//!     "rationale": { "type": "string" },
//!     "quote": { "type": "string" },
//!     "score": { "type": "integer", "enum": [1, 2, 3, 4, 5] } } }
//! ```
//!
//! `quote` is always present (strict mode wants every property required) and
//! empty when the score is 4 or 5.

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use crate::labels::Label;

/// The six things a patch is scored on, in the order they are asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Criterion {
    Correctness,
    Scope,
    Consistency,
    Simplicity,
    Cleanliness,
    Overall,
}

impl Criterion {
    pub const ALL: [Criterion; 6] = [
        Criterion::Correctness,
        Criterion::Scope,
        Criterion::Consistency,
        Criterion::Simplicity,
        Criterion::Cleanliness,
        Criterion::Overall,
    ];

    /// The property name in the schema.
    pub fn name(self) -> &'static str {
        match self {
            Criterion::Correctness => "correctness",
            Criterion::Scope => "scope",
            Criterion::Consistency => "consistency",
            Criterion::Simplicity => "simplicity",
            Criterion::Cleanliness => "cleanliness",
            Criterion::Overall => "overall",
        }
    }

    /// What the criterion asks, for the prompt.
    pub(crate) fn question(self) -> &'static str {
        match self {
            Criterion::Correctness => {
                "does it solve the stated problem, without new bugs or missed cases?"
            }
            Criterion::Scope => {
                "does it change what the problem needs and no more (compare the reference patch)?"
            }
            Criterion::Consistency => {
                "does it follow the existing code's conventions, structure and APIs?"
            }
            Criterion::Simplicity => "is it as simple as the problem allows?",
            Criterion::Cleanliness => {
                "is it tidy: naming, no dead code, no debugging leftovers, no stray changes?"
            }
            Criterion::Overall => "taking everything together, how good is this patch?",
        }
    }
}

/// The highest score that must carry a quote.
pub const QUOTE_REQUIRED_AT_OR_BELOW: u8 = 3;

/// A JSON schema node with properties kept in insertion order.
#[derive(Clone, Debug, PartialEq)]
pub enum Schema {
    Object(Vec<(String, Schema)>),
    String,
    StringEnum(Vec<String>),
    IntegerEnum(Vec<i64>),
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Schema::Object(props) => {
                let mut map = serializer.serialize_map(Some(4))?;
                map.serialize_entry("type", "object")?;
                map.serialize_entry("properties", &Properties(props))?;
                let required: Vec<&str> = props.iter().map(|(k, _)| k.as_str()).collect();
                map.serialize_entry("required", &required)?;
                map.serialize_entry("additionalProperties", &false)?;
                map.end()
            }
            Schema::String => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("type", "string")?;
                map.end()
            }
            Schema::StringEnum(values) => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", "string")?;
                map.serialize_entry("enum", values)?;
                map.end()
            }
            Schema::IntegerEnum(values) => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", "integer")?;
                map.serialize_entry("enum", values)?;
                map.end()
            }
        }
    }
}

struct Properties<'a>(&'a [(String, Schema)]);

impl Serialize for Properties<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

fn score() -> Schema {
    Schema::Object(vec![
        ("rationale".into(), Schema::String),
        ("quote".into(), Schema::String),
        ("score".into(), Schema::IntegerEnum((1..=5).collect())),
    ])
}

fn review() -> Schema {
    Schema::Object(
        Criterion::ALL
            .iter()
            .map(|c| (c.name().to_owned(), score()))
            .collect(),
    )
}

/// The answer schema for patches shown under `labels` (one, or two for a pair).
pub fn answer_schema(labels: &[&Label]) -> Schema {
    let reviews = Schema::Object(
        labels
            .iter()
            .map(|l| (l.as_str().to_owned(), review()))
            .collect(),
    );
    let mut top = vec![("reviews".to_owned(), reviews)];
    if labels.len() > 1 {
        top.push((
            "preferred".to_owned(),
            Schema::StringEnum(labels.iter().map(|l| l.as_str().to_owned()).collect()),
        ));
    }
    Schema::Object(top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Labels;

    #[test]
    fn properties_keep_their_order() {
        let labels = Labels::for_task(0, "t", 1);
        let l: Vec<&Label> = labels.iter().collect();
        let text = serde_json::to_string(&answer_schema(&l)).unwrap_or_default();
        let pos = |s: &str| text.find(s).unwrap_or(usize::MAX);
        assert!(pos("\"correctness\"") < pos("\"scope\""));
        assert!(pos("\"cleanliness\"") < pos("\"overall\""));
        assert!(pos("\"rationale\"") < pos("\"score\""));
        assert!(!text.contains("preferred"));
    }

    #[test]
    fn pair_schema_requires_both_labels_and_a_preference() {
        let labels = Labels::for_task(0, "t", 2);
        let l: Vec<&Label> = labels.iter().collect();
        let v = serde_json::to_value(answer_schema(&l)).unwrap_or_default();
        assert_eq!(v["required"], serde_json::json!(["reviews", "preferred"]));
        assert_eq!(
            v["properties"]["preferred"]["enum"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
        let reviews = &v["properties"]["reviews"];
        assert_eq!(reviews["required"].as_array().map(Vec::len), Some(2));
        let one = &reviews["properties"][l[0].as_str()];
        assert_eq!(one["required"].as_array().map(Vec::len), Some(6));
        assert_eq!(
            one["properties"]["overall"]["properties"]["score"]["enum"],
            serde_json::json!([1, 2, 3, 4, 5])
        );
        assert_eq!(one["additionalProperties"], serde_json::json!(false));
    }
}
