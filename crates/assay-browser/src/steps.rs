//! Each [`Step`] as protocol commands and a script run in the driver's
//! isolated world. A step's scripts take their selector (and expected text)
//! as JSON literals and return a small JSON summary of the element, bounded
//! whatever the page holds.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::driver::Driver;
use crate::{BrowserError, State, Step};

/// How often `wait_for` looks again.
const POLL: Duration = Duration::from_millis(50);

/// How a step went, before its screenshot.
pub(crate) struct Done {
    pub(crate) ok: bool,
    pub(crate) detail: String,
}

impl Done {
    fn pass(detail: impl Into<String>) -> Self {
        Self {
            ok: true,
            detail: detail.into(),
        }
    }

    fn fail(detail: impl Into<String>) -> Self {
        Self {
            ok: false,
            detail: detail.into(),
        }
    }
}

/// The element `sel` matches, summed up; `needle` (or null) is looked for in
/// its rendered text. `scroll` brings it to the viewport's centre first, and
/// `focus` focuses it with the caret at its end.
const INSPECT: &str = r##"(function (sel, needle, scroll, focus) {
  var el;
  try { el = document.querySelector(sel); }
  catch (e) { return { error: "invalid selector: " + String(e && e.message).slice(0, 300) }; }
  if (!el) return { found: false };
  if (scroll) el.scrollIntoView({ block: "center", inline: "center" });
  var r = el.getBoundingClientRect();
  var visible = r.width > 0 && r.height > 0 &&
    (typeof el.checkVisibility !== "function" || el.checkVisibility({ visibilityProperty: true }));
  var out = { found: true, visible: visible, checked: el.checked === true,
              disabled: el.matches(":disabled"), x: r.left + r.width / 2, y: r.top + r.height / 2 };
  if (scroll) {
    var hit = document.elementFromPoint(out.x, out.y);
    if (hit && hit !== el && !el.contains(hit)) {
      out.covered = (hit.tagName.toLowerCase() + (hit.id ? "#" + hit.id : "")).slice(0, 100);
    }
  }
  if (needle !== null) {
    var text = String(el instanceof HTMLElement ? el.innerText : el.textContent);
    out.contains = text.indexOf(needle) >= 0;
    out.excerpt = text.slice(0, 200);
  }
  if (focus) {
    el.focus();
    out.focused = document.activeElement === el;
    try { var n = el.value.length; el.setSelectionRange(n, n); } catch (e) {}
  }
  return out;
})"##;

#[derive(Default)]
struct Inspect<'a> {
    needle: Option<&'a str>,
    scroll: bool,
    focus: bool,
}

/// Run one step, by `deadline`. The page's failures are `Done::fail`.
pub(crate) fn run(
    driver: &mut Driver,
    base_url: &str,
    step: &Step,
    deadline: Instant,
) -> Result<Done, BrowserError> {
    match step {
        Step::Open { path } => {
            let url = join(base_url, path);
            Ok(match driver.navigate(&url, deadline)? {
                Ok(()) => Done::pass(format!("opened {url}")),
                Err(why) => Done::fail(why),
            })
        }
        Step::Click { selector } => {
            let how = Inspect {
                scroll: true,
                ..Inspect::default()
            };
            let el = match present(driver, selector, &how, deadline)? {
                Ok(el) => el,
                Err(done) => return Ok(done),
            };
            let (x, y) = (
                el["x"].as_f64().unwrap_or(0.0),
                el["y"].as_f64().unwrap_or(0.0),
            );
            for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
                if let Err(why) = driver.mouse(kind, x, y, deadline)? {
                    return Ok(Done::fail(why));
                }
            }
            Ok(Done::pass(match el["covered"].as_str() {
                Some(cover) => {
                    format!("clicked {selector} at ({x:.0}, {y:.0}), where {cover} lies over it")
                }
                None => format!("clicked {selector}"),
            }))
        }
        Step::Type { selector, text } => {
            let how = Inspect {
                scroll: true,
                focus: true,
                ..Inspect::default()
            };
            let el = match present(driver, selector, &how, deadline)? {
                Ok(el) => el,
                Err(done) => return Ok(done),
            };
            if el["focused"] != true {
                return Ok(Done::fail(format!("{selector} does not take the focus")));
            }
            Ok(match driver.insert_text(text, deadline)? {
                Ok(()) => Done::pass(format!(
                    "typed {} characters into {selector}",
                    text.chars().count()
                )),
                Err(why) => Done::fail(why),
            })
        }
        Step::WaitFor { selector } => wait_for(driver, selector, deadline),
        Step::AssertText { selector, contains } => {
            let how = Inspect {
                needle: Some(contains),
                ..Inspect::default()
            };
            let el = match inspect(driver, selector, &how, deadline)? {
                Ok(el) if el["found"] == true => el,
                Ok(_) => return Ok(Done::fail(format!("no element matches {selector}"))),
                Err(done) => return Ok(done),
            };
            let excerpt = el["excerpt"].as_str().unwrap_or_default();
            Ok(if el["contains"] == true {
                Done::pass(format!("{selector} contains {contains:?}"))
            } else {
                Done::fail(format!(
                    "{selector} does not contain {contains:?}; it reads {excerpt:?}"
                ))
            })
        }
        Step::AssertState { selector, state } => {
            let el = match inspect(driver, selector, &Inspect::default(), deadline)? {
                Ok(el) => el,
                Err(done) => return Ok(done),
            };
            Ok(assert_state(selector, *state, &el))
        }
    }
}

