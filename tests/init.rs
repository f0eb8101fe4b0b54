//! `assay init` on new repositories the tests build (Python, Go, Rust,
//! JavaScript): the pipeline it writes screens the merged pull request, holds the task back
//! until its statement is written — saying which file to write — and then
//! certifies it. On the way: the file points at documentation the binary
//! carries, the first `plan` says every node runs, the first build's
//! report (no session yet) says what to do next, and a session file
//! dropped under `sessions/` is graded.

#![allow(clippy::unwrap_used)]

mod util;

use util::{Project, Repo};

/// `init`, then a build that names the statement to write, then a build
/// that certifies the task once it is written.
fn init_and_certify(p: &Project, repo: &str, report: &str, task: &str) {
    let out = p.run(&["init", repo]).code(0);
    assert!(out.stdout.contains(report), "{}", out.stdout);
    let toml = std::fs::read_to_string(p.path().join("pipeline.toml")).unwrap();
    assert!(toml.contains(&format!("report = \"{report}\"")), "{toml}");
    // A second init never overwrites the file.
    p.run(&["init", repo]).code(2);
    // The file's pointer to its documentation works from the user's
    // directory, where assay's docs/ is not.
    assert!(toml.contains("`assay docs pipeline`"), "{toml}");
    assert!(
        !toml.contains("docs/"),
        "a path only the source tree has:\n{toml}"
    );
    p.run(&["docs", "pipeline"])
        .code(0)
        .stdout_has("# pipeline.toml");

    // Nothing is cached: the plan says everything runs, not what may.
    let plan = p.run(&["plan"]).code(0);
    let last = plan.stdout.lines().last().unwrap_or_default();
    assert!(
        last.ends_with("would run: nothing is cached yet, so a first build runs every node"),
        "{}",
        plan.stdout
    );
    assert!(!plan.stdout.contains("maybe"), "{}", plan.stdout);
    // Read by a reader that is gone (`assay plan | head -0`): a quiet end
    // with 141, as a shell reports a closed pipe, and no panic.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let closed = p
        .command(&["plan"])
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&closed.stderr);
    assert_eq!(
        closed.status.code(),
        Some(141),
        "{:?}: {stderr}",
        closed.status
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    let first = p.run(&["build"]).code(0);
    let said = format!("{}{}", first.stdout, first.stderr);
    assert!(said.contains(&format!("statements/{task}.md")), "{said}");
    assert!(
        said.contains(
            "-> 1 certified (0 released, 1 awaiting a statement: released once it is written)"
        ),
        "{said}"
    );
    // No session yet: a report all the same, saying what to do next.
    let report = std::fs::read_to_string(p.path().join("release/report.html")).unwrap();
    assert!(report.contains("No session graded yet"), "{report}");
    assert!(
        report.contains("held back: write each one's statement"),
        "{report}"
    );
    p.write(
        &format!("statements/{task}.md"),
        "The discount is not applied.\n",
    );
    p.run(&["build"]).code(0);
    let report = std::fs::read_to_string(p.path().join("release/report.html")).unwrap();
    assert!(
        report.contains(&format!(">{task}</a>")),
        "the task in the report:\n{report}"
    );
    let tasks = std::fs::read_to_string(p.path().join("release/tasks.jsonl")).unwrap();
    let line: serde_json::Value = tasks
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|t| t["instance_id"] == task)
        .unwrap_or_else(|| panic!("no certified {task}:\n{tasks}"));
    assert_eq!(line["certified"], true, "{line:#}");
    assert!(
        !line["FAIL_TO_PASS"].as_array().unwrap().is_empty(),
        "{line:#}"
    );

    // A session file dropped under sessions/ is graded on the next build.
    p.write(
        "sessions/me/empty.json",
        format!(
            "{{\"task\": \"{task}\", \"agent\": \"me\", \"model\": \"by-hand\", \"patch\": \"\"}}\n"
        ),
    );
    p.run(&["build"]).code(0);
    let csv = std::fs::read_to_string(p.path().join("release/results.csv")).unwrap();
    assert!(
        util::csv_records(&csv)
            .iter()
            .any(|r| r["session"] == "me/empty.json" && r["verdict"] == "unresolved"),
        "{csv}"
    );
    // A pipeline that names no `sessions` says the files there go unread.
    let toml = std::fs::read_to_string(p.path().join("pipeline.toml")).unwrap();
    assert!(toml.contains("\nsessions = \"sessions\"\n"), "{toml}");
    p.write(
        "pipeline.toml",
        toml.replace("\nsessions = \"sessions\"\n", "\n"),
    );
    let unread = p.run(&["build"]).code(0);
    assert!(
        unread
            .stderr
            .contains("holds 1 file(s), but pipeline.toml names no `sessions`: none is graded"),
        "{}",
        unread.stderr
    );
}

