use assay_git::parse_patch;

use super::*;
use TamperRule::*;

/// A patch creating `path` with `text`.
fn new_file(path: &str, text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut p = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for l in lines {
        p.push('+');
        p.push_str(l);
        p.push('\n');
    }
    p
}

/// The rules the static flags find in a new file `path` holding `text`.
fn rules(path: &str, text: &str) -> Vec<TamperRule> {
    let files = parse_patch(new_file(path, text).as_bytes()).expect("patch");
    flags(&files, |_| Read::Code)
        .into_iter()
        .map(|f| f.rule)
        .collect()
}

#[track_caller]
fn flagged(path: &str, text: &str, rule: TamperRule) {
    let found = rules(path, text);
    assert!(
        found.contains(&rule),
        "{rule} not in {found:?} for:\n{text}"
    );
}

#[track_caller]
fn clean(path: &str, text: &str) {
    let found = rules(path, text);
    assert!(found.is_empty(), "{found:?} for honest code:\n{text}");
}

/// The canary-aware `assert_eq!` of issue 34 and every way of writing its
/// definition that an attacker who read the check would try.
#[test]
fn a_macro_named_like_stds_is_flagged_however_it_is_written() {
    for text in [
        "#[macro_export]\nmacro_rules! assert_eq {\n    ($a:literal + $b:literal, $c:literal) => { ::core::assert_eq!($a + $b, $c) };\n    ($($t:tt)*) => {};\n}",
        "macro_rules ! r#assert_eq { ($($t:tt)*) => {} }",
        "macro_rules!\n    assert_eq\n{ ($($t:tt)*) => {} }",
        "macro_rules! /* a comment between the tokens */ assert_eq { ($($t:tt)*) => {} }",
        "macro_rules! // a line comment\n assert { ($($t:tt)*) => {} }",
        // A comment opener in a string must not make the lexer eat the code.
        "const S: &str = \"/*\";\nmacro_rules! /**/ debug_assert_eq { () => {} } // */",
        "const S: &str = r#\"/*\"#;\nmacro_rules! /* x */ panic { () => {} }",
        "const Q: char = '\"';\nmacro_rules! /* \" */ assert_ne { () => {} }",
        "const Q: char = '\\'';\nconst R: char = '\\u{22}';\nconst S: &str = \"/*\";\nmacro_rules! /* */ assert_ne { () => {} }",
        "fn f<'a>(x: &'a str) -> &'a str { x }\nmacro_rules! /* ' */ matches { () => {} }",
        "/* nested /* comment */ still comment */ macro_rules! /**/ unreachable { () => {} }",
        // Renamed into place.
        "macro_rules! fake { ($($t:tt)*) => {} }\npub(crate) use fake as assert_eq;",
        "pub use self::m::{fake as r#assert_eq, other};",
        "macro fake_two() {}\nmacro assert_ne($($t:tt)*) {}",
        // A macro that defines the macro, given the name.
        "macro_rules! mk { ($n:ident) => { macro_rules! $n { ($($t:tt)*) => {} } } }\nmk!(assert_eq);",
        "paste::paste! { macro_rules! [<assert _eq>] { ($($t:tt)*) => {} } }",
        "mk!(r#assert);",
        "concat_idents!(debug_, assert)",
    ] {
        flagged("src/shim.rs", text, RustMacroShadowing);
    }
}