/// Whether the summary `el` of `selector` is in `state`.
fn assert_state(selector: &str, state: State, el: &Value) -> Done {
    let found = el["found"] == true;
    let visible = found && el["visible"] == true;
    let holds = match state {
        State::Visible => visible,
        State::Hidden => !visible,
        State::Checked => found && el["checked"] == true,
        State::Unchecked => found && el["checked"] != true,
        State::Enabled => found && el["disabled"] != true,
        State::Disabled => found && el["disabled"] == true,
    };
    let name = serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    if holds {
        Done::pass(format!("{selector} is {name}"))
    } else if !found {
        Done::fail(format!(
            "no element matches {selector}, so it is not {name}"
        ))
    } else {
        Done::fail(format!("{selector} is not {name}"))
    }
}

fn wait_for(driver: &mut Driver, selector: &str, deadline: Instant) -> Result<Done, BrowserError> {
    let began = Instant::now();
    let mut seen = false;
    let mut problem: Option<String>;
    loop {
        // A document being replaced has no answer yet: look again.
        match inspect(driver, selector, &Inspect::default(), deadline)? {
            Ok(el) if el["found"] == true && el["visible"] == true => {
                return Ok(Done::pass(format!(
                    "{selector} visible after {} ms",
                    began.elapsed().as_millis()
                )));
            }
            Ok(el) => {
                seen |= el["found"] == true;
                problem = None;
            }
            Err(done) if done.detail.starts_with("invalid selector") => return Ok(done),
            Err(done) => problem = Some(done.detail),
        }
        let next = Instant::now() + POLL;
        if next >= deadline {
            let mut detail = if seen {
                format!("{selector} is there but never became visible before the step's deadline")
            } else {
                format!("no element matched {selector} before the step's deadline")
            };
            if let Some(problem) = problem {
                detail.push_str(&format!(" (the last look: {problem})"));
            }
            return Ok(Done::fail(detail));
        }
        driver.pause(next)?;
    }
}

/// The element's summary, failing the step when none matches or it is not
/// visible.
fn present(
    driver: &mut Driver,
    selector: &str,
    how: &Inspect<'_>,
    deadline: Instant,
) -> Result<Result<Value, Done>, BrowserError> {
    Ok(match inspect(driver, selector, how, deadline)? {
        Ok(el) if el["found"] != true => Err(Done::fail(format!("no element matches {selector}"))),
        Ok(el) if el["visible"] != true => Err(Done::fail(format!("{selector} is not visible"))),
        Ok(el) => Ok(el),
        Err(done) => Err(done),
    })
}

/// [`INSPECT`] of `selector`: the summary, or the failed step.
fn inspect(
    driver: &mut Driver,
    selector: &str,
    how: &Inspect<'_>,
    deadline: Instant,
) -> Result<Result<Value, Done>, BrowserError> {
    let expression = format!(
        "{INSPECT}({}, {}, {}, {})",
        json!(selector),
        json!(how.needle),
        how.scroll,
        how.focus
    );
    Ok(match driver.evaluate(&expression, deadline)? {
        Ok(el) => match el["error"].as_str() {
            Some(error) => Err(Done::fail(error)),
            None => Ok(el),
        },
        Err(why) => Err(Done::fail(why)),
    })
}

/// `base` and `path` with exactly one `/` between them.
fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_with_one_slash() {
        assert_eq!(
            join("http://127.0.0.1:8000", "/a?b=1"),
            "http://127.0.0.1:8000/a?b=1"
        );
        assert_eq!(
            join("http://127.0.0.1:8000/", "a"),
            "http://127.0.0.1:8000/a"
        );
        assert_eq!(join("http://127.0.0.1:8000/", ""), "http://127.0.0.1:8000/");
    }

    #[test]
    fn a_missing_element_is_hidden_and_in_no_other_state() {
        let missing = json!({"found": false});
        assert!(assert_state("#x", State::Hidden, &missing).ok);
        for state in [
            State::Visible,
            State::Checked,
            State::Unchecked,
            State::Enabled,
            State::Disabled,
        ] {
            let done = assert_state("#x", state, &missing);
            assert!(!done.ok, "{state:?}");
            assert!(
                done.detail.starts_with("no element matches #x"),
                "{}",
                done.detail
            );
        }
    }

    #[test]
    fn states_read_the_summary() {
        let el = json!({"found": true, "visible": true, "checked": true, "disabled": false});
        assert!(assert_state("#x", State::Visible, &el).ok);
        assert!(assert_state("#x", State::Checked, &el).ok);
        assert!(assert_state("#x", State::Enabled, &el).ok);
        assert!(!assert_state("#x", State::Disabled, &el).ok);
        assert_eq!(
            assert_state("#x", State::Unchecked, &el).detail,
            "#x is not unchecked"
        );
    }
}
