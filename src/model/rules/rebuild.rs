//! `[env] rebuild`: workspace packages that others consume through a build
//! step (a sibling's `dist/` or its type declarations) are rebuilt before
//! the tests run, when the run's tree changes them (docs/pipeline.md,
//! `[env]`; docs/languages.md, "Workspaces").
//!
//! Which rules a tree needs is decided when the tree is composed, from the
//! paths in which the composed tree differs from its base tree as git wrote
//! them ([`changed_paths`], [`matching`]): nothing the graded code does at
//! run time can add or remove a rule. Each matching rule's command runs
//! once, in rule order, at the tree's root, in the run's own sandbox and
//! limits, before the test command ([`prelude`]); the first that fails ends
//! the run with its exit code, and the tests do not run.
//!
//! What each rule did is read back from marker lines the prelude prints
//! around it ([`read`]). Only the prelude's shell knows a rule's exit code,
//! but the graded code shares the output pipe, so it could print marker
//! lines too: a forged marker can only say a rebuild failed (any failure
//! marker of a rule that ran counts), which hurts the code that forged it,
//! never that one succeeded (a failed rule ends the run before any other
//! code of the tree runs after it). A failed rebuild is a reading of a
//! unit that did not build ([`failure`]): blamed as a build failure is
//! (docs/verdicts.md, "A build the patch broke"; at screening, the gold
//! control's `… does not build`).

use assay_report::BuildFailure;

use crate::model::rebuild::{RebuildRule, Rebuilt};
use crate::model::shell;

/// Why a rule cannot be used, if it cannot (checked once, at load).
pub(crate) fn problem(paths: &[String], command: &str) -> Option<String> {
    if paths.is_empty() {
        return Some("`paths` names no glob".into());
    }
    if let Some(bad) = paths.iter().find(|g| globset::Glob::new(g).is_err()) {
        return Some(format!("the glob `{bad}` does not parse"));
    }
    if command.trim().is_empty() {
        return Some("`command` is empty".into());
    }
    if command.contains(['\n', '\r']) {
        return Some("`command` is more than one line (join its steps with `&&`)".into());
    }
    None
}

/// The repo-relative paths in which two trees' entries (sorted by path:
/// path, git mode, blob id) differ: added, removed, or changed in content
/// or mode.
pub(crate) fn changed_paths<'a>(
    base: impl IntoIterator<Item = (&'a str, u32, &'a str)>,
    tree: impl IntoIterator<Item = (&'a str, u32, &'a str)>,
) -> Vec<String> {
    use std::collections::BTreeMap;
    let base: BTreeMap<&str, (u32, &str)> = base.into_iter().map(|(p, m, i)| (p, (m, i))).collect();
    let tree: BTreeMap<&str, (u32, &str)> = tree.into_iter().map(|(p, m, i)| (p, (m, i))).collect();
    let mut out: Vec<String> = tree
        .iter()
        .filter(|(p, e)| base.get(*p) != Some(e))
        .map(|(p, _)| (*p).to_owned())
        .chain(
            base.keys()
                .filter(|p| !tree.contains_key(*p))
                .map(|p| (*p).to_owned()),
        )
        .collect();
    out.sort();
    out
}

/// The rules, in their order, of which a glob matches one of `changed`.
pub(crate) fn matching(rules: &[RebuildRule], changed: &[String]) -> Vec<RebuildRule> {
    rules
        .iter()
        .filter(|r| {
            super::policy::globset(&r.paths)
                .is_ok_and(|set| changed.iter().any(|p| set.is_match(p)))
        })
        .cloned()
        .collect()
}

