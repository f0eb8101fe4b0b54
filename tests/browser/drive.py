#!/usr/bin/env python3
"""Drives a release's report in headless Chromium over the DevTools protocol
(`--remote-debugging-pipe`: no port, no websocket library), the way a reader
does: open report.html, follow a matrix cell (one with a transcript where
there is one) to the session's section on its task's page, its transcript
link, the transcript's task link; sort and filter the task page's table.
Every console message, uncaught exception and log entry (a blocked resource
or a Content Security Policy violation is one) is collected.

    drive.py RELEASE_DIR [--screenshots DIR]   -> the report's walk
    drive.py --page FILE                        -> one page loaded, nothing else

Prints one JSON object: {"steps": [[what, value], ...], "errors": [...]}.
Exits 0 when it could drive the browser, whatever it found; the caller judges.
"""

import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():
            # Chromium reads fd 3 and writes fd 4: moved there through
            # fresh numbers, so neither overwrites the other.
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.profile = tempfile.mkdtemp(prefix="assay-chromium-")
        self.proc = subprocess.Popen(
            [
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-pipe",
                "--user-data-dir=" + self.profile,
                "--window-size=1200,900",
                "about:blank",
            ],
            pass_fds=(3, 4),
            preexec_fn=fds,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.errors = []
        self.session = None

    # The bounds only catch a hang: Chromium can take tens of seconds to
    # start on a loaded machine.
    def _read(self, timeout=120):
        while b"\0" not in self.buf:
            if not select.select([self.from_chrome], [], [], timeout)[0]:
                raise RuntimeError(f"chromium said nothing for {timeout}s")
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read()
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self._event(m)

    def _event(self, m):
        method, p = m.get("method"), m.get("params", {})
        if method == "Runtime.consoleAPICalled":
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            self.errors.append(f"console.{p.get('type')}: {args}")
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append(f"exception: {d.get('text')} {d.get('exception', {}).get('description', '')}")
        elif method == "Log.entryAdded":
            e = p.get("entry", {})
            self.errors.append(f"log {e.get('level')} ({e.get('source')}): {e.get('text')} {e.get('url', '')}")
        else:
            self.events.append(m)

    def wait_for(self, method, timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    del self.events[i]
                    return e
            self._event(self._read())
        raise RuntimeError(f"no {method} within {timeout}s")

    def attach(self):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        r = self.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, session=False
        )
        self.session = r["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(domain + ".enable")

    def open(self, url):
        self.events.clear()
        self.send("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")

    def eval(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluating {expr!r}: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def screenshot(self, path):
        r = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False})
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))

    def close(self):
        try:
            self.send("Browser.close", session=False)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        # The profile is the test's own: nothing of it is left in /tmp.
        shutil.rmtree(self.profile, ignore_errors=True)


def walk(b, release, shots):
    steps = []
    url = lambda p: "file://" + os.path.abspath(p)
    b.open(url(os.path.join(release, "report.html")))
    steps.append(["report filter boxes", b.eval("document.querySelectorAll('input.filter').length")])
    if shots:
        b.screenshot(os.path.join(shots, "top.png"))
        b.eval("document.getElementById('matrix').scrollIntoView();window.scrollBy(0,-150)")
        b.screenshot(os.path.join(shots, "matrix.png"))
    # A matrix cell, one whose session kept a transcript where one did:
    # its session's section, on its task's page.
    b.events.clear()
    b.eval(
        "(function(){var t=document.querySelector('#matrix a.v + a.tr');"
        "(t ? t.previousElementSibling : document.querySelector('#matrix a.v')).click()})()"
    )
    b.wait_for("Page.loadEventFired")
    steps.append(["cell page", b.eval("location.pathname.split('/').slice(-2).join('/')")])
    steps.append(["cell target", b.eval("document.querySelector(':target') ? document.querySelector(':target').className : null")])
    if shots:
        b.screenshot(os.path.join(shots, "session.png"))
    transcript = b.eval(
        "(function(){var a=document.querySelector(':target a[href*=\"-transcript\"]');return a?a.href:null})()"
    )
    steps.append(["transcript link", transcript is not None])
    if transcript is None:
        return steps
    b.open(transcript)
    steps.append(["transcript h1", b.eval("document.querySelector('h1').textContent")])
    steps.append(["transcript outputs", b.eval("document.querySelectorAll('details.out').length")])
    if shots:
        b.eval("document.querySelectorAll('details.out').forEach(function(d,i){if(i<2)d.open=true})")
        b.screenshot(os.path.join(shots, "transcript.png"))
    task = b.eval("document.querySelector('a[href^=\"task-\"]').href")
    b.open(task)
    steps.append(["task h1", b.eval("document.querySelector('h1').textContent")])
    if shots:
        b.screenshot(os.path.join(shots, "task-page.png"))
    rows = "Array.prototype.map.call(document.querySelectorAll('table.sortable tbody tr'), function(r){return r.hidden ? null : r.cells[3].textContent}).filter(function(x){return x!==null})"
    before = b.eval(rows)
    b.eval("document.querySelectorAll('table.sortable thead th')[3].click()")
    asc = b.eval(rows)
    b.eval("document.querySelectorAll('table.sortable thead th')[3].click()")
    desc = b.eval(rows)
    steps.append(["rows", before])
    steps.append(["sorted ascending", asc == sorted(before) and asc])
    steps.append(["sorted descending", desc == sorted(before, reverse=True) and desc])
    word = sorted(before)[-1] if before else ""
    b.eval(
        "(function(){var f=document.querySelector('input.filter');f.value=%s;f.dispatchEvent(new Event('input'))})()"
        % json.dumps(word)
    )
    steps.append(["filtered", [word, b.eval(rows)]])
    agent = b.eval("document.querySelector('table.sortable tbody a[href^=\"agent-\"]')")
    steps.append(["agent link", agent is not None])
    if agent is not None:
        b.open(b.eval("document.querySelector('table.sortable tbody a[href^=\"agent-\"]').href"))
        steps.append(["agent h1", b.eval("document.querySelector('h1').textContent")])
    return steps


def main():
    args = sys.argv[1:]
    b = Browser()
    out = {"steps": [], "errors": []}
    try:
        b.attach()
        if args[0] == "--page":
            b.open("file://" + os.path.abspath(args[1]))
            out["steps"].append(["loaded", args[1]])
        else:
            shots = args[2] if len(args) > 2 and args[1] == "--screenshots" else None
            out["steps"] = walk(b, args[0], shots)
        # Late events (a blocked resource after load) are read before the end.
        b.send("Runtime.evaluate", {"expression": "1"})
    except Exception as e:  # noqa: BLE001 - the caller shows it
        out["errors"].append(f"driver: {e}")
    finally:
        b.close()
    out["errors"].extend(b.errors)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
