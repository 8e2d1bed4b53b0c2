"""The command line against a real database: migrate, search, stats, doctor."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from mcp_memory.cli import main
from mcp_memory.db.migrate import available_migrations

CLI = str(Path(sys.executable).with_name("mcp-memory"))


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    import os
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def serve_until_exit(env: dict[str, str], timeout: float = 60) -> tuple[int, str, str]:
    """`mcp-memory serve` over stdio with stdin held open, as a harness runs it."""
    import os
    proc = subprocess.Popen([CLI, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **env})
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    out, err = proc.communicate()
    return proc.returncode, out, err


@pytest.fixture
def cli_env(db_url: str) -> dict[str, str]:
    return {"MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_USER": "carol", "MCP_MEMORY_PROJECT": "none"}


async def test_search_and_stats(cli_env: dict[str, str], db_url: str) -> None:
    from mcp_memory.auth import local_principal
    from mcp_memory.config import Settings
    from mcp_memory.db import open_database
    from mcp_memory.repository import MemoryRepository
    from mcp_memory.service import MemoryService

    settings = Settings(database_url=db_url, user="carol", project="none")
    db = await open_database(settings)
    try:
        service = MemoryService(MemoryRepository(db.pool), settings)
        p = local_principal(settings)
        await service.write(p, "Carol's dentist is Dr. Okafor on Elm Street", kind="fact")
        await service.write(p, "Carol prefers window seats", kind="preference")
    finally:
        await db.close()

    out = run("search", "who is the dentist", env=cli_env)
    assert out.returncode == 0, out.stderr
    assert "Dr. Okafor" in out.stdout and "memory://memories/" in out.stdout
    as_json = json.loads(run("search", "window", "--json", env=cli_env).stdout)
    assert [h["snippet"] for h in as_json["hits"]] == ["Carol prefers window seats"]

    stats = run("stats", "--json", env=cli_env)
    assert json.loads(stats.stdout)["by_kind"] == {"fact": 1, "preference": 1}
    assert "2 live" in run("stats", env=cli_env).stdout
    # Another user sees none of it.
    assert "no memories match" in run("search", "dentist", env={**cli_env, "MCP_MEMORY_USER": "dave"}).stdout


def test_migrate_and_doctor_on_embedded(tmp_path: Path) -> None:
    env = {"MCP_MEMORY_DATA_DIR": str(tmp_path)}
    doctor = run("doctor", env=env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "[ok  ] extension vector" in doctor.stdout and "to apply" in doctor.stdout
    names = ", ".join(m.name for m in available_migrations())
    assert run("migrate", env=env).stdout.strip() == f"applied: {names}"
    assert run("migrate", env=env).stdout.strip() == "schema is up to date"
    doctor = run("doctor", env=env).stdout
    assert "[ok  ] schema: up to date" in doctor
    assert "[ok  ] embeddings: provider local, model all-MiniLM-L6-v2-int8 (384 dimensions); " \
           "0 of 0 live memories embedded" in doctor
    # A new store's embedded server keeps PostgreSQL's default page cache (buffers.py), which it fits.
    assert "[ok  ] page cache: vector index 0 MB, shared_buffers 128 MB: the index fits" in doctor
    assert "[ok  ] row layout: no memory with a vector yet" in doctor
    assert re.search(r"\[ok  \] extension pg_prewarm: [0-9.]+ \(installed\)", doctor)  # the embedded server's
    # pg_dump and psql reach the embedded server by the URL doctor prints (docs/operations.md)
    assert f"[ok  ] database: embedded server in {tmp_path / 'pg'} at postgresql://postgres:@/mcp_memory?host=" \
           f"{tmp_path / 'pg'}: " in doctor


async def test_doctor_and_serve_refuse_a_model_the_database_was_not_built_with(cli_env: dict[str, str],
                                                                              db_url: str) -> None:
    from mcp_memory.auth import local_principal
    from mcp_memory.config import Settings
    from mcp_memory.db import open_database
    from mcp_memory.service import MemoryService

    settings = Settings(database_url=db_url, user="carol", project="none")
    db = await open_database(settings)
    try:
        service = await MemoryService.open(db, settings)
        await service.write(local_principal(settings), "Built with MiniLM")
        async with db.admin.acquire() as conn:  # one memory the embedder never saw (it was down)
            await conn.execute("INSERT INTO memories (id, user_id, kind, content, content_hash) "
                               "VALUES (gen_random_uuid(), 'carol', 'note', 'no vector', 'h')")
    finally:
        await db.close()
    gap = run("doctor", env=cli_env)
    assert gap.returncode == 1
    assert "[FAIL] embeddings: provider local, model all-MiniLM-L6-v2-int8 (384 dimensions); 1 of 2" in gap.stdout
    assert "mcp-memory backfill" in gap.stdout
    other = {**cli_env, "MCP_MEMORY_EMBEDDING_MODEL": "static-10k-64d-int8"}
    doctor = run("doctor", env=other)
    assert doctor.returncode == 1 and "but the database was built with all-MiniLM-L6-v2-int8" in doctor.stdout
    code, out, err = serve_until_exit(other)
    assert code == 2, err
    assert "mcp-memory backfill --reembed" in err and out == ""


def test_doctor_explains_an_unreachable_database(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--database-url", "postgresql://nobody@127.0.0.1:1/none"])
    out = capsys.readouterr().out
    assert code == 1
    assert "[FAIL] database" in out and "start PostgreSQL, or check MCP_MEMORY_DATABASE_URL" in out


def test_bad_arguments_exit_nonzero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["search", "x", "--limit", "500"])
    assert exit_info.value.code == 2
    assert main(["serve", "--transport", "http", "--no-auth", "--host", "0.0.0.0"]) == 2
    assert "loopback addresses only" in capsys.readouterr().err


def test_import_of_a_file_it_cannot_read_is_one_line_naming_the_formats_it_knows(cli_env: dict[str, str],
                                                                                   tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "sqlite_vec.db"  # what the peer (mcp-memory-service) keeps its memories in
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE memories (content TEXT, blob BLOB)")
        conn.execute("INSERT INTO memories VALUES ('x', ?)", (bytes(range(256)),))
    latin = tmp_path / "notes.md"
    latin.write_bytes("Caf\xe9 notes".encode("latin-1"))
    for path, why in ((db, "an SQLite database but not mcp-memory-service's"), (latin, "not UTF-8 text (byte 3)")):
        out = run("import", str(path), env=cli_env)
        assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
        assert f"{why}; the formats mcp-memory import reads: a markdown memory file" in out.stderr
        assert "imported" not in out.stdout


def test_import_of_mcp_memory_service_database_dry_run_then_write(cli_env: dict[str, str], tmp_path: Path) -> None:
    import gzip

    db = tmp_path / "sqlite_vec.db"  # written by the real peer: tests/fixtures/doobidoo/make_fixture.py
    db.write_bytes(gzip.decompress((Path(__file__).parent / "fixtures/doobidoo/memories.db.gz").read_bytes()))
    dry = run("import", str(db), "--dry-run", env=cli_env)
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("dry run: would import 6 new memories from 1 file(s); 0 are already there; "
                                 "nothing was written")
    assert "     3  note in user" in dry.stdout and "     1  decision in user" in dry.stdout
    assert "first ones:\n  [fact, user] The staging database runs PostgreSQL 16 on port 5433." in dry.stdout
    written = run("import", str(db), "--from", "doobidoo", env=cli_env)
    assert written.returncode == 0, written.stderr
    assert "imported 6 new memories from 1 file(s); 0 were already there" in written.stdout
    assert ("  sqlite_vec.db: embedded all 6 memories again with all-MiniLM-L6-v2-int8: so few that checking the "
            "peer's vectors would embed every one\n") in written.stdout
    assert "sqlite_vec.db" in written.stderr  # the progress bar goes to stderr
    assert "imported 0 new memories" in run("import", str(db), "--quiet", env=cli_env).stdout
    notes = tmp_path / "MEMORY.md"
    notes.write_text("- a note\n")
    wrong = run("import", str(notes), "--from", "doobidoo", env=cli_env)
    assert wrong.returncode == 1 and "not SQLite; the formats mcp-memory import reads" in wrong.stderr


def test_import_of_claude_md_goes_to_its_folders_project_unless_one_is_named(cli_env: dict[str, str],
                                                                            tmp_path: Path) -> None:
    repo = tmp_path / "acme-api"
    (repo / ".git").mkdir(parents=True)
    (repo / "CLAUDE.md").write_text("# Commands\n- Run tests with `make test`\n")
    env = {k: v for k, v in cli_env.items() if k != "MCP_MEMORY_PROJECT"}
    derived = run("import", str(repo / "CLAUDE.md"), "--dry-run", env=env)
    assert derived.returncode == 0, derived.stderr
    assert "     1  procedure in project acme-api" in derived.stdout
    named = run("import", str(repo / "CLAUDE.md"), "--dry-run", "--project", "other", env=env)
    assert "     1  procedure in project other" in named.stdout


async def test_import_export_purge_commands(cli_env: dict[str, str], tmp_path: Path, make_db) -> None:
    notes = tmp_path / "MEMORY.md"
    notes.write_text("# Notes\n- The VPN config is in ~/vpn\n- Standups are async on Fridays\n")
    first = run("import", str(notes), env=cli_env)
    assert first.returncode == 0, first.stderr
    assert "imported 2 new memories from 1 file(s); 0 were already there" in first.stdout
    assert "MEMORY.md" in first.stderr  # the progress bar goes to stderr
    assert "reading names" not in first.stderr  # a write reads its names itself: nothing left to read
    assert "imported 0 new memories" in run("import", str(notes), "--quiet", env=cli_env).stdout

    dump = tmp_path / "all.jsonl"
    exported = run("export", "-o", str(dump), env=cli_env)
    assert exported.returncode == 0 and "exported 2 memories of user carol" in exported.stderr
    header, *lines = map(json.loads, dump.read_text().splitlines())
    memories = [line for line in lines if line["type"] == "memory"]  # the graph's entities and edits beside them
    assert header["format"] == "mcp-memory-export" and header["version"] == 2 and len(memories) == 2
    assert memories[0]["history"][0]["event"] == "ADD" and "graph" in memories[0]
    # Each memory's vector goes with it (a moved store is not embedded again), unless left out.
    assert header["embedding"]["model"] == "all-MiniLM-L6-v2-int8"
    assert all(len(base64.b64decode(line["vector"])) == 4 * 384 for line in memories)
    bare = [json.loads(line) for line in run("export", "--no-vectors", env=cli_env).stdout.splitlines()]
    assert len(bare) == len(lines) + 1 and not any("embedding" in line or "vector" in line for line in bare)
    # Moved to another store: what the import did not take from the file is embedded before it ends.
    other = await make_db()
    moved = run("import", str(dump), env={**cli_env, "MCP_MEMORY_DATABASE_URL": other})
    assert moved.returncode == 0, moved.stderr
    assert "reading names" not in moved.stderr  # an export's memories go in verbatim, with the graph it carries
    assert ("all.jsonl: embedded all 2 memories again with all-MiniLM-L6-v2-int8: so few that checking the export's "
            "vectors would embed every one") in moved.stdout
    conn = await asyncpg.connect(other)
    try:
        assert await conn.fetchval("SELECT count(*) FROM memories WHERE embedding IS NOT NULL") == 2
        assert await conn.fetchval("SELECT count(DISTINCT memory_id) FROM memory_entities") == sum(
            bool(m["graph"]["mentions"]) for m in memories)
    finally:
        await conn.close()

    dry = run("purge", "--dry-run", env=cli_env)
    assert dry.returncode == 0 and dry.stdout.startswith("would remove: 0 forgotten memories past 30 days")
    assert "removed: 0 forgotten" in run("purge", env=cli_env).stdout

    missing = run("import", str(tmp_path / "nope.md"), env=cli_env)
    assert missing.returncode == 1 and "no such file" in missing.stderr


def test_subcommand_modules_do_not_import_the_command_line_back() -> None:
    """`cli.py` registers the console's, decisions' and capture's subcommands; they share what they
    need through `cli_common`, so none of them imports `mcp_memory.cli` (an import circle)."""
    import ast

    root = Path(__file__).resolve().parents[1] / "mcp_memory"
    for module in ("decisions/cli.py", "console/cli.py", "capture/cli.py"):
        tree = ast.parse((root / module).read_text())
        imported = {("." * n.level) + (n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not imported & {"..cli", "mcp_memory.cli"}, f"{module} imports the command line back"


def test_the_command_line_loads_no_store_credentials_or_web_stack_until_a_command_uses_them(tmp_path: Path) -> None:
    """Every `mcp-memory` process builds the whole parser; `install`, `uninstall`, `--help` and a
    hook's fallback then run without a database. Loading the service, JWT and the web stack at
    import cost each of them 0.4 s more (0.81 -> 0.40 s for `install --help`); `install` itself
    must not load them either."""
    heavy = ("asyncpg", "jwt", "uvicorn", "starlette", "numpy", "onnxruntime", "mcp_memory.service",
             "mcp_memory.db")
    probe = ("import sys\nfrom mcp_memory import cli\nsys.argv = ['mcp-memory', *sys.argv[1:]]\n"
             "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
             f"print(sorted(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)\n")
    import os

    for args in (["--help"], ["install", "--help"], ["install", "claude-code", "--home", str(tmp_path)]):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "HOME": str(tmp_path)})
        assert done.stderr.strip().splitlines()[-1] == "[]", (args, done.stderr[-2000:])