/// The member globs of an npm or yarn workspace: the root `package.json`'s
/// `workspaces`, a list or yarn's `{ "packages": [...] }`. `!` patterns
/// are left out.
pub(crate) fn npm_members(root: &[u8]) -> Vec<String> {
    let Ok(root) = serde_json::from_slice::<serde_json::Value>(root) else {
        return Vec::new();
    };
    let listed = match &root["workspaces"] {
        serde_json::Value::Array(a) => a.clone(),
        serde_json::Value::Object(o) => o
            .get("packages")
            .and_then(|p| p.as_array())
            .cloned()
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    member_globs(listed.iter().filter_map(|p| p.as_str()))
}

/// The member globs of a pnpm workspace: `pnpm-workspace.yaml`'s top-level
/// `packages`, as a block list (`- 'packages/*'`) or a flow list
/// (`['a/*', 'b']`). Only that key is read; `!` patterns are left out.
pub(crate) fn pnpm_members(yaml: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(yaml);
    let unquote = |w: &str| w.trim().trim_matches(|c| c == '\'' || c == '"').to_owned();
    let uncomment = |l: &str| l.split(" #").next().unwrap_or(l).trim_end().to_owned();
    let mut listed = Vec::new();
    let mut inside = false;
    for line in text.lines().map(uncomment) {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if !line.starts_with([' ', '\t', '-']) {
            inside = false;
            if let Some(rest) = line.strip_prefix("packages:") {
                let rest = rest.trim();
                match rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
                    Some(flow) => listed.extend(flow.split(',').map(unquote)),
                    None => inside = rest.is_empty(),
                }
            }
            continue;
        }
        if inside && let Some(item) = line.trim_start().strip_prefix('-') {
            listed.push(unquote(item));
        }
    }
    member_globs(listed.iter().map(String::as_str))
}

fn member_globs<'a>(listed: impl Iterator<Item = &'a str>) -> Vec<String> {
    listed
        .filter(|p| !p.is_empty() && !p.starts_with('!'))
        .map(|p| p.trim_start_matches("./").trim_end_matches('/').to_owned())
        .collect()
}

/// The rules of a JavaScript workspace whose members are the directories
/// matching `globs` ([`npm_members`], [`pnpm_members`]): each member of
/// `packages` (directory, its `package.json`) whose manifest has a
/// `scripts.build` gets a rule: that script, run in its directory with the
/// environment's `node_modules/.bin` first on `PATH` (as `npm run build`
/// runs it, without npm's pre/post scripts), when a path of the member or
/// of a member it depends on (transitively, by name, in any dependency
/// list) changes. Rules come in dependency order (a member after those it
/// depends on), then by directory. No globs, no rules.
pub(crate) fn detect(globs: &[String], packages: &[(String, Vec<u8>)]) -> Vec<RebuildRule> {
    use std::collections::{BTreeMap, BTreeSet};
    if globs.is_empty() {
        return Vec::new();
    }
    let Ok(members) = super::policy::globset(globs) else {
        return Vec::new();
    };
    // name -> (directory, build script, names it depends on)
    let mut by_name: BTreeMap<String, (String, Option<String>, BTreeSet<String>)> = BTreeMap::new();
    for (dir, manifest) in packages {
        let Ok(m) = serde_json::from_slice::<serde_json::Value>(manifest) else {
            continue;
        };
        let Some(name) = m["name"].as_str() else {
            continue;
        };
        if !members.is_match(dir) {
            continue;
        }
        let build = m["scripts"]["build"]
            .as_str()
            .filter(|b| !b.trim().is_empty() && !b.contains(['\n', '\r']))
            .map(str::to_owned);
        let deps = [
            "dependencies",
            "devDependencies",
            "peerDependencies",
            "optionalDependencies",
        ]
        .iter()
        .filter_map(|k| m[*k].as_object())
        .flat_map(|o| o.keys().cloned())
        .collect();
        by_name.insert(name.to_owned(), (dir.clone(), build, deps));
    }
    let closure = |name: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![name.to_owned()];
        while let Some(n) = todo.pop() {
            if let Some((_, _, deps)) = by_name.get(&n) {
                for d in deps {
                    if by_name.contains_key(d) && d != name && seen.insert(d.clone()) {
                        todo.push(d.clone());
                    }
                }
            }
        }
        seen
    };
    let mut rules: Vec<(usize, String, RebuildRule)> = by_name
        .iter()
        .filter_map(|(name, (dir, build, _))| {
            let build = build.as_ref()?;
            let deps = closure(name);
            let mut paths: Vec<String> = std::iter::once(dir.clone())
                .chain(deps.iter().map(|d| by_name[d].0.clone()))
                .map(|d| format!("{d}/**"))
                .collect();
            paths.sort();
            let command = format!(
                "cd {} && PATH=\"$ASSAY_ENV/node_modules/.bin:$PATH\" sh -c {}",
                shell::word(dir),
                shell::quote(build)
            );
            Some((deps.len(), dir.clone(), RebuildRule { paths, command }))
        })
        .collect();
    rules.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    rules.into_iter().map(|(_, _, r)| r).collect()
}

