//! The helper a sealed file carries: the function (Python, JavaScript,
//! Go) or macro (Rust) that writes a seal report to the seal channel, the
//! names it declares, and where in a file it goes.

use crate::model::canary::lex::blanked;
use crate::model::canary::shape::Lang;

/// The names the helper declares: a file that already uses one is not
/// sealed.
fn helper_names(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Unittest | Lang::Pytest => &["__assay_seal__", "__assay_sealed__"],
        Lang::Js => &["__assaySeal", "__assaySealed"],
        Lang::Go => &[
            "assaySeal",
            "assaySealed",
            "assaySealedT",
            "assaySealOut",
            "assayos",
            "assayreflect",
            "assaystrconv",
        ],
        Lang::Rust => &["__assay_seal"],
    }
}

/// Whether the file, or a file beside it, already uses a name the helper
/// declares: then it is not sealed.
pub(crate) fn clashes(lang: Lang, text: &str, beside: &str) -> bool {
    helper_names(lang)
        .iter()
        .any(|n| text.contains(n) || beside.contains(n))
}

/// `text` (a sealed file's lines) with the helper that writes the seal
/// reports added where the language needs it.
pub(crate) fn with_helper(lang: Lang, text: &str) -> String {
    match lang {
        Lang::Unittest | Lang::Pytest => {
            // Before a script's `if __name__ == "__main__":`, which runs
            // the tests when the file is the program.
            match text.find("\nif __name__") {
                Some(at) => format!("{}\n{PYTHON_HELPER}\n{}", &text[..at], &text[at..]),
                None => format!("{text}\n{PYTHON_HELPER}"),
            }
        }
        Lang::Js => format!("{text}\n{JS_HELPER}"),
        Lang::Go => {
            let mut out = String::new();
            let mut done = false;
            for line in text.lines() {
                out.push_str(line);
                out.push('\n');
                if !done && line.starts_with("package ") {
                    out.push_str(GO_IMPORTS);
                    done = true;
                }
            }
            format!("{out}\n{GO_HELPER}")
        }
        Lang::Rust => {
            let lines: Vec<&str> = text.lines().collect();
            let at = rust_items_start(&lines);
            let mut out = String::new();
            for (n, line) in lines.iter().enumerate() {
                if n == at {
                    out.push_str(RUST_HELPER);
                }
                out.push_str(line);
                out.push('\n');
            }
            if at >= lines.len() {
                out.push_str(RUST_HELPER);
            }
            out
        }
    }
}

/// The first line of a Rust file after its inner attributes and doc
/// comments: where an item may go.
fn rust_items_start(lines: &[&str]) -> usize {
    let mut depth = 0i32;
    for (n, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let skip = depth > 0 || t.is_empty() || t.starts_with("#![") || t.starts_with("//");
        let code = blanked(line, false);
        for c in code.bytes() {
            match c {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                _ => {}
            }
        }
        if !skip {
            return n;
        }
    }
    lines.len()
}

const PYTHON_HELPER: &str = r#"

def __assay_seal__(token, value):
    import os
    import stat

    def enc(v, depth):
        t = type(v)
        if depth > 32:
            raise ValueError("deep")
        if v is None or t is bool or t is int or t is float or t is str or t is bytes:
            return repr(v)
        if t is list:
            return "[" + ", ".join(enc(x, depth + 1) for x in v) + "]"
        if t is tuple:
            return "(" + "".join(enc(x, depth + 1) + ", " for x in v) + ")"
        if t is dict:
            return "{" + ", ".join(enc(k, depth + 1) + ": " + enc(x, depth + 1) for k, x in v.items()) + "}"
        if t is set or t is frozenset:
            return "{" + ", ".join(sorted(enc(x, depth + 1) for x in v)) + "}" if v else "set()"
        raise TypeError(t.__name__)

    try:
        text = enc(value, 0)
    except Exception:
        text = "?" + type(value).__name__
    line = ("\n[assay-seal] %s\t%s\n" % (token, text)).encode("utf-8", "backslashreplace")
    # The channel (descriptor 9, the run's output pipe), unless this is a
    # runner's worker started without it (pytest-xdist): its stderr then.
    fd = 2
    if "PYTEST_XDIST_WORKER" not in os.environ:
        try:
            given = int(os.environ.get("ASSAY_AUDIT_FD", "2"))
            mode = os.fstat(given).st_mode
            if stat.S_ISFIFO(mode) or stat.S_ISREG(mode):
                fd = given
        except (OSError, ValueError):
            fd = 2
    while line:
        line = line[os.write(fd, line):]
    return __assay_sealed__


__assay_sealed__ = object()
"#;

