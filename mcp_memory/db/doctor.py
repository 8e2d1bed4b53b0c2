"""`mcp-memory doctor`: read-only checks of everything the server needs, each with its fix."""

from __future__ import annotations

import anyio
import asyncpg

from .. import __version__
from ..checks import Check
from ..config import Settings
from ..errors import Unavailable
from ..repository import catalog
from ..repository.graph_checks import inconsistencies, sizes
from ..repository.transcripts import problem_counts
from . import locate
from .buffers import MB
from .migrate import pending_migrations

MIN_PGVECTOR = (0, 7)
LAYOUT_SAMPLE = 1000  # the table's first rows: the oldest, the ones a store from before migration 024 holds

# Extensions a store works without, each with what is missed without it and what follows its
# creation: btree_gin's user index (sql/user_text_index.sql), which only a store many users share
# notices; pg_prewarm, the pages read as a server starts (db/warmup.py), which a big store notices.
OPTIONAL = {
    "btree_gin": ("in a store many users share, a user's full-text search and tag filter read every user's "
                  "index entries",
                  ", then `mcp-memory migrate`"),
    "pg_prewarm": ("a server starting reads no page of the store ahead of its first searches "
                   "(MCP_MEMORY_WARM_PAGES)", ""),
}


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2] if part.isdigit())


async def diagnose(settings: Settings) -> list[Check]:
    checks = [Check("mcp-memory", True, f"version {__version__}")]
    from ..capture.status_view import doctor_failures, doctor_problems  # the status file: no database needed
    checks.append(Check(*doctor_failures(settings)))
    checks += await _model_files(settings)  # no database needed
    from ..capture.harness_check import harness_checks  # the harnesses' files: no database needed
    checks += harness_checks()
    where = settings.database_url and "MCP_MEMORY_DATABASE_URL" or f"embedded server in {settings.data_dir / 'pg'}"
    try:
        dsn, embedded = await locate(settings, settings.db_start_timeout_s)
    except Unavailable as exc:  # says what is wrong and the fix in one line
        return [*checks, Check("database", False, str(exc))]
    except Exception as exc:
        fix = ("check MCP_MEMORY_DATABASE_URL (host, port, user, password, database)" if settings.database_url
               else f"check that {settings.data_dir} is writable; its log is {settings.data_dir / 'pg' / 'log'}")
        return [*checks, Check("database", False, f"{where}: {exc}", fix)]
    try:
        # through a transaction-mode pooler a cached (named) statement may be run on another server connection
        conn = await asyncpg.connect(dsn, **({"statement_cache_size": 0} if settings.db_pooler == "transaction"
                                             else {}))
        try:
            # pg_dump and psql reach the embedded server at this URL while any server of the store runs
            at = f" at {dsn}" if embedded is not None else ""
            checks.append(Check("database", True, f"{where}{at}: {await catalog.server_version(conn)}"))
            checks += await _extensions(conn)
            pending = await pending_migrations(conn)
            checks.append(Check(
                "schema", True,
                "up to date" if not pending else f"{len(pending)} migration(s) to apply "
                f"({', '.join(m.name for m in pending)}): the server applies them on start, "
                "or run `mcp-memory migrate`"))
            if not pending:
                checks.append(await _row_level_security(conn, settings.db_app_role))
                checks.append(Check(*doctor_problems(*await problem_counts(conn))))
                checks += await _embeddings(conn, settings)
                checks.append(page_cache_check(*await catalog.page_cache(conn), embedded=settings.embedded))
                checks.append(row_layout_check(await catalog.vectors_out_of_line(conn, LAYOUT_SAMPLE)))
                checks.append(await _jobs(conn))
                checks.append(await _graph(conn))
        finally:
            await conn.close()
    except OSError as exc:
        checks.append(Check("database", False, f"{where}: {exc}",
                            "nothing answers there: start PostgreSQL, "
                            "or check MCP_MEMORY_DATABASE_URL's host and port"))
    except Exception as exc:
        checks.append(Check("database", False, f"{where}: {exc}",
                            "check MCP_MEMORY_DATABASE_URL's user, password and database name"))
    finally:
        if embedded is not None:
            await anyio.to_thread.run_sync(embedded.stop)
    from ..decisions.doctor import check as decisions_check  # the model that decides, if any
    checks.append(await decisions_check(settings))
    return checks