/// What starts a marker line of the prelude's.
const MARK: &str = "[assay-rebuild] ";

/// The shell text run before the test command: each rule's command in its
/// own `sh -c`, its input empty, between a `start` and an `exit` marker;
/// the first that fails ends the script with its exit code. One line, so
/// the shell's messages about the test command keep their line numbers.
pub(crate) fn prelude(rules: &[RebuildRule]) -> String {
    let mut out = String::new();
    for (i, r) in rules.iter().enumerate() {
        out.push_str(&format!(
            "printf '\\n{MARK}start\\t{i}\\n'; sh -c {} </dev/null; assay_rebuild=$?; printf '\\n{MARK}exit\\t{i}\\t%s\\n' \"$assay_rebuild\"; [ \"$assay_rebuild\" -eq 0 ] || exit \"$assay_rebuild\"; ",
            shell::quote(&r.command)
        ));
    }
    out
}

/// Lines of a rule's output kept in its record.
const TAIL_LINES: usize = 20;
/// Bytes of a rule's output kept in its record.
const TAIL_BYTES: usize = 2048;

/// What each of `rules` did, read from the marker lines in the run's
/// output `log`. A rule is failed when any exit marker of its says so
/// (a forged one only hurts its forger), or when it started and never
/// ended.
pub(crate) fn read(rules: &[RebuildRule], log: &[u8]) -> Vec<Rebuilt> {
    let text = String::from_utf8_lossy(log);
    let lines: Vec<&str> = text.lines().collect();
    rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (start, exit) = (format!("{MARK}start\t{i}"), format!("{MARK}exit\t{i}\t"));
            let mut out = Rebuilt {
                paths: r.paths.clone(),
                command: r.command.clone(),
                ..Rebuilt::default()
            };
            let Some(from) = lines.iter().position(|l| *l == start) else {
                return out;
            };
            out.started = true;
            let codes: Vec<(usize, Option<i32>)> = lines
                .iter()
                .enumerate()
                .skip(from)
                .filter_map(|(n, l)| l.strip_prefix(&exit).map(|c| (n, c.trim().parse().ok())))
                .collect();
            let to = codes.first().map_or(lines.len(), |(n, _)| *n);
            out.exit_code = match codes.iter().find(|(_, c)| *c != Some(0)) {
                Some((_, code)) => Some(code.unwrap_or(-1)),
                None => codes.first().and_then(|(_, c)| *c),
            };
            out.tail = tail(&lines[from + 1..to]);
            out
        })
        .collect()
}

fn tail(lines: &[&str]) -> String {
    let lines: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let mut kept = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    if kept.len() > TAIL_BYTES {
        let mut cut = kept.len() - TAIL_BYTES;
        while !kept.is_char_boundary(cut) {
            cut += 1;
        }
        kept = kept[cut..].to_owned();
    }
    kept
}

