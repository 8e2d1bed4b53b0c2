"""The OpenClaw plugin `mcp-memory install openclaw` writes: OpenClaw's hooks run inside its
gateway (plugin hooks registered with api.on), so this small plugin hands each event to
`mcp-memory hook <event> --harness openclaw` and returns what it prints. Written out as files by
install (and shown under clients/openclaw/plugin/); it has no dependencies.

Events used (OpenClaw plugin hooks): before_prompt_build (returns prependContext: session-start
context on a session's first prompt, auto-recall on every prompt), agent_end (capture, needs
hooks.allowConversationAccess), before_compaction and session_end (capture)."""

from __future__ import annotations

import json

PLUGIN_ID = "mcp-memory"

MANIFEST = {
    "id": PLUGIN_ID,
    "name": "mcp-memory",
    "description": "Auto-recall and auto-capture with mcp-memory (PostgreSQL long-term memory).",
    "configSchema": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "command": {"type": "string", "description": "The mcp-memory executable."},
            "args": {"type": "array", "items": {"type": "string"},
                     "description": "Extra flags for every hook (database, user, project)."},
            "recallTimeoutMs": {"type": "number", "default": 2500},
            "captureTimeoutMs": {"type": "number", "default": 60000},
        },
    },
}

PACKAGE = {"name": "mcp-memory-openclaw", "version": "1.0.0", "private": True, "type": "module",
           "openclaw": {"extensions": ["./index.js"]}}

INDEX_JS = r"""// mcp-memory for OpenClaw: each hook event goes to `mcp-memory hook <event> --harness openclaw`
// (JSON on stdin, {"prependContext": "..."} or nothing on stdout). Written by `mcp-memory install openclaw`.
import { spawn } from "node:child_process";

function run(config, event, payload, timeoutMs) {
  return new Promise((resolve) => {
    let out = "";
    let done = false;
    const finish = (value) => { if (!done) { done = true; clearTimeout(timer); resolve(value); } };
    let child;
    try {
      child = spawn(config.command || "mcp-memory", ["hook", event, "--harness", "openclaw", ...(config.args || [])],
                    { stdio: ["pipe", "pipe", "inherit"] });
    } catch (error) {
      return finish("");
    }
    const timer = setTimeout(() => { child.kill("SIGTERM"); finish(""); }, timeoutMs);
    child.on("error", () => finish(""));
    child.stdout.on("data", (chunk) => { out += chunk; });
    child.on("close", () => finish(out));
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

function context(text) {
  try { return JSON.parse(text).prependContext || ""; } catch { return ""; }
}

function where(ctx) {
  return { sessionId: ctx?.sessionId, sessionKey: ctx?.sessionKey, sessionFile: ctx?.sessionFile,
           workspaceDir: ctx?.workspaceDir, agentId: ctx?.agentId };
}

export default {
  id: "mcp-memory",
  name: "mcp-memory",
  description: "Auto-recall and auto-capture with mcp-memory",
  register(api) {
    const config = api.pluginConfig || {};
    const recallMs = config.recallTimeoutMs || 2500;
    const captureMs = config.captureTimeoutMs || 60000;
    const started = new Set();
    api.on("before_prompt_build", async (event, ctx) => {
      const payload = { ...where(ctx), prompt: event?.prompt || "" };
      const key = payload.sessionKey || payload.sessionId || "";
      const parts = [];
      if (!started.has(key)) {
        started.add(key);
        parts.push(context(await run(config, "session-start", payload, recallMs)));
      }
      parts.push(context(await run(config, "prompt-submit", payload, recallMs)));
      const text = parts.filter(Boolean).join("\n\n");
      return text ? { prependContext: text } : undefined;
    });
    const capture = (name) => async (event, ctx) => {
      const payload = { ...where(ctx) };
      if (Array.isArray(event?.messages)) payload.messages = event.messages;
      if (event?.sessionFile) payload.sessionFile = event.sessionFile;
      if (payload.messages || payload.sessionFile) await run(config, name, payload, captureMs);
    };
    api.on("agent_end", capture("stop"));
    api.on("before_compaction", capture("pre-compact"));
    api.on("session_end", capture("session-end"));
  },
};
"""


def files() -> dict[str, str]:
    return {"openclaw.plugin.json": json.dumps(MANIFEST, indent=2) + "\n",
            "package.json": json.dumps(PACKAGE, indent=2) + "\n",
            "index.js": INDEX_JS}
