"""OpenClaw's real gateway (`openclaw gateway run`, turns from `openclaw agent` through it): a new
session asks for its session-start block once, and that block is in the first prompt's context.

The gateway loads the plugin's module twice in one thread (one instance per plugin registry): the
instance it starts with handles session_start, the one the agent run sees handles the turn's
before_prompt_build. Skipped without OpenClaw (MCP_MEMORY_TEST_OPENCLAW or `openclaw` on PATH)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

from .test_resident import CLI, Store, initialize, rpc, store  # noqa: F401 (the fixture)
from .test_resident_clients import free_port, listening

BLOCK = "Recent memories for"   # the session-start block's heading (recall.session_context)
RECALL = "auto-recall"          # prompt-submit's


def test_a_new_gateway_session_asks_session_start_once_and_its_block_reaches_the_first_prompt(
        store: Store, tmp_path: Path) -> None:  # noqa: F811
    import json5

    from .openclaw_standin import StandIn as OpenAIStandIn
    from .test_install import openclaw_cli

    openclaw = openclaw_cli()
    other = store.popen()   # another window starts the resident server and writes what the block shows
    try:
        initialize(other)
        written = rpc(other, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_write",
                      "arguments": {"content": "The compost bin is emptied on Fridays", "scope": "user"}}})
        assert written["result"]["isError"] is False, written
    finally:
        other.stdin.close()
        assert other.wait(timeout=20) == 0

    home, workspace = tmp_path / "home", tmp_path / "garden"
    (home / ".openclaw").mkdir(parents=True)
    workspace.mkdir()
    port = free_port()
    config = home / ".openclaw" / "openclaw.json"
    with OpenAIStandIn() as model:
        config.write_text(json.dumps({
            "agents": {"defaults": {"model": {"primary": "stand/m1"}, "workspace": str(workspace)}},
            "models": {"providers": {"stand": model.provider()}},
            "gateway": {"port": port, "mode": "local", "bind": "loopback", "auth": {"mode": "none"}}}))
        out = subprocess.run([CLI, "install", "openclaw", "--home", str(home), "--database-url", store.url,
                              "--data-dir", str(store.data), "--user", "alice"], capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        data = json5.loads(config.read_text())
        data["mcp"]["servers"]["memory"].setdefault("env", {}).update(
            {"XDG_RUNTIME_DIR": str(store.runtime), "MCP_MEMORY_HOOK_TRACE": "1"})
        config.write_text(json.dumps(data, indent=2))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_MEMORY_", "OPENCLAW_"))}
        env["HOME"] = str(home)
        log = tmp_path / "gateway.log"

        def asked(event: str) -> int:
            return len(re.findall(rf"mcp-memory hook {event}: ", log.read_text()))

        def turn(session: str, prompt: str) -> str:
            run = subprocess.run([openclaw, "agent", "--agent", "main", "--session-id", session, "-m", prompt],
                                 cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=300)
            assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
            return model.seen()

        with log.open("wb") as sink:
            gateway = subprocess.Popen([openclaw, "gateway", "run", "--port", str(port), "--auth", "none",
                                        "--bind", "loopback"], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                                       stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            listening(gateway, port, log)
            first = turn("g-1", "What should I do in the garden today?")
            assert (asked("session-start"), asked("prompt-submit")) == (1, 1), log.read_text()[-5000:]
            assert BLOCK in first and "compost bin is emptied on Fridays" in first, first[-3000:]
            # The session's next turn asks no block again; another new session asks its own once.
            turn("g-1", "And what about the greenhouse?")
            assert (asked("session-start"), asked("prompt-submit")) == (1, 2), log.read_text()[-5000:]
            other_session = turn("g-2", "What should I do in the garden today?")
            assert (asked("session-start"), asked("prompt-submit")) == (2, 3), log.read_text()[-5000:]
            assert BLOCK in other_session, other_session[-3000:]
        finally:
            os.killpg(gateway.pid, signal.SIGTERM)
            gateway.wait(timeout=60)
