"""Side by side with the peer (doobidoo mcp-memory-service): write and search latency and LoCoMo
recall, both servers over stdio through the same MCP client library, in one run.

Protocol, the same for both servers and for each conversation (sides alternate which goes first):
  * a fresh store and a fresh server process per conversation (ours: `mcp-memory serve` on a new
    embedded data directory; the peer: `memory server` on a new sqlite-vec file, its best mode:
    hybrid search with RRF fusion, see bench/peer_doobidoo.py); a first call and two unrelated
    searches untimed (model loaded, database ready);
  * the machine is waited on until its 1-minute load average is below --quiet-load (at most
    --max-wait seconds; the load seen is printed and kept);
  * 200 pings timed: what client, pipes and the SDK's dispatch take with no tool run;
  * every turn written, one call per turn, timed ("Speaker: text [shares caption]"; ours as an
    episode with the session's date, the peer with a conversation_id);
  * every question of categories 1-4 with evidence searched twice in a row, limit 10: the first
    call is the "embedded" figure when its text was never searched before in that process (both
    servers embed an unseen query; a repeated question is left out of it), the second the
    "cached" figure: both servers keep query vectors in an in-process LRU (ours 256 entries in
    mcp_memory/vectors.py, the peer 1,024 in its storage/shared.py), and the question was just
    searched, so both find its vector whatever the cache's size. R@10 / nDCG@10 are scored on the
    second call with bench/locomo_data.py's judging;
  * ours is measured again after ANALYZE (same process, each question warmed and timed again):
    right after the writes its planner statistics may be missing (autovacuum may or may not
    have run), which is what a fresh store sees;
  * ours alone (the peer has no call that stores many separate memories) writes the same turns
    again through `memory_write_many` in batches of --batch, on a fresh store and process: the
    time per memory (a batch's time over its size) and memories per second.

Installs nothing: the peer comes from ../shared/peers/setup_doobidoo.sh (default --peer-dir
/tmp/peer-doobidoo). The default conversations, conv-30 and conv-42 (998 turns, 280 questions),
are not in the dev split (shared/datasets/locomo: conv-26, 41, 43, 47, 49), so DATASET is the full
LoCoMo file: data/locomo10.json of github.com/snap-research/LoCoMo (CC BY-NC 4.0: evaluation only,
keep it out of the repository).

Usage:
  python bench/side_by_side.py DATASET [--conversations conv-30,conv-42] [--quiet-load 0.5]
        [--max-wait 900] [--batch 50] [--limit-turns N] [--limit-questions N] [--peer-dir DIR]
        [--out bench/results/side_by_side.json] [--dump-writes writes.json]
  the full run (a few minutes of work on a quiet 2-core machine, plus the waits; under a load of
  15-20 one conversation took six):
    python bench/side_by_side.py /path/to/locomo10.json
  a quick check on a loaded machine:
    python bench/side_by_side.py /path/to/locomo10.json --conversations conv-30 --limit-turns 60 \\
        --limit-questions 10 --quiet-load 99 --out /tmp/side_by_side.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from mcp_memory.config import Settings
from mcp_memory.db import open_database
from mcp_memory.retrieval import parse_query

sys.path.insert(0, str(Path(__file__).parent))
import peer_doobidoo as peer  # noqa: E402
from locomo import Conversation, latency, load_dataset, machine, publish, table  # noqa: E402
from locomo_data import evidence_ids, mean_metrics, score, turn_text  # noqa: E402
from stdio_latency import SERVE, env_for  # noqa: E402

SIDES = ("peer", "ours")
DEFAULT_CONVERSATIONS = "conv-30,conv-42"
WARM_UP = ("what happened last week", "hello")
PINGS = 200
# The 2026 protocol drops ping; the servers here speak the legacy one, where it is the floor.
warnings.filterwarnings("ignore", message="ping is removed")


def wait_quiet(threshold: float, max_wait: float, what: str) -> dict[str, float]:
    """Wait until the 1-minute load average is below `threshold` (at most `max_wait` s)."""
    started = time.monotonic()
    load = os.getloadavg()[0]
    while load >= threshold and time.monotonic() - started < max_wait:
        time.sleep(5)
        load = os.getloadavg()[0]
    waited = time.monotonic() - started
    quiet = load < threshold
    print(f"  {what}: load {load:.2f} after {waited:.0f} s{'' if quiet else f' (not below {threshold})'}",
          file=sys.stderr, flush=True)
    return {"load_1m": round(load, 2), "waited_s": round(waited), "quiet": quiet}


class Ours:
    """`mcp-memory serve` on a fresh embedded store; keys are memory ids."""

    name = "ours"

    def __init__(self, store_dir: Path) -> None:
        self.store_dir = store_dir

    def params(self) -> StdioServerParameters:
        # --standalone: one process per server on both sides, and none left running after the bench.
        return StdioServerParameters(command=SERVE, args=["serve", "--standalone"], env=env_for(self.store_dir))

    @staticmethod
    def item(conv: Conversation, number: int, when: datetime, turn: dict[str, Any]) -> dict[str, Any]:
        return {"content": turn_text(turn), "kind": "episode", "occurred_at": when.isoformat(),
                "metadata": {"dia_id": turn["dia_id"], "conversation": conv.sample_id, "session": number}}

    async def write(self, client: Client, conv: Conversation, number: int, when: datetime,
                    turn: dict[str, Any]) -> tuple[str, bool]:
        result = await client.call_tool("memory_write", self.item(conv, number, when, turn))
        if result.is_error:
            raise RuntimeError(f"memory_write failed: {result.content}")
        out = result.structured_content
        return out["memory"]["id"], out["status"] == "duplicate"

    async def search(self, client: Client, query: str, limit: int) -> list[str]:
        result = await client.call_tool("memory_search", {"query": query, "limit": limit})
        if result.is_error:
            raise RuntimeError(f"memory_search failed: {result.content}")
        return [h["id"] for h in result.structured_content["hits"]]

    async def analyze(self) -> None:
        """ANALYZE through the owner's connection to the store the server runs on."""
        db = await open_database(Settings(data_dir=self.store_dir, database_url=None, log_level="WARNING",
                                          pool_min_size=1, pool_max_size=1))
        try:
            await db.admin.execute("ANALYZE memories")
        finally:
            await db.close()


