"""The core of the scripted model servers for live tests (openai.py, gemini.py).

A server binds 127.0.0.1 on a random port, writes the port to --port-file
once it listens, answers every model request from a script, and records
every request (one JSON object per line in --record) for the test to
assert on. Each API module supplies only its wire format: which paths are
model calls, the request's text and tools, and how a reply is streamed.

The script is a JSON file, re-read whenever it changes:

    {"rules": [
       {"name": "hello",
        "when": {"contains": "TOKEN-A", "absent": "TOKEN-B"},
        "replies": [[{"type": "tool_use", "name": "shell", "input": {...}}],
                    [{"type": "text", "text": "done"}]]}
     ],
     "default": [{"type": "text", "text": "ok"}]}

A rule matches a request (one offering tools: the CLI's agent loop) whose
text contains every `contains` needle and no `absent` one, and answers
with its next reply (a list of neutral blocks: `text`, or `tool_use` with
a tool name and its input); used up, it never matches again. A tool name
the request does not offer is replaced by the first offered one whose
name contains it (a CLI names its shell tool its own way). Everything else
gets `default`.

Standard library only; stops on SIGTERM or SIGINT.
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"mtime": None, "script": {"rules": [], "default": []}, "used": {}}
COUNTER = {"n": 0}


def load_script(path):
    """Re-reads the script when its mtime changed (keeps each rule's progress)."""
    try:
        mtime = os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return STATE["script"]
    if mtime != STATE["mtime"]:
        try:
            with open(path, encoding="utf-8") as f:
                STATE["script"] = json.load(f)
            STATE["mtime"] = mtime
        except (OSError, ValueError) as e:
            sys.stderr.write(f"scripted.py: bad script {path}: {e}\n")
    return STATE["script"]


def strings(value):
    """Every string inside a JSON value, joined by newlines."""
    out = []

    def walk(v):
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)

    walk(value)
    return "\n".join(out)


def as_list(v):
    return [v] if isinstance(v, str) else (v or [])


def open_rules(text):
    """(name, rule, replies used) of each rule, in order, that has replies
    left and whose `when` matches `text`."""
    for i, rule in enumerate(STATE["script"].get("rules", [])):
        name = rule.get("name", f"rule{i}")
        used = STATE["used"].get(name, 0)
        if used >= len(rule.get("replies") or []):
            continue
        when = rule.get("when", {})
        if not all(n in text for n in as_list(when.get("contains"))):
            continue
        if any(n in text for n in as_list(when.get("absent"))):
            continue
        yield name, rule, used


def choose(text, tools):
    """(rule name or None, blocks) for a request with this text and tools."""
    default = STATE["script"].get("default") or [{"type": "text", "text": "ok"}]
    if not tools:
        return None, default
    for name, rule, used in open_rules(text):
        STATE["used"][name] = used + 1
        return name, [with_tool_name(b, tools) for b in rule["replies"][used]]
    return None, default


def with_tool_name(block, tools):
    if block.get("type") != "tool_use" or block.get("name") in tools:
        return block
    for t in tools:
        if block.get("name", "") in t:
            return dict(block, name=t)
    return block


def next_id(prefix):
    COUNTER["n"] += 1
    return f"{prefix}_{os.getpid()}_{COUNTER['n']:06d}"


class Handler(BaseHTTPRequestHandler):
    """The HTTP side; an API module subclasses it with `model_call(path, body)`
    returning None (not a model path) or (text, tools, stream, responder)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the record file is the log
        pass

    def record(self, entry):
        entry["t"] = time.time()
        line = json.dumps(entry) + "\n"
        with LOCK:
            with open(self.server.record_path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()

    def read_body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")}

    def headers_kept(self):
        keep = ("authorization", "x-goog-api-key", "user-agent", "openai-beta")
        return {k: v for k, v in self.headers.items() if k.lower() in keep}

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.record({"method": "GET", "path": self.path, "headers": self.headers_kept()})
        body = self.get_reply(self.path.split("?")[0])
        if body is None:
            self.send_json(404, {"error": {"message": "scripted server", "code": 404}})
        else:
            self.send_json(200, body)

    def get_reply(self, path):
        return None

    def do_POST(self):
        body = self.read_body()
        path = self.path.split("?")[0]
        call = self.model_call(path, body)
        if call is None:
            self.record({"method": "POST", "path": self.path, "headers": self.headers_kept(), "body": body})
            self.send_json(404, {"error": {"message": "scripted server", "code": 404}})
            return
        text, tools, stream, respond = call
        with LOCK:
            load_script(self.server.script_path)
            rule, blocks = choose(text, tools)
        blocks = [dict(b, id=b.get("id") or next_id("call")) if b.get("type") == "tool_use" else b
                  for b in blocks]
        self.record({"method": "POST", "path": self.path, "headers": self.headers_kept(),
                     "main": bool(tools), "rule": rule, "reply": blocks, "text": text, "body": body})
        respond(self, blocks, stream)

    def start_sse(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def sse(self, data, event=None):
        head = f"event: {event}\n" if event else ""
        chunk = f"{head}data: {json.dumps(data)}\n\n".encode()
        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        self.wfile.flush()

    def end_sse(self, done=False):
        if done:
            chunk = b"data: [DONE]\n\n"
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def serve(handler, description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--script", required=True)
    p.add_argument("--record", required=True)
    p.add_argument("--port-file", required=True)
    a = p.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    srv.script_path = a.script
    srv.record_path = a.record
    open(a.record, "a").close()
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(tmp, a.port_file)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=srv.shutdown).start())
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
