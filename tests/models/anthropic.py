#!/usr/bin/env python3
"""A scripted model server speaking the Anthropic Messages API, for live tests.

Real CLIs (Claude Code) are pointed at it with ANTHROPIC_BASE_URL. It binds
127.0.0.1 on a random port, writes the port to --port-file once it listens,
answers every POST /v1/messages from a script, and records every request
(one JSON object per line in --record) for the test to assert on.

The script is a JSON file, re-read whenever it changes, so a test can add
rules while the CLI runs:

    {"rules": [
       {"name": "hello",
        "when": {"contains": "TOKEN-A"},          # text anywhere in the request's messages
        "capture": "shutdown-[0-9]+@[\\w.-]+",     # optional: "{{capture}}" in a reply is
                                                   # replaced by the last match of this regex
        "replies": [[{"type": "tool_use", "name": "SendMessage",
                      "input": {"to": "team-lead", "message": "HELLO", "summary": "hi"}}],
                    [{"type": "text", "text": "done"}]]}
     ],
     "default": [{"type": "text", "text": "ok"}]}

A rule matches a "main" request (one whose `tools` is not empty: the CLI's
agent loop, not its side requests for titles or classifiers) and answers
it with its next reply (a list of content blocks); once its replies are used
up it never matches again. Rules are tried in order. A reply that calls a
tool the request does not offer, while the request offers ToolSearch, is
preceded by a ToolSearch call that selects it (Claude Code defers its team
tools), and the rule stays where it was. Everything else gets `default`.

Standard library only, on `scripted.py` (the server, the record, the
script's reloading); stops on SIGTERM or SIGINT.
"""

import json
import re

import scripted

LOCK = scripted.LOCK
STATE = scripted.STATE
STATE["searched"] = set()
load_script = scripted.load_script
next_id = scripted.next_id


def text_of(content):
    """Every piece of text in a message's content, tool results included."""
    if isinstance(content, str):
        return content
    out = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            out.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            out.append(text_of(block.get("content")))
        elif block.get("type") == "tool_use":
            out.append(json.dumps(block.get("input", {})))
    return "\n".join(out)


def conversation_text(body):
    return "\n".join(text_of(m.get("content")) for m in body.get("messages", []))


def substitute(value, capture):
    if isinstance(value, str):
        return value.replace("{{capture}}", capture or "")
    if isinstance(value, list):
        return [substitute(v, capture) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, capture) for k, v in value.items()}
    return value


def choose(body):
    """(rule name or None, content blocks) for one request."""
    script = STATE["script"]
    tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    default = script.get("default") or [{"type": "text", "text": "ok"}]
    if not tools:
        return None, default
    text = conversation_text(body)
    for name, rule, used in scripted.open_rules(text):
        replies = rule["replies"]
        capture = None
        if rule.get("capture"):
            found = re.findall(rule["capture"], text)
            if not found:
                continue
            capture = found[-1] if isinstance(found[-1], str) else found[-1][0]
        reply = substitute(replies[used], capture)
        wanted = [b.get("name") for b in reply if b.get("type") == "tool_use"]
        missing = [w for w in wanted if w not in tools]
        key = (name, used)
        if missing and "ToolSearch" in tools and key not in STATE["searched"]:
            STATE["searched"].add(key)
            query = "select:" + ",".join(missing)
            return name + ":toolsearch", [
                {"type": "tool_use", "name": "ToolSearch", "input": {"query": query}}
            ]
        STATE["used"][name] = used + 1
        return name, reply
    return None, default


def blocks_with_ids(blocks):
    out = []
    for b in blocks:
        b = dict(b)
        if b.get("type") == "tool_use":
            b.setdefault("id", next_id("toolu"))
        out.append(b)
    return out


def stop_reason(blocks):
    return "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"


class Handler(scripted.Handler):
    server_version = "scripted-anthropic/1"

    def headers_kept(self):
        keep = ("x-api-key", "authorization", "anthropic-version", "anthropic-beta", "user-agent", "x-app")
        return {k: v for k, v in self.headers.items() if k.lower() in keep}

    def do_POST(self):
        body = self.read_body()
        path = self.path.split("?")[0]
        if path.endswith("/v1/messages/count_tokens"):
            self.record({"method": "POST", "path": self.path, "headers": self.headers_kept(), "body": body})
            self.send_json(200, {"input_tokens": 100})
            return
        if not path.endswith("/v1/messages"):
            self.record({"method": "POST", "path": self.path, "headers": self.headers_kept(), "body": body})
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "scripted server"}})
            return
        with LOCK:
            load_script(self.server.script_path)
            rule, blocks = choose(body)
        blocks = blocks_with_ids(blocks)
        self.record({
            "method": "POST", "path": self.path, "headers": self.headers_kept(),
            "main": bool(body.get("tools")), "rule": rule, "reply": blocks,
            "text": conversation_text(body), "body": body,
        })
        model = body.get("model", "claude-scripted")
        if body.get("stream"):
            self.stream(model, blocks)
        else:
            self.send_json(200, {
                "id": next_id("msg"), "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": stop_reason(blocks), "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            })

    def event(self, name, data):
        chunk = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        self.wfile.flush()

    def stream(self, model, blocks):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.event("message_start", {"type": "message_start", "message": {
            "id": next_id("msg"), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1}}})
        for i, b in enumerate(blocks):
            if b.get("type") == "tool_use":
                start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
                self.event("content_block_start", {"type": "content_block_start", "index": i, "content_block": start})
                js = json.dumps(b.get("input", {}))
                for part in (js[: len(js) // 2], js[len(js) // 2:]):
                    self.event("content_block_delta", {"type": "content_block_delta", "index": i,
                                                       "delta": {"type": "input_json_delta", "partial_json": part}})
            else:
                self.event("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}})
                text = b.get("text", "")
                for part in (text[: len(text) // 2], text[len(text) // 2:]):
                    self.event("content_block_delta", {"type": "content_block_delta", "index": i,
                                                       "delta": {"type": "text_delta", "text": part}})
            self.event("content_block_stop", {"type": "content_block_stop", "index": i})
        self.event("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop_reason(blocks), "stop_sequence": None},
                                     "usage": {"output_tokens": 5}})
        self.event("message_stop", {"type": "message_stop"})
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


if __name__ == "__main__":
    scripted.serve(Handler, __doc__.splitlines()[0])