class Peer:
    """The peer's stdio server on a fresh sqlite-vec file; keys are content hashes."""

    name = "peer"

    def __init__(self, store_dir: Path, peer_dir: Path) -> None:
        self.store_dir = store_dir
        self.peer_dir = peer_dir

    def params(self) -> StdioServerParameters:
        return peer.server_params(self.peer_dir, self.store_dir)

    async def write(self, client: Client, conv: Conversation, number: int, when: datetime,
                    turn: dict[str, Any]) -> tuple[str, bool]:
        result = await client.call_tool("memory_store", peer.write_arguments(turn_text(turn), conv.sample_id))
        return peer.stored_hash(result), False

    async def search(self, client: Client, query: str, limit: int) -> list[str]:
        return peer.hit_hashes(await client.call_tool("memory_search", peer.search_arguments(query, limit)))

    analyze = None


async def timed(call: Awaitable[Any], into: list[float]) -> Any:
    """Await `call` (a coroutine: nothing runs until awaited) and add its seconds to `into`."""
    t = time.perf_counter()
    out = await call
    into.append(time.perf_counter() - t)
    return out


async def run_side(side: Ours | Peer, conv: Conversation, args: argparse.Namespace) -> dict[str, Any]:
    """One server, one conversation: writes, searches (embedded, cached) and, for ours, again
    after ANALYZE. Returns the raw timings (seconds) and per-question scores."""
    times: dict[str, list[float]] = {"ping": [], "write": [], "search_embedded": [], "search_cached": []}
    out: dict[str, Any] = {"times": times, "duplicates": 0, "failed_writes": 0}
    async with Client(side.params(), mode="legacy") as client:
        for query in WARM_UP:  # model loaded, database ready, first plans made: untimed
            await side.search(client, query, args.limit)
        out["load_before_writes"] = wait_quiet(args.quiet_load, args.max_wait, f"{side.name} {conv.sample_id}")
        for _ in range(PINGS):  # the floor under every call: client, pipes and the SDK's dispatch, no tool
            await timed(client.send_ping(), times["ping"])
        keys: dict[str, str] = {}
        by_text: dict[str, str] = {}
        turns = turns_of(conv, args.limit_turns)
        for number, when, turn in turns:
            try:
                key, duplicate = await timed(side.write(client, conv, number, when, turn), times["write"])
            except RuntimeError:
                # A refused write (the peer refuses a text it holds): the turn is the earlier copy.
                if turn_text(turn) not in by_text:
                    raise
                key, duplicate = by_text[turn_text(turn)], True
                out["failed_writes"] += 1
            keys[turn["dia_id"]] = by_text.setdefault(turn_text(turn), key)
            out["duplicates"] += duplicate
            out.setdefault("write_log", []).append({"dia_id": turn["dia_id"], "chars": len(turn_text(turn)),
                                                    "ms": round(times["write"][-1] * 1000, 2)})
        jobs = []
        for q in conv.questions:
            evidence = [keys[d] for d in evidence_ids(q.get("evidence", [])) if d in keys]
            if evidence:
                jobs.append((q, evidence))
        jobs = jobs[:args.limit_questions]
        seen: set[str] = set(WARM_UP)
        scores = []
        for q, evidence in jobs:
            text = q["question"]
            # The text our server embeds is the question without its words about time.
            fresh = not {text, parse_query(text).text} & seen
            seen |= {text, parse_query(text).text}
            first: list[float] = []
            await timed(side.search(client, text, args.limit), first)
            if fresh:
                times["search_embedded"] += first
            ranked = await timed(side.search(client, text, args.limit), times["search_cached"])
            scores.append({**score(ranked, evidence), "category": q["category"]})
        out["scores"] = scores
        out["load_after_searches"] = round(os.getloadavg()[0], 2)
        if side.analyze is not None:
            await side.analyze()
            times["search_cached_analyzed"] = []
            for q, _ in jobs:
                await side.search(client, q["question"], args.limit)
                await timed(side.search(client, q["question"], args.limit), times["search_cached_analyzed"])
    out["turns"] = len(turns)
    out["questions"] = len(jobs)
    return out


