//! One page of Chromium driven over the pipe: commands with deadlines, the
//! few events the steps wait on, and the page's own script kept out of ours.
//!
//! Whose fault a failure is follows from where it happened: the pipe closing
//! or garbling, or a browser-level command (`Target.*`) not answering within
//! the flow's budget, is the harness's ([`BrowserError`]); a page-level
//! command that errors or does not answer before its step's deadline is the
//! page's, hence the app's ([`PageError`]).
//!
//! Every script runs in an isolated world (`Page.createIsolatedWorld`): the
//! page cannot replace the DOM methods it calls nor see its arguments, so a
//! hidden assertion's expected text is never readable by the app.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::BrowserError;
use crate::launch::Chromium;
use crate::pipe::{Pipe, PipeError};

/// A page-level command failed: the app's side.
#[derive(Debug)]
pub(crate) enum PageError {
    /// No answer before the step's deadline.
    Timeout,
    /// Chromium answered with an error (its message).
    Refused(String),
}

/// Whom a command addresses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Browser,
    Page,
}

/// How long a failed navigation's error page may take to show.
const ERROR_PAGE_WAIT: Duration = Duration::from_secs(2);

/// Load events kept between commands, at most this many.
const MAX_LOADS: usize = 64;

pub(crate) struct Driver {
    pipe: Pipe,
    next_id: u64,
    session: Option<String>,
    /// The page the flow runs in; every other page is closed as it appears.
    target_id: String,
    frame_id: String,
    /// The isolated world's context in the current document, while valid.
    world: Option<i64>,
    /// Loader ids whose document fired `load`, since the last navigation.
    loads: Vec<String>,
    crashed: bool,
    /// The flow's hard deadline.
    deadline: Instant,
}

impl Driver {
    /// Open a page of its own in the browser just launched and attach to it.
    /// Chromium that closes the pipe before answering failed to launch.
    pub(crate) fn attach(
        pipe: Pipe,
        chromium: &mut Chromium,
        deadline: Instant,
    ) -> Result<Self, BrowserError> {
        let mut driver = Self {
            pipe,
            next_id: 0,
            session: None,
            target_id: String::new(),
            frame_id: String::new(),
            world: None,
            loads: Vec::new(),
            crashed: false,
            deadline,
        };
        let target = match driver.browser_call("Target.createTarget", json!({"url": "about:blank"}))
        {
            // Whatever broke before the first answer broke the launch.
            Err(BrowserError::Protocol(_)) => {
                return Err(BrowserError::Launch(format!(
                    "chromium closed its DevTools pipe before answering: {}",
                    chromium.failure_report()
                )));
            }
            other => other?,
        };
        driver.target_id = string_field(&target, "targetId")?;
        driver.browser_call("Target.setDiscoverTargets", json!({"discover": true}))?;
        let attached = driver.browser_call(
            "Target.attachToTarget",
            json!({"targetId": driver.target_id, "flatten": true}),
        )?;
        driver.session = Some(string_field(&attached, "sessionId")?);
        for (method, params) in [
            ("Inspector.enable", json!({})),
            ("Page.enable", json!({})),
            ("Page.setLifecycleEventsEnabled", json!({"enabled": true})),
        ] {
            driver.setup_call(method, params)?;
        }
        let tree = driver.setup_call("Page.getFrameTree", json!({}))?;
        driver.frame_id = tree["frameTree"]["frame"]["id"]
            .as_str()
            .ok_or_else(|| BrowserError::Protocol("Page.getFrameTree named no frame".into()))?
            .to_owned();
        Ok(driver)
    }

    /// A command to the browser, answered within the flow's budget.
    fn browser_call(&mut self, method: &str, params: Value) -> Result<Value, BrowserError> {
        let deadline = self.deadline;
        self.call(Scope::Browser, method, params, deadline)?
            .map_err(|e| self.harness_error(method, e))
    }

    /// A page command the driver's own setup needs: a refusal or silence is
    /// the harness's, as the page holds nothing of the app yet.
    fn setup_call(&mut self, method: &str, params: Value) -> Result<Value, BrowserError> {
        let deadline = self.deadline;
        self.call(Scope::Page, method, params, deadline)?
            .map_err(|e| self.harness_error(method, e))
    }

    fn harness_error(&self, method: &str, e: PageError) -> BrowserError {
        match e {
            PageError::Timeout => BrowserError::Budget(format!(
                "{method} was not answered within the flow's budget"
            )),
            PageError::Refused(why) => BrowserError::Protocol(format!("{method}: {why}")),
        }
    }

