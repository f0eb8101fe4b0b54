//! The Rust rules: shadowed assertion macros, code before `main`, libc's
//! output and exit functions declared in an `extern` block, code brought in
//! by `include!` or `#[path]`, and a manifest's build settings.

use std::sync::LazyLock;

use regex::Regex;

use super::scan::{Found, Pattern, Views, in_bodies, pattern, re};
use crate::model::config::TamperRule;

/// Of [`STD_MACROS`], those a `use … as NAME` can only mean as a macro
/// (`as file`, `as env` name modules and values in honest code).
const RENAMED: &str = "assert|assert_eq|assert_ne|debug_assert|debug_assert_eq|debug_assert_ne|assert_matches|debug_assert_matches|panic|unreachable|todo|unimplemented|matches|vec|format|format_args|write|writeln|concat|stringify";

/// std's and core's macros a test expands, or that build the values it
/// compares: a crate's own macro of one of these names replaces the
/// prelude's inside the crate (`#[macro_use]`, textual scope).
const STD_MACROS: &str = "assert|assert_eq|assert_ne|debug_assert|debug_assert_eq|debug_assert_ne|assert_matches|debug_assert_matches|panic|unreachable|todo|unimplemented|matches|vec|format|format_args|write|writeln|print|println|eprint|eprintln|dbg|concat|stringify|line|column|file|module_path|cfg|env|option_env|include|include_str|include_bytes|compile_error|try|thread_local|concat_idents|const_format_args";

static RUST: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    use TamperRule::*;
    let shadow = |p: &str| p.replace("{N}", STD_MACROS);
    vec![
        pattern(
            RustMacroShadowing,
            &shadow(r"\bmacro_rules\s*!\s*(?:r#)?(?:{N})\b"),
            "defines a macro named like one of std's",
        ),
        pattern(
            RustMacroShadowing,
            &shadow(r"\bmacro\s+(?:r#)?(?:{N})\s*[({]"),
            "defines a macro named like one of std's",
        ),
        pattern(
            RustMacroShadowing,
            &format!(r"\buse\b[^;]*\bas\s+(?:r#)?(?:{RENAMED})\b"),
            "imports something under the name of one of std's macros",
        ),
        pattern(
            RustMacroShadowing,
            r"\bmacro_rules\s*!\s*(?:\$|\[\s*<)",
            "defines a macro whose name another macro supplies",
        ),
        pattern(
            RustConstructor,
            r"\blink_section\b",
            "places code or data in a chosen linker section",
        ),
        pattern(
            RustConstructor,
            r"\.(?:init_array|preinit_array|fini_array|ctors|dtors)\b",
            "names a constructor section",
        ),
        pattern(
            RustConstructor,
            r"#\s*!?\s*\[[^\]]*\b(?:ctor|dtor)\b",
            "a constructor attribute (`ctor`)",
        ),
        pattern(
            RustConstructor,
            r"\b(?:ctor|dtor)\s*::",
            "a constructor crate (`ctor`)",
        ),
        pattern(
            RustAsm,
            r"\b(?:global_asm|asm|naked_asm|llvm_asm)\s*!",
            "assembly",
        ),
        pattern(
            RustAsm,
            r"\barch\s*::\s*(?:global_asm|asm|naked_asm)\b",
            "assembly",
        ),
        pattern(RustAsm, r"#\s*!?\s*\[[^\]]*\bnaked\b", "a naked function"),
        pattern(
            RustSymbolOverride,
            r"\b(?:no_mangle|export_name)\b|#\s*!?\s*\[[^\]]*\blinkage\b",
            "exports a symbol by name, which overrides libc's in the test binary",
        ),
        pattern(
            RustFdRewrite,
            r"\blibc\s*::\s*(?:dup|dup2|dup3|fork|vfork|atexit|on_exit|pipe|pipe2|freopen|_exit|close|syscall|ptrace|clone|clone3|setvbuf|prctl|posix_spawn)\b",
            "a libc call that can take over the process's output or exit",
        ),
        pattern(
            RustFdRewrite,
            r"\blink_name\b",
            "imports a foreign function under another name",
        ),
        pattern(
            RustFdRewrite,
            r"\bfrom_raw_fd\s*\(\s*(?:[012]|\w+\s*::\s*STD\w+)\s*\)",
            "opens the process's stdin, stdout or stderr by descriptor",
        ),
        pattern(
            RustFdRewrite,
            r"\bcurrent_exe\b|/proc/self",
            "re-executes or reads the running test binary",
        ),
        pattern(
            RustFdRewrite,
            r"\bCommand\s*::\s*new\s*\(\s*[^)]*\bargs(?:_os)?\s*\(",
            "re-executes the running test binary by its argv[0]",
        ),
        pattern(
            RustFdRewrite,
            r"\bnix\s*::\s*unistd\b|\bset_output_capture\b",
            "takes over the process's output (nix's unistd, libtest's capture)",
        ),
    ]
});