#[test]
fn init_writes_a_pipeline_that_certifies_a_python_repositorys_pull_request() {
    let p = Project::new();
    let mut r = Repo::new(&p, "shop");
    r.put("shop/__init__.py", "")
        .put("shop/cart.py", "def total(prices):\n    return sum(prices)\n")
        .put("tests/__init__.py", "")
        .put(
            "tests/test_cart.py",
            "import unittest\n\nfrom shop.cart import total\n\n\nclass Cart(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(total([1, 2]), 3)\n",
        );
    r.commit("start");
    r.pr(
        1,
        "Apply the discount",
        &[
            (
                "shop/cart.py",
                "def total(prices, discount=0):\n    return sum(prices) - discount\n",
            ),
            (
                "tests/test_cart.py",
                "import unittest\n\nfrom shop.cart import total\n\n\nclass Cart(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(total([1, 2]), 3)\n\n    def test_discount(self):\n        self.assertEqual(total([5, 5], discount=2), 8)\n",
            ),
        ],
    );
    init_and_certify(&p, "shop", "unittest", "shop-1");
}

#[test]
fn init_writes_a_pipeline_that_certifies_a_go_repositorys_pull_request() {
    let p = Project::new();
    let mut r = Repo::new(&p, "gocart");
    r.put("go.mod", "module example.com/gocart\n\ngo 1.19\n")
        .put(
            "cart.go",
            "package gocart\n\n// Total sums the prices.\nfunc Total(prices []int) int {\n\tt := 0\n\tfor _, p := range prices {\n\t\tt += p\n\t}\n\treturn t\n}\n",
        )
        .put(
            "cart_test.go",
            "package gocart\n\nimport \"testing\"\n\nfunc TestTotal(t *testing.T) {\n\tif Total([]int{1, 2}) != 3 {\n\t\tt.Fatal(\"total\")\n\t}\n}\n",
        );
    r.commit("start");
    r.pr(
        1,
        "Apply the discount",
        &[
            (
                "cart.go",
                "package gocart\n\n// Total sums the prices.\nfunc Total(prices []int) int {\n\tt := 0\n\tfor _, p := range prices {\n\t\tt += p\n\t}\n\treturn t\n}\n\n// Discounted is the total less the discount.\nfunc Discounted(prices []int, d int) int { return Total(prices) - d }\n",
            ),
            (
                "discount_test.go",
                "package gocart\n\nimport \"testing\"\n\nfunc TestDiscounted(t *testing.T) {\n\tif Discounted([]int{5, 5}, 2) != 8 {\n\t\tt.Fatal(\"discount\")\n\t}\n}\n",
            ),
        ],
    );
    init_and_certify(&p, "gocart", "go-test-json", "gocart-1");
}

