#!/usr/bin/env python3
"""A scripted model server speaking the Gemini API, for live tests.

Gemini CLI (pointed at it with GOOGLE_GEMINI_BASE_URL) calls
`POST …/models/MODEL:streamGenerateContent?alt=sse` (SSE, one
`GenerateContentResponse` per `data:` line) and `…:generateContent`, and
`…:countTokens`. Requests are answered from the script as `scripted.py`
describes; a tool call becomes a `functionCall` part (its input the
`args`), text a `text` part. A side request that asks for JSON of a
schema (`generationConfig.responseJsonSchema`: the CLI's model router,
its next-speaker check) gets the smallest instance of that schema
(`complexity_score: 1`, the first value of an enum, …), so the CLI goes
on with its defaults.

Usage: gemini.py --script S.json --record R.jsonl --port-file P
"""

import json

import scripted

USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def text_of(body):
    """The conversation: every part of `contents`, not the system instruction."""
    return scripted.strings(body.get("contents"))


def tools_of(body):
    names = []
    for t in body.get("tools") or []:
        for d in (t or {}).get("functionDeclarations") or []:
            names.append(d.get("name"))
    return names


def parts_of(blocks):
    parts = []
    for b in blocks:
        if b.get("type") == "tool_use":
            parts.append({"functionCall": {"name": b["name"], "args": b.get("input", {}), "id": b["id"]}})
        else:
            parts.append({"text": b.get("text", "")})
    return parts


def response(parts):
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": USAGE, "modelVersion": "scripted"}


def respond(h, blocks, stream):
    parts = parts_of(blocks)
    if not stream:
        h.send_json(200, response(parts))
        return
    h.start_sse()
    texts = [p for p in parts if "text" in p]
    calls = [p for p in parts if "functionCall" in p]
    for p in texts:
        t = p["text"]
        first, second = t[: len(t) // 2], t[len(t) // 2:]
        if first:
            h.sse({"candidates": [{"content": {"role": "model", "parts": [{"text": first}]}, "index": 0}]})
        last = [{"text": second}] if second or not calls else []
        if last:
            h.sse({"candidates": [{"content": {"role": "model", "parts": last}, "index": 0}]})
    final = response(calls or [{"text": ""}])
    h.sse(final)
    h.end_sse()


def instance(schema):
    """The smallest value of a JSON schema (Gemini's upper-case types too)."""
    schema = schema or {}
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {k: instance(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    return "scripted"


def respond_schema(schema):
    def respond_json(h, blocks, stream):
        body = response([{"text": json.dumps(instance(schema))}])
        if stream:
            h.start_sse()
            h.sse(body)
            h.end_sse()
        else:
            h.send_json(200, body)
    return respond_json


class Gemini(scripted.Handler):
    server_version = "scripted-gemini/1"

    def model_call(self, path, body):
        if path.endswith(":countTokens"):
            return "", [], False, lambda h, b, s: h.send_json(200, {"totalTokens": 10})
        schema = (body.get("generationConfig") or {}).get("responseJsonSchema")
        if schema and not tools_of(body):
            stream = path.endswith(":streamGenerateContent")
            return text_of(body), [], stream, respond_schema(schema)
        if path.endswith(":streamGenerateContent"):
            return text_of(body), tools_of(body), True, respond
        if path.endswith(":generateContent"):
            return text_of(body), tools_of(body), False, respond
        return None


if __name__ == "__main__":
    scripted.serve(Gemini, "A scripted Gemini API server")
