//! `[[source]]` and `[[topic_split]]`, checked: a source's squash pattern
//! compiled, its `since` a day, its SWE-bench `repo` and `version` filled in;
//! a split's patterns compiled. The command line bounds the sources
//! (`--since`, `--limit`) on these settings, never on the file.
//!
//! What only the machine can say (the repository opens, its branch exists,
//! the candidates file reads) is found when the sources are read; the spans
//! kept here are what those errors point at.

use std::ops::Range;

use toml::Spanned;

use super::file::{SourceConfig, TopicSplit};
use super::{ConfigError, Origin};

/// `owner/name` of the repository at `path`'s `origin` remote, if it has one
/// that names both (the repository's own config only; nothing of the
/// machine's).
fn origin_repo(path: &std::path::Path) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["config", "--local", "--get", "remote.origin.url"])
        .current_dir(path)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .ok()?;
    owner_name(String::from_utf8_lossy(&out.stdout).trim())
}

/// `owner/name` of a hosted remote's URL (`scheme://host/…` or
/// `user@host:…`): its last two path segments, `.git` off. A local path
/// names no owner.
fn owner_name(url: &str) -> Option<String> {
    let hosted = url.contains("://") || (url.contains('@') && url.contains(':'));
    if !hosted {
        return None;
    }
    let url = url.trim_end_matches('/').trim_end_matches(".git");
    let mut parts = url.rsplit(['/', ':']);
    let name = parts.next().filter(|s| !s.is_empty())?;
    let owner = parts
        .next()
        .filter(|s| !s.is_empty() && !s.contains('@') && !s.contains('.'))?;
    Some(format!("{owner}/{name}"))
}

/// Squash merges as GitHub writes them: `Title (#123)`.
const DEFAULT_SQUASH: &str = r"\(#(\d+)\)\s*$";

/// One source, checked.
#[derive(Clone, Debug)]
pub(crate) struct SourceSettings {
    /// Prefix of candidate ids (`<name>-<PR number>`); source errors point here.
    pub(crate) name: Spanned<String>,
    /// The repository, as written (relative to the pipeline file).
    pub(crate) path: Spanned<String>,
    pub(crate) branch: String,
    /// A script run as `<script> <path>` when `path` does not exist yet.
    pub(crate) create: Option<Spanned<String>>,
    /// Recognises squash merges; its first group is the PR number.
    pub(crate) squash: regex::Regex,
    /// A JSONL file of explicit candidates, as written.
    pub(crate) candidates: Option<Spanned<String>>,
    pub(crate) bounds: Bounds,
    /// The `[env.NAME]` this source's tasks run in.
    pub(crate) env: Option<Spanned<String>>,
    /// SWE-bench's `repo` of its tasks as the file gives it; `None`: the
    /// repository's `origin` remote (`owner/name`), else the source's name
    /// ([`SourceSettings::repo_of`]).
    pub(crate) repo: Option<String>,
    /// SWE-bench's `version` of its tasks: `version`, or "0".
    pub(crate) version: String,
}

impl SourceSettings {
    /// SWE-bench's `repo` of the source's tasks: `repo` as the file gives
    /// it, else `owner/name` from the `origin` remote of the repository at
    /// `path` (`https://github.com/owner/name.git`,
    /// `git@github.com:owner/name.git`), else the source's name.
    pub(crate) fn repo_of(&self, path: &std::path::Path) -> String {
        if let Some(repo) = &self.repo {
            return repo.clone();
        }
        origin_repo(path).unwrap_or_else(|| self.name.get_ref().clone())
    }

    /// Where an error about the source's branch points: its name.
    pub(crate) fn branch_span(&self) -> Range<usize> {
        self.name.span()
    }
}

/// Which of a source's candidates are read: merged on or after `since`
/// (unix seconds of a day), at most `limit` of them, newest first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub(crate) since: Option<i64>,
    pub(crate) limit: Option<usize>,
}

impl Bounds {
    /// Whether some candidates may be left out on purpose.
    pub(crate) fn any(&self) -> bool {
        self.since.is_some() || self.limit.is_some()
    }

    /// These bounds with each one the command line gives in its place.
    pub(crate) fn overridden_by(self, cli: Bounds) -> Bounds {
        Bounds {
            since: cli.since.or(self.since),
            limit: cli.limit.or(self.limit),
        }
    }
}

/// One `[[topic_split]]`, checked: its candidate (where an unknown one is
/// pointed at) and its topics in name order, each with a valid pattern.
#[derive(Clone, Debug)]
pub(crate) struct TopicSplitSettings {
    pub(crate) candidate: Spanned<String>,
    /// (topic, pattern over test names).
    pub(crate) topics: Vec<(String, String)>,
}