/// The constructor of issue 34 (`.init_array`, forks before `main`) and
/// its disguises: attributes split over lines, behind `cfg_attr`, inner.
#[test]
fn constructor_sections_are_flagged_however_they_are_attributed() {
    for text in [
        "#[used]\n#[link_section = \".init_array\"]\nstatic INIT: extern \"C\" fn() = start;",
        "#[used]\n#[cfg_attr(\n    all(),\n    link_section\n    = \".init_array\"\n)]\nstatic INIT: extern \"C\" fn() = start;",
        "#![cfg_attr(all(), link_section = \".ctors\")]",
        "#[unsafe(link_section = \".preinit_array\")]\nstatic I: fn() = f;",
        "#[ctor::ctor]\nfn start() {}",
        "#[ctor]\nfn start() {}",
        "#[cfg_attr(all(), ctor)]\nfn start() {}",
        "#[dtor] fn stop() {}",
        "const SECTION: &str = \".init_array\";",
    ] {
        flagged("src/lib.rs", text, RustConstructor);
    }
    flagged(
        "Cargo.toml",
        "[dependencies]\nctor = \"0.2\"",
        RustConstructor,
    );
    flagged(
        "Cargo.toml",
        "[dependencies.ctor]\nversion = \"0.2\"",
        RustConstructor,
    );
    flagged(
        "Cargo.toml",
        "[dependencies]\ninit = { package = \"ctor\", version = \"0.2\" }",
        RustConstructor,
    );
}

#[test]
fn assembly_symbol_overrides_and_descriptor_games_are_flagged() {
    for text in [
        "core::arch::global_asm!(\".section .init_array\\n.quad start\");",
        "use core::arch::global_asm as ga;\nga!(\"\");",
        "std::arch::asm!(\"syscall\", in(\"rax\") 33);",
        "global_asm ! (\"\")",
        "#[naked]\nextern \"C\" fn f() {}",
    ] {
        flagged("src/lib.rs", text, RustAsm);
    }
    for text in [
        "#[no_mangle]\npub extern \"C\" fn write(fd: i32, b: *const u8, n: usize) -> isize { 0 }",
        "#[unsafe(no_mangle)]\npub extern \"C\" fn _exit(code: i32) {}",
        "#[export_name = \"write\"]\npub extern \"C\" fn w() {}",
    ] {
        flagged("src/lib.rs", text, RustSymbolOverride);
    }
    for text in [
        "extern \"C\" {\n    fn dup2(old: i32, new: i32) -> i32;\n}",
        "unsafe extern \"C\" {\n    fn pipe(fds: *mut i32) -> i32;\n    fn fork() -> i32;\n}",
        "extern {\n    #[link_name = \"dup2\"]\n    fn innocent(a: i32, b: i32) -> i32;\n}",
        "unsafe { libc::dup2(w, 1) };",
        "unsafe { libc :: atexit(done) };",
        "let out = unsafe { std::fs::File::from_raw_fd(1) };",
        "let me = std::env::current_exe().unwrap();",
        "let me = std::fs::read(\"/proc/self/exe\");",
        "let child = std::process::Command::new(std::env::args().next().unwrap());",
        "nix::unistd::dup2(w, 1).ok();",
        "std::io::set_output_capture(None);",
    ] {
        flagged("src/lib.rs", text, RustFdRewrite);
    }
}

/// Code the scan does not read as Rust: included or mounted from a file
/// that is not `.rs`, or sent as a binary section.
#[test]
fn code_from_files_the_scan_does_not_read_is_flagged() {
    for text in [
        "include!(\"notes.txt\");",
        "include!(concat!(env!(\"OUT_DIR\"), \"/gen.rs\"));",
        "include ! {\"data.bin\"}",
        "#[path = \"logo.svg\"]\nmod shim;",
        "#[cfg_attr(all(), path = \"x.md\")]\nmod shim;",
    ] {
        flagged("src/lib.rs", text, RustInclude);
    }
    let binary = "diff --git a/src/shim.rs b/src/shim.rs\nnew file mode 100644\nindex 0000000..e69de29\nBinary files /dev/null and b/src/shim.rs differ\n";
    let files = parse_patch(binary.as_bytes()).expect("patch");
    let found: Vec<_> = flags(&files, |_| Read::Code)
        .into_iter()
        .map(|f| f.rule)
        .collect();
    assert_eq!(found, [BinaryCode]);
    // In a kept test tree a binary fixture is fine, binary source is not.
    let fixture = binary.replace("src/shim.rs", "testdata/blob.o");
    let files = parse_patch(fixture.as_bytes()).expect("patch");
    assert!(flags(&files, |_| Read::Tests).is_empty());
    assert_eq!(flags(&files, |_| Read::Code)[0].rule, BinaryCode);
    let files = parse_patch(binary.as_bytes()).expect("patch");
    assert_eq!(flags(&files, |_| Read::Tests)[0].rule, BinaryCode);
    // A manifest that runs code at build time or swaps the test targets.
    for text in [
        "[package]\nname = \"tally\"\nbuild = \"src/gen.rs\"",
        "[lib]\nproc-macro = true",
        "[build-dependencies]\ncc = \"1\"",
        "[patch.crates-io]\ncfg-if = { path = \"shim\" }",
        "[[test]]\nname = \"it\"\npath = \"src/fake.rs\"\nharness = false",
        "[lib]\ntest = false",
    ] {
        flagged("Cargo.toml", text, RustManifest);
    }
}

