//! The report is a directory: `report.html` (the entry point) and the pages
//! it links to under `pages/`, each a release file like any other (listed
//! in manifest.json, checked by `assay verify`). Every page is named from
//! a digest of what it shows (a session id or task holds `/`, `#`, spaces
//! and whatever else a user wrote), carries the same style and the same
//! Content Security Policy: nothing is loaded from anywhere, not even from
//! the release directory.
//!
//! A graded session's section (`detail.rs`: its verdicts, evidence, run
//! facts and patch) is on its task's page, at an anchor named from the
//! session id ([`session`]): report.html holds summaries whose size grows
//! with agents and tasks, and short rows per session, never a session's
//! evidence. A task page carries the sections of the sessions on that task
//! (30 attempts of a few tens of KB each, at most, is about a MB).

use std::fmt::Write as _;

use assay_engine::Digest;
use sha2::{Digest as _, Sha256};

use super::index::Index;
use super::markup::esc;

/// The one script of the report's pages, inline (the policy admits it by
/// its hash, and nothing else): a filter box above every `table.sortable`
/// (and the report's search box over all of them), and a click on a
/// column's head sorts by it (numbers as numbers). Without it the tables
/// read the same, unsorted.
pub(super) const SCRIPT: &str = "(function(){\
var q=function(s){return Array.prototype.slice.call(document.querySelectorAll(s))};\
var tables=q('table.sortable');\
var match=function(r,w){return !w||r.textContent.toLowerCase().indexOf(w)>=0};\
var apply=function(t){var w=(t.filterBox.value+' '+(search?search.value:'')).toLowerCase().split(' ').filter(Boolean);\
Array.prototype.forEach.call(t.tBodies[0].rows,function(r){r.hidden=!w.every(function(x){return match(r,x)})})};\
var search=document.getElementById('search');\
tables.forEach(function(t,n){if(!t.id)t.id='table-'+n;var f=document.createElement('input');f.type='search';f.placeholder='filter rows';f.className='filter';\
t.parentNode.insertBefore(f,t);t.filterBox=f;f.addEventListener('input',function(){apply(t)});\
Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th,i){th.title='sort';th.addEventListener('click',function(){\
var asc=!(t.sortCol===i&&t.sortAsc);t.sortCol=i;t.sortAsc=asc;var rows=Array.prototype.slice.call(t.tBodies[0].rows);\
rows.sort(function(a,b){var x=a.cells[i]?a.cells[i].textContent.trim():'',y=b.cells[i]?b.cells[i].textContent.trim():'';\
var nx=parseFloat(x),ny=parseFloat(y);var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return asc?c:-c});\
rows.forEach(function(r){t.tBodies[0].appendChild(r)})})})});\
if(search)search.addEventListener('input',function(){tables.forEach(apply)});\
})();";

/// The base64 of the SHA-256 of [`SCRIPT`], as a policy names it.
pub(super) fn script_hash() -> String {
    base64(&Sha256::digest(SCRIPT.as_bytes()))
}

/// `<script>` with [`SCRIPT`], placed last in a page's body.
pub(super) fn script_tag() -> String {
    format!("<script>{SCRIPT}</script>\n")
}

pub(super) fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Where the pages live, beside report.html.
pub(super) const DIR: &str = "pages";

/// The policy every page declares: no request of any kind; inline style
/// only, and inline script only where a page names its script's hash.
pub(super) fn csp(script_hash: Option<&str>) -> String {
    let script = match script_hash {
        Some(h) => format!("script-src 'sha256-{h}'"),
        None => "script-src 'none'".to_owned(),
    };
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; {script}; \
         form-action 'none'; base-uri 'none'"
    )
}

/// The transcript page of a session, from the release directory.
pub(super) fn transcript(session: &str) -> String {
    format!("{DIR}/{}-transcript.html", anchor(session))
}

/// The page of a task (`instance_id`, track).
pub(super) fn task(instance_id: &str, track: &str) -> String {
    let id = Digest::of(format!("{instance_id}\n{track}").as_bytes()).to_hex();
    format!("{DIR}/task-{}.html", &id[..16])
}

/// The page of an agent/model pair.
pub(super) fn agent(agent: &str, model: &str) -> String {
    let id = Digest::of(format!("{agent}\n{model}").as_bytes()).to_hex();
    format!("{DIR}/agent-{}.html", &id[..16])
}

/// The `i`th page (from 0) of an agent/model pair's grades: the first is
/// [`agent`]'s page.
pub(super) fn agent_part(agent: &str, model: &str, i: usize) -> String {
    let first = self::agent(agent, model);
    match i {
        0 => first,
        _ => format!("{}-{}.html", first.trim_end_matches(".html"), i + 1),
    }
}

/// Where a graded session's section is, from the release directory: its
/// task's page at the session's anchor; none for a session never graded.
pub(super) fn session(index: &Index<'_>, session: &str) -> Option<String> {
    let (id, track) = index.homes.get(session)?;
    Some(format!("{}#{}", task(id, track), anchor(session)))
}

/// Which file a link is written in: report.html, or a page of `pages/`.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum At {
    Report,
    Page,
}

impl At {
    /// A link to the release file `path` from here.
    pub(super) fn href(self, path: &str) -> String {
        match self {
            At::Report => path.to_owned(),
            At::Page => from_page(path),
        }
    }
}

/// A session's id, escaped, linked to its section where it has one.
pub(super) fn session_link(index: &Index<'_>, session: &str, at: At) -> String {
    match self::session(index, session) {
        Some(path) => format!("<a href=\"{}\">{}</a>", esc(&at.href(&path)), esc(session)),
        None => esc(session),
    }
}

/// A link from one page of `pages/` to another release file.
pub(super) fn from_page(path: &str) -> String {
    match path.strip_prefix(&format!("{DIR}/")) {
        Some(p) => p.to_owned(),
        None => format!("../{path}"),
    }
}

/// A whole page under `pages/`: its head (title, policy, style) and `body`.
pub(super) fn page(title: &str, css: &str, body: &str) -> String {
    let mut h = String::with_capacity(body.len() + css.len() + 512);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n<title>{}</title>\n\
         <style>{css}</style>\n</head>\n<body>\n<p><a href=\"../report.html\">← report</a></p>\n",
        csp(Some(&script_hash())),
        esc(title)
    );
    h.push_str(body);
    h.push_str(&script_tag());
    h.push_str("</body>\n</html>\n");
    h
}

/// The anchor of a session's section: stable for its id, whatever the
/// release around it (an id holds `/`, `#` and spaces; a digest holds none).
pub(super) fn anchor(session: &str) -> String {
    format!("s-{}", &Digest::of(session.as_bytes()).to_hex()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_known_values() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