async def _model_files(settings: Settings) -> list[Check]:
    """A local model's files against the SHA-256 each must have (the pinned table, or the digests
    given for your own model), as `mcp-memory serve` checks them before it starts."""
    from ..embeddings import ModelFileError
    from ..vectors import embedder_from

    embedder = embedder_from(settings)
    verify = getattr(embedder, "verify", None)
    if verify is None:  # a remote provider, or none
        return []
    try:
        return [Check("model files", True, await anyio.to_thread.run_sync(verify))]
    except ModelFileError as exc:
        return [Check("model files", False, exc.problem, exc.fix)]
    except Unavailable as exc:  # the model would not load for another reason
        return [Check("model files", False, f"{embedder.model}: {exc}")]


async def _embeddings(conn: asyncpg.Connection, settings: Settings) -> list[Check]:
    """The configured provider and model against what the database was built with, and how many
    live memories have a vector from it."""
    from ..embeddings import resolve_dimension
    from ..repository.embeddings import EmbeddingRepository
    from ..vectors import embedder_from
    from . import init_connection

    embedder = embedder_from(settings)
    if embedder is None:
        return [Check("embeddings", True, "provider none: search ranks by full text and trigram only")]
    try:
        dimension = await resolve_dimension(embedder)
    except Exception as exc:
        return [Check("embeddings", False, f"{settings.embedding_provider} model {embedder.model}: {exc}",
                      "check the provider's key, URL and model (MCP_MEMORY_EMBEDDING_*)")]
    await init_connection(conn)  # the JSON and vector codecs the server's pools have
    repo = EmbeddingRepository(conn, conn)
    built = await repo.built_with()
    configured = f"provider {settings.embedding_provider}, model {embedder.model} ({dimension} dimensions)"
    if built and (built["model"], built["dimension"]) != (embedder.model, dimension):
        return [Check("embeddings", False, f"{configured}, but the database was built with {built['model']} "
                      f"({built['dimension']} dimensions)",
                      f"run `mcp-memory backfill --reembed`, or set MCP_MEMORY_EMBEDDING_MODEL={built['model']}")]
    embedded, live = await repo.coverage(embedder.model)
    coverage = f"{embedded} of {live} live memories embedded"
    if embedded < live:
        return [Check("embeddings", False, f"{configured}; {coverage}",
                      "run `mcp-memory backfill` (the server also embeds them when the embedder is back)")]
    return [Check("embeddings", True, f"{configured}; {coverage}")]


def page_cache_check(vector_index: int, shared_buffers: int, *, embedded: bool) -> Check:
    """Whether the vector index fits in shared_buffers: a search walks it, and each of its pages
    outside them is a read from the operating system's cache (buffers.py). Advice, not a failure:
    a store that does not fit still answers."""
    index, buffers = f"vector index {vector_index / MB:,.0f} MB", f"shared_buffers {shared_buffers / MB:,.0f} MB"
    if vector_index <= shared_buffers:
        return Check("page cache", True, f"{index}, {buffers}: the index fits")
    raise_it = ("set MCP_MEMORY_EMBEDDED_SHARED_BUFFERS_MB and restart the server" if embedded else
                "raise the server's shared_buffers (PostgreSQL suggests a quarter of its memory) and restart it")
    return Check("page cache", True, f"{index} is larger than {buffers}: searches read its pages from the "
                                     f"operating system's cache, slower at every step; {raise_it}")


