#!/bin/sh
# Container entrypoint: wait for PostgreSQL (running the migrations), create an admin API key on
# the first start and print it once, then become `mcp-memory serve --transport http`.
#
# Read here (every other MCP_MEMORY_* setting goes straight to the server):
#   MCP_MEMORY_DATABASE_URL    PostgreSQL URL (unset: the embedded server under the data dir)
#   MCP_MEMORY_DB_WAIT_S       seconds to wait for the database (default 60)
#   MCP_MEMORY_DATA_DIR        persistent directory; holds the first-start marker (default /data)
#   MCP_MEMORY_BOOTSTRAP_KEY   0 skips the bootstrap key (default 1)
#   MCP_MEMORY_BOOTSTRAP_USER  user of the bootstrap key (default admin)
#   MCP_MEMORY_HOST            bind address (default 0.0.0.0; API keys are required on it)
#   MCP_MEMORY_PORT            port (default 8765)
#   MCP_MEMORY_PUBLIC_URL      the URL clients use, shown in the banner (default http://localhost:PORT)
# Arguments are passed on to `mcp-memory serve`.
set -eu

log() {
    printf 'mcp-memory entrypoint: %s\n' "$*" >&2
}

data_dir=${MCP_MEMORY_DATA_DIR:-/data}
export MCP_MEMORY_DATA_DIR="$data_dir"
host=${MCP_MEMORY_HOST:-0.0.0.0}
port=${MCP_MEMORY_PORT:-8765}
wait_s=${MCP_MEMORY_DB_WAIT_S:-60}
case $wait_s in
    '' | *[!0-9]*)
        log "MCP_MEMORY_DB_WAIT_S must be a whole number of seconds, not '$wait_s'"
        exit 2
        ;;
esac

# A stop request while waiting ends the wait (PID 1 ignores SIGTERM without a handler).
trap 'log "stopped while waiting for the database"; exit 143' TERM INT

# --- 1. wait for the database: `migrate` succeeds once it is reachable, and leaves the schema ready.
if [ -n "${MCP_MEMORY_DATABASE_URL:-}" ]; then
    # Never print the password.
    where=$(printf '%s' "$MCP_MEMORY_DATABASE_URL" | sed 's#//[^/@]*@#//#')
else
    where="the embedded server in $data_dir"
    log "MCP_MEMORY_DATABASE_URL is not set: using the embedded PostgreSQL under $data_dir"
fi
migrate_once() {
    if command -v timeout >/dev/null 2>&1; then
        timeout "$1" mcp-memory migrate
    else
        mcp-memory migrate
    fi
}

log "waiting up to ${wait_s}s for PostgreSQL at $where"
deadline=$(($(date +%s) + wait_s))
attempt=0
while :; do
    attempt=$((attempt + 1))
    remaining=$((deadline - $(date +%s)))
    # Bound one attempt (a silently dropped connection would hang for a minute) without cutting a
    # first migration short.
    limit=$((remaining > 30 ? remaining : 30))
    status=0
    output=$(migrate_once "$limit" 2>&1) || status=$?
    if [ "$status" -eq 0 ]; then
        log "database ready: $(printf '%s\n' "$output" | tail -n 1)"
        break
    fi
    reason=$(printf '%s\n' "$output" | sed '/^[[:space:]]*$/d' | tail -n 1)
    if [ "$status" -eq 124 ]; then
        reason="no answer within ${limit}s"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
        log "ERROR: the database at $where was not ready within ${wait_s}s ($attempt attempts)."
        log "last error: ${reason:-exit status $status}"
        log "check MCP_MEMORY_DATABASE_URL, or raise MCP_MEMORY_DB_WAIT_S"
        exit 1
    fi
    log "database not ready (attempt $attempt): ${reason:-exit status $status}; retrying"
    sleep 1
done
trap - TERM INT

# --- 2. first start only: an admin API key, printed once. The marker remembers that it was
# created; the key itself is never written anywhere.
marker="$data_dir/.bootstrap-key-created"
case ${MCP_MEMORY_BOOTSTRAP_KEY:-1} in
    0 | false | no | off)
        log "MCP_MEMORY_BOOTSTRAP_KEY=${MCP_MEMORY_BOOTSTRAP_KEY}: not creating a bootstrap key"
        ;;
    *)
        if [ -e "$marker" ]; then
            log "the bootstrap key was created on the first start ($marker); create more keys with:"
            log "  mcp-memory keys create --user USER --name NAME"
        else
            user=${MCP_MEMORY_BOOTSTRAP_USER:-admin}
            pending="$marker.$$"
            # Check that the marker can be written before making a key it would have to remember.
            if ! mkdir -p "$data_dir" 2>/dev/null || ! : >"$pending" 2>/dev/null; then
                log "ERROR: cannot write to $data_dir (MCP_MEMORY_DATA_DIR): mount a writable volume there,"
                log "or set MCP_MEMORY_BOOTSTRAP_KEY=0 and create keys with \`mcp-memory keys create\`"
                exit 1
            fi
            # The key goes to stdout (captured); `keys create` says which key it made on stderr.
            if ! key=$(mcp-memory keys create --user "$user" --name bootstrap --perms read,write,forget,admin) \
                || [ -z "$key" ]; then
                rm -f "$pending"
                log "ERROR: could not create the bootstrap API key"
                exit 1
            fi
            printf 'bootstrap API key for user %s created %s\n' "$user" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$pending"
            mv "$pending" "$marker"
            url=${MCP_MEMORY_PUBLIC_URL:-http://localhost:$port}
            url=${url%/}
            cat <<EOF
================================================================================
  MCP-MEMORY BOOTSTRAP API KEY  (user $user; read,write,forget,admin)
  Shown ONCE, on the first start; it is not stored anywhere. Save it now.

  $key

  Clients send it as:  Authorization: Bearer <key>
  claude mcp add --transport http memory $url/mcp --header "Authorization: Bearer <key>"
================================================================================
EOF
            unset key
        fi
        ;;
esac

# --- 3. become the server (exec: it receives SIGTERM directly and shuts down gracefully).
exec mcp-memory serve --transport http --host "$host" --port "$port" "$@"
