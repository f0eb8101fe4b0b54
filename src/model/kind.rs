//! The kinds of node assay lays out, as one enum. The engine stays generic:
//! it keys, stores and reports kinds as plain strings (`NodeSpec::kind`,
//! index rows, manifests). Inside assay a kind that decides something — which
//! nodes' logs `--no-logs` leaves out, which nodes pin staged trees, whose
//! verdict a re-execution compares — is a [`NodeKind`], and each kind's
//! [`Kind::NAME`](super::node::Kind::NAME) is its word here
//! (`const NAME: &str = NodeKind::Grade.as_str()`), so the word of a kind is
//! written once. The words are part of every node key: never
//! change one.

use crate::words::words;

words! {
    /// A node kind, by the word the engine stores.
    pub(crate) enum NodeKind {
        /// A `[[step]]`: a generic command.
        Step = "step",
        Triage = "triage",
        Env = "env",
        Tree = "tree",
        Run = "run",
        Screen = "screen",
        Task = "task",
        Session = "session",
        /// An agent run by assay on a task: a session it made.
        Attempt = "attempt",
        Stage = "stage",
        Grade = "grade",
        Metrics = "metrics",
        Judge = "judge",
        Release = "release",
        /// A Harbor task folder of a `[[harbor_dataset]]`, screened.
        HarborTask = "harbor_task",
        /// A graded run's checks and reruns, shared by the arms of equal trees.
        Recheck = "recheck",
        /// The reading of a candidate's gold tree that certifies its canaries.
        Certify = "certify",
        /// A `[[metric]]` measured on a graded or a gold tree.
        Quality = "quality",
        /// A session on a Harbor task, graded by the task's own verifier.
        HarborGrade = "harbor_grade",
        /// An app task's tree composed, admitted and built (the artifacts,
        /// admission and build layers).
        AppBuild = "app_build",
        /// A built app started until it listens (the deployment layer).
        AppDeploy = "app_deploy",
        /// A built app deployed and probed over HTTP (the probes layer).
        AppProbe = "app_probe",
        /// A built app deployed and used in a browser (the browser layer).
        AppBrowse = "app_browse",
        /// An app task's controls: the reference and base readings.
        AppCertify = "app_certify",
        /// A session's layers on an app task, graded.
        AppGrade = "app_grade",
        /// A Deep-SWE-shaped Harbor task's base tree and patches, as a
        /// triage record.
        DeepSweTriage = "swe_triage",
        /// A Harbor task's environment, its screened image: a Deep-SWE-shaped
        /// task's, and a reward-only task's for the agents' attempts.
        HarborImageEnv = "swe_env",
        /// A SWE-bench-family instance: its image and what its repository holds.
        Instance = "instance",
        /// An instance's base tree, patches and own lists, as a triage record.
        InstanceTriage = "instance_triage",
        /// An instance's environment: its image with its history removed.
        InstanceEnv = "instance_env",
    }
}

impl NodeKind {
    /// Kinds whose outputs name a staged tree (kept in `cache/git`).
    pub(crate) fn stages_a_tree(self) -> bool {
        matches!(self, NodeKind::Tree | NodeKind::Stage)
    }
}

/// A stored kind (a manifest's, an index row's) compared with a kind.
impl PartialEq<NodeKind> for &str {
    fn eq(&self, kind: &NodeKind) -> bool {
        *self == kind.as_str()
    }
}

impl PartialEq<NodeKind> for String {
    fn eq(&self, kind: &NodeKind) -> bool {
        self.as_str() == kind.as_str()
    }
}

/// `--reread KIND`: a kind of assay's, or an error listing them.
pub(crate) fn parse_arg(word: &str) -> Result<NodeKind, String> {
    NodeKind::parse(word).ok_or_else(|| {
        let known: Vec<&str> = NodeKind::ALL.iter().map(|k| k.as_str()).collect();
        format!("no node kind `{word}` (the kinds: {})", known.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_are_the_stored_kinds() {
        // Part of every node key and of every manifest: a change here
        // changes every key of that kind.
        let words: Vec<&str> = NodeKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            words,
            [
                "step",
                "triage",
                "env",
                "tree",
                "run",
                "screen",
                "task",
                "session",
                "attempt",
                "stage",
                "grade",
                "metrics",
                "judge",
                "release",
                "harbor_task",
                "recheck",
                "certify",
                "quality",
                "harbor_grade",
                "app_build",
                "app_deploy",
                "app_probe",
                "app_browse",
                "app_certify",
                "app_grade",
                "swe_triage",
                "swe_env",
                "instance",
                "instance_triage",
                "instance_env"
            ]
        );
        assert_eq!(
            serde_json::to_string(&NodeKind::Grade).unwrap(),
            "\"grade\""
        );
    }

    #[test]
    fn stored_kinds_compare_with_kinds() {
        assert!("env" == NodeKind::Env);
        let stored = String::from("grade");
        assert!(stored == NodeKind::Grade);
        assert!(stored != NodeKind::Run);
        assert!(NodeKind::parse("count").is_none());
    }

    #[test]
    fn an_unknown_reread_kind_lists_the_kinds() {
        assert_eq!(parse_arg("run"), Ok(NodeKind::Run));
        let e = parse_arg("runs").unwrap_err();
        assert!(
            e.contains("no node kind `runs`") && e.contains("judge"),
            "{e}"
        );
    }
}
