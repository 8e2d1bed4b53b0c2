"""How much memory the embedded server keeps table and index pages in (its shared_buffers).

PostgreSQL's own default, 128 MB, is sized to start anywhere, not to search a big store: a search
walks the vector index, and each index page outside shared_buffers is a read from the operating
system's cache. At a million memories (an index of ~2 GB) a tagged search took 173-192 ms p50
with 128 MB and 73-94 ms with 5.9 GB (docs/benchmarks.md, "The embedded server's page cache").
PostgreSQL's documentation suggests a quarter of the machine's memory. The embedded server is
given what its store needs, with room to grow, up to that: a store of a few thousand memories
gets PostgreSQL's default as before, which every figure of a small store was measured with (a
buffer table sized for gigabytes costs each lookup a little more, and was not measured to pay
there). The size is read at every start, so it follows the store. A server of the user's own is
theirs to size (`mcp-memory doctor` says when its vector index does not fit)."""

from __future__ import annotations

import os
from pathlib import Path

import psutil

MB = 1 << 20
# PostgreSQL's own default: the least the embedded server is given.
LEAST_MB = 128
# The most sized by itself: past this a store belongs on a server of its own (docs/operations.md).
MOST_MB = 8192
SHARE = 0.25
# Room for the store to grow before the next start: its size on disk times this.
GROWTH = 1.5

# Where a container's memory limit is read: cgroup v2, then v1 (which says "no limit" with a huge number).
CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def memory_bytes(limits: tuple[Path, ...] = CGROUP_LIMITS) -> int:
    """The memory this process may use: the machine's, or its container's limit where lower (a
    quarter of a 64 GB host would have a container of 2 GB killed as its store grew)."""
    total = psutil.virtual_memory().total
    for path in limits:
        try:
            said = path.read_text().strip()
        except OSError:
            continue
        if said.isdigit() and 0 < int(said) < total:
            total = int(said)
    return total


def store_bytes(pgdata: Path) -> int:
    """The bytes of the cluster's databases on disk (its `base` directory; ~7 ms for a million
    memories' 1,300 files)."""
    total = 0
    for root, _, files in os.walk(pgdata / "base"):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:  # a file dropped while walking
                continue
    return total


def shared_buffers_mb(setting: int, *, store: int, memory: int | None = None) -> int:
    """The embedded server's shared_buffers in MB: `setting` when it is not 0, else the `store`'s
    bytes times GROWTH, at least LEAST_MB and at most SHARE of `memory` (`memory_bytes()` when not
    given) or MOST_MB."""
    if setting:
        return setting
    most = min(MOST_MB, int(SHARE * (memory_bytes() if memory is None else memory) / MB))
    return max(LEAST_MB, min(most, int(GROWTH * store / MB)))
