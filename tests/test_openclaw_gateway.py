"""OpenClaw's real gateway (`openclaw gateway run`, turns from `openclaw agent` through it): a new
session asks for its session-start block once, and that block is in the first prompt's context.

The gateway loads the plugin's module twice in one thread (one instance per plugin registry): the
instance it starts with handles session_start, the one the agent run sees handles the turn's
before_prompt_build. Skipped without OpenClaw (MCP_MEMORY_TEST_OPENCLAW or `openclaw` on PATH)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from .test_install import drive_plugin, plugin_folder
from .test_resident import CLI, Store, initialize, rpc, store  # noqa: F401 (the fixture)
from .test_resident_clients import gateway_home, gateway_running

BLOCK = "Recent memories for"   # the session-start block's heading (recall.session_context)


def remember(on: Store, content: str, **env: str) -> None:
    """A window of the store (starting its resident server) writes `content` for its user."""
    other = on.popen(**env)
    try:
        initialize(other)
        written = rpc(other, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_write",
                      "arguments": {"content": content, "scope": "user"}}})
        assert written["result"]["isError"] is False, written
    finally:
        other.stdin.close()
        assert other.wait(timeout=20) == 0


async def test_the_plugin_hands_the_block_across_its_instances_not_across_users(
        store: Store, tmp_path: Path) -> None:  # noqa: F811
    """As in the gateway: session_start reaches one instance of the plugin's module, the turn's
    before_prompt_build another (a fresh import, its own register()). session_start asks the
    running server only; the first prompt takes that block without asking again. An instance whose
    hooks run as another user asks its own for the same session id and sees nothing of the first
    user's. An ask cut off at its time limit is asked again by the first prompt."""
    remember(store, "The compost bin is emptied on Fridays", MCP_MEMORY_USER="sam")
    log, slow = tmp_path / "calls.log", tmp_path / "slow-once"
    wrapper = tmp_path / "logged-mcp-memory"
    wrapper.write_text('#!/bin/sh\nu=; p=; for a in "$@"; do [ "$p" = --user ] && u=$a; p=$a; done\n'
                       f'echo "$2 $u${{MCP_MEMORY_HOOK_SERVER_ONLY:+ server-only}}" >> {log}\n'
                       f'if [ "$2" = session-start ] && [ -e {slow} ]; then rm {slow}; sleep 5; fi\n'
                       f'exec {CLI} "$@"\n')
    wrapper.chmod(0o755)
    plugin = plugin_folder(tmp_path)

    def config(user: str, timeout_ms: int = 60000) -> dict[str, object]:
        return {"command": str(wrapper), "server": "memory", "recallTimeoutMs": timeout_ms,
                "args": ["--database-url", store.url, "--data-dir", str(store.data), "--user", user,
                         "--agent", "openclaw", "--project", "none"],
                "env": {"XDG_RUNTIME_DIR": str(store.runtime)}}

    answer = await drive_plugin(tmp_path, plugin / "index.js", config("sam"), f"""\
        const instance = async (n, pluginConfig) => {{
          const copy = (await import({json.dumps((plugin / "index.js").as_uri())} + "?registry=" + n)).default;
          const own = {{}};
          copy.register({{ pluginConfig, config: {{}}, on: (name, fn) => {{ own[name] = fn; }} }});
          return own;
        }};
        const turns = await instance(2, {json.dumps(config("sam"))});
        const bobs = await instance(3, {json.dumps(config("bob"))});
        const hasty = await instance(4, {json.dumps(config("sam", 1000))});
        const prompt = {{ prompt: "what should I do in the garden today?", messages: [] }};
        const ctx = {{ sessionId: "g-1", sessionKey: "agent:main:explicit:g-1", agentId: "main" }};
        await handlers["session_start"]({{ sessionId: "g-1", sessionKey: ctx.sessionKey }}, ctx);
        const first = await turns["before_prompt_build"](prompt, ctx);
        const bob = await bobs["before_prompt_build"](prompt, ctx);
        const fs = await import("node:fs");
        fs.writeFileSync({json.dumps(str(slow))}, "");
        const late = {{ sessionId: "g-2", sessionKey: "agent:main:explicit:g-2", agentId: "main" }};
        await hasty["session_start"]({{ sessionId: "g-2", sessionKey: late.sessionKey }}, late);
        const retried = await turns["before_prompt_build"](prompt, late);
        console.log(JSON.stringify({{ first: first?.prependContext ?? "", bob: bob?.prependContext ?? "",
                                      retried: retried?.prependContext ?? "" }}));
    """)
    calls = log.read_text().splitlines()
    assert calls == ["session-start sam server-only", "prompt-submit sam",   # answered by the server, handed over
                     "session-start bob", "prompt-submit bob",               # another user: his own ask
                     "session-start sam server-only",                        # cut off at 1 s ...
                     "session-start sam", "prompt-submit sam"], calls        # ... so the first prompt asks
    assert BLOCK in answer["first"] and "compost bin is emptied on Fridays" in answer["first"], answer
    assert "compost" not in answer["bob"], answer
    assert BLOCK in answer["retried"] and "compost bin" in answer["retried"], answer


def test_a_new_gateway_session_asks_session_start_once_and_its_block_reaches_the_first_prompt(
        store: Store, tmp_path: Path) -> None:  # noqa: F811
    from .openclaw_standin import StandIn as OpenAIStandIn
    from .test_install import openclaw_cli

    openclaw = openclaw_cli()
    remember(store, "The compost bin is emptied on Fridays")   # another window, as alice (install's --user)

    workspace = tmp_path / "garden"
    workspace.mkdir()
    with OpenAIStandIn() as model:
        home, port, env = gateway_home(store, tmp_path, workspace, model)
        log = tmp_path / "gateway.log"

        def asked(event: str) -> int:
            return len(re.findall(rf"mcp-memory hook {event}: ", log.read_text()))

        def turn(session: str, prompt: str) -> str:
            run = subprocess.run([openclaw, "agent", "--agent", "main", "--session-id", session, "-m", prompt],
                                 cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=300)
            assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
            return model.seen()

        with gateway_running(openclaw, port, env, tmp_path, log):
            first = turn("g-1", "What should I do in the garden today?")
            assert (asked("session-start"), asked("prompt-submit")) == (1, 1), log.read_text()[-5000:]
            assert BLOCK in first and "compost bin is emptied on Fridays" in first, first[-3000:]
            # The session's next turn asks no block again; another new session asks its own once.
            turn("g-1", "And what about the greenhouse?")
            assert (asked("session-start"), asked("prompt-submit")) == (1, 2), log.read_text()[-5000:]
            other_session = turn("g-2", "What should I do in the garden today?")
            assert (asked("session-start"), asked("prompt-submit")) == (2, 3), log.read_text()[-5000:]
            assert BLOCK in other_session, other_session[-3000:]
