#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat endpoint on loopback for the agent
benchmarks: every answer waits DELAY seconds, then makes one bash tool call
(mini-swe-agent's default config); each conversation (counted by the
assistant messages it carries) writes a file, commits it, and submits.

    scripted-llm.py PORT [DELAY]
"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT = [
    "echo '# touched by the scripted agent' >> README.md",
    "git add -A && git commit -qm 'scripted change'",
    "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
]
DELAY = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        step = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        step = min(step, len(SCRIPT) - 1)
        time.sleep(DELAY)
        answer = json.dumps({
            "id": f"c{step}", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": f"step {step}",
                "tool_calls": [{"id": f"call_{step}", "type": "function", "function": {
                    "name": "bash", "arguments": json.dumps({"command": SCRIPT[step]})}}]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
