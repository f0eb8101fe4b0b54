//! Agents assay runs itself (`[[agent]]`, docs/agents.md): the pieces of an
//! attempt besides its node (`nodes/attempt.rs`) — the workspace it works
//! in and the patch read back from it ([`workspace`]), the prompt, and the
//! egress proxy that is its only way out ([`egress`]).
//!
//! The agent's patch is hostile code and so is the agent: it runs under the
//! same sandbox as a graded run (bubblewrap, no host processes, limits, its
//! own uid), sees only the base commit (no history, no remote, no gold or
//! test patch, no cache), and reaches nothing but the configured endpoint
//! through the proxy, which holds the key.

pub(crate) mod egress;
pub(crate) mod relay;
pub(crate) mod workspace;

/// Where an agent's own tools (`[[agent]] setup`) are set up and seen.
pub(crate) const AGENT_AT: &str = "/assay/agent";
/// Where the prompt and the agent's command file are, read-only.
pub(crate) const IN: &str = "/assay/in";
/// Where the agent writes its transcript (`{transcript}`).
pub(crate) const OUT: &str = "/assay/out";
/// assay itself, the sandbox's first process (`assay forward`).
pub(crate) const BIN: &str = "/assay/bin/assay";
/// The proxy's socket, bound in from the host.
pub(crate) const SOCKET: &str = "/assay/net/proxy.sock";
/// The loopback port the agent reaches the proxy on (`{base_url}`).
pub(crate) const PORT: u16 = 8417;
/// What the agent holds in the key's variable: never a key.
pub(crate) const PLACEHOLDER: &str = "assay-proxy-holds-the-key";
/// A transcript larger than this is not read.
pub(crate) const TRANSCRIPT_CAP: u64 = 64 << 20;

/// The prompt's fixed preamble (docs/agents.md); part of an attempt's key.
pub(crate) const PREAMBLE: &str = "\
You are working in a git repository (the current directory), checked out at the commit tagged `base`.
Resolve the issue below by changing the code. When you finish, the diff of the working tree against
`base` is collected as your answer (commits you make are included; untracked files too, unless ignored).
Do not change what the existing tests expect.

<issue>
";

/// The prompt of a task: the preamble, then its statement (which on the
/// spec track carries the interface spec).
pub(crate) fn prompt(statement: &str) -> String {
    format!("{PREAMBLE}{}\n</issue>\n", statement.trim_end())
}

/// The session id of an agent's attempt: `agent/LABEL/TASK[__spec]/N`.
pub(crate) fn session_id(label: &str, instance_id: &str, track: &str, index: u32) -> String {
    let task = if track == "basic" {
        instance_id.to_owned()
    } else {
        format!("{instance_id}__{track}")
    };
    format!("agent/{label}/{task}/{index}")
}

/// `template` with each `{name}` of `values` filled in.
pub(crate) fn fill(template: &str, values: &[(&str, String)]) -> String {
    let mut out = template.to_owned();
    for (name, value) in values {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_is_the_preamble_and_the_statement() {
        let p = prompt("Division by zero crashes.\n\n");
        assert!(p.starts_with(PREAMBLE));
        assert!(p.ends_with("Division by zero crashes.\n</issue>\n"));
        assert_eq!(
            session_id("mini", "calc-2", "basic", 0),
            "agent/mini/calc-2/0"
        );
        assert_eq!(
            session_id("mini", "calc-2", "spec", 1),
            "agent/mini/calc-2__spec/1"
        );
        assert_eq!(
            fill("{a} {b} {a} {c}", &[("a", "1".into()), ("b", "2".into())]),
            "1 2 1 {c}"
        );
    }
}
