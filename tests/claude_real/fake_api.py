"""A scripted Anthropic Messages API on 127.0.0.1, for running the real Claude Code in tests.

Run as `python fake_api.py SCRIPT LOG PORT_FILE` inside a network namespace of its own that has
only loopback (`unshare -n`): it brings `lo` up, serves `POST /v1/messages` (streaming SSE when
the request asks for it, plain JSON otherwise), appends every request it receives to LOG (one
JSON object a line: path, headers of interest, body), and writes its port to PORT_FILE once it
listens. Claude Code is then started in the same namespace (`nsenter --net=/proc/PID/ns/net`),
so nothing it does can leave the machine.

SCRIPT is a JSON list of rules, each `{"match": TEXT, "reply": [BLOCK, ...], "usage": {...}}`:
a request is answered by the first unused rule whose TEXT occurs in what came since the model
last spoke (its messages after the last assistant one, as JSON),
and that rule is then used up. A BLOCK is `{"type": "text", "text": ...}` or `{"type":
"tool_use", "id": ..., "name": ..., "input": {...}}`. A request no rule matches (a title, a
side question, the end of a turn) gets a short text answer. SCRIPT is read again at each
request, so a test may append rules while the client runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEFAULT_REPLY = [{"type": "text", "text": "Done."}]
DEFAULT_USAGE = {
    "input_tokens": 1200,
    "output_tokens": 30,
    "cache_read_input_tokens": 4000,
    "cache_creation_input_tokens": 500,
}


class Script:
    """The rules and which of them were used, shared by the server's threads."""

    def __init__(self, path: Path, log: Path) -> None:
        self.path = path
        self.log = log
        self.used: set[int] = set()
        self.lock = threading.Lock()
        self.count = 0

    def answer(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, int]]:
        messages = body.get("messages") or []
        spoke = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
        last = json.dumps(messages[spoke[-1] + 1:] if spoke else messages)
        with self.lock:
            rules = json.loads(self.path.read_text())
            for index, rule in enumerate(rules):
                if index not in self.used and rule.get("match", "") in last:
                    self.used.add(index)
                    return rule["reply"], {**DEFAULT_USAGE, **rule.get("usage", {})}
        return DEFAULT_REPLY, dict(DEFAULT_USAGE)

    def record(self, path: str, headers: dict[str, str], body: Any, reply: Any) -> None:
        with self.lock:
            self.count += 1
            line = {"n": self.count, "path": path, "headers": headers, "body": body,
                    "reply": reply}
            with self.log.open("a") as out:
                out.write(json.dumps(line) + "\n")


def make_handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            script.record(self.path, {}, None, None)
            self._send(404, b'{"type":"error","error":{"type":"not_found_error","message":"no"}}')

        def do_HEAD(self) -> None:
            self._send(200, b"")

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            headers = {
                k: self.headers[k] for k in ("x-api-key", "anthropic-beta") if k in self.headers
            }
            if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                script.record(self.path, headers, body, None)
                self._send(200, json.dumps({"input_tokens": 1000}).encode())
                return
            blocks, usage = script.answer(body)
            script.record(self.path, headers, body, blocks)
            stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
            model = body.get("model", "claude-sonnet-4-5")
            message = {"id": f"msg_fake{script.count:04d}", "type": "message", "role": "assistant",
                       "model": model, "content": blocks, "stop_reason": stop,
                       "stop_sequence": None, "usage": usage}
            if body.get("stream"):
                self._stream(message)
            else:
                self._send(200, json.dumps(message).encode())

        def _send(self, status: int, data: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, message: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            start = {**message, "content": [], "stop_reason": None,
                     "usage": {**message["usage"], "output_tokens": 1}}
            events: list[tuple[str, dict[str, Any]]] = [
                ("message_start", {"type": "message_start", "message": start})]
            for index, block in enumerate(message["content"]):
                if block["type"] == "text":
                    first = {"type": "text", "text": ""}
                    delta = {"type": "text_delta", "text": block["text"]}
                else:
                    first = {**block, "input": {}}
                    delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                events += [
                    ("content_block_start",
                     {"type": "content_block_start", "index": index, "content_block": first}),
                    ("content_block_delta",
                     {"type": "content_block_delta", "index": index, "delta": delta}),
                    ("content_block_stop", {"type": "content_block_stop", "index": index}),
                ]
            events += [
                ("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": message["stop_reason"],
                                             "stop_sequence": None},
                                   "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
                ("message_stop", {"type": "message_stop"}),
            ]
            for name, data in events:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
            self.close_connection = True

    return Handler


def main(argv: list[str]) -> int:
    script_path, log_path, port_file = (Path(a) for a in argv)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(Script(script_path, log_path)))
    server.daemon_threads = True
    port_file.write_text(str(server.server_address[1]))
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
