"""Lists an MCP server's tools with the Python MCP SDK, as a Python agent's client does, and
prints {name: description} as JSON. Run by examples.rs's tests.

    python list_tools.py stdio PROGRAM [ARG...]
    python list_tools.py http URL BEARER_TOKEN
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


async def listed(read, write):
    async with ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        return {tool.name: tool.description for tool in tools.tools}


async def main(mode, rest):
    if mode == "stdio":
        params = StdioServerParameters(command=rest[0], args=rest[1:])
        async with stdio_client(params) as (read, write):
            return await listed(read, write)
    url, token = rest
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            return await listed(streams[0], streams[1])


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2:]))))