pub(super) fn sources(
    pipeline: &Origin<'_>,
    written: &[SourceConfig],
) -> Result<Vec<SourceSettings>, ConfigError> {
    written.iter().map(|s| source(pipeline, s)).collect()
}

fn source(pipeline: &Origin<'_>, s: &SourceConfig) -> Result<SourceSettings, ConfigError> {
    let squash = match &s.squash_pattern {
        Some(p) => regex::Regex::new(p.get_ref()).map_err(|e| {
            pipeline.error_at(
                p.span(),
                format!("invalid squash_pattern: {e}"),
                "this pattern",
                "a regex whose first group is the PR number, e.g. '\\(#(\\d+)\\)\\s*$'",
            )
        })?,
        None => regex::Regex::new(DEFAULT_SQUASH).expect("the default squash pattern is valid"),
    };
    let since = match &s.since {
        None => None,
        Some(d) => Some(parse_date(d.get_ref()).ok_or_else(|| {
            pipeline.error_at(
                d.span(),
                "`since` is not a date",
                "here",
                "write it as YYYY-MM-DD",
            )
        })?),
    };
    Ok(SourceSettings {
        name: s.name.clone(),
        path: s.path.clone(),
        branch: s.branch.clone(),
        create: s.create.clone(),
        squash,
        candidates: s.candidates.clone(),
        bounds: Bounds {
            since,
            limit: s.limit,
        },
        env: s.env.clone(),
        repo: s.repo.clone(),
        version: s.version.clone().unwrap_or_else(|| "0".to_owned()),
    })
}

pub(super) fn topic_splits(
    pipeline: &Origin<'_>,
    written: &[TopicSplit],
) -> Result<Vec<TopicSplitSettings>, ConfigError> {
    let mut out = Vec::new();
    for t in written {
        for (name, pat) in t.topics.get_ref() {
            if let Err(e) = regex::Regex::new(pat) {
                return Err(pipeline.error_at(
                    t.topics.span(),
                    format!("topic `{name}`: invalid pattern: {e}"),
                    "in these topics",
                    "patterns are regular expressions over test names",
                ));
            }
        }
        out.push(TopicSplitSettings {
            candidate: t.candidate.clone(),
            topics: t
                .topics
                .get_ref()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        });
    }
    Ok(out)
}

/// Days since 1970-01-01 of a proleptic Gregorian YYYY-MM-DD, in seconds.
pub(crate) fn parse_date(s: &str) -> Option<i64> {
    let mut it = s.split('-');
    let (y, m, d): (i64, i64, i64) = (
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || it.next().is_some() {
        return None;
    }
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some((era * 146097 + doe - 719468) * 86400)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosted_remote_names_owner_and_repository_a_local_path_does_not() {
        for (url, want) in [
            ("https://github.com/acme/widget.git", Some("acme/widget")),
            ("https://github.com/acme/widget", Some("acme/widget")),
            ("git@github.com:acme/widget.git", Some("acme/widget")),
            (
                "ssh://git@gitlab.example.org/group/widget.git",
                Some("group/widget"),
            ),
            ("https://github.com/widget.git", None),
            ("/srv/git/widget", None),
            ("", None),
        ] {
            assert_eq!(owner_name(url).as_deref(), want, "{url}");
        }
    }

    /// Read from the repository's own config, with real git.
    #[test]
    fn the_origin_remote_of_a_repository_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        assert_eq!(origin_repo(dir.path()), None);
        git(&[
            "remote",
            "add",
            "origin",
            "https://github.com/acme/widget.git",
        ]);
        assert_eq!(origin_repo(dir.path()).as_deref(), Some("acme/widget"));
    }

    #[test]
    fn parse_date_matches_known_epochs() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("2026-01-05"), Some(1_767_571_200));
        assert_eq!(parse_date("2026-13-05"), None);
        assert_eq!(parse_date("yesterday"), None);
    }

    #[test]
    fn the_command_line_bounds_replace_the_files_one_by_one() {
        let file = Bounds {
            since: Some(10),
            limit: Some(5),
        };
        let cli = Bounds {
            since: None,
            limit: Some(2),
        };
        assert_eq!(
            file.overridden_by(cli),
            Bounds {
                since: Some(10),
                limit: Some(2)
            }
        );
        assert_eq!(file.overridden_by(Bounds::default()), file);
        assert!(!Bounds::default().any());
        assert!(cli.any());
    }
}