/// What honest Rust patches write: none of it is flagged.
#[test]
fn honest_rust_is_not_flagged() {
    for text in [
        "macro_rules! my_assert { ($e:expr) => { assert!($e) } }",
        "macro_rules! assert_approx_eq { ($a:expr, $b:expr) => { assert!(($a - $b).abs() < 1e-9) } }",
        "#[test]\nfn adds() {\n    assert_eq!(add(2, 2), 4);\n    assert!(ok());\n    debug_assert_ne!(1, 2);\n}",
        "#[cfg(test)]\nmod tests {\n    use pretty_assertions::assert_eq;\n    use pretty_assertions::{assert_eq, assert_ne};\n}",
        "#[test]\n#[should_panic(expected = \"assert failed\")]\nfn panics() { std::panic::catch_unwind(|| ()).ok(); }",
        "/// Asserts nothing: assert is a word here.\n// a panic in a comment\nfn f() -> &'static str { \"assert\" }",
        "trait Sink {\n    fn write(&mut self, b: &[u8]) -> usize;\n    fn close(&mut self);\n}",
        "impl std::io::Write for X {\n    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> { Ok(b.len()) }\n    fn flush(&mut self) -> std::io::Result<()> { Ok(()) }\n}",
        "use std::fmt::Write as _;\nuse std::path::Path as file;\nlet ctor = Ctor::new();\nlet linkage_tree = 1;",
        "include!(\"generated/table.rs\");\n#[path = \"imp/unix.rs\"]\nmod imp;",
        "fn f<'a>(x: &'a str) -> &'a str { x }\nlet c = 'x';\nlet s = r#\"a \"quoted\" b\"#;",
        "#[link(name = \"m\")]\nextern \"C\" {\n    fn cos(x: f64) -> f64;\n}",
    ] {
        clean("src/lib.rs", text);
    }
    clean(
        "Cargo.toml",
        "[package]\nname = \"tally\"\n# build = \"x.rs\" was here\n\n[dependencies]\nserde = \"1\"\nmy-test = \"1\"\n\n[dev-dependencies]\npretty_assertions = \"1\"",
    );
}