const JS_HELPER: &str = r#"
function __assaySeal(token, value) {
  const enc = (v, d) => {
    if (d > 32) throw new Error("deep");
    if (v === null) return "null";
    if (v === undefined) return "undefined";
    const t = typeof v;
    if (t === "number") return Object.is(v, -0) ? "-0" : String(v);
    if (t === "string") return JSON.stringify(v);
    if (t === "boolean") return String(v);
    if (Array.isArray(v) && Object.getPrototypeOf(v) === Array.prototype)
      return "[" + Array.from(v, (x) => enc(x, d + 1)).join(", ") + "]";
    if (t === "object" && Object.getPrototypeOf(v) === Object.prototype)
      return "{" + Object.keys(v).map((k) => JSON.stringify(k) + ": " + enc(v[k], d + 1)).join(", ") + "}";
    throw new Error("not a literal");
  };
  let text;
  try { text = enc(value, 0); } catch (e) { text = "?" + typeof value; }
  const fs = typeof process.getBuiltinModule === "function" ? process.getBuiltinModule("fs") : require("fs");
  const line = "\n[assay-seal] " + token + "\t" + text + "\n";
  // The channel (descriptor 9, the run's output pipe) is this process's
  // unless it is a runner's worker, whose inherited descriptors Node does
  // not pass on: a worker writes to its stderr, which its runner relays
  // (assay's `node --test` reporter hands the line over).
  const worker = process.env.NODE_TEST_CONTEXT || process.env.JEST_WORKER_ID ||
    (process.env.VITEST_WORKER_ID && typeof process.send === "function");
  let out = 2;
  if (!worker) {
    try {
      const st = fs.fstatSync(Number(process.env.ASSAY_AUDIT_FD || 2));
      if (st.isFIFO() || st.isFile()) out = Number(process.env.ASSAY_AUDIT_FD || 2);
    } catch (e) { out = 2; }
  }
  fs.writeSync(out, line);
  return __assaySealed;
}
function __assaySealed() {}
"#;

const GO_IMPORTS: &str =
    "\nimport (\n\tassayos \"os\"\n\tassayreflect \"reflect\"\n\tassaystrconv \"strconv\"\n)\n";

const GO_HELPER: &str = r#"
type assaySealedT struct{}

var assaySealed interface{} = assaySealedT{}

var assaySealOut = func() *assayos.File {
	fd, err := assaystrconv.Atoi(assayos.Getenv("ASSAY_AUDIT_FD"))
	if err != nil {
		fd = 2
	}
	return assayos.NewFile(uintptr(fd), "assay-seal")
}()

func assaySeal(token string, v interface{}) interface{} {
	var text string
	rv := assayreflect.ValueOf(v)
	switch rv.Kind() {
	case assayreflect.Bool:
		text = assaystrconv.FormatBool(rv.Bool())
	case assayreflect.Int, assayreflect.Int8, assayreflect.Int16, assayreflect.Int32, assayreflect.Int64:
		text = assaystrconv.FormatInt(rv.Int(), 10)
	case assayreflect.Uint, assayreflect.Uint8, assayreflect.Uint16, assayreflect.Uint32, assayreflect.Uint64, assayreflect.Uintptr:
		text = assaystrconv.FormatUint(rv.Uint(), 10)
	case assayreflect.Float32:
		text = assaystrconv.FormatFloat(rv.Float(), 'g', -1, 32)
	case assayreflect.Float64:
		text = assaystrconv.FormatFloat(rv.Float(), 'g', -1, 64)
	case assayreflect.String:
		text = assaystrconv.Quote(rv.String())
	case assayreflect.Invalid:
		text = "?nil"
	default:
		text = "?" + rv.Type().String()
	}
	_, _ = assaySealOut.Write([]byte("\n[assay-seal] " + token + "\t" + text + "\n"))
	return assaySealed
}
"#;

const RUST_HELPER: &str = r#"#[allow(unused_macros)]
macro_rules! __assay_seal {
    ($token:expr, $value:expr) => {{
        let __assay_value = &$value;
        let __assay_line = ::std::format!("\n[assay-seal] {}\t{:?}\n", $token, __assay_value);
        let __assay_fd: i32 = ::std::env::var("ASSAY_AUDIT_FD")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(2);
        // The run's output pipe, inherited: borrowed, never closed. (A pipe
        // cannot be opened again through /proc by another uid.)
        #[allow(unsafe_code)]
        let mut __assay_out = ::std::mem::ManuallyDrop::new(unsafe {
            <::std::fs::File as ::std::os::fd::FromRawFd>::from_raw_fd(__assay_fd)
        });
        let _ = ::std::io::Write::write_all(&mut *__assay_out, __assay_line.as_bytes());
    }};
}

"#;
