#!/usr/bin/env python3
"""A scripted model server speaking OpenAI's APIs, for live tests.

Codex CLI calls the Responses API (`POST …/responses`, SSE events
`response.created`, `response.output_item.added/done`,
`response.output_text.delta`, `response.completed`); Aider calls Chat
Completions (`POST …/chat/completions`, `chat.completion.chunk` deltas, then
`[DONE]`). Both are answered from the script as `scripted.py` describes;
a tool call becomes a `function_call` item (Responses) or a `tool_calls`
delta (Chat Completions), its input the JSON `arguments`. A Responses tool
inside a namespace (Codex's MCP tools: `mcp__swarm` holds swarm's) is named
`NAMESPACE/NAME` in a script, and called with the item's `namespace`. Aider offers the
model no tools: any chat request may match a rule, and a reply's text is
what Aider prints.

Usage: openai.py --script S.json --record R.jsonl --port-file P
"""

import json
import time

import scripted


def responses_text(body):
    """The conversation of a Responses request: its input items, not the
    CLI's own instructions."""
    return scripted.strings(body.get("input"))


def responses_tools(body):
    """The tools a Responses request offers, by name; a tool inside a
    namespace (Codex puts each MCP server's tools in one, `mcp__<server>`)
    as `NAMESPACE/NAME`, so a rule can call it."""
    out = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        out.append(t.get("name") or t.get("type"))
        if t.get("type") == "namespace":
            out.extend(f"{t.get('name')}/{x.get('name')}" for x in t.get("tools") or []
                       if isinstance(x, dict))
    return out


def function_call(b):
    """A tool_use block as a `function_call` item; `NAMESPACE/NAME` is the
    tool NAME of namespace NAMESPACE."""
    namespace, _, name = b["name"].rpartition("/")
    item = {"type": "function_call", "id": scripted.next_id("fc"), "status": "completed",
            "name": name, "arguments": json.dumps(b.get("input", {})), "call_id": b["id"]}
    if namespace:
        item["namespace"] = namespace
    return item


USAGE = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}


def respond_responses(h, blocks, stream):
    rid = scripted.next_id("resp")
    items = []
    for b in blocks:
        if b.get("type") == "tool_use":
            items.append(function_call(b))
        else:
            items.append({"type": "message", "id": scripted.next_id("msg"), "role": "assistant",
                          "status": "completed",
                          "content": [{"type": "output_text", "text": b.get("text", ""), "annotations": []}]})
    done = {"id": rid, "object": "response", "status": "completed", "output": items, "usage": USAGE}
    if not stream:
        h.send_json(200, done)
        return
    h.start_sse()
    h.sse({"type": "response.created", "response": {"id": rid, "status": "in_progress", "output": []}},
          "response.created")
    for i, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            h.sse({"type": "response.output_item.added", "output_index": i,
                   "item": dict(item, content=[], status="in_progress")}, "response.output_item.added")
            for part in (text[: len(text) // 2], text[len(text) // 2:]):
                h.sse({"type": "response.output_text.delta", "output_index": i, "content_index": 0,
                       "item_id": item["id"], "delta": part}, "response.output_text.delta")
        else:
            h.sse({"type": "response.output_item.added", "output_index": i, "item": item},
                  "response.output_item.added")
        h.sse({"type": "response.output_item.done", "output_index": i, "item": item},
              "response.output_item.done")
    h.sse({"type": "response.completed", "response": done}, "response.completed")
    h.end_sse()


def chat_text(body):
    return scripted.strings([m.get("content") for m in body.get("messages") or []])


def respond_chat(h, blocks, stream):
    cid = scripted.next_id("chatcmpl")
    model = "scripted"
    text = "".join(b.get("text", "") for b in blocks if b.get("type") != "tool_use")
    calls = [{"index": i, "id": b["id"], "type": "function",
              "function": {"name": b["name"], "arguments": json.dumps(b.get("input", {}))}}
             for i, b in enumerate(b for b in blocks if b.get("type") == "tool_use")]
    finish = "tool_calls" if calls else "stop"
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if not stream:
        msg = {"role": "assistant", "content": text or None}
        if calls:
            msg["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
        h.send_json(200, {"id": cid, "object": "chat.completion", "created": int(time.time()),
                          "model": model, "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                          "usage": usage})
        return
    h.start_sse()

    def chunk(delta, finish_reason=None, **extra):
        h.sse(dict({"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}, **extra))

    chunk({"role": "assistant", "content": ""})
    for part in (text[: len(text) // 2], text[len(text) // 2:]):
        if part:
            chunk({"content": part})
    if calls:
        chunk({"tool_calls": calls})
    chunk({}, finish, usage=usage)
    h.end_sse(done=True)


class OpenAI(scripted.Handler):
    server_version = "scripted-openai/1"

    def model_call(self, path, body):
        stream = bool(body.get("stream"))
        if path.endswith("/responses"):
            return responses_text(body), responses_tools(body), stream, respond_responses
        if path.endswith("/chat/completions"):
            # Aider offers no tools: every chat request is its agent loop.
            tools = [t.get("function", {}).get("name") for t in body.get("tools") or []] or ["chat"]
            return chat_text(body), tools, stream, respond_chat
        return None

    def get_reply(self, path):
        if path.endswith("/models"):
            return {"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "swarm"}]}
        return None


if __name__ == "__main__":
    scripted.serve(OpenAI, "A scripted OpenAI API server")
