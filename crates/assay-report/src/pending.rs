//! A test whose start a text format printed but whose status line has not
//! been seen yet: libtest and unittest print the status after the test's own
//! output, which may swallow it (`okFAILED` glued to the end of a line).

use crate::{Collector, Outcome};

pub(crate) struct Pending {
    /// The test's id as the format names it.
    pub(crate) id: String,
    /// The line it started on.
    pub(crate) line: usize,
    /// A status read from output it was glued to, believed only if no status
    /// line follows and the run did not crash.
    pub(crate) tentative: Option<Outcome>,
}

impl Pending {
    /// What to believe of a test whose status line never came: its glued
    /// status, noted in `out` under the name `shown` gives its id, unless
    /// the run `crashed` (whatever was glued to the output, the test did not
    /// finish). `Err` holds the id and line of a test that never finished.
    pub(crate) fn settle(
        self,
        crashed: bool,
        out: &mut Collector,
        shown: impl FnOnce(&str) -> String,
    ) -> Result<(String, Outcome), (String, usize)> {
        match self.tentative.filter(|_| !crashed) {
            Some(outcome) => {
                out.note(format!(
                    "line {}: status of `{}` read from output it was glued to: {outcome:?}",
                    self.line,
                    shown(&self.id)
                ));
                Ok((self.id, outcome))
            }
            None => Err((self.id, self.line)),
        }
    }
}
