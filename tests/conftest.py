"""One embedded PostgreSQL per test session; a fresh database per test, cloned from a
migrated template (CREATE DATABASE … TEMPLATE), so tests are isolated and fast."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import asyncpg
import mcp.client.stdio
import psutil
import pytest

from mcp_memory.composition import compose
from mcp_memory.config import Settings
from mcp_memory.db import Database, open_database
from mcp_memory.db.embedded import EmbeddedPostgres
from mcp_memory.db.migrate import migrate
from mcp_memory.models import ALL_PERMISSIONS, Principal
from mcp_memory.service import MemoryService

from .chat_api import ChatAPI, chat_api

TEMPLATE = "mcp_memory_template"

# The suite's own server keeps its data in memory where the machine has room to spare: on this
# machine's disk a test's CREATE DATABASE took 0.06-0.39 s (the copy's pages written out), in
# /dev/shm 0.02 s copied as files (FILE_COPY's checkpoints flush nothing to a disk there, and its
# WAL is a record, not the copy's 9 MB). Nothing else about the server changes: its settings stay
# PostgreSQL's defaults.
MEMORY_DIR = Path("/dev/shm").resolve()
MEMORY_ROOM = 8 << 30  # two to four workers' servers, each with up to max_wal_size (1 GB) of WAL


def data_home() -> Path:
    """A new directory for the suite's server: in memory when there is room, else the temp dir. A
    tmpfs's pages are the machine's memory, so its own free size is not enough."""
    try:
        roomy = (os.access(MEMORY_DIR, os.W_OK) and shutil.disk_usage(MEMORY_DIR).free >= MEMORY_ROOM
                 and psutil.virtual_memory().available >= MEMORY_ROOM)
    except OSError:
        roomy = False
    return Path(tempfile.mkdtemp(prefix="mcp-memory-tests-", dir=MEMORY_DIR if roomy else None))

# `mcp-memory serve` over stdio relays to a resident server by default, starting one that outlives
# the test (docs/operations.md#resident-server). The suite's windows serve in-process unless a test
# asks for a resident server itself and stops it (tests/test_resident.py): subprocesses inherit this,
# and so do servers the MCP SDK starts with only its default environment.
os.environ["MCP_MEMORY_RESIDENT"] = "false"
if "MCP_MEMORY_RESIDENT" not in mcp.client.stdio.DEFAULT_INHERITED_ENV_VARS:
    mcp.client.stdio.DEFAULT_INHERITED_ENV_VARS.append("MCP_MEMORY_RESIDENT")


def stop_left(leftover: Callable[[psutil.Process], bool], stop: Callable[[psutil.Process], None]) -> list[int]:
    """Stop the processes `leftover` says a test left running, by `stop`, killed if still there
    15 s later; their pids."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if leftover(proc):
                stop(proc)
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    for proc in psutil.wait_procs(found, timeout=15)[1]:
        proc.kill()
    return [p.pid for p in found]


def stop_residents(server_home: str) -> list[int]:
    """Stop resident servers of this session's databases (their URL names the server's folder:
    ?host=<home>/pg) that a test left running; their pids."""
    return stop_left(lambda proc: "mcp_memory.server.resident" in (proc.info["cmdline"] or [])
                     and server_home in proc.environ().get("MCP_MEMORY_DATABASE_URL", ""),
                     psutil.Process.terminate)


def stop_postmasters(under: Path) -> list[int]:
    """Stop embedded PostgreSQL servers whose data directory is under `under`: a test's server that
    its client killed (the SDK's stdio client kills a server that takes over 2 s to exit, as one
    stopping its database may on a loaded machine) never gave back its handle, and by design its
    database outlives it until the store's next start (db/leftovers.py `prune_dead_handles`),
    which a test's store never has. Their pids."""
    def postmaster_under(proc: psutil.Process) -> bool:
        cmd = proc.info["cmdline"] or []
        return bool(cmd) and Path(cmd[0]).name == "postgres" and "-D" in cmd[:-1] \
            and Path(cmd[cmd.index("-D") + 1]).is_relative_to(under)

    return stop_left(postmaster_under, lambda proc: proc.send_signal(signal.SIGINT))  # a fast shutdown


@pytest.fixture(scope="session", autouse=True)
def no_postmaster_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No embedded PostgreSQL of a test's own store is left running when the session ends."""
    yield
    left = stop_postmasters(tmp_path_factory.getbasetemp())
    if left:
        print(f"\nwarning: tests left embedded PostgreSQL servers running (stopped): {left}")