/// A Go patch's ways into the runner: linkname into `testing`, cgo and
/// its constructors, assembly, stdout replaced or rewritten.
#[test]
fn go_linkname_cgo_and_stdout_rewrites_are_flagged() {
    for text in [
        "package calc\n\nimport _ \"unsafe\"\n\n//go:linkname chatty testing.(*chattyPrinter).Printf\nfunc chatty()",
        "package calc\n/*\n//go:linkname x testing.y\n*/",
    ] {
        flagged("calc.go", text, GoLinkname);
    }
    for text in [
        "package calc\n\n// static void start(void) __attribute__((constructor));\nimport \"C\"",
        "package calc\n\nimport (\n\t\"fmt\"\n\t\"C\"\n)",
        "package calc\n\n// #cgo LDFLAGS: -lx\nimport \"fmt\"",
    ] {
        flagged("calc.go", text, GoNativeCode);
    }
    flagged("calc_amd64.s", "TEXT ·f(SB),0,$0\n\tRET", GoNativeCode);
    for text in [
        "package calc\n\nimport \"os\"\n\nfunc init() {\n\tr, w, _ := os.Pipe()\n\tos.Stdout = w\n\t_ = r\n}",
        "package calc\n\nimport o \"os\"\n\nvar _ = func() int { o.Stdout = nil; return 0 }()",
        "package calc\n\nimport . \"os\"\n\nfunc setup() { Stdout = nil }",
        "package calc\n\nimport \"os\"\n\nfunc setup() { os .\n\tStderr=nil }",
        "package calc\n\nimport \"os\"\n\nfunc setup(f *os.File) { *os.Stdout = *f }",
        "package calc\n\nimport \"syscall\"\n\nfunc setup(w int) { syscall.Dup2(w, 1) }",
        "package calc\n\nimport sys \"syscall\"\n\nfunc setup(w int) { sys.Dup3(w, 2, 0) }",
        "package calc\n\nimport \"golang.org/x/sys/unix\"\n\nfunc setup(w int) { unix.Dup2(w, 1) }",
        "package calc\n\nimport \"os\"\n\nvar out = os.NewFile(1, \"stdout\")",
        "package calc\n\nimport (\"os\"; \"syscall\")\n\nvar out = os.NewFile(uintptr(syscall.Stdout), \"stdout\")",
        "package calc\n\nimport \"syscall\"\n\nfunc w(b []byte) { syscall.Write(1, b) }",
        "package calc\n\nimport (\"os\"; \"unsafe\")\n\nvar p = unsafe.Pointer(os.Stdout)",
        "package calc\n\nimport \"fmt\"\n\nfunc init() {\n\tfmt.Println(\"\\x16--- PASS: TestAdd (0.00s)\")\n}",
        "package calc\n\nfunc init() { println(\"ok\") }",
        "package calc\n\nimport \"os\"\n\nfunc again() { p, _ := os.Executable(); _ = p }",
        "package calc\n\nimport (\"os\"; \"os/exec\")\n\nvar _ = exec.Command(os.Args[0], os.Args[1:]...).Run()",
        "package calc\n\nimport (\"os\"; \"os/exec\")\n\nfunc relay() { self := os.Args[0]; _ = exec.Command(self).Run() }",
        "package calc\n\nimport \"fmt\"\n\nvar _ = func() int {\n\tfmt.Println(\"--- PASS: TestAdd\")\n\treturn 0\n}()",
        "package calc\n\nimport o \"os\"\n\nfunc init() { o.Stdout.WriteString(\"ok\") }",
    ] {
        flagged("calc.go", text, GoFdRewrite);
    }
    for text in [
        "package calc\n\nimport \"testing\"\n\nfunc init() { testing.MainStart(nil, nil, nil, nil, nil) }",
        "package calc\n\nimport \"testing\"\n\nvar fake = []testing.InternalTest{{Name: \"TestAdd\"}}",
        "package calc\n\nimport \"testing\"\n\nfunc Mean() float64 { if testing.Testing() { return 0 }; return 1 }",
        "package calc\n\nimport \"flag\"\n\nvar underTest = flag.Lookup(\"test.v\") != nil",
        "package calc\n\nimport (\"os\"; \"strings\")\n\nvar underTest = strings.HasPrefix(os.Args[len(os.Args)-1], \"-test.run\")",
    ] {
        flagged("calc.go", text, GoTestingReach);
    }
}