def turns_of(conv: Conversation, limit: int | None) -> list[tuple[int, datetime, dict[str, Any]]]:
    return [(n, when, turn) for n, when, ts in conv.sessions for turn in ts][:limit]


async def run_batches(store_dir: Path, conv: Conversation, args: argparse.Namespace) -> dict[str, Any]:
    """Ours only: the same turns through `memory_write_many` in batches of --batch, on a fresh
    store and process (the peer has no call that stores many separate memories: its
    memory_store_session keeps a whole session as one memory)."""
    side = Ours(store_dir)
    times: dict[str, list[float]] = {"batch": [], "per_memory": []}
    async with Client(side.params(), mode="legacy") as client:
        for query in WARM_UP:
            await side.search(client, query, args.limit)
        load = wait_quiet(args.quiet_load, args.max_wait, f"ours {conv.sample_id}, batches")
        turns = turns_of(conv, args.limit_turns)
        for start in range(0, len(turns), args.batch):
            chunk = [Ours.item(conv, *t) for t in turns[start:start + args.batch]]
            result = await timed(client.call_tool("memory_write_many", {"items": chunk}), times["batch"])
            if result.is_error:
                raise RuntimeError(f"memory_write_many failed: {result.content}")
            times["per_memory"].append(times["batch"][-1] / len(chunk))
    return {"times": times, "memories": len(turns), "load_before_writes": load}