/// The build failure a failed rebuild is: its unit names the rule, its
/// message how it ended and the end of its output; it stopped the run (no
/// test ran after it).
pub(crate) fn failure(ran: &[Rebuilt]) -> Option<BuildFailure> {
    let r = ran.iter().find(|r| r.failed())?;
    let how = match r.exit_code {
        Some(code) => format!("exited with {code}"),
        None => "did not finish (timed out or killed)".to_owned(),
    };
    let rule = RebuildRule {
        paths: r.paths.clone(),
        command: r.command.clone(),
    };
    let mut message = how;
    if !r.tail.is_empty() {
        message.push('\n');
        message.push_str(&r.tail);
    }
    let lines: Vec<&str> = message
        .lines()
        .take(assay_report::MESSAGE_MAX_LINES)
        .collect();
    let mut message = lines.join("\n");
    if message.len() > assay_report::MESSAGE_MAX_BYTES {
        let mut cut = assay_report::MESSAGE_MAX_BYTES;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push_str("\n…");
    }
    Some(BuildFailure {
        unit: rule.label(),
        message,
        stopped_run: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(paths: &[&str], command: &str) -> RebuildRule {
        RebuildRule {
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            command: command.into(),
        }
    }

    #[test]
    fn a_rule_needs_a_glob_that_parses_and_a_one_line_command() {
        let globs = |g: &[&str]| g.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            problem(&globs(&["packages/core/**"]), "tsc -p packages/core"),
            None
        );
        assert!(problem(&globs(&[]), "tsc").is_some_and(|w| w.contains("no glob")));
        assert!(problem(&globs(&["a/[b"]), "tsc").is_some_and(|w| w.contains("`a/[b`")));
        assert!(problem(&globs(&["a/**"]), "  ").is_some_and(|w| w.contains("empty")));
        assert!(problem(&globs(&["a/**"]), "a\nb").is_some_and(|w| w.contains("one line")));
    }

    #[test]
    fn changed_paths_are_added_removed_and_changed_entries() {
        let base = [
            ("a.js", 0o100644, "1"),
            ("b.js", 0o100644, "2"),
            ("c.sh", 0o100644, "3"),
            ("same.js", 0o100644, "4"),
        ];
        let tree = [
            ("a.js", 0o100644, "9"),
            ("c.sh", 0o100755, "3"),
            ("new.js", 0o100644, "5"),
            ("same.js", 0o100644, "4"),
        ];
        assert_eq!(
            changed_paths(base, tree),
            ["a.js", "b.js", "c.sh", "new.js"]
        );
        assert!(changed_paths(base, base).is_empty());
    }

    #[test]
    fn the_rules_a_tree_needs_are_those_matching_a_changed_path_in_order() {
        let rules = [
            rule(&["packages/core/**"], "tsc -p packages/core"),
            rule(
                &["packages/util/src/**", "packages/util/*.json"],
                "make util",
            ),
            rule(&["packages/app/**"], "true"),
        ];
        let changed = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let got = matching(
            &rules,
            &changed(&["packages/util/tsconfig.json", "packages/core/dist/index.js"]),
        );
        assert_eq!(got, [rules[0].clone(), rules[1].clone()]);
        assert!(matching(&rules, &changed(&["README.md", "packages/coreish.js"])).is_empty());
    }

    /// The prelude, run by `sh`, prints what `read` reads; a failed rule
    /// ends the script with its code and the next never starts.
    #[test]
    fn read_gives_back_what_the_prelude_ran() {
        let rules = [
            rule(&["a/**"], "echo built a"),
            rule(&["b/**"], "echo 'it''s broken' >&2; exit 3"),
            rule(&["c/**"], "echo never"),
        ];
        let script = format!("{}echo tests", prelude(&rules));
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("{{ {script}; }} 2>&1")])
            .output()
            .expect("sh runs");
        assert_eq!(out.status.code(), Some(3));
        let ran = read(&rules, &out.stdout);
        assert_eq!((ran[0].started, ran[0].exit_code), (true, Some(0)));
        assert_eq!(ran[0].tail, "built a");
        assert_eq!((ran[1].started, ran[1].exit_code), (true, Some(3)));
        assert_eq!(ran[1].tail, "its broken");
        assert!(!ran[2].started);
        assert!(!String::from_utf8_lossy(&out.stdout).contains("tests"));
        let b = failure(&ran).expect("a failure");
        assert_eq!(b.unit, "rebuild `echo 'it''s broken' >&2; exit 3` (b/**)");
        assert_eq!(b.message, "exited with 3\nits broken");
        assert!(b.stopped_run);
    }

    #[test]
    fn a_workspace_manifest_gives_a_rule_per_member_that_builds_in_dependency_order() {
        let root = npm_members(br#"{ "workspaces": ["packages/*", "!packages/skip"] }"#);
        assert_eq!(root, ["packages/*"]);
        let pkg = |dir: &str, json: &str| (dir.to_owned(), json.as_bytes().to_vec());
        let packages = [
            pkg(
                "packages/app",
                r#"{ "name": "app", "scripts": { "build": "tsc -b" }, "dependencies": { "@w/ui": "*", "left-pad": "1" } }"#,
            ),
            pkg(
                "packages/core",
                r#"{ "name": "@w/core", "scripts": { "build": "tsc -p ." } }"#,
            ),
            pkg(
                "packages/ui",
                r#"{ "name": "@w/ui", "devDependencies": { "@w/core": "*" } }"#,
            ),
            pkg(
                "packages/docs",
                r#"{ "name": "docs", "scripts": { "test": "x" } }"#,
            ),
            pkg(
                "tools/gen",
                r#"{ "name": "gen", "scripts": { "build": "make" } }"#,
            ),
            pkg("packages/broken", "{ not json"),
        ];
        let rules = detect(&root, &packages);
        assert_eq!(
            rules,
            [
                rule(
                    &["packages/core/**"],
                    "cd packages/core && PATH=\"$ASSAY_ENV/node_modules/.bin:$PATH\" sh -c 'tsc -p .'"
                ),
                rule(
                    &["packages/app/**", "packages/core/**", "packages/ui/**"],
                    "cd packages/app && PATH=\"$ASSAY_ENV/node_modules/.bin:$PATH\" sh -c 'tsc -b'"
                ),
            ]
        );
        let yarn = npm_members(br#"{ "workspaces": { "packages": ["./packages/core/"] } }"#);
        assert_eq!(yarn, ["packages/core"]);
        assert_eq!(detect(&yarn, &packages).len(), 1);
        assert!(npm_members(b"{}").is_empty());
        assert!(npm_members(b"junk").is_empty());
        assert!(detect(&[], &packages).is_empty());
    }

    /// pnpm's manifest, as pnpm's documentation writes it: a block list
    /// with quotes, a comment, negation; and the flow form.
    #[test]
    fn a_pnpm_workspace_manifest_names_its_members() {
        let block = b"packages:\n  # all packages in direct subdirs of packages/\n  - 'packages/*'\n  - \"components/**\" # nested\n  - '!**/test/**'\ncatalog:\n  react: ^18.2.0\n";
        assert_eq!(pnpm_members(block), ["packages/*", "components/**"]);
        assert_eq!(
            pnpm_members(b"packages: ['apps/*', \"libs/*\"]\n"),
            ["apps/*", "libs/*"]
        );
        assert!(pnpm_members(b"catalog:\n  - 'packages/*'\n").is_empty());
    }

    /// A forged marker can say a rebuild failed, never that it succeeded;
    /// a rule that started and never ended failed.
    #[test]
    fn any_failure_marker_counts_and_an_unfinished_rule_failed() {
        let rules = [rule(&["a/**"], "x")];
        let forged_ok = b"\n[assay-rebuild] start\t0\n\n[assay-rebuild] exit\t0\t0\nerr\n[assay-rebuild] exit\t0\t2\n";
        assert_eq!(read(&rules, forged_ok)[0].exit_code, Some(2));
        let hung = b"\n[assay-rebuild] start\t0\nstill going\n";
        let ran = read(&rules, hung);
        assert_eq!((ran[0].started, ran[0].exit_code), (true, None));
        assert!(failure(&ran).is_some_and(|b| b.message.starts_with("did not finish")));
        assert!(read(&rules, b"tests only\n")[0].exit_code.is_none());
        assert!(failure(&read(&rules, b"tests only\n")).is_none());
    }
}
