//! What the readers find in a hidden test file: its test functions
//! ([`Block`]), their sealable assertions, the integer literals a mutant
//! may change and the other places that write them, and a test as the
//! task knows it.

use serde::{Deserialize, Serialize};

/// One test function of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    /// Its name as declared (`test_divide`, `TestDivide`, `divides`).
    pub(crate) name: String,
    /// The class it is a method of (Python), else `None`.
    pub(crate) class: Option<String>,
    /// Which container it is in (the start line of its class or module;
    /// 0: the file): copies go among the tests of the same container.
    pub(crate) container: usize,
    /// Its first line (decorators and attributes included) and the line
    /// after its last, 0-based.
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// The line of its `def`/`func`/`fn`, and the byte offset of its name.
    pub(crate) def_line: usize,
    pub(crate) name_col: usize,
    /// Integer literals an assertion of its body expects.
    pub(crate) sites: Vec<Site>,
    /// Assertions of its body that can be sealed: filled by
    /// [`super::seal::sealed_blocks`], empty from [`blocks`].
    pub(crate) seals: Vec<SealSite>,
    /// Of `sites`, those a window may go to (the module's rules), each
    /// with the other places that write its value.
    pub(crate) windows: Vec<Site>,
}

/// A sealable assertion of a test, as the reader finds it on one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SealSite {
    /// Its line, counted from the block's `start`.
    pub(crate) line: usize,
    /// Byte ranges in that line of the computed expression and of the
    /// expected literal.
    pub(crate) actual: (usize, usize),
    pub(crate) expected: (usize, usize),
    /// The expected literal as written.
    pub(crate) text: String,
    /// Where the value also stands in a message or comment of the test
    /// (line, byte range): each becomes `<sealed>` with the seal.
    pub(crate) scrub: Vec<(usize, usize, usize)>,
}

/// A test of a hidden file, as the task knows it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct TestRef {
    pub(crate) file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) class: Option<String>,
    /// Its name as declared.
    pub(crate) test: String,
    /// Its id in the report (the task's lists name it so).
    pub(crate) id: String,
}

/// An integer literal a mutant may change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Site {
    /// Its line, counted from the block's `start`.
    pub(crate) line: usize,
    /// Its byte offset in that line.
    pub(crate) col: usize,
    /// Its text (digits, an optional sign; a Rust suffix stays outside).
    pub(crate) text: String,
    /// The other places of the test that write its value, changed with it.
    pub(crate) also: Vec<Also>,
}

/// Another place of a test that writes a site's value: a mutant changes
/// it as it changes the site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Also {
    /// Its line, counted from the block's `start`, and byte offset.
    pub(crate) line: usize,
    pub(crate) col: usize,
    /// The text there: the site's own literal, or (inside a message or a
    /// comment) a string site's body, an integer's digits.
    pub(crate) text: String,
    /// Whether `text` is a string site's body (quotes left outside).
    pub(crate) body: bool,
}
