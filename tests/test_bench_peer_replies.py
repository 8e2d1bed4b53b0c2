"""The side-by-side benchmark reads the peer's replies as text (it has no structured output):
the hashes must come out in rank order, and a failed call must not read as an empty result."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp.types import CallToolResult, TextContent

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import peer_doobidoo as peer  # noqa: E402

H1, H2 = "1cea838a8d9c48e5e0b9ddb818ca0a4e12c61e89e8af3188ab215f64d9921b1b", "56330f28997e8374e8abb678"


def reply(text: str, error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=error)


def test_search_reply_gives_hashes_best_first() -> None:
    text = (f"Found 2 memories (mode: hybrid) for query: 'Hash: {H2}'\n\n"
            f"1. Caroline: the hash is in the text. Hash: deadbeef\n   Hash: {H1}\n   Created: 2026-11-26 [locomo]\n\n"
            f"2. Caroline: Thanks!\n   Hash: {H2}\n   Created: 2026-11-26 [locomo]")
    assert peer.hit_hashes(reply(text)) == [H1, H2]
    assert peer.hit_hashes(reply("No memories found for query: 'x'")) == []


def test_failed_search_and_store_raise() -> None:
    with pytest.raises(RuntimeError, match="memory_search failed"):
        peer.hit_hashes(reply("Error searching memories: database is locked"))
    with pytest.raises(RuntimeError, match="memory_store failed"):
        peer.stored_hash(reply("Error storing memory: duplicate content", error=True))
    assert peer.stored_hash(reply(f"Memory stored successfully (hash: {H1})")) == H1