def pick(convs: list[Conversation], names: str) -> list[Conversation]:
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    by_id = {c.sample_id: c for c in convs}
    missing = [n for n in wanted if n not in by_id]
    if missing:
        raise SystemExit(f"--conversations: {', '.join(missing)} not in the dataset (it has {', '.join(by_id)}); "
                         "the default ones are in the full LoCoMo file, not the dev split")
    return [by_id[n] for n in wanted]


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    convs = pick(load_dataset(args.dataset, None), args.conversations)
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in SIDES}
    batches: list[dict[str, Any]] = []
    for i, conv in enumerate(convs):
        for name in (SIDES if i % 2 == 0 else SIDES[::-1]):  # neither side always first
            with tempfile.TemporaryDirectory(prefix=f"mcp-memory-side-{name}-") as tmp:
                side = Ours(Path(tmp)) if name == "ours" else Peer(Path(tmp), args.peer_dir)
                t = time.perf_counter()
                runs[name].append(await run_side(side, conv, args))
                print(f"{name} {conv.sample_id}: {runs[name][-1]['turns']} turns, {runs[name][-1]['questions']} "
                      f"questions in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
        if args.batch:
            with tempfile.TemporaryDirectory(prefix="mcp-memory-side-batch-") as tmp:
                batches.append(await run_batches(Path(tmp), conv, args))
    if args.dump_writes:
        dump = [{"side": name, "conversation": conv.sample_id, **w}
                for name, per_conv in runs.items() for conv, r in zip(convs, per_conv, strict=True)
                for w in r.get("write_log", [])]
        args.dump_writes.write_text(json.dumps(dump, indent=1))
    sides = {}
    for name, per_conv in runs.items():
        measures = {k: latency([t for r in per_conv for t in r["times"].get(k, [])])
                    for k in per_conv[0]["times"]}
        sides[name] = {
            "latency": measures, "quality": mean_metrics([s for r in per_conv for s in r["scores"]]),
            "duplicates": sum(r["duplicates"] for r in per_conv),
            "refused_writes": sum(r["failed_writes"] for r in per_conv),
            "load": [{k: r[k] for k in ("load_before_writes", "load_after_searches")} for r in per_conv]}
    if batches:
        seconds = sum(sum(b["times"]["batch"]) for b in batches)
        memories = sum(b["memories"] for b in batches)
        sides["ours"]["write_many"] = {
            "batch": args.batch, "per_batch": latency([t for b in batches for t in b["times"]["batch"]]),
            "per_memory": latency([t for b in batches for t in b["times"]["per_memory"]]),
            "memories_per_s": round(memories / seconds, 1), "load": [b["load_before_writes"] for b in batches]}
    return {"benchmark": "side-by-side", "dataset": str(args.dataset), "conversations": [c.sample_id for c in convs],
            "turns": sum(r["turns"] for r in runs["ours"]), "questions": sum(r["questions"] for r in runs["ours"]),
            "limit": args.limit, "sides": sides,
            "peer": f"doobidoo mcp-memory-service {peer.version(args.peer_dir)} (sqlite-vec, hybrid, RRF)",
            "machine": machine(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}


def report(results: dict[str, Any]) -> str:
    peer_side, ours = results["sides"]["peer"], results["sides"]["ours"]
    rows = []
    for key, label in (("ping", "ping (no tool: the floor)"), ("write", "write"),
                       ("search_embedded", "search, query embedded"),
                       ("search_cached", "search, vector cached"),
                       ("search_cached_analyzed", "search, cached, after ANALYZE")):
        p = peer_side["latency"].get("search_cached" if key == "search_cached_analyzed" else key)
        o = ours["latency"].get(key)
        if not p or not o or not p.get("n") or not o.get("n"):
            continue
        rows.append([label, f"{p['p50_ms']:.1f} / {p['p95_ms']:.1f}", f"{o['p50_ms']:.1f} / {o['p95_ms']:.1f}",
                     f"{p['p50_ms'] / o['p50_ms']:.2f}x / {p['p95_ms'] / o['p95_ms']:.2f}x", o["n"]])
    if many := ours.get("write_many"):
        o = many["per_memory"]
        rows.append([f"write_many by {many['batch']}: ms/memory", "-", f"{o['p50_ms']:.1f} / {o['p95_ms']:.1f}",
                     f"({many['memories_per_s']:.0f}/s)", o["n"]])
    quality = [[f"{m}", peer_side["quality"].get(m, 0.0), ours["quality"].get(m, 0.0)]
               for m in ("R@5", "R@10", "nDCG@10", "MRR")]
    loads = ", ".join(f"{name} {[r['load_before_writes']['load_1m'] for r in results['sides'][name]['load']]}"
                      for name in SIDES)
    return "\n".join([
        f"side by side: {', '.join(results['conversations'])}, {results['turns']} turns, "
        f"{results['questions']} questions (limit {results['limit']})",
        table(["measure (p50 / p95 ms)", "peer", "ours", "peer/ours", "n ours"], rows, 30),
        "(the after-ANALYZE row compares with the peer's cached search)",
        "",
        table(["metric", "peer", "ours"], quality, 10),
        "",
        f"1-minute load before the writes: {loads}; refused or duplicate writes: "
        f"peer {peer_side['refused_writes'] + peer_side['duplicates']}, ours {ours['duplicates']}",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path, help="the full LoCoMo file (locomo10.json)")
    parser.add_argument("--conversations", default=DEFAULT_CONVERSATIONS, help="comma-separated sample ids")
    parser.add_argument("--limit", type=int, default=10, help="search limit (R@10, nDCG@10 need 10)")
    parser.add_argument("--limit-turns", type=int, help="write only the first N turns of each conversation")
    parser.add_argument("--limit-questions", type=int, help="search only the first N scorable questions of each")
    parser.add_argument("--batch", type=int, default=50,
                        help="also write the turns through memory_write_many in batches of this size (ours; 0: no)")
    parser.add_argument("--quiet-load", type=float, default=0.5, help="wait for a 1-minute load average below this")
    parser.add_argument("--max-wait", type=float, default=900, help="seconds to wait for it, each time")
    parser.add_argument("--peer-dir", type=Path, default=peer.DEFAULT_DIR)
    parser.add_argument("--dump-writes", type=Path,
                        help="also write every memory_write's time (ms), turn and length as JSON here")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "side_by_side.json")
    args = parser.parse_args()
    if not args.dataset.is_file():
        parser.error(f"dataset: no file {args.dataset}")
    if args.limit < 10:
        parser.error("--limit must be at least 10 (R@10, nDCG@10)")
    if not 0 <= args.batch <= 500:
        parser.error("--batch must be between 0 and 500 (memory_write_many takes at most 500)")
    for name in ("limit_turns", "limit_questions"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    results = asyncio.run(main_async(args))
    publish(results, args.out, report(results))


if __name__ == "__main__":
    main()
