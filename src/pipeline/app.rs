//! `[[app]]`, checked: task ids unique, a port that is not 0, probe names
//! unique in their task, paths from `/`, methods HTTP tokens, every
//! `body_regex` a valid regular expression (with a stand-in `{nonce}`).

use super::file::{AppConfig, ProbeConfig};
use super::{ConfigError, Origin};
use crate::model::rules::app::{AppChecks, Expect, Probe, Start};

/// One app task, checked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AppSettings {
    pub(crate) name: String,
    /// Where the table's `name` is, for diagnostics raised while laying out.
    pub(crate) span: std::ops::Range<usize>,
    pub(crate) base: String,
    pub(crate) reference: String,
    pub(crate) statement: Option<std::path::PathBuf>,
    pub(crate) checks: AppChecks,
}

/// Every `[[app]]`, checked.
pub(crate) fn apps(
    pipeline: &Origin<'_>,
    written: &[AppConfig],
) -> Result<Vec<AppSettings>, ConfigError> {
    let mut out: Vec<AppSettings> = Vec::new();
    for a in written {
        let name = a.name.get_ref().trim();
        if name.is_empty() || name.contains('/') || name.contains(':') {
            return Err(pipeline.error_at(
                a.name.span(),
                "an app task's name is empty or holds `/` or `:`",
                "this name",
                "give a short id such as \"webapp-greet\": it names the task's nodes and its sessions' task id",
            ));
        }
        if out.iter().any(|o| o.name == name) {
            return Err(pipeline.error_at(
                a.name.span(),
                format!("two [[app]] tables are named `{name}`"),
                "the second",
                "give each app task its own name",
            ));
        }
        if *a.start.port.get_ref() == 0 {
            return Err(pipeline.error_at(
                a.start.port.span(),
                "`port` cannot be 0",
                "here",
                "give the port the start command serves on (e.g. 8000)",
            ));
        }
        let mut probes: Vec<Probe> = Vec::new();
        for p in &a.probe {
            let probe = probe(pipeline, p)?;
            if probes.iter().any(|q| q.name == probe.name) {
                return Err(pipeline.error_at(
                    p.name.span(),
                    format!("two probes of `{name}` are named `{}`", probe.name),
                    "the second",
                    "give each probe its own name: readings and reports name it",
                ));
            }
            probes.push(probe);
        }
        out.push(AppSettings {
            name: name.to_owned(),
            span: a.name.span(),
            base: a.base.clone(),
            reference: a.reference.clone(),
            statement: a.statement.as_deref().map(|s| pipeline.resolve(s)),
            checks: AppChecks {
                build: a.build.clone(),
                admission: a.admission.clone(),
                start: Start {
                    command: a.start.command.clone(),
                    port: *a.start.port.get_ref(),
                    ready_s: a.start.ready_s.unwrap_or(30).max(1),
                    probe_s: a.start.probe_s.unwrap_or(10).max(1),
                    services: a.start.services.clone(),
                },
                probes,
                flows: a.flow.clone(),
                flow_s: a.flow_s.unwrap_or(60).max(1),
            },
        });
    }
    Ok(out)
}

