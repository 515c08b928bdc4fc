"""A real MCP client for tests/mcp.rs: the official Python SDK (`mcp` from
PyPI, pinned by scripts/install-agents) connected over stdio to the server
command given after `--`, driven one request per line.

    python client.py -- /path/to/swarm mcp --team T

Each line read from stdin is one JSON request; each answer is one JSON line
on stdout, flushed:

    {"list_tools": true}                -> {"tools": [{"name", "description", "inputSchema"}]}
    {"call": NAME, "args": {...}}       -> {"isError": bool, "text": "...", "content": [...]}
    {"info": true}                      -> {"name", "version", "instructions"}

A call the SDK itself fails (a protocol error, not a tool error) answers
{"exception": "..."}; the client goes on. It ends at the end of its stdin,
closing the server's stdin, and prints {"closed": true} as its last line.

The server's environment is this process's (the test sets it whole).
"""

import json
import os
import sys

import anyio
from mcp import Client, StdioServerParameters


def answer(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main(argv):
    if "--" not in argv:
        sys.exit("usage: client.py -- SERVER ARGS...")
    command = argv[argv.index("--") + 1 :]
    params = StdioServerParameters(
        command=command[0], args=command[1:], env=dict(os.environ)
    )
    stdin = anyio.wrap_file(sys.stdin)
    async with Client(params, read_timeout_seconds=70) as client:
        async for line in stdin:
            line = line.strip()
            if not line:
                continue
            req = json.loads(line)
            try:
                if req.get("list_tools"):
                    tools = (await client.list_tools()).tools
                    answer(
                        {
                            "tools": [
                                {
                                    "name": t.name,
                                    "description": t.description,
                                    "inputSchema": t.input_schema,
                                }
                                for t in tools
                            ]
                        }
                    )
                elif req.get("info"):
                    info = client.server_info
                    answer(
                        {
                            "name": info.name if info else None,
                            "version": info.version if info else None,
                            "instructions": client.instructions,
                        }
                    )
                else:
                    result = await client.call_tool(req["call"], req.get("args") or {})
                    content = [c.model_dump(mode="json", by_alias=True) for c in result.content]
                    text = "".join(c.get("text", "") for c in content)
                    answer({"isError": result.is_error, "text": text, "content": content})
            except Exception as e:  # the test reads it and fails with it
                answer({"exception": f"{type(e).__name__}: {e}"})
    answer({"closed": True})


if __name__ == "__main__":
    anyio.run(main, sys.argv)
