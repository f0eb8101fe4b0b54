//! The report's labels as names `assay explain` takes. report.html heads its
//! columns with words a reader knows (`pass@1`, `per attempt`), while a
//! number's one name is its path in summary.json
//! (`summary.agents[alpha/model-a].leaderboard.score`). A label maps to the
//! rest of that path under an agent/model, so a reader may type the label
//! alone (every agent's number is listed) or in place of the path's tail
//! (`summary.agents[alpha/model-a].pass@1`).

/// What `explain` was given, once labels are read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Named {
    /// A path in a release file's tree (`summary.…`, `funnel.…`).
    Path(String),
    /// A label alone: `rest` is its path under each agent/model.
    Label { label: String, rest: String },
    /// Anything else: a node name or a key digest.
    Other,
}

/// Reads `text` as a path, a label, a path ending in a label, or neither.
pub(super) fn read(text: &str) -> Named {
    let text = text.trim();
    if text.starts_with("summary") || text.starts_with("funnel") {
        // `summary.agents[K].pass@1`: the label replaces the path's tail.
        if let Some(at) = text.rfind("].") {
            let (head, tail) = (&text[..=at], &text[at + 2..]);
            if let Some(rest) = agent_rest(tail) {
                return Named::Path(format!("{head}{rest}"));
            }
        }
        return Named::Path(text.to_owned());
    }
    match agent_rest(text) {
        Some(rest) => Named::Label {
            label: text.to_owned(),
            rest,
        },
        None => Named::Other,
    }
}

/// The path under an agent/model of the number a report column labels
/// (case and surrounding space ignored); None for a word no column uses.
fn agent_rest(label: &str) -> Option<String> {
    let label = label.trim().to_ascii_lowercase();
    if let Some(k) = label.strip_prefix("pass@")
        && k != "1"
        && !k.is_empty()
        && k.bytes().all(|b| b.is_ascii_digit())
    {
        return Some(format!(".leaderboard.pass_at_k.{k}"));
    }
    let rest = match label.as_str() {
        "pass@1" | "score" => ".leaderboard.score",
        "pass@k" => ".leaderboard.pass_at_k",
        "complete tasks only" => ".leaderboard.score_complete",
        "lost" => ".leaderboard.left_out",
        "coverage" => ".leaderboard.coverage",
        "attempts" => ".leaderboard.attempts",
        "per attempt" | "resolved rate" => ".resolved_rate",
        "cost / attempt" | "cost per session" => ".cost_usd.mean",
        "cost / resolved" => ".cost_usd.per_resolved",
        "cost (usd)" => ".cost_usd.total",
        "n" => ".n",
        "empty patch" => ".empty_patch",
        "mean turns" => ".turns.mean",
        "mean tokens" => ".tokens.mean_total",
        "sessions with turns" => ".turns.sessions",
        "sessions with tokens" => ".tokens.sessions",
        "is_error" => ".run.is_error",
        "permission denials" => ".run.permission_denials.total",
        "mean duration (s)" => ".run.duration_ms.mean",
        verdict => {
            let v = crate::model::records::Verdict::GRADED
                .iter()
                .find(|v| v.as_str() == verdict)?;
            return Some(format!(".verdicts.{}", v.as_str()));
        }
    };
    Some(rest.to_owned())
}

#[cfg(test)]
mod tests {
    use super::{Named, read};

    #[test]
    fn a_report_label_alone_names_its_path_under_each_agent() {
        assert_eq!(
            read("pass@1"),
            Named::Label {
                label: "pass@1".into(),
                rest: ".leaderboard.score".into()
            }
        );
        assert_eq!(
            read(" Per attempt "),
            Named::Label {
                label: "Per attempt".into(),
                rest: ".resolved_rate".into()
            }
        );
        assert_eq!(
            read("pass@3"),
            Named::Label {
                label: "pass@3".into(),
                rest: ".leaderboard.pass_at_k.3".into()
            }
        );
        assert_eq!(
            read("unresolved"),
            Named::Label {
                label: "unresolved".into(),
                rest: ".verdicts.unresolved".into()
            }
        );
    }

    #[test]
    fn a_label_in_place_of_a_paths_tail_is_replaced() {
        assert_eq!(
            read("summary.agents[alpha/model-a].pass@1"),
            Named::Path("summary.agents[alpha/model-a].leaderboard.score".into())
        );
        // A path written out stays as it is.
        assert_eq!(
            read("summary.agents[alpha/model-a].resolved_rate"),
            Named::Path("summary.agents[alpha/model-a].resolved_rate".into())
        );
        assert_eq!(
            read("funnel.candidates"),
            Named::Path("funnel.candidates".into())
        );
    }

    #[test]
    fn node_names_and_digests_are_not_labels() {
        assert_eq!(read("task:calc-1"), Named::Other);
        assert_eq!(read("ab12cd"), Named::Other);
        assert_eq!(read("pass@"), Named::Other);
    }
}