@pytest.fixture
def silent_db() -> Iterator[str]:
    """A database URL whose server accepts connections and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"postgresql://alice@127.0.0.1:{server.getsockname()[1]}/memory"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.fixture(scope="session")
def pg() -> Iterator[EmbeddedPostgres]:
    # Not under pytest's own base directory: as root the server runs as its own system user, and
    # every pytest session that starts meanwhile makes /tmp/pytest-of-root private again (0700),
    # which took the data directory from under a running suite's server (PANIC, then every test
    # "connection refused").
    home = data_home()
    server = EmbeddedPostgres(home)
    server.start()
    try:
        yield server
    finally:
        left = stop_residents(str(home))
        if left:
            print(f"\nwarning: tests left resident servers running (stopped): {left}")
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
async def template_db(pg: EmbeddedPostgres) -> str:
    admin = await asyncpg.connect(pg.dsn("postgres"))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE}"')
        await admin.execute(f'CREATE DATABASE "{TEMPLATE}"')
    finally:
        await admin.close()
    conn = await asyncpg.connect(pg.dsn(TEMPLATE))
    try:
        await migrate(conn)
    finally:
        await conn.close()
    return TEMPLATE


@pytest.fixture
async def make_db(pg: EmbeddedPostgres, template_db: str) -> AsyncIterator[Callable[[], asyncio.Future]]:
    """Factory of fresh migrated databases; each is dropped after the test."""
    made: list[str] = []
    admin = await asyncpg.connect(pg.dsn("postgres"))
    strategy = "FILE_COPY" if pg.pgdata.is_relative_to(MEMORY_DIR) else "WAL_LOG"

    async def make() -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_db}" STRATEGY {strategy}')
        made.append(name)
        return pg.dsn(name)

    yield make
    for name in made:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await admin.close()


@pytest.fixture
async def db_url(make_db) -> str:
    return await make_db()


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=db_url, data_dir=tmp_path / "unused", user="alice", agent="agent-a",
                    project="proj-x")


@pytest.fixture
async def database(settings: Settings) -> AsyncIterator[Database]:
    db = await open_database(settings)
    yield db
    await db.close()


@pytest.fixture
async def service(database: Database, settings: Settings) -> MemoryService:
    """The service as the server builds it (composition.py), with the default local embedder
    (loaded once); no decisions worker (the settings configure no provider)."""
    return (await compose(database, settings)).service


@pytest.fixture
async def empty_store(make_db: Callable, settings: Settings) -> AsyncIterator[tuple[MemoryService, Database]]:
    """A second store, empty, with the test's settings: where an export is imported."""
    empty = await open_database(settings.model_copy(update={"database_url": await make_db()}))
    try:
        yield (await compose(empty, settings)).service, empty
    finally:
        await empty.close()


async def until_waiting(conn: asyncpg.Connection, failing: str, *, query: str = "%", count: int = 1,
                        seconds: float = 10, blocked_by: int | None = None) -> None:
    """Return once `count` of the database's backends wait on a lock while running a statement LIKE
    `query` (and, given `blocked_by`, a lock that backend holds), asked on `conn` (inside a
    transaction too: its statistics snapshot is cleared each time); after `seconds`,
    AssertionError(`failing`)."""
    for _ in range(int(seconds / 0.05)):
        await conn.execute("SELECT pg_stat_clear_snapshot()")
        if await conn.fetchval("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                               "AND query LIKE $1 AND ($2::int IS NULL OR $2 = ANY (pg_blocking_pids(pid)))",
                               query, blocked_by) >= count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(failing)


async def memories_indexes(database: Database, method: str) -> dict[str, str]:
    """The memories table's indexes of access method `method` (gin, hnsw): name -> definition."""
    rows = await database.admin.fetch(
        """SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
           JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = 'memories'::regclass AND a.amname = $1""", method)
    return {r[0]: r[1] for r in rows}


def principal(user: str = "alice", agent: str | None = "agent-a", project: str | None = "proj-x",
              permissions: frozenset[str] = ALL_PERMISSIONS) -> Principal:
    return Principal(user_id=user, agent_id=agent, project_id=project, permissions=permissions,
                     actor=f"test:{user}", client="pytest")


@pytest.fixture
def alice() -> Principal:
    return principal()


async def meeting_notes(database: Database, n: int = 400) -> None:
    """`n` of alice's notes written straight into the table, ahead of anything written after them:
    each holds "weekly", "meeting", "notes" and "budget line" with its number mod 17."""
    async with database.admin.acquire() as conn:
        await conn.execute(
            """INSERT INTO memories (user_id, agent_id, project_id, kind, content, content_hash)
               SELECT 'alice', 'agent-a', 'proj-x', 'note',
                      'Weekly meeting ' || g || ': notes on budget line ' || (g % 17), md5(g::text)
               FROM generate_series(1, $1::int) g""", n)


@pytest.fixture(scope="module")
def chat_server() -> Iterator[ChatAPI]:
    """A chat-completions endpoint with scripted answers (tests/chat_api.py)."""
    with chat_api() as api:
        yield api


@pytest.fixture
def chat(chat_server: ChatAPI) -> Iterator[ChatAPI]:
    chat_server.reset()
    yield chat_server
    chat_server.reset()
