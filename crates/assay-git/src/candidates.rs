//! Candidates: merged pull requests found on a branch's first-parent line.
//!
//! Only the first-parent chain is walked, so the commits of a merged branch
//! (including merges inside it) are never candidates themselves: one merge on
//! the mainline is one pull request. Non-merge commits count only when their
//! subject matches the squash pattern, whose first capture group is the PR
//! number. The walk is newest first and stops at `limit`.

use std::sync::LazyLock;

use regex::Regex;

use crate::error::GitError;
use crate::source::Source;

/// Which candidates to collect.
#[derive(Debug, Clone)]
pub struct CandidateQuery {
    /// Branch (or any revision) whose first-parent history is walked.
    pub branch: String,
    /// Prefix of candidate ids: `{prefix}-{n}`.
    pub id_prefix: String,
    /// Subject pattern of squash-merged PRs; capture group 1 = PR number.
    pub squash_pattern: Option<Regex>,
    /// Only commits whose committer time is `>=` this (unix seconds).
    pub since: Option<i64>,
    /// At most this many candidates (the newest).
    pub limit: Option<usize>,
}

/// How a candidate was merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CandidateKind {
    Merge,
    Squash,
}

/// One merged pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub id: String,
    /// Full hex id of the commit the PR was merged onto.
    pub base: String,
    /// Full hex id of the merge (or squash) commit.
    pub head: String,
    pub title: String,
    pub body: String,
    /// Committer time of `head`, unix seconds.
    pub merged_at: i64,
    pub kind: CandidateKind,
}

static GITHUB_MERGE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^Merge pull request #(\d+)\b").ok());
static ANY_NUMBER: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"#(\d+)\b").ok());

fn capture_number(re: Option<&Regex>, text: &str) -> Option<String> {
    re?.captures(text)?.get(1).map(|m| m.as_str().to_string())
}

/// Subject (first paragraph, lines joined) and body (the rest), trimmed.
fn split_message(message: &str) -> (String, String) {
    let message = message.trim_start_matches(['\n', '\r']);
    let (head, rest) = match message.find("\n\n") {
        Some(i) => (&message[..i], &message[i + 2..]),
        None => (message, ""),
    };
    let subject = head.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    (subject.trim().to_string(), rest.trim().to_string())
}

/// Title and body of a merge: a GitHub merge carries the PR title as the
/// first non-empty line after the subject.
fn merge_title_body(subject: &str, body: &str, github: bool) -> (String, String) {
    if github && !body.is_empty() {
        let body = body.trim_start();
        let (title, rest) = match body.find('\n') {
            Some(i) => (&body[..i], &body[i + 1..]),
            None => (body, ""),
        };
        (title.trim().to_string(), rest.trim().to_string())
    } else {
        (subject.to_string(), body.to_string())
    }
}

pub(crate) fn candidates(source: &Source, q: &CandidateQuery) -> Result<Vec<Candidate>, GitError> {
    let repo = source.repo();
    let mut out = Vec::new();
    let mut next = Some(source.commit(&q.branch)?.id);
    while let Some(id) = next {
        if q.limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        let commit = repo
            .find_commit(id)
            .map_err(|e| GitError::object(id, "commit on first-parent line", e))?;
        let parents: Vec<gix::ObjectId> = commit.parent_ids().map(|p| p.detach()).collect();
        next = parents.first().copied();
        let time = commit
            .time()
            .map_err(|e| GitError::object(id, "commit time", e))?
            .seconds;
        if q.since.is_some_and(|since| time < since) {
            continue;
        }
        let message = commit
            .message_raw()
            .map_err(|e| GitError::object(id, "commit message", e))?
            .to_string();
        let (subject, body) = split_message(&message);
        let hex = id.to_string();
        let short = &hex[..10.min(hex.len())];
        let candidate = if parents.len() >= 2 {
            let github = capture_number(GITHUB_MERGE.as_ref(), &subject);
            let number = github
                .clone()
                .or_else(|| capture_number(ANY_NUMBER.as_ref(), &subject));
            let (title, body) = merge_title_body(&subject, &body, github.is_some());
            Candidate {
                id: format!("{}-{}", q.id_prefix, number.as_deref().unwrap_or(short)),
                base: parents[0].to_string(),
                head: hex.clone(),
                title,
                body,
                merged_at: time,
                kind: CandidateKind::Merge,
            }
        } else {
            let Some(pattern) = &q.squash_pattern else {
                continue;
            };
            let Some(captures) = pattern.captures(&subject) else {
                continue;
            };
            let Some(parent) = parents.first() else {
                continue;
            };
            let number = captures.get(1).map_or(short, |m| m.as_str());
            Candidate {
                id: format!("{}-{}", q.id_prefix, number),
                base: parent.to_string(),
                head: hex.clone(),
                title: subject,
                body,
                merged_at: time,
                kind: CandidateKind::Squash,
            }
        };
        out.push(candidate);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_is_first_paragraph() {
        let (s, b) = split_message("Fix a\nthing\n\nBody line\n\nmore\n");
        assert_eq!(s, "Fix a thing");
        assert_eq!(b, "Body line\n\nmore");
    }

    #[test]
    fn github_merge_title() {
        let (s, b) = split_message("Merge pull request #12 from x/y\n\nAdd feature\n\nLong body\n");
        let (t, body) = merge_title_body(&s, &b, true);
        assert_eq!(t, "Add feature");
        assert_eq!(body, "Long body");
    }
}
