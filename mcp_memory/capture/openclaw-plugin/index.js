// mcp-memory for OpenClaw: each hook event goes to `mcp-memory hook <event> --harness openclaw`
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