/// A crate without dependencies: the cargo preset `init` writes vendors
/// nothing, and the pull request is certified all the same.
#[test]
fn init_writes_a_pipeline_that_certifies_a_rust_repositorys_pull_request() {
    let p = Project::new();
    let mut r = Repo::new(&p, "cart");
    let lib = "/// Sums the prices.\n///\n/// ```\n/// assert_eq!(cart::total(&[1, 2]), 3);\n/// ```\npub fn total(prices: &[u32]) -> u32 {\n    prices.iter().sum()\n}\n";
    r.put(
        "Cargo.toml",
        "[package]\nname = \"cart\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .put("src/lib.rs", lib)
    .put(
        "tests/cart.rs",
        "#[test]\nfn totals() {\n    assert_eq!(cart::total(&[1, 2]), 3);\n}\n",
    )
    .put(".gitignore", "/target\n");
    r.commit("start");
    r.pr(
        1,
        "Apply the discount",
        &[
            (
                "src/lib.rs",
                &format!("{lib}\n/// The total less the discount.\npub fn discounted(prices: &[u32], d: u32) -> u32 {{\n    total(prices) - d\n}}\n"),
            ),
            (
                "tests/cart.rs",
                "#[test]\nfn totals() {\n    assert_eq!(cart::total(&[1, 2]), 3);\n}\n\n#[test]\nfn discounts() {\n    assert_eq!(cart::discounted(&[5, 5], 2), 8);\n}\n",
            ),
        ],
    );
    init_and_certify(&p, "cart", "libtest", "cart-1");
    let toml = std::fs::read_to_string(p.path().join("pipeline.toml")).unwrap();
    assert!(toml.contains("preset = \"cargo\""), "{toml}");
}

/// A package with a lockfile and no dependencies: the node preset `init`
/// writes runs `npm ci` at setup, picks `node --test` from the test script
/// and reads its tests as `file > describe > test`.
#[test]
fn init_writes_a_pipeline_that_certifies_a_javascript_repositorys_pull_request() {
    let p = Project::new();
    let mut r = Repo::new(&p, "jscart");
    let test = |extra: &str| {
        format!(
            "const {{ describe, it }} = require('node:test');\nconst assert = require('node:assert');\nconst cart = require('../cart');\n\ndescribe('cart', () => {{\n  it('totals', () => {{\n    assert.strictEqual(cart.total([1, 2]), 3);\n  }});\n{extra}}});\n"
        )
    };
    let lock = "{\n  \"name\": \"jscart\",\n  \"version\": \"1.0.0\",\n  \"lockfileVersion\": 3,\n  \"requires\": true,\n  \"packages\": {\n    \"\": {\n      \"name\": \"jscart\",\n      \"version\": \"1.0.0\"\n    }\n  }\n}\n";
    r.put(
        "package.json",
        "{\n  \"name\": \"jscart\",\n  \"version\": \"1.0.0\",\n  \"scripts\": { \"test\": \"node --test\" }\n}\n",
    )
    .put("package-lock.json", lock)
    .put(
        "cart.js",
        "exports.total = (prices) => prices.reduce((a, b) => a + b, 0);\n",
    )
    .put("test/cart.test.js", &test(""));
    r.commit("start");
    r.pr(
        1,
        "Apply the discount",
        &[
            (
                "cart.js",
                "exports.total = (prices) => prices.reduce((a, b) => a + b, 0);\nexports.discounted = (prices, d) => exports.total(prices) - d;\n",
            ),
            (
                "test/cart.test.js",
                &test("  it('discounts', () => {\n    assert.strictEqual(cart.discounted([5, 5], 2), 8);\n  });\n"),
            ),
        ],
    );
    init_and_certify(&p, "jscart", "jest-json", "jscart-1");
    let toml = std::fs::read_to_string(p.path().join("pipeline.toml")).unwrap();
    assert!(toml.contains("preset = \"node\""), "{toml}");
    let tasks = std::fs::read_to_string(p.path().join("release/tasks.jsonl")).unwrap();
    assert!(
        tasks.contains("test/cart.test.js > cart > discounts"),
        "{tasks}"
    );
}
