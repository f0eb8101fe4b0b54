//! `[[grade.allow_tamper]]`: the static tamper flags a pipeline accepts
//! for some tasks, each with the reason a maintainer wrote. A flag is
//! evidence against a patch only because no honest fix of the task needs
//! the construct; where one does (a task about FFI exports, a crate whose
//! fix adds a build script), the maintainer says so here, and the flag is
//! still listed on the grade with that reason, only not in effect.

use globset::{Glob, GlobMatcher};
use toml::Spanned;

use super::{ConfigError, Origin};
pub(crate) use crate::model::config::{Allowance, TamperRule};

/// One `[[grade.allow_tamper]]` table as written.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AllowTamperConfig {
    /// A task id, or a glob over task ids.
    pub(crate) task: Spanned<String>,
    pub(crate) rule: Spanned<String>,
    /// Why an honest fix of these tasks needs the construct.
    pub(crate) reason: Spanned<String>,
}

/// One allowance, checked.
#[derive(Clone, Debug)]
pub(crate) struct AllowTamper {
    pub(crate) task: GlobMatcher,
    pub(crate) rule: TamperRule,
    pub(crate) reason: String,
}

/// The allowances of task `id`, sorted, one per rule (the first table's
/// reason).
pub(crate) fn allowances(all: &[AllowTamper], id: &str) -> Vec<Allowance> {
    let mut out: Vec<Allowance> = Vec::new();
    for a in all.iter().filter(|a| a.task.is_match(id)) {
        if !out.iter().any(|o| o.rule == a.rule) {
            out.push(Allowance {
                rule: a.rule,
                reason: a.reason.clone(),
            });
        }
    }
    out.sort();
    out
}

pub(super) fn check(
    pipeline: &Origin<'_>,
    tables: &[AllowTamperConfig],
) -> Result<Vec<AllowTamper>, ConfigError> {
    let mut out = Vec::new();
    for t in tables {
        let word = t.rule.get_ref();
        let rule = TamperRule::parse(word).ok_or_else(|| {
            let known: Vec<&str> = TamperRule::ALL.iter().map(|r| r.as_str()).collect();
            let near = crate::words::nearest(word, known.iter().copied(), 1);
            let hint = match near.first() {
                Some(n) => format!("did you mean `{n}`? The rules are: {}", known.join(", ")),
                None => format!("the rules are: {}", known.join(", ")),
            };
            pipeline.error_at(
                t.rule.span(),
                format!("unknown tamper rule `{word}`"),
                "here",
                hint,
            )
        })?;
        let task = Glob::new(t.task.get_ref())
            .map(|g| g.compile_matcher())
            .map_err(|e| {
                pipeline.error_at(
                    t.task.span(),
                    format!("`task = \"{}\"` is not a glob: {e}", t.task.get_ref()),
                    "here",
                    "a task id (`calc-12`) or a glob over ids (`calc-*`)",
                )
            })?;
        if t.task.get_ref().trim().is_empty() {
            return Err(pipeline.error_at(
                t.task.span(),
                "`task` is empty",
                "here",
                "a task id (`calc-12`) or a glob over ids (`calc-*`)",
            ));
        }
        let reason = t.reason.get_ref().trim();
        if reason.is_empty() {
            return Err(pipeline.error_at(
                t.reason.span(),
                format!("allowing `{rule}` needs a reason"),
                "empty",
                "say why an honest fix of these tasks needs the construct; the reason is shown on every grade it spares",
            ));
        }
        out.push(AllowTamper {
            task,
            rule,
            reason: reason.to_owned(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::Pipeline;
    use super::*;

    fn load(toml: &str) -> Result<Pipeline, String> {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pipeline.toml");
        std::fs::write(&path, toml).unwrap();
        Pipeline::load(&path).map_err(|e| format!("{:?}", miette::Report::new(e)))
    }

    #[test]
    fn an_allowance_needs_a_known_rule_and_a_reason() {
        let table = |rule: &str, reason: &str| {
            format!(
                "[[grade.allow_tamper]]\ntask = \"calc-*\"\nrule = \"{rule}\"\nreason = \"{reason}\"\n"
            )
        };
        let p = load(&table("rust-symbol-override", "the fix adds a C export")).unwrap();
        let all = &p.settings.grade.allow_tamper;
        assert_eq!(
            allowances(all, "calc-12"),
            [Allowance {
                rule: TamperRule::RustSymbolOverride,
                reason: "the fix adds a C export".into()
            }]
        );
        assert!(allowances(all, "tally-1").is_empty());
        let e = load(&table("rust-macro-shadow", "x")).unwrap_err();
        assert!(e.contains("unknown tamper rule `rust-macro-shadow`"), "{e}");
        assert!(e.contains("did you mean `rust-macro-shadowing`?"), "{e}");
        let e = load(&table("go-linkname", "  ")).unwrap_err();
        assert!(e.contains("allowing `go-linkname` needs a reason"), "{e}");
        let e = load("[[grade.allow_tamper]]\ntask = \"calc-*\"\nrule = \"go-linkname\"\n")
            .unwrap_err();
        assert!(e.contains("missing field `reason`"), "{e}");
        let e = load(&table("go-linkname", "x").replace("calc-*", "calc-[")).unwrap_err();
        assert!(e.contains("is not a glob"), "{e}");
    }
}
