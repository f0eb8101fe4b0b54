#!/usr/bin/env bash
# make-repo.sh DEST — build the "webapp" example repository at DEST.
#
# The repository is a small web application served by Python's standard
# library (app.py, no dependencies) whose main branch carries three merged
# pull requests, each the reference of one app task (see README.md next to
# this script). Tags name the task trees: `base` (the first commit) and, for
# each pull request, the tip of its branch (`greet`, `notes`, `counter`); every task starts from `base`.
#
# Deterministic like every example: the final main commit id is printed.
set -euo pipefail

# shellcheck source=../lib/history.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/history.sh"
history_begin "Octo Cat" octo@example.com octo 1767607200 "$@"

put .gitignore <<'EOF'
__pycache__/
EOF

put README.md <<'EOF'
# webapp

A small web application on Python's standard library.

```sh
PORT=8000 python3 app.py
```
EOF

put app.py <<'EOF'
"""webapp: a few pages served by Python's standard library."""

import html
import os
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NOTES = []
STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")


def page(title, body):
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head><body>{body}</body></html>"
    )


class Handler(BaseHTTPRequestHandler):
    def send(self, status, body, kind="text/html; charset=utf-8"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        route = ROUTES.get(("GET", url.path))
        if route is None and url.path.startswith("/static/"):
            return self.static(url.path[len("/static/"):])
        if route is None:
            return self.send(404, page("Not found", "<h1>Not found</h1>"))
        route(self, urllib.parse.parse_qs(url.query))

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        route = ROUTES.get(("POST", url.path))
        if route is None:
            return self.send(404, page("Not found", "<h1>Not found</h1>"))
        length = int(self.headers.get("Content-Length") or 0)
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        route(self, form)

    def static(self, name):
        if "/" in name or name.startswith("."):
            return self.send(404, "not found", "text/plain")
        try:
            with open(os.path.join(STATIC, name), encoding="utf-8") as f:
                body = f.read()
        except OSError:
            return self.send(404, "not found", "text/plain")
        kind = "text/javascript" if name.endswith(".js") else "text/plain"
        self.send(200, body, kind)

    def log_message(self, *args):
        pass


def index(handler, _query):
    handler.send(200, page("webapp", "<h1 id='title'>webapp</h1><p>It works.</p>"))


def counter(handler, _query):
    body = (
        "<p id='count' data-start='0'>Count: 0</p><button id='inc'>+1</button>"
        "<script src='/static/counter.js'></script>"
    )
    handler.send(200, page("Counter", body))


def health(handler, _query):
    handler.send(200, '{"ok": true}', "application/json")


ROUTES = {
    ("GET", "/"): index,
    ("GET", "/health"): health,
    ("GET", "/counter"): counter,
}


if __name__ == "__main__":
    port = int(os.environ.get("PORT", "8000"))
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
EOF
put static/counter.js <<'EOF'
const shown = document.getElementById("count");
let count = shown.dataset.start;
document.getElementById("inc").addEventListener("click", () => {
  count = count + 1;
  shown.textContent = "Count: " + count;
});
EOF
commit "webapp: an index page, a counter and a health check"
g tag base

# ------------------------------------------------------------------------------
# PR 1: a new endpoint.
branch feature/greet
python3 - "$tmp/app.py" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace('''ROUTES = {''', '''def greet(handler, query):
    name = (query.get("name") or ["world"])[0]
    handler.send(200, page("Hello", f"<p id='greeting'>Hello, {html.escape(name)}!</p>"))


ROUTES = {
    ("GET", "/greet"): greet,''')
open(p, "w").write(s)
EOF
commit "greet: GET /greet?name=NAME says hello"
g tag greet
merge_pr 1 feature/greet "Add a greeting endpoint" "GET /greet?name=NAME answers Hello, NAME!"

# ------------------------------------------------------------------------------
# PR 2: a form whose submission changes a page.
branch feature/notes
python3 - "$tmp/app.py" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace('''ROUTES = {''', '''def notes(handler, _query):
    items = "".join(f"<li>{html.escape(n)}</li>" for n in NOTES)
    form = (
        "<form method='post' action='/notes'>"
        "<input id='note' name='note'><button id='add' type='submit'>Add</button></form>"
    )
    handler.send(200, page("Notes", f"<h1>Notes</h1><ul id='notes'>{items}</ul>{form}"))


def add_note(handler, form):
    note = (form.get("note") or [""])[0].strip()
    if note:
        NOTES.append(note)
    handler.send_response(303)
    handler.send_header("Location", "/notes")
    handler.send_header("Content-Length", "0")
    handler.end_headers()


ROUTES = {
    ("GET", "/notes"): notes,
    ("POST", "/notes"): add_note,''')
open(p, "w").write(s)
EOF
commit "notes: a page with a form that adds a note to it"
g tag notes
merge_pr 2 feature/notes "Add a notes page" "A form on /notes adds a note to the list on the page."

# ------------------------------------------------------------------------------
# PR 3: a bug only the browser shows (the counter's script adds strings).
branch feature/counter
put static/counter.js <<'EOF'
const shown = document.getElementById("count");
let count = Number(shown.dataset.start);
document.getElementById("inc").addEventListener("click", () => {
  count = count + 1;
  shown.textContent = "Count: " + count;
});
EOF
commit "counter: the script adds numbers, not strings"
g tag counter
merge_pr 3 feature/counter "Fix the counter" "Clicking +1 showed Count: 01."

history_finish
