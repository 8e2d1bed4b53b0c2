"""A remote harness in a few lines: connect to mcp-memory over streamable HTTP or SSE with an API
key, write a memory, search for it, and forget it (preview, then execute with the preview's token).

    MCP_MEMORY_KEY=mcpm_… python remote_example.py --url http://127.0.0.1:8765 --transport http
    MCP_MEMORY_KEY=mcpm_… python remote_example.py --url http://127.0.0.1:8765 --transport sse

Needs only the MCP SDK (`pip install "mcp>=2"`; it comes with mcp-memory).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import uuid
from typing import Any

import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client


def connect(url: str, transport: str, key: str, agent: str) -> Client:
    # The key decides the user; the agent header picks one agent within the key's grants.
    headers = {"Authorization": f"Bearer {key}", "X-MCP-Memory-Agent": agent}
    if transport == "sse":
        return Client(sse_client(f"{url}/sse", headers=headers))
    return Client(streamable_http_client(f"{url}/mcp", http_client=httpx2.AsyncClient(headers=headers)))


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    if result.is_error:
        raise SystemExit(f"{tool} failed: {result.content[0].text}")
    return result.structured_content


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765", help="the server's base URL")
    parser.add_argument("--transport", choices=["http", "sse"], default="http")
    parser.add_argument("--agent", default="remote-example")
    args = parser.parse_args()
    key = os.environ.get("MCP_MEMORY_KEY")
    if not key:
        sys.exit("set MCP_MEMORY_KEY to a key from `mcp-memory keys create --user YOU`")

    marker = uuid.uuid4().hex[:8]  # so a rerun finds its own memory
    async with connect(args.url, args.transport, key, args.agent) as client:
        written = await call(client, "memory_write", content=f"The example deploy window is Tuesday ({marker})",
                             kind="fact", tags=["example"])
        print(f"wrote    {written['memory']['id']}")

        hits = (await call(client, "memory_search", query=f"when is the deploy window {marker}"))["hits"]
        print(f"search   {hits[0]['snippet']!r} ({hits[0]['age']})")

        preview = await call(client, "memory_forget", query=marker, mode="preview")
        print(f"preview  {len(preview['candidates'])} candidate(s): "
              + ", ".join(c["snippet"] for c in preview["candidates"]))
        done = await call(client, "memory_forget", mode="execute", token=preview["token"],
                          reason="remote example cleanup")
        print(f"forgot   {[item['id'] for item in done['forgotten']]} (restorable with memory_restore)")


if __name__ == "__main__":
    asyncio.run(main())