#[test]
fn honest_go_is_not_flagged() {
    for text in [
        "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\tfmt.Println(\"hi\")\n\tfmt.Fprintln(os.Stderr, \"warning\")\n\tif os.Stdout == nil {\n\t\tos.Exit(1)\n\t}\n}",
        "package calc\n\nimport (\"bytes\"; \"os/exec\")\n\nfunc run() { var buf bytes.Buffer; cmd := exec.Command(\"ls\"); cmd.Stdout = &buf; cmd.Stderr = &buf }",
        "package calc\n\nvar registry = map[string]int{}\n\nfunc init() {\n\tregistry[\"add\"] = 1\n}\n\nvar letters = []string{\n\t\"C\",\n\t\"D\",\n}",
        "package calc\n\n// Add adds; see the C version.\nfunc Add(a, b int) int { return a + b }",
        "package calc\n\nimport \"testing\"\n\n// Helper for the package's tests.\nfunc Check(t *testing.T, ok bool) { if !ok { t.Helper(); t.Fatal(\"no\") } }",
        "package main\n\nimport (\"fmt\"; \"os\")\n\nfunc usage() { fmt.Fprintf(os.Stderr, \"usage: %s\\n\", os.Args[0]) }\n\nvar handlers = map[string]func(){}\n\nfunc run() { var f = func() { fmt.Println(\"hi\") }; f() }",
    ] {
        clean("calc/calc.go", text);
    }
}

/// A flag names the rule, the file and the patch line it starts on.
#[test]
fn a_flag_names_its_rule_file_and_line() {
    let patch = new_file(
        "src/shim.rs",
        "// shim\n\nmacro_rules! assert_eq {\n    ($($t:tt)*) => {};\n}",
    );
    let files = parse_patch(patch.as_bytes()).expect("patch");
    let mut found = flags(&files, |_| Read::Code);
    assert_eq!(found.len(), 1, "{found:?}");
    locate(patch.as_bytes(), &mut found);
    assert_eq!(
        found[0].to_string(),
        "static flag rust-macro-shadowing: src/shim.rs:3 (patch line 8): defines a macro named like one of std's: `macro_rules! assert_eq {`"
    );
    // In an edit, the file line counts the context before the match and
    // not the removed lines; an added line shaped like a header is content.
    let edit = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -10,3 +10,5 @@\n pub fn a() {}\n-pub fn b() {}\n+// @@ -1 +1 @@\n+pub fn b() {}\n \n+#[no_mangle] pub extern \"C\" fn c() {}\n";
    let files = parse_patch(edit.as_bytes()).expect("patch");
    let mut found = flags(&files, |_| Read::Code);
    locate(edit.as_bytes(), &mut found);
    assert_eq!(found[0].line, Some(14), "{found:?}");
    // Nothing is read of a file `read` leaves out.
    assert!(flags(&files, |_| Read::Not).is_empty());
}

/// A patch at the size cap built to make a naive scan quadratic (every
/// `extern {` and `func init() {` left open, every one read to the end)
/// is read in linear time: measured 10 MiB in well under a second
/// (release), a few seconds in a debug build.
#[test]
fn an_adversarial_patch_at_the_cap_is_scanned_in_linear_time() {
    let n = 10 << 20;
    let rust = "extern \"C\" {\n".repeat(n / 13);
    let go = "func init() {\n".repeat(n / 14);
    let started = std::time::Instant::now();
    assert!(rules("src/lib.rs", &rust).is_empty());
    assert!(rules("calc.go", &format!("package calc\n{go}")).is_empty());
    let took = started.elapsed();
    assert!(took.as_secs() < 60, "{took:?}");
    // A foreign declaration after all of them is still found.
    let late = format!("{rust}fn dup2(a: i32, b: i32) -> i32;\n");
    assert_eq!(rules("src/lib.rs", &late), [RustFdRewrite]);
}

/// Offsets found in a view with blanked multi-byte characters never slice
/// the text inside one (a hostile patch must not make the grader panic).
#[test]
fn a_match_next_to_a_blanked_multibyte_character_is_located() {
    let text = "package calc\n\nimport . \"os\"\n\nfunc f() { /*é*/Stdout = nil }";
    flagged("calc.go", text, GoFdRewrite);
    let text = "const S: &str = \"é\";\nmacro_rules! /*é*/assert_eq { () => {} }";
    flagged("src/lib.rs", text, RustMacroShadowing);
}
