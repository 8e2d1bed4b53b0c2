// mcp-memory for OpenClaw: each hook event goes to `mcp-memory hook <event> --harness openclaw`
// (JSON on stdin, {"prependContext": "..."} or nothing on stdout). Written by `mcp-memory install openclaw`.
import { spawn } from "node:child_process";

// OpenClaw starts stdio MCP servers with only these variables of its own environment (the MCP
// SDK's default) plus the server entry's `env`. Hooks get exactly the same, so both see the same
// store and identity settings (MCP_MEMORY_*, XDG_*): one namespace for capture and the agent's tools.
const INHERITED = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];
// OpenClaw waits 30 s for agent_end / before_compaction handlers and drains session_end within
// 2 s at shutdown, shared by every plugin; capture hands its work to a detached process at once.
const CAPTURE_MS = 25000;
const SESSION_END_MS = 1500;
const RECALL_MS = 2500;
const KEEP_SESSIONS = 1000;

function hookEnv(api, config, serverName) {
  const env = {};
  for (const name of INHERITED) {
    const value = process.env[name];
    if (value !== undefined && !value.startsWith("()")) env[name] = value;
  }
  const server = api.config?.mcp?.servers?.[serverName];
  return { ...env, ...(server?.env || {}), ...(config.env || {}) };
}

// The OpenClaw agent an event is for: the context's agentId (every agent and session hook has
// it), else the one its session key names ("agent:<id>:<rest>").
function agentOf(event, ctx) {
  const id = ctx?.agentId || event?.agentId;
  if (typeof id === "string" && id) return id.toLowerCase();
  const key = ctx?.sessionKey || event?.sessionKey;
  const named = typeof key === "string" ? /^agent:([^:]+):/.exec(key) : null;
  return named ? named[1].toLowerCase() : undefined;
}

function run(config, slot, env, event, payload, timeoutMs) {
  return new Promise((resolve) => {
    let out = "";
    let done = false;
    let timer;
    const finish = (value) => { if (!done) { done = true; clearTimeout(timer); resolve(value); } };
    let child;
    try {
      // hookCommand: the lean command install writes (the interpreter without `site`), else the executable.
      const entry = Array.isArray(config.hookCommand) && config.hookCommand.length ? config.hookCommand
        : [config.command || "mcp-memory"];
      child = spawn(entry[0], [...entry.slice(1), "hook", event, "--harness", "openclaw", ...(slot.args || [])],
                    { stdio: ["pipe", "pipe", "inherit"], env });
    } catch (error) {
      return finish("");
    }
    timer = setTimeout(() => { child.kill("SIGTERM"); finish(""); }, timeoutMs);
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

function firstTurn(event) {
  const messages = Array.isArray(event?.messages) ? event.messages : [];
  return !messages.some((m) => m?.role === "user" || m?.role === "assistant");
}

// Every name a session goes by: a gateway's session_start and the turn's hooks may each carry a
// different one (the key on one, the id on the other), and one session must start once.
function keysOf(event, ctx) {
  return [...new Set([ctx?.sessionKey, event?.sessionKey, ctx?.sessionId, event?.sessionId].filter(Boolean))];
}

export default {
  id: "mcp-memory",
  name: "mcp-memory",
  description: "Auto-recall and auto-capture with mcp-memory",
  register(api) {
    const config = api.pluginConfig || {};
    // With several agents, install gives each its own server entry and flags (config.agents, by
    // agent id): an event's hook runs with its agent's, so each agent's captures and recall stay in
    // the namespace its own memory tools search. An agent listed since install takes the defaults.
    const shared = { server: config.server || "memory", args: config.args || [] };
    const envs = new Map();
    const hook = (name, event, ctx, payload, timeoutMs) => {
      const agent = agentOf(event, ctx);
      const own = agent !== undefined && Object.hasOwn(config.agents || {}, agent) ? config.agents[agent] : undefined;
      const slot = { server: own?.server || shared.server, args: own?.args || shared.args };
      if (!envs.has(slot.server)) envs.set(slot.server, hookEnv(api, config, slot.server));
      return run(config, slot, envs.get(slot.server), name, payload, timeoutMs);
    };
    const recallMs = config.recallTimeoutMs || RECALL_MS;
    const captureMs = Math.min(config.captureTimeoutMs || CAPTURE_MS, CAPTURE_MS);
    // The session-start block, asked for when the session starts (as Claude Code's SessionStart),
    // handed over with the session's first prompt; recall then runs after it has finished, so it
    // leaves out what the block already holds. OpenClaw emits session_start on a gateway session's
    // first turn, without waiting for it, and not at all for `openclaw agent --local`: a first turn
    // (no earlier messages) that finds no block asks for it itself. Any other prompt runs one hook.
    const starts = new Map();
    const remember = (keys, value) => {
      for (const key of keys) {
        starts.delete(key);
        starts.set(key, value);
      }
      while (starts.size > KEEP_SESSIONS) starts.delete(starts.keys().next().value);
    };
    const started = (keys) => keys.map((key) => starts.get(key)).find((value) => value !== undefined);
    const startPayload = (event, ctx) => ({ sessionId: ctx?.sessionId || event?.sessionId,
                                           sessionKey: ctx?.sessionKey || event?.sessionKey, agentId: ctx?.agentId });
    api.on("session_start", (event, ctx) => {
      const keys = keysOf(event, ctx);
      if (!keys.length || started(keys) !== undefined) return;
      remember(keys, hook("session-start", event, ctx, startPayload(event, ctx), recallMs).then(context));
    });
    api.on("before_prompt_build", async (event, ctx) => {
      const payload = { ...where(ctx), prompt: event?.prompt || "" };
      const keys = keysOf(event, ctx);
      let start = started(keys);
      if (start === undefined && firstTurn(event)) {
        start = hook("session-start", event, ctx, startPayload(event, ctx), recallMs).then(context);
      }
      if (keys.length) remember(keys, Promise.resolve(""));   // handed over once
      const parts = [start === undefined ? "" : await start];
      parts.push(context(await hook("prompt-submit", event, ctx, payload, recallMs)));
      const text = parts.filter(Boolean).join("\n\n");
      return text ? { prependContext: text } : undefined;
    });
    const capture = (name, limitMs) => async (event, ctx) => {
      const payload = { ...where(ctx) };
      payload.sessionId = payload.sessionId || event?.sessionId;
      payload.sessionKey = payload.sessionKey || event?.sessionKey;
      if (Array.isArray(event?.messages)) payload.messages = event.messages;
      if (event?.sessionFile) payload.sessionFile = event.sessionFile;
      if (name === "session-end") for (const key of keysOf(event, ctx)) starts.delete(key);
      if (payload.messages || payload.sessionFile) await hook(name, event, ctx, payload, limitMs);
    };
    api.on("agent_end", capture("stop", captureMs));
    api.on("before_compaction", capture("pre-compact", captureMs));
    api.on("session_end", capture("session-end", Math.min(captureMs, SESSION_END_MS)));
  },
};
