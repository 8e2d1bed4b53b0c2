"""The peer for bench/side_by_side.py: doobidoo `mcp-memory-service` (12.4.0) over stdio, as
`../shared/peers/setup_doobidoo.sh` installs it (nothing here installs anything).

How it is run (read from its source, mcp_memory_service/config and storage/mixins):
  * `memory server` (stdio), HOME set to the install's home so its ONNX loader finds the int8
    all-MiniLM-L6-v2 file under ~/.cache/mcp_memory/onnx_models (the same model file we use);
    MCP_MEMORY_USE_ONNX=1 (no torch);
  * storage sqlite_vec in a fresh file (MCP_MEMORY_SQLITE_PATH) and a fresh base dir for its backups
    (MCP_MEMORY_BASE_DIR), started in that directory so no `.env` of ours or its own is read;
  * its best search: `memory_search` with mode "hybrid" (FTS5 BM25 + sqlite-vec kNN) and
    MCP_HYBRID_FUSION_METHOD=rrf (its default fusion is a weighted average);
  * writes with `memory_store` and a `conversation_id`: that is its documented way to store
    conversation turns, and it skips its semantic de-duplication (cosine >= 0.85 within 24 h),
    which would otherwise drop short look-alike turns ("Thanks!") and, with them, evidence.
It caches text embeddings in a process-wide LRU of 1,024 entries keyed by text
(storage/shared.py), which serves a repeated query: the side-by-side warms each question
immediately before timing it, so the entry is there whatever the cache's size.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mcp import StdioServerParameters

DEFAULT_DIR = Path("/tmp/peer-doobidoo")
_HASH = re.compile(r"^\s*Hash: ([0-9a-f]+)\s*$", re.MULTILINE)
_STORED = re.compile(r"hash: ([0-9a-f]+)\)")


def server_params(peer_dir: Path, store_dir: Path) -> StdioServerParameters:
    """The peer's stdio server on a fresh store under `store_dir`."""
    command = peer_dir / "venv" / "bin" / "memory"
    if not command.exists():
        raise SystemExit(f"--peer-dir: no {command}; install the peer with ../shared/peers/setup_doobidoo.sh")
    env = {
        "HOME": str(peer_dir / "home"),
        "PATH": "/usr/bin:/bin",
        "MCP_MEMORY_STORAGE_BACKEND": "sqlite_vec",
        "MCP_MEMORY_SQLITE_PATH": str(store_dir / "peer.db"),
        "MCP_MEMORY_BASE_DIR": str(store_dir / "base"),
        "MCP_MEMORY_USE_ONNX": "1",
        "MCP_HYBRID_FUSION_METHOD": "rrf",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "LOG_LEVEL": "WARNING",
    }
    return StdioServerParameters(command=str(command), args=["server"], env=env, cwd=str(store_dir))


def version(peer_dir: Path) -> str:
    """The installed peer's version, from its wheel's metadata directory name."""
    found = sorted((peer_dir / "venv" / "lib").glob("python3*/site-packages/mcp_memory_service-*.dist-info"))
    return found[-1].name.removeprefix("mcp_memory_service-").removesuffix(".dist-info") if found else "unknown"


def write_arguments(content: str, conversation: str) -> dict[str, Any]:
    return {"content": content, "conversation_id": conversation, "metadata": {"tags": "locomo", "type": "note"}}


def search_arguments(query: str, limit: int) -> dict[str, Any]:
    return {"query": query, "mode": "hybrid", "limit": limit}


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def stored_hash(result: Any) -> str:
    """The content hash a `memory_store` reply names ("Memory stored successfully (hash: ...)")."""
    text = text_of(result)
    m = _STORED.search(text)
    if result.is_error or not m:
        raise RuntimeError(f"peer memory_store failed: {text[:300]}")
    return m[1]


def hit_hashes(result: Any) -> list[str]:
    """The content hashes of a `memory_search` reply, best first (its text lists them as "Hash: ...")."""
    text = text_of(result)
    if result.is_error or text.startswith("Error"):
        raise RuntimeError(f"peer memory_search failed: {text[:300]}")
    return _HASH.findall(text)