fn probe(pipeline: &Origin<'_>, p: &ProbeConfig) -> Result<Probe, ConfigError> {
    if !p.path.get_ref().starts_with('/') {
        return Err(pipeline.error_at(
            p.path.span(),
            "a probe's path does not start with `/`",
            "this path",
            "write the request target from the root, e.g. \"/greet?name={nonce}\"",
        ));
    }
    let method = match &p.method {
        None => "GET".to_owned(),
        Some(m) => {
            let word = m.get_ref();
            if word.is_empty() || !word.bytes().all(|b| b.is_ascii_uppercase()) {
                return Err(pipeline.error_at(
                    m.span(),
                    format!("`{word}` is not an HTTP method"),
                    "here",
                    "use an upper-case method such as \"GET\" or \"POST\"",
                ));
            }
            word.clone()
        }
    };
    if let Some(re) = &p.body_regex
        && let Err(e) = regex::Regex::new(&re.get_ref().replace("{nonce}", "n0nce"))
    {
        return Err(pipeline.error_at(
            re.span(),
            format!("`body_regex` is not a regular expression: {e}"),
            "this pattern",
            "write a Rust regex (https://docs.rs/regex); `{nonce}` stands for the run's nonce, quoted",
        ));
    }
    Ok(Probe {
        name: p.name.get_ref().clone(),
        method,
        path: p.path.get_ref().clone(),
        headers: p.headers.clone(),
        body: p.body.clone(),
        expect: Expect {
            status: p.status.as_ref().map_or(200, |s| *s.get_ref()),
            headers: p.expect_headers.clone(),
            body_contains: p.body_contains.clone(),
            body_regex: p.body_regex.as_ref().map(|r| r.get_ref().clone()),
            json: p.json.clone(),
        },
    })
}

#[cfg(test)]
mod tests {
    use crate::pipeline::Pipeline;

    const GREET: &str = r##"
[[app]]
name = "webapp-greet"
base = "base"
reference = "greet"
build = "python3 -m py_compile app.py"
admission = { required = ["app.py"], max_tree_bytes = 1048576 }
start = { command = "python3 app.py", port = 8000, ready_s = 10 }

[[app.probe]]
name = "greet"
path = "/greet?name={nonce}"
body_contains = "Hello, {nonce}!"

[[app.probe]]
name = "health"
path = "/health"
json = { "/ok" = true }

[[app.flow]]
name = "count once"
steps = [{ open = "/counter" }, { click = "#inc" }, { assert_text = { selector = "#count", contains = "Count: 1" } }]
"##;

    fn load(text: &str) -> Result<Pipeline, String> {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pipeline.toml");
        std::fs::write(&path, text).unwrap();
        Pipeline::load(&path).map_err(|e| format!("{:?}", miette::Report::new(e)))
    }

    #[test]
    fn an_app_table_becomes_its_checks() {
        let p = load(GREET).unwrap();
        let app = &p.settings.apps[0];
        assert_eq!(
            (app.name.as_str(), app.base.as_str()),
            ("webapp-greet", "base")
        );
        let c = &app.checks;
        assert_eq!(
            (c.start.port, c.start.ready_s, c.start.probe_s),
            (8000, 10, 10)
        );
        assert!(c.admission.no_network_start);
        assert_eq!(c.probes[0].method, "GET");
        assert_eq!(c.probes[0].expect.status, 200);
        assert_eq!(
            c.probes[1].expect.json["/ok"],
            serde_json::Value::Bool(true)
        );
        assert_eq!(c.flows[0].steps.len(), 3);
    }

    #[test]
    fn a_bad_probe_is_pointed_at_with_a_hint() {
        let e = load(&GREET.replace("\"/health\"", "\"health\"")).unwrap_err();
        assert!(
            e.contains("does not start with `/`") && e.contains("this path"),
            "{e}"
        );
        let e = load(&GREET.replace(
            "body_contains = \"Hello, {nonce}!\"",
            "body_regex = \"Hello, ({nonce}\"",
        ))
        .unwrap_err();
        assert!(
            e.contains("not a regular expression") && e.contains("this pattern"),
            "{e}"
        );
        let e = load(&GREET.replace("name = \"health\"", "name = \"greet\"")).unwrap_err();
        assert!(
            e.contains("two probes of `webapp-greet` are named `greet`"),
            "{e}"
        );
        let e = load(&GREET.replace("port = 8000", "port = 0")).unwrap_err();
        assert!(e.contains("`port` cannot be 0"), "{e}");
        let e = load(&GREET.replace("max_tree_bytes", "max_bytes")).unwrap_err();
        assert!(e.contains("max_bytes"), "{e}");
    }
}