/// Assertion names written without a `!`: a macro's name handed to a
/// macro that defines it (`paste`, `concat_idents!`, `$name`).
static BARE_ASSERT: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b(?:r#)?(?:debug_)?assert(?:_eq|_ne|_matches)?\b"));

/// libc's functions that can take over the process's output or exit, as
/// an `extern` block declares them.
static FOREIGN_FN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\bfn\s+(?:r#)?(?:dup|dup2|dup3|fork|vfork|atexit|on_exit|pipe|pipe2|freopen|_exit|exit|close|syscall|ptrace|clone|clone3|write|writev|setvbuf|prctl|posix_spawn)\s*\(",
    )
});
static EXTERN_BLOCK: LazyLock<Regex> = LazyLock::new(|| re(r#"\bextern\s*(?:"[^"]*"\s*)?\{"#));
/// `include!(…)` and `path = …` (in an attribute): where code comes from.
static INCLUDE: LazyLock<Regex> = LazyLock::new(|| re(r"\binclude\s*!\s*[(\[{]\s*"));
static PATH_ATTR: LazyLock<Regex> = LazyLock::new(|| re(r"#\s*!?\s*\[[^\]]*\bpath\s*=\s*"));

/// Whether the text at a macro's or attribute's argument is a plain
/// string naming a `.rs` file (one the scan reads when the patch adds it).
fn names_rust_file(arg: &str) -> bool {
    let Some(rest) = arg.strip_prefix('"') else {
        return false;
    };
    rest.find('"')
        .is_some_and(|end| rest[..end].ends_with(".rs") && !rest[..end].contains('\\'))
}

/// Whether the bare assertion name at `at` is a path's last segment or
/// one of a `use …::{…}` group's (`use pretty_assertions::assert_eq`): a
/// crate's macro imported by name, not one defined here.
fn path_segment(bare: &str, at: usize) -> bool {
    let before = bare[..at].trim_end();
    if before.ends_with("::") {
        return true;
    }
    (before.ends_with('{') || before.ends_with(','))
        && before.rfind('{').is_some_and(|open| {
            bare[..open].trim_end().ends_with("::") && !bare[open..at].contains(['}', ';'])
        })
}

pub(super) fn rust(v: &Views, found: &mut Found) {
    for p in RUST.iter() {
        if let Some(at) = v.find(&p.re) {
            found.push((p.rule, at, p.why));
        }
    }
    for text in [&v.raw, &v.code] {
        let blocks = EXTERN_BLOCK.find_iter(text).map(|m| m.end() - 1);
        if let Some(at) = in_bodies(text, blocks, &FOREIGN_FN) {
            found.push((
                TamperRule::RustFdRewrite,
                at,
                "declares a libc function that can take over the process's output or exit",
            ));
        }
        for (r, why) in [
            (
                &*INCLUDE,
                "includes code from a file the scan does not read as Rust",
            ),
            (
                &*PATH_ATTR,
                "a module from a file the scan does not read as Rust",
            ),
        ] {
            if let Some(m) = r
                .find_iter(text)
                .find(|m| !names_rust_file(&text[m.end()..]))
            {
                found.push((TamperRule::RustInclude, m.start(), why));
            }
        }
    }
    for m in BARE_ASSERT.find_iter(&v.bare) {
        let after = v.bare[m.end()..].trim_start();
        if !after.starts_with('!') && !path_segment(&v.bare, m.start()) {
            found.push((
                TamperRule::RustMacroShadowing,
                m.start(),
                "names an assertion macro without calling it (a macro-made macro)",
            ));
            break;
        }
    }
}

static MANIFEST: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    use TamperRule::*;
    vec![
        pattern(
            RustManifest,
            r"(?m)^\s*(?:build|links)\s*=",
            "a build script, which runs arbitrary code before the tests compile",
        ),
        pattern(
            RustManifest,
            r"\bproc[-_]macro\s*=\s*true",
            "a procedural macro crate, which rewrites code at compile time",
        ),
        pattern(
            RustManifest,
            r"(?m)^\s*\[\s*(?:build-dependencies|patch\b|replace\b)",
            "build dependencies or replaced crates",
        ),
        pattern(
            RustManifest,
            r"(?m)^\s*\[\[\s*(?:test|bench)\s*\]\]|^\s*(?:harness|autotests|autobenches|doctest|test)\s*=",
            "redefines which test targets run and how",
        ),
        pattern(
            RustConstructor,
            r#"(?m)^\s*(?:ctor|dtor)\s*=|^\s*\[[\w.-]*dependencies\.(?:ctor|dtor)\s*\]|\bpackage\s*=\s*"(?:ctor|dtor)""#,
            "a constructor crate (`ctor`)",
        ),
    ]
});

pub(super) fn manifest(v: &Views, found: &mut Found) {
    for p in MANIFEST.iter() {
        // TOML's comments start with `#`; the Rust lexer does not know
        // them, so the raw text is what is read.
        let no_comments: String = v
            .raw
            .lines()
            .map(|l| l.split(" #").next().unwrap_or(l))
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        if p.re.is_match(&no_comments)
            && let Some(m) = p.re.find(&v.raw)
        {
            found.push((p.rule, m.start(), p.why));
        }
    }
}
