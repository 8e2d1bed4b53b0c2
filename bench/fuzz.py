"""Hostile calls over stdio: no input may break the server, leak, or change anything on failure.

Starts `mcp-memory serve` (stdio, embedded database in a temp dir) as alice, after bob has
stored memories carrying secret markers through his own server on the same database, then sends
N calls drawn at random: wrong types, extra fields, huge and odd strings (NUL, lone surrogates,
control and right-to-left characters), injection strings, out-of-range dates and numbers, forged
forget tokens and cursors, random ids, deep nesting, and JSON-RPC messages of the wrong shape,
mixed with valid calls. It counts:

  deaths      the server process exited
  unanswered  a request with an id got no response within the timeout
  internal    an answer that is a bare "Error executing tool …" or an "internal error" id
  leaks       bob's markers in any answer to alice
  side        memories in alice's store that no successful call created (or missing ones)
  poisoned    a plain search failing after the run

Usage: python bench/fuzz.py [--calls 10000] [--seed 1] [--timeout 10]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from locomo import REPO, machine, table  # noqa: E402

SERVE = str(Path(sys.executable).with_name("mcp-memory"))
TOOLS = ["memory_search", "memory_get", "memory_list", "memory_write", "memory_write_many", "memory_update",
         "memory_forget", "memory_restore", "memory_history"]
MARKER = "BOBSECRET"
ODD = ["", " ", "\x00", "a\x00b", "\ud800", "\udfff x", "\u202eevil", "\x1b[31mred", "\\", "'", "\"", "$1",
       "%s%s%n", "'; DROP TABLE memories; --", "1 OR 1=1", "<script>alert(1)</script>", "../../etc/passwd",
       "x" * 100_000, "🙂" * 5000, "\n" * 1000, "memory://memories/../../x", "NaN", "Infinity", "-1e999",
       "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59.999999Z", "1215-06-15T00:00:00Z", "2024-13-45",
       "fgt_" + "A" * 32, "eyJiIjoie30iLCJzIjoiMDAwMCJ9", str(uuid.uuid4())]
VALUES: list[Any] = [*ODD, None, True, False, 0, -1, 1, 2**63, -2**63, 1e308, -1e308, 0.5, [], {}, [None],
                     {"a": 1}, [1, 2, 3], ["x"] * 200, {"$gt": ""}, [[[[[]]]]]]
ARGS = ["query", "content", "title", "kind", "tags", "metadata", "importance", "pinned", "priority", "scope",
        "occurred_at", "idempotency_key", "supersedes", "ids", "id", "limit", "kinds", "since", "until", "as_of",
        "explain", "order", "cursor", "mode", "token", "reason", "force", "if_version", "items", "_meta",
        "confirmation", "bogus"]


class Server:
    def __init__(self, data_dir: Path, user: str) -> None:
        env = {**os.environ, "MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_USER": user,
               "MCP_MEMORY_PROJECT": "none", "MCP_MEMORY_LOG_LEVEL": "ERROR"}
        # --standalone: the in-process server, no resident server left running after the bench.
        self.proc = subprocess.Popen([SERVE, "serve", "--standalone"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0
        self.buffer = b""

    def send(self, line: str) -> None:
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: Any, timeout: float) -> dict[str, Any] | None:
        self.next_id += 1
        rid = self.next_id
        self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        return self.wait(rid, timeout)

    def wait(self, rid: Any, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                reply = json.loads(line)
                if reply.get("id") == rid:
                    return reply
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        return None

    def call(self, tool: str, args: Any, timeout: float) -> dict[str, Any] | None:
        return self.request("tools/call", {"name": tool, "arguments": args}, timeout)

    def start(self) -> None:
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "fuzz", "version": "0"}}, 120)
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def stop(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def hostile_args(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.05:
        return rng.choice(VALUES)  # arguments that are not an object
    args = {}
    for name in rng.sample(ARGS, rng.randint(0, 5)):
        args[name] = rng.choice(VALUES)
    if rng.random() < 0.3:  # near-valid: the right argument with an odd value
        args.setdefault("query", rng.choice(ODD))
        args.setdefault("content", rng.choice(ODD))
    if rng.random() < 0.05:
        deep: Any = "x"
        for _ in range(rng.randint(50, 400)):
            deep = [deep]
        args["metadata"] = {"deep": deep}
    return args


def valid_call(rng: random.Random, i: int) -> tuple[str, dict[str, Any]]:
    return rng.choice([
        ("memory_write", {"content": f"fuzz memory {i} about {rng.choice(['tea', 'oslo', 'vim', 'jenkins'])}"}),
        ("memory_search", {"query": rng.choice(["tea", "oslo now", "what does alice use", "jenkins"])}),
        ("memory_list", {"limit": 5}),
    ])


def raw_line(rng: random.Random, rid: int) -> str:
    """A JSON-RPC message of the wrong shape, or with content the SDK's reader would drop."""
    def call(params: str) -> str:
        return '{"jsonrpc":"2.0","id":' + str(rid) + ',"method":"tools/call","params":' + params + "}"

    return rng.choice([
        call('"str"'),
        call("[1]"),
        call('{"name":"memory_search","arguments":{"query":"\\ud800"}}'),
        call('{"name":"memory_search","arguments":' + "[" * 300 + "]" * 300 + "}"),
        json.dumps({"jsonrpc": "2.0", "id": rid, "method": "no/such/method", "params": {}}),
        json.dumps({"jsonrpc": "2.0", "id": rid, "method": "resources/read",
                    "params": {"uri": "memory://memories/../../etc"}}),
        json.dumps({"jsonrpc": "2.0", "id": rid, "method": "resources/read",
                    "params": {"uri": "memory://memories?cursor=" + "x" * 50}}),
    ])


