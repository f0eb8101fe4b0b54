//! The step language. In TOML a step is a one-key table; a step with one
//! argument may give it bare:
//!
//! ```toml
//! steps = [
//!   { open = "/" },                        # or { open = { path = "/" } }
//!   { type = { selector = "#name", text = "Ada" } },
//!   { click = "#go" },                     # or { click = { selector = "#go" } }
//!   { wait_for = "#greeting" },
//!   { assert_text = { selector = "#greeting", contains = "Hello, Ada" } },
//!   { assert_state = { selector = "#agree", state = "checked" } },
//! ]
//! ```

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

/// One thing a user does or checks in the page.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "snake_case", from = "StepToml")]
pub enum Step {
    /// Navigate to the app's base URL + `path` and wait for the page's load.
    Open { path: String },
    /// A left click with real mouse events at the element's centre,
    /// scrolled into view.
    Click { selector: String },
    /// Focus the element, put the caret at its end and insert `text` as
    /// typed input (`input` events fire).
    Type { selector: String, text: String },
    /// Wait until an element matches and is visible.
    WaitFor { selector: String },
    /// The element's rendered text (`innerText`) contains `contains`, now.
    AssertText { selector: String, contains: String },
    /// The element is in `state`, now.
    AssertState { selector: String, state: State },
}

/// [`Step`] as written: the one-argument steps take it bare or in a table.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum StepToml {
    Open(#[serde(deserialize_with = "path_arg")] String),
    Click(#[serde(deserialize_with = "selector_arg")] String),
    Type { selector: String, text: String },
    WaitFor(#[serde(deserialize_with = "selector_arg")] String),
    AssertText { selector: String, contains: String },
    AssertState { selector: String, state: State },
}

impl From<StepToml> for Step {
    fn from(step: StepToml) -> Self {
        match step {
            StepToml::Open(path) => Step::Open { path },
            StepToml::Click(selector) => Step::Click { selector },
            StepToml::Type { selector, text } => Step::Type { selector, text },
            StepToml::WaitFor(selector) => Step::WaitFor { selector },
            StepToml::AssertText { selector, contains } => Step::AssertText { selector, contains },
            StepToml::AssertState { selector, state } => Step::AssertState { selector, state },
        }
    }
}

/// What [`Step::AssertState`] checks.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Matched, laid out with a non-empty box, not `visibility: hidden`.
    Visible,
    /// Not visible, or no element matches.
    Hidden,
    Checked,
    Unchecked,
    Enabled,
    /// Matches `:disabled`.
    Disabled,
}

/// A one-argument step's content: `"#go"` or `{ selector = "#go" }`.
fn selector_arg<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    d.deserialize_any(StringOr("selector"))
}

fn path_arg<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    d.deserialize_any(StringOr("path"))
}

struct StringOr(&'static str);

impl<'de> Visitor<'de> for StringOr {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a string, or a table with `{}`", self.0)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<String, A::Error> {
        let mut value = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != self.0 {
                return Err(de::Error::custom(format!(
                    "unknown field `{key}`, expected `{}`",
                    self.0
                )));
            }
            if value.is_some() {
                return Err(de::Error::duplicate_field(self.0));
            }
            value = Some(map.next_value::<String>()?);
        }
        value.ok_or_else(|| de::Error::missing_field(self.0))
    }
}
