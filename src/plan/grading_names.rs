//! The task a session names: its id, a task node's key of the last build,
//! a spec twin's SWE-bench instance id or an `[[instances]]` row's own
//! instance id; and, for a task this pipeline does not have, why the
//! session is refused, pointed to the nearest tasks the last build released.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use assay_engine::{NodeSpec, Store};

use super::grading_target::{GradeLayout, failed_session_node};
use crate::model::names;
use crate::model::records::TaskStatus;
use crate::nodes::adapter::NodeKind;
use crate::sessions::Session;

/// The task (id, track) a session names: its id, or a task node's key
/// of the last build, or a spec twin's SWE-bench instance id, or an
/// `[[instances]]` row's own instance id. Err (why in short, in full): an
/// instance id more than one `[[instances]]` file holds.
pub(super) fn named_task(
    g: &GradeLayout<'_>,
    previous_tasks: &BTreeMap<String, String>,
    s: &Session<Vec<u8>, Option<String>>,
) -> Result<(String, String), (String, String)> {
    let mut track = s.track.clone().unwrap_or_else(|| "basic".into());
    let mut task_id = previous_tasks
        .get(&s.task)
        .cloned()
        .unwrap_or_else(|| s.task.clone());
    // A SWE-bench instance id of a spec twin (`calc-1__spec`) names the
    // task and its track; an explicit other track keeps the id as it is.
    if let Some((task, twin)) = crate::run::swebench::split_instance_id(&task_id)
        && s.track.as_deref().is_none_or(|t| t == twin)
    {
        (task_id, track) = (task.to_owned(), twin.to_owned());
    }
    // A SWE-bench prediction names an instance task by the instance's
    // own id; more than one `[[instances]]` file holding it fails the
    // session alone.
    if !g.task_nodes.contains_key(&(task_id.clone(), track.clone())) {
        match g.instance_tasks.get(&task_id).map(Vec::as_slice) {
            Some([task]) => task_id = task.clone(),
            Some(tasks @ [_, _, ..]) => {
                let why = format!(
                    "`{task_id}` is the instance id of {} [[instances]] tasks: {}; name one of them as the task",
                    tasks.len(),
                    quoted(tasks.iter())
                );
                return Err((format!("ambiguous instance id `{task_id}`"), why));
            }
            _ => {}
        }
    }
    Ok((task_id, track))
}

/// `a`, `b`: each name in backquotes.
fn quoted<S: std::fmt::Display>(names: impl Iterator<Item = S>) -> String {
    names
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A session naming a task this pipeline does not have.
pub(super) struct Unknown<'s> {
    pub(super) session: &'s str,
    pub(super) file: &'s Path,
    pub(super) task: &'s str,
    pub(super) track: &'s str,
}

impl Unknown<'_> {
    /// Why the session is not graded, and its failing node. A pipeline of
    /// `[[instances]]` reads predictions by instance id: one that names
    /// none fails alone, with the nearest ids. Otherwise it is left out
    /// with a warning naming the nearest tasks of the last release (not
    /// every candidate: declined ones have a task id too).
    pub(super) fn refused(
        &self,
        g: &GradeLayout<'_>,
        released: &BTreeSet<String>,
        warnings: &mut Vec<String>,
    ) -> (String, Option<NodeSpec>) {
        let (task, track) = (self.task, self.track);
        let near = crate::words::nearest(task, released.iter().map(String::as_str), 3);
        let why = format!("unknown task `{task}` ({track} track)");
        if !g.instance_tasks.is_empty() {
            let ids = g.instance_tasks.keys().map(String::as_str);
            let near_ids = crate::words::nearest(task, ids, 3);
            let candidates = match near_ids.iter().chain(&near).count() {
                0 => "no instance id or task is near it".to_owned(),
                _ => format!("candidates: {}", quoted(near_ids.iter().chain(&near))),
            };
            let detail = format!(
                "`{task}` ({track} track) is neither a task of this pipeline nor the instance id of an [[instances]] row; {candidates}"
            );
            return (why, Some(failed_session_node(self.session, detail)));
        }
        let hint = match near.as_slice() {
            [] => String::new(),
            some => format!(" (did you mean {}?)", quoted(some.iter())),
        };
        warnings.push(format!(
            "warning: session {} ({}) names task `{task}` ({track} track), which this pipeline does not release: not graded{hint}",
            self.session,
            self.file.display(),
        ));
        (why, None)
    }
}

/// Task digests of the last build, so a session may name its task by digest.
pub(super) fn previous_task_keys(store: &Store) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let Ok(builds) = store.builds(1) else {
        return map;
    };
    if let Some(Ok(Some(m))) = builds.first().map(|b| store.manifest(b)) {
        for e in m.entries.iter().filter(|e| e.kind == NodeKind::Task) {
            if let (Some(k), Some(id)) = (e.key, names::task_of(&e.name)) {
                map.insert(k.to_hex(), id.to_owned());
            }
        }
    }
    map
}

/// The ids of the tasks the last build released certified: what a session
/// naming an unknown task is pointed to (a declined or uncertified
/// candidate has a task id too, and grading it is refused). Empty before a
/// first build: the suggestion waits for a release.
pub(super) fn released_tasks(store: &Store) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let Ok(builds) = store.builds(1) else {
        return ids;
    };
    let Some(Ok(Some(m))) = builds.first().map(|b| store.manifest(b)) else {
        return ids;
    };
    for key in m
        .entries
        .iter()
        .filter(|e| e.kind == NodeKind::Task)
        .filter_map(|e| e.key)
    {
        let Ok(Some((_, _, row))) = store.key_record(&key) else {
            continue;
        };
        let task = store
            .output_bytes(&row)
            .ok()
            .and_then(|b| serde_json::from_slice::<crate::model::records::TaskRecord>(&b).ok());
        if let Some(t) = task.filter(|t| t.status == TaskStatus::Released && t.certified) {
            ids.insert(t.instance_id);
        }
    }
    ids
}