def text_of(reply: dict[str, Any]) -> str:
    return json.dumps(reply, ensure_ascii=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "fuzz.json")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    counts = {"calls": 0, "errors answered": 0, "deaths": 0, "unanswered": 0, "internal": 0, "leaks": 0,
              "side": 0, "poisoned": 0}
    examples: dict[str, list[str]] = {k: [] for k in counts}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mcp-memory-fuzz-") as tmp:
        bob = Server(Path(tmp), "bob")
        bob.start()
        for i in range(20):
            bob.call("memory_write", {"content": f"{MARKER}-{i} bob's private note about tea and oslo"}, 60)
        alice = Server(Path(tmp), "alice")
        alice.start()
        created: set[str] = set()
        for i in range(args.calls):
            if alice.proc.poll() is not None:
                counts["deaths"] += 1
                examples["deaths"].append(f"exit {alice.proc.returncode} at call {i}")
                alice = Server(Path(tmp), "alice")
                alice.start()
            counts["calls"] += 1
            kind = rng.random()
            if kind < 0.1:
                alice.next_id += 1
                alice.send(raw_line(rng, alice.next_id))
                reply = alice.wait(alice.next_id, args.timeout)
                tool = "raw"
            elif kind < 0.3:
                tool, call_args = valid_call(rng, i)
                reply = alice.call(tool, call_args, args.timeout)
            else:
                tool = rng.choice(TOOLS + ["memory_delete_all", ""])
                reply = alice.call(tool, hostile_args(rng), args.timeout)
            if reply is None:
                counts["unanswered"] += 1
                examples["unanswered"].append(f"{tool} at call {i}")
                continue
            text = text_of(reply)
            if MARKER in text:
                counts["leaks"] += 1
                examples["leaks"].append(text[:200])
            result = reply.get("result") or {}
            if "error" in reply or result.get("isError"):
                counts["errors answered"] += 1
                content = (result.get("content") or [{}])[0]
                message = (reply.get("error") or {}).get("message") or content.get("text", "")
                if message.strip() in {f"Error executing tool {tool}", "Internal Server Error"} or \
                        "internal error" in message:
                    counts["internal"] += 1
                    examples["internal"].append(f"{tool}: {message[:200]}")
            elif tool in ("memory_write", "memory_write_many"):
                structured = result.get("structuredContent") or {}
                if structured.get("status") == "created":
                    created.add(structured["memory"]["id"])
                for item in structured.get("memories", []):
                    if item.get("status") == "created":
                        created.add(item["id"])
            elif tool in ("memory_forget",) and (result.get("structuredContent") or {}).get("mode") == "executed":
                for item in result["structuredContent"].get("forgotten", []):
                    created.discard(item["id"])
        # What alice's store holds must be exactly what her successful calls created.
        stored: set[str] = set()
        cursor = None
        while True:
            reply = alice.call("memory_list", {"limit": 100, **({"cursor": cursor} if cursor else {})}, 60)
            page = (reply or {}).get("result", {}).get("structuredContent") or {}
            stored |= {m["id"] for m in page.get("memories", [])}
            cursor = page.get("next_cursor")
            if not cursor:
                break
        counts["side"] = len(stored ^ created)
        if counts["side"]:
            examples["side"].append(f"stored-only {len(stored - created)}, created-only {len(created - stored)}")
        check = alice.call("memory_search", {"query": "fuzz memory tea"}, 60)
        if check is None or check.get("error") or check["result"].get("isError"):
            counts["poisoned"] += 1
        alice.stop()
        bob.stop()
    seconds = time.perf_counter() - started
    report = {"benchmark": "fuzz", "seed": args.seed, "counts": counts, "seconds": round(seconds, 1),
              "examples": {k: v[:5] for k, v in examples.items() if v}, "machine": machine(),
              "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(table(["count", "value"], [[k, v] for k, v in counts.items()]))
    for k, v in report["examples"].items():
        print(f"{k}: {v}")
    print(f"{seconds:.0f} s; wrote {args.out}")


if __name__ == "__main__":
    main()
