// mcp-memory for OpenClaw: each hook event goes to `mcp-memory hook <event> --harness openclaw`
// (JSON on stdin, {"prependContext": "..."} or nothing on stdout). Written by `mcp-memory install openclaw`.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";

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
// A session-start block not handed over within this long is not handed over at all: the first
// prompt asks afresh (the store may have changed since).
const START_KEEP_MS = 300000;
// OpenClaw's gateway loads this module once per plugin registry, and it has two in one thread: the
// one it starts with runs session_start (root work, outside the turn), the one the agent run's scope
// sees runs the turn's hooks. Module state is per instance, so the pending blocks live on the
// isolate's globalThis, keyed by the hook's whole identity (command, flags, env: whose memory) and
// the session, so an instance only ever takes a block asked for with its own identity.
const STARTS = Symbol.for("mcp-memory.openclaw.session-starts");
// The hook's exit code when asked only of a running server (MCP_MEMORY_HOOK_SERVER_ONLY) and none
// answered. session_start asks so: it comes before the gateway's relay has started a cold store's
// resident server, and a full path there (a whole process loading the store) would be cut off at
// RECALL_MS; the first prompt, by then served, asks instead.
const NOT_ANSWERED = 75;

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

// The hook's stdout, or null when it did not answer (timed out, failed to start, NOT_ANSWERED).
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
      return finish(null);
    }
    timer = setTimeout(() => { child.kill("SIGTERM"); finish(null); }, timeoutMs);
    child.on("error", () => finish(null));
    child.stdout.on("data", (chunk) => { out += chunk; });
    child.on("close", (code) => finish(code === NOT_ANSWERED ? null : out));
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

// null stays null: no answer, as against an empty one.
function context(text) {
  if (text === null) return null;
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
    const slotOf = (event, ctx) => {
      const agent = agentOf(event, ctx);
      const own = agent !== undefined && Object.hasOwn(config.agents || {}, agent) ? config.agents[agent] : undefined;
      const slot = { server: own?.server || shared.server, args: own?.args || shared.args };
      if (!envs.has(slot.server)) envs.set(slot.server, hookEnv(api, config, slot.server));
      return slot;
    };
    const hook = (name, event, ctx, payload, timeoutMs, extra = {}) => {
      const slot = slotOf(event, ctx);
      return run(config, slot, { ...envs.get(slot.server), ...extra }, name, payload, timeoutMs);
    };
    const principals = new Map();
    const principal = (event, ctx) => {
      const slot = slotOf(event, ctx);
      const id = JSON.stringify([slot.server, slot.args]);
      if (!principals.has(id)) {
        principals.set(id, createHash("sha256").update(JSON.stringify(
          [config.hookCommand || null, config.command || null, slot.args, envs.get(slot.server)])).digest("hex"));
      }
      return principals.get(id);
    };
    const recallMs = config.recallTimeoutMs || RECALL_MS;
    const captureMs = Math.min(config.captureTimeoutMs || CAPTURE_MS, CAPTURE_MS);
    // The session-start block, asked for when the session starts (as Claude Code's SessionStart),
    // handed over with the session's first prompt; recall then runs after it has finished, so it
    // leaves out what the block already holds. OpenClaw emits session_start on a gateway session's
    // first turn, without waiting for it, and not at all for `openclaw agent --local`: a first turn
    // (no earlier messages) that finds no block asks for it itself. Any other prompt runs one hook.
    const starts = (globalThis[STARTS] ??= new Map());
    const named = (event, ctx) => {
      const who = principal(event, ctx);
      return keysOf(event, ctx).map((key) => `${who}\0${key}`);
    };
    const remember = (keys, block) => {
      const now = Date.now();
      for (const key of keys) {
        starts.delete(key);
        starts.set(key, { at: now, block });
      }
      for (const [key, entry] of starts) {   // oldest first
        if (starts.size <= KEEP_SESSIONS && now - entry.at < START_KEEP_MS) break;
        starts.delete(key);
      }
    };
    const started = (keys) => {
      const now = Date.now();
      const entry = keys.map((key) => starts.get(key)).find((value) => value !== undefined && now - value.at < START_KEEP_MS);
      return entry?.block;
    };
    const startPayload = (event, ctx) => ({ sessionId: ctx?.sessionId || event?.sessionId,
                                           sessionKey: ctx?.sessionKey || event?.sessionKey, agentId: ctx?.agentId });
    api.on("session_start", (event, ctx) => {
      const keys = named(event, ctx);
      if (!keys.length || started(keys) !== undefined) return;
      remember(keys, hook("session-start", event, ctx, startPayload(event, ctx), recallMs,
                          { MCP_MEMORY_HOOK_SERVER_ONLY: "1" }).then(context));
    });
    api.on("before_prompt_build", async (event, ctx) => {
      const payload = { ...where(ctx), prompt: event?.prompt || "" };
      const keys = named(event, ctx);
      const start = started(keys);
      if (keys.length) remember(keys, Promise.resolve(""));   // handed over once
      let block = start === undefined ? null : await start;
      // A first turn with no block asks for it: no session_start (`--local`), or its ask was not
      // answered (no server yet, or past the time limit; one may answer by now, else the full path).
      if (block === null && firstTurn(event)) {
        block = await hook("session-start", event, ctx, startPayload(event, ctx), recallMs).then(context);
      }
      const parts = [block];
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
      if (name === "session-end") for (const key of named(event, ctx)) starts.delete(key);
      if (payload.messages || payload.sessionFile) await hook(name, event, ctx, payload, limitMs);
    };
    api.on("agent_end", capture("stop", captureMs));
    api.on("before_compaction", capture("pre-compact", captureMs));
    api.on("session_end", capture("session-end", Math.min(captureMs, SESSION_END_MS)));
  },
};