def row_layout_check(counts: tuple[int, int] | None) -> Check:
    """Whether memories keep their vectors in their rows (migration 024): a store written before it
    keeps them out of line until the table is rewritten, and a search that sorts a scope reads each
    from the TOAST table. Advice, not a failure: such a store answers, slower."""
    if counts is None:
        return Check("row layout", True, "not checked (PostgreSQL 17 or later tells where a vector is stored)")
    out, read = counts
    if not read:
        return Check("row layout", True, "no memory with a vector yet")
    if not out:
        return Check("row layout", True, f"vectors in their rows ({read:,} of the oldest memories read)")
    return Check("row layout", True, f"{out:,} of the {read:,} oldest memories keep their vector out of line, as "
                 "stored before migration 024: a search that sorts a scope reads each from the TOAST table; "
                 "once, in a quiet moment: VACUUM FULL memories (docs/operations.md, Upgrades)")


async def _jobs(conn: asyncpg.Connection) -> Check:
    """The decision job queue as /ready reports it (dead letters, a due job left waiting)."""
    from ..readiness import jobs_component
    from ..repository.operations import counts

    component = jobs_component(await counts(conn))
    by_status = component.data["by_status"]
    detail = ", ".join(f"{status} {n}" for status, n in sorted(by_status.items())) or "no jobs"
    return Check("job queue", component.ok, f"{detail}: {component.detail}",
                 None if component.ok else "`mcp-memory jobs list --status dead`, then `mcp-memory jobs retry`; "
                 "a queue that does not move: check that a server with decisions configured is running")


async def _row_level_security(conn: asyncpg.Connection, role: str) -> Check:
    if not role:
        return Check("row-level security", False, "off (MCP_MEMORY_DB_APP_ROLE is empty)",
                     "unset MCP_MEMORY_DB_APP_ROLE to run queries as mcp_memory_app")
    if await catalog.role_usable(conn, role):
        return Check("row-level security", True, f"active: queries run as {role}")
    return Check("row-level security", False, f"role {role} is missing or not granted to the connecting user",
                 "let the owner create roles (ALTER ROLE <owner> CREATEROLE) and run `mcp-memory migrate` again")


async def _extensions(conn: asyncpg.Connection) -> list[Check]:
    rows = await catalog.extensions(conn, ("vector", "pg_trgm", *OPTIONAL))
    out = []
    for name, need in (("vector", MIN_PGVECTOR), ("pg_trgm", None)):
        row = rows.get(name)
        if row is None:
            out.append(Check(f"extension {name}", False, "not available on this server",
                             "install pgvector ≥ 0.7 (https://github.com/pgvector/pgvector#installation)"
                             if name == "vector" else "install the PostgreSQL contrib package"))
            continue
        version = row["installed_version"] or row["default_version"]
        ok = need is None or _version_tuple(version) >= need
        state = "installed" if row["installed_version"] else "available, not yet created"
        out.append(Check(f"extension {name}", ok, f"{version} ({state})",
                         None if ok else f"upgrade {name} to ≥ {'.'.join(map(str, need or ()))}"))
    return [*out, *(_optional(name, rows.get(name)) for name in OPTIONAL)]


def _optional(name: str, row: asyncpg.Record | None) -> Check:
    if row is not None and row["installed_version"]:
        return Check(f"extension {name}", True, f"{row['installed_version']} (installed)")
    missed, after = OPTIONAL[name]
    state, add = (("available, not created", f"a superuser can run CREATE EXTENSION {name}")
                  if row is not None else
                  ("not available on this server", f"install PostgreSQL's contrib package, CREATE EXTENSION {name}"))
    return Check(f"extension {name}", True, f"{state} (optional: {missed}; {add}{after})")


async def _graph(conn: asyncpg.Connection) -> Check:
    """The graph's consistency checks (repository/graph_checks.py): every count must be zero."""
    found = {name: n for name, n in (await inconsistencies(conn)).items() if n}
    if not found:
        entities, facts, unread = await sizes(conn)
        waiting = f"; {unread} memories' names not read yet (the server reads them when it starts, " \
                  "or run `mcp-memory backfill`)" if unread else ""
        return Check("graph", True, f"consistent: {entities} entities, {facts} keyed facts{waiting}")
    return Check("graph", False, "; ".join(f"{n} {name}" for name, n in found.items()),
                 "a bug: please report it with `mcp-memory doctor` output; the memories themselves are intact")
