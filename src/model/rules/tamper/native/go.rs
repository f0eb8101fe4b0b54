//! The Go rules: directives that link or rename symbols, constructor
//! sections, capturing the process's stdout or stderr, and an `init`
//! function that writes to them.

use std::sync::LazyLock;

use regex::Regex;

use super::scan::{Found, Pattern, Views, in_bodies, pattern, re};
use crate::model::config::TamperRule;

static GO_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    re(r#"(?m)(?:^|\bimport\b|[(;])\s*(\w+|\.)?\s*"(os|syscall|golang\.org/x/sys/unix)""#)
});

static GO_FIXED: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    use TamperRule::*;
    vec![
        pattern(
            GoLinkname,
            r"go:linkname\b",
            "`//go:linkname`: reaches another package's unexported code (`testing`, the runtime)",
        ),
        pattern(
            GoNativeCode,
            r#"(?m)(?:^|\bimport\b|[(;])\s*(?:\w+\s+)?"C"[ \t]*(?:$|;|\))"#,
            "cgo (`import \"C\"`): C code linked into the test binary, constructors included",
        ),
        pattern(GoNativeCode, r"#\s*cgo\b|go:cgo_\w+", "cgo directives"),
        pattern(
            GoNativeCode,
            r"__attribute__\s*\(\s*\(\s*constructor",
            "a C constructor",
        ),
        pattern(
            GoFdRewrite,
            r"/proc/self",
            "reads or re-executes the running test binary",
        ),
        pattern(
            GoFdRewrite,
            r"\b(?:Command|CommandContext|StartProcess|Exec|ForkExec)\s*\([^)]*\bArgs\s*\[\s*0\s*\]",
            "re-executes the running test binary by its argv[0]",
        ),
        pattern(
            GoTestingReach,
            r"\btesting\s*\.\s*(?:MainStart|Main|RunTests|RunBenchmarks|RunExamples|InternalTest|M)\b",
            "runs or builds testing's own entry points from non-test code",
        ),
        pattern(
            GoTestingReach,
            r#"\btesting\s*\.\s*Testing\s*\(|\bLookup\s*\(\s*"test\.|"-{0,2}test\.(?:v|run|count|timeout|paniconexit0|testlogfile|failfast|shuffle)\b"#,
            "tells a test run apart from any other (testing.Testing, the -test.* flags)",
        ),
    ]
});

/// Go's selector on package alias `alias`: `os.Stdout`, `os . Stdout`,
/// or the bare name under a dot import.
fn selector(alias: &str) -> String {
    if alias == "." {
        r"(?:^|[^\w.])".to_owned()
    } else {
        format!(r"\b{}\s*\.\s*", regex::escape(alias))
    }
}

pub(super) fn go(v: &Views, found: &mut Found) {
    for p in GO_FIXED.iter() {
        if let Some(at) = v.find(&p.re) {
            found.push((p.rule, at, p.why));
        }
    }
    // Each package's names in this file: its default name, and aliases.
    let mut os = vec!["os".to_owned()];
    let mut sys = vec!["syscall".to_owned(), "unix".to_owned()];
    for c in GO_IMPORT.captures_iter(&v.code) {
        if let Some(alias) = c.get(1) {
            let list = if &c[2] == "os" { &mut os } else { &mut sys };
            list.push(alias.as_str().to_owned());
        }
    }
    let fd = r"(?:[12]\b|(?:\w+\s*\.\s*)?(?:Stdout|Stderr)\b|[^,)]*\bFd\s*\(\s*\))";
    let mut patterns: Vec<(String, &'static str)> = Vec::new();
    for a in &os {
        let s = selector(a);
        patterns.push((
            format!(r"{s}(?:Stdout|Stderr)\s*=[^=]"),
            "replaces os.Stdout or os.Stderr",
        ));
        patterns.push((
            format!(r"&\s*{s}(?:Stdout|Stderr)\b"),
            "takes the address of os.Stdout or os.Stderr",
        ));
        patterns.push((
            format!(r"(?:Pointer|ValueOf)\s*\(\s*{s}(?:Stdout|Stderr)\b"),
            "reaches into os.Stdout or os.Stderr",
        ));
        patterns.push((
            format!(r"{s}NewFile\s*\(\s*(?:uintptr\s*\(\s*)?{fd}"),
            "opens stdout or stderr by descriptor",
        ));
        patterns.push((
            format!(r"{s}(?:Stdout|Stderr)\s*\.\s*Close\s*\("),
            "closes stdout or stderr",
        ));
        patterns.push((
            format!(r"{s}Executable\s*\("),
            "re-executes the running test binary",
        ));
    }
    for a in &sys {
        let s = selector(a);
        patterns.push((
            format!(
                r"{s}(?:Dup2|Dup3|SYS_DUP2|SYS_DUP3|SYS_DUP|ForkExec|RawSyscall6?|Syscall6?)\b"
            ),
            "a system call that can take over the process's output",
        ));
        patterns.push((
            format!(r"{s}(?:Close|Write)\s*\(\s*{fd}"),
            "writes to or closes stdout or stderr by descriptor",
        ));
    }
    for (p, why) in patterns {
        if let Some(at) = v.find(&re(&p)) {
            found.push((TamperRule::GoFdRewrite, at, why));
        }
    }
    // An `init` that prints: its lines land in the runner's output before
    // any test runs.
    // A package-level `var _ = func() … { … }()` runs at the same time.
    static INIT: LazyLock<Regex> = LazyLock::new(|| {
        re(r"\bfunc\s+init\s*\(\s*\)\s*\{|\bvar\s+[\w\s,]+=\s*func\s*\([^)]*\)[^{]*\{")
    });
    let os_names = os.iter().map(|a| selector(a)).collect::<Vec<_>>().join("|");
    let writes = format!(
        r"(?:{os_names})(?:Stdout|Stderr)\b|\bfmt\s*\.\s*Print|\bprintln\s*\(|\bprint\s*\(|\blog\s*\.\s*\w+\s*\("
    );
    let writes = re(&writes);
    // A library has no use for its process's argv[0] but to run the
    // binary again (a `main` package prints it in its usage).
    static PACKAGE: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^\s*package\s+(\w+)"));
    let library = PACKAGE.captures(&v.code).is_some_and(|c| &c[1] != "main");
    if library {
        let argv0 = re(&format!(r"(?:{os_names})Args\s*\[\s*0\s*\]"));
        if let Some(at) = v.find(&argv0) {
            found.push((
                TamperRule::GoFdRewrite,
                at,
                "a library reads its process's argv[0] (the test binary)",
            ));
        }
    }
    // Only at package level (brace depth 0): a closure inside a function
    // runs when called.
    let (mut depth, mut at) = (0i64, 0usize);
    let bytes = v.bare.as_bytes();
    let inits = INIT.find_iter(&v.bare).filter_map(|m| {
        for &c in &bytes[at..m.start()] {
            depth += match c {
                b'{' => 1,
                b'}' => -1,
                _ => 0,
            };
        }
        at = m.start();
        (depth <= 0).then(|| m.end() - 1)
    });
    if let Some(at) = in_bodies(&v.bare, inits, &writes) {
        found.push((
            TamperRule::GoFdRewrite,
            at,
            "an `init` function that writes to stdout or stderr",
        ));
    }
}