    /// A command to the page, answered by `deadline` (the step's).
    pub(crate) fn page_call(
        &mut self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Result<Value, PageError>, BrowserError> {
        self.call(Scope::Page, method, params, deadline)
    }

    /// Send a command and read until its reply, handling events meanwhile.
    fn call(
        &mut self,
        scope: Scope,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Result<Value, PageError>, BrowserError> {
        let id = self.send(scope, method, params)?;
        loop {
            let message = match self.pipe.recv(deadline) {
                Ok(message) => message,
                Err(PipeError::Timeout) => return Ok(Err(PageError::Timeout)),
                Err(e) => return Err(pipe_error(e)),
            };
            if message["id"].as_u64() == Some(id) {
                if let Some(error) = message.get("error") {
                    let text = error["message"].as_str().unwrap_or("an error");
                    return Ok(Err(PageError::Refused(text.chars().take(300).collect())));
                }
                return Ok(Ok(message["result"].clone()));
            }
            self.event(&message)?;
        }
    }

    fn send(&mut self, scope: Scope, method: &str, params: Value) -> Result<u64, BrowserError> {
        self.next_id += 1;
        let mut message = json!({"id": self.next_id, "method": method, "params": params});
        if scope == Scope::Page
            && let Some(session) = &self.session
        {
            message["sessionId"] = json!(session);
        }
        match self.pipe.send(&message, self.deadline) {
            Ok(()) => Ok(self.next_id),
            Err(PipeError::Timeout) => Err(BrowserError::Budget(format!(
                "chromium did not read {method} within the flow's budget"
            ))),
            Err(e) => Err(pipe_error(e)),
        }
    }

    /// Keep what the steps wait on; answer dialogs so the page never blocks
    /// on one; close every other page (a popup, the launch's blank tab) as
    /// it appears; drop the rest (replies to commands that timed out
    /// included).
    fn event(&mut self, message: &Value) -> Result<(), BrowserError> {
        let info = &message["params"]["targetInfo"];
        if message["method"] == "Target.targetCreated"
            && message.get("sessionId").is_none()
            && info["type"] == "page"
            && info["targetId"].as_str() != Some(&self.target_id)
        {
            self.send(
                Scope::Browser,
                "Target.closeTarget",
                json!({"targetId": info["targetId"]}),
            )?;
            return Ok(());
        }
        if message["sessionId"].as_str() != self.session.as_deref() {
            return Ok(());
        }
        let params = &message["params"];
        match message["method"].as_str() {
            Some("Page.lifecycleEvent")
                if params["name"] == "load"
                    && params["frameId"].as_str() == Some(&self.frame_id) =>
            {
                if self.loads.len() == MAX_LOADS {
                    self.loads.remove(0);
                }
                self.loads
                    .push(params["loaderId"].as_str().unwrap_or_default().to_owned());
            }
            Some("Page.javascriptDialogOpening") => {
                self.send(
                    Scope::Page,
                    "Page.handleJavaScriptDialog",
                    json!({"accept": true}),
                )?;
            }
            Some("Inspector.targetCrashed") => self.crashed = true,
            _ => {}
        }
        Ok(())
    }

    /// Navigate the page and wait for the new document's `load`.
    pub(crate) fn navigate(
        &mut self,
        url: &str,
        deadline: Instant,
    ) -> Result<Result<(), String>, BrowserError> {
        self.loads.clear();
        self.world = None;
        let reply = match self.page_call("Page.navigate", json!({"url": url}), deadline)? {
            Ok(reply) => reply,
            Err(e) => return Ok(Err(self.page_problem(&e, "the page did not load"))),
        };
        let failed = reply["errorText"]
            .as_str()
            .filter(|e| !e.is_empty())
            .map(str::to_owned);
        // A same-document navigation (a new #fragment) has no loader.
        let Some(loader) = reply["loaderId"].as_str().map(str::to_owned) else {
            return Ok(failed.map_or(Ok(()), |e| Err(format!("could not open {url}: {e}"))));
        };
        if let Some(error) = failed {
            // Chromium shows its error page under the same loader: waited
            // for briefly, so the step's screenshot shows it. Shown or not,
            // the step failed.
            let shown = (Instant::now() + ERROR_PAGE_WAIT).min(deadline);
            let _ = self.wait_load(&loader, shown)?;
            return Ok(Err(format!("could not open {url}: {error}")));
        }
        Ok(self
            .wait_load(&loader, deadline)?
            .map_err(|e| self.page_problem(&e, "the page did not load")))
    }

    /// Read events until `loader`'s document fired `load`, or `deadline`.
    fn wait_load(
        &mut self,
        loader: &str,
        deadline: Instant,
    ) -> Result<Result<(), PageError>, BrowserError> {
        while !self.loads.iter().any(|l| l == loader) {
            if self.crashed {
                return Ok(Err(PageError::Refused("the page crashed".into())));
            }
            match self.pipe.recv(deadline) {
                Ok(message) => self.event(&message)?,
                Err(PipeError::Timeout) => return Ok(Err(PageError::Timeout)),
                Err(e) => return Err(pipe_error(e)),
            }
        }
        Ok(Ok(()))
    }

    /// Evaluate `expression` in the driver's isolated world of the current
    /// document; its value, or why the page gave none.
    pub(crate) fn evaluate(
        &mut self,
        expression: &str,
        deadline: Instant,
    ) -> Result<Result<Value, String>, BrowserError> {
        // A cached world dies with its document: made again once.
        for _ in 0..2 {
            let world = match self.world {
                Some(world) => world,
                None => {
                    let made = self.page_call(
                        "Page.createIsolatedWorld",
                        json!({"frameId": self.frame_id, "worldName": "assay"}),
                        deadline,
                    )?;
                    match made {
                        Ok(made) => {
                            let Some(world) = made["executionContextId"].as_i64() else {
                                return Err(BrowserError::Protocol(
                                    "Page.createIsolatedWorld gave no context".into(),
                                ));
                            };
                            self.world = Some(world);
                            world
                        }
                        Err(e) => return Ok(Err(self.page_problem(&e, "the page did not answer"))),
                    }
                }
            };
            let reply = self.page_call(
                "Runtime.evaluate",
                json!({"expression": expression, "contextId": world, "returnByValue": true}),
                deadline,
            )?;
            match reply {
                Ok(reply) => {
                    if let Some(details) = reply.get("exceptionDetails") {
                        let text = details["exception"]["description"]
                            .as_str()
                            .or(details["text"].as_str())
                            .unwrap_or("an exception");
                        return Ok(Err(format!(
                            "the step's script threw: {}",
                            text.chars().take(300).collect::<String>()
                        )));
                    }
                    return Ok(Ok(reply["result"]["value"].clone()));
                }
                Err(PageError::Refused(why)) if why.contains("context") && self.world.is_some() => {
                    self.world = None
                }
                Err(e) => return Ok(Err(self.page_problem(&e, "the page did not answer"))),
            }
        }
        Ok(Err(
            "the page's document kept changing under the step".into()
        ))
    }

    /// A PNG of the viewport, or why there is none by `deadline`.
    pub(crate) fn screenshot(
        &mut self,
        deadline: Instant,
    ) -> Result<Result<Vec<u8>, String>, BrowserError> {
        use base64::Engine as _;
        let reply = self.page_call(
            "Page.captureScreenshot",
            json!({"format": "png", "optimizeForSpeed": true}),
            deadline,
        )?;
        Ok(match reply {
            Ok(reply) => reply["data"]
                .as_str()
                .and_then(|data| base64::engine::general_purpose::STANDARD.decode(data).ok())
                .ok_or_else(|| "the screenshot was not base64".to_owned()),
            Err(PageError::Timeout) if !self.crashed => {
                Err("the page painted nothing in time".into())
            }
            Err(e) => Err(self.page_problem(&e, "the page painted nothing")),
        })
    }

    pub(crate) fn mouse(
        &mut self,
        kind: &str,
        x: f64,
        y: f64,
        deadline: Instant,
    ) -> Result<Result<(), String>, BrowserError> {
        let mut params = json!({"type": kind, "x": x, "y": y});
        if kind != "mouseMoved" {
            params["button"] = json!("left");
            params["buttons"] = json!(if kind == "mousePressed" { 1 } else { 0 });
            params["clickCount"] = json!(1);
        }
        Ok(self
            .page_call("Input.dispatchMouseEvent", params, deadline)?
            .map(drop)
            .map_err(|e| self.page_problem(&e, "the page did not take the click")))
    }

    pub(crate) fn insert_text(
        &mut self,
        text: &str,
        deadline: Instant,
    ) -> Result<Result<(), String>, BrowserError> {
        Ok(self
            .page_call("Input.insertText", json!({"text": text}), deadline)?
            .map(drop)
            .map_err(|e| self.page_problem(&e, "the page did not take the text")))
    }

    /// Wait for events until `until` (a pause between polls); only the pipe
    /// closing ends it early.
    pub(crate) fn pause(&mut self, until: Instant) -> Result<(), BrowserError> {
        loop {
            match self.pipe.recv(until) {
                Ok(message) => self.event(&message)?,
                Err(PipeError::Timeout) => return Ok(()),
                Err(e) => return Err(pipe_error(e)),
            }
        }
    }

    fn page_problem(&self, e: &PageError, silent: &str) -> String {
        if self.crashed {
            return "the page crashed".into();
        }
        match e {
            PageError::Timeout => format!("{silent} before the step's deadline"),
            PageError::Refused(why) => format!("chromium refused the step: {why}"),
        }
    }
}

fn string_field(reply: &Value, field: &str) -> Result<String, BrowserError> {
    reply[field]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| BrowserError::Protocol(format!("a reply lacked {field}")))
}

fn pipe_error(e: PipeError) -> BrowserError {
    match e {
        PipeError::Closed => {
            BrowserError::Protocol("chromium closed the pipe (it exited or died)".into())
        }
        other => BrowserError::Protocol(other.to_string()),
    }
}
