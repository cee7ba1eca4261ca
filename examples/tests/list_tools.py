"""Lists an MCP server's tools with the Python MCP SDK, as a Python agent's client does, and
prints {name: description} as JSON. Run by examples.rs's tests.

    python list_tools.py stdio PROGRAM [ARG...]
    python list_tools.py http URL BEARER_TOKEN
    python list_tools.py raw-http URL BEARER_TOKEN   # one JSON-RPC POST by hand, no SDK
"""

import asyncio
import json
import sys
import urllib.request


async def listed(read, write):
    from mcp import ClientSession

    async with ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        return {tool.name: tool.description for tool in tools.tools}


def raw_http(url, token):
    """tools/list as one JSON-RPC request written by hand (MCP 2026-07-28: the request says
    who asks, no initialize), read from a JSON or an event-stream answer."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-json-rpc", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("MCP-Protocol-Version", "2026-07-28")
    request.add_header("Mcp-Method", "tools/list")
    with urllib.request.urlopen(request, timeout=30) as answer:
        text = answer.read().decode()
    if answer.headers.get_content_type() == "text/event-stream":
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        messages = [json.loads(line) for line in data if line]
        text = json.dumps(next(m for m in messages if m.get("id") == 1))
    response = json.loads(text)
    return {tool["name"]: tool.get("description") for tool in response["result"]["tools"]}


async def main(mode, rest):
    # The SDK, imported here: the raw client needs none of it.
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    if mode == "stdio":
        params = StdioServerParameters(command=rest[0], args=rest[1:])
        async with stdio_client(params) as (read, write):
            return await listed(read, write)
    url, token = rest
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            return await listed(streams[0], streams[1])


if __name__ == "__main__":
    if sys.argv[1] == "raw-http":
        print(json.dumps(raw_http(*sys.argv[2:])))
    else:
        print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2:]))))
