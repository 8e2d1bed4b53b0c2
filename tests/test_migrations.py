"""Migrations: applied in order, recorded, idempotent, safe when processes race."""

from __future__ import annotations

import asyncio

import asyncpg
import numpy as np

from mcp_memory.db.doctor import row_layout_check
from mcp_memory.db.migrate import available_migrations, migrate, pending_migrations
from mcp_memory.repository.catalog import vectors_out_of_line


async def test_fresh_database_migrates_once(make_db, pg) -> None:
    url = await make_db()
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        assert [m.name for m in await pending_migrations(conn)] == [m.name for m in available_migrations()]
        first = await migrate(conn)
        assert first == [m.name for m in available_migrations()] and first[0] == "001_init.sql"
        assert await migrate(conn) == []
        assert await pending_migrations(conn) == []
        recorded = await conn.fetch("SELECT version, checksum FROM schema_migrations ORDER BY version")
        assert [(r["version"], r["checksum"]) for r in recorded] == \
            [(m.version, m.checksum) for m in available_migrations()]
        extensions = {r["extname"] for r in await conn.fetch("SELECT extname FROM pg_extension")}
        assert {"vector", "pg_trgm"} <= extensions
    finally:
        await conn.close()


async def test_concurrent_migrations_apply_each_file_once(make_db) -> None:
    url = await make_db()
    setup = await asyncpg.connect(url)
    await setup.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    await setup.close()
    conns = [await asyncpg.connect(url) for _ in range(4)]
    try:
        results = await asyncio.gather(*(migrate(c) for c in conns))
        applied = [name for r in results for name in r]
        assert sorted(applied) == sorted(m.name for m in available_migrations())
    finally:
        for c in conns:
            await c.close()


async def test_a_memorys_row_keeps_its_vector_and_text(service, database, alice) -> None:
    """A turn of a few hundred characters with its 384-dimension vector passes the ~2 kB at which
    PostgreSQL starts toasting a row, and the vector (pgvector's type goes out of line first) went
    to the TOAST table: every distance a search computed from the row read it from there. Rows up
    to a page keep both inline; a text too long for that still goes out of line, the vector stays,
    and a vector too large for any page (a larger model's, floats that do not compress) is stored."""
    turn = ("Melanie: We went camping by the lake last weekend, the kids loved the hike to the "
            "waterfall and we roasted marshmallows until late. Caroline, you should come next time, "
            "there is a quiet spot for painting near the pier and the sunsets there are amazing. ") * 2
    rng = np.random.default_rng(5)
    words = turn.split()
    long_text = " ".join(words[i] for i in rng.integers(0, len(words), 4_000))  # ~24 kB
    written = [await service.write(alice, text, kind="episode") for text in (turn, long_text)]
    async with database.admin.acquire() as conn:
        rows = await conn.fetch(
            "SELECT embedding IS NOT NULL AS embedded, pg_column_toast_chunk_id(embedding) AS vector_out, "
            "pg_column_toast_chunk_id(content) AS text_out "
            "FROM memories WHERE id = ANY($1::uuid[]) ORDER BY length(content)",
            [w.memory.id for w in written])
        assert [(r["embedded"], r["vector_out"], r["text_out"] is None) for r in rows] == \
            [(True, None, True), (True, None, False)]
        big = rng.random(3072, dtype=np.float32)
        big_id = await conn.fetchval(
            "INSERT INTO memories (user_id, kind, content, content_hash, embedding, embedding_model) "
            "VALUES ('alice', 'note', 'big vector', 'h-big', $1, 'large-model') RETURNING id", big)
        assert await conn.fetchval("SELECT pg_column_toast_chunk_id(embedding) IS NOT NULL FROM memories "
                                   "WHERE id = $1", big_id)


async def test_doctor_finds_vectors_stored_before_the_rows_were_whole(service, database, alice) -> None:
    """A store written before migration 024 keeps its vectors out of line until the table is
    rewritten: doctor says how many of the first rows do and what to run, and once it is run
    none do."""
    turn = ("Caroline: I went to the LGBTQ support group yesterday and it was so powerful, the stories "
            "people shared about their transitions made me feel less alone and more hopeful. ") * 3
    async with database.admin.acquire() as conn:
        target = await conn.fetchval(
            "SELECT option_value FROM pg_options_to_table((SELECT reloptions FROM pg_class "
            "WHERE oid = 'memories'::regclass)) WHERE option_name = 'toast_tuple_target'")
        assert target == "8160"  # what migration 024 set
        await conn.execute("ALTER TABLE memories RESET (toast_tuple_target)")  # the layout before 024
        for n in range(3):
            await service.write(alice, f"{turn} ({n})", kind="episode")
        await conn.execute(f"ALTER TABLE memories SET (toast_tuple_target = {target})")
        await service.write(alice, f"{turn} (after)", kind="episode")
        before = await vectors_out_of_line(conn, 1000)
        assert before == (3, 4)
        assert "3 of the 4 oldest memories keep their vector out of line" in row_layout_check(before).detail
        await conn.execute("VACUUM FULL memories")
        assert await vectors_out_of_line(conn, 1000) == (0, 4)
        assert row_layout_check((0, 4)).detail == "vectors in their rows (4 of the oldest memories read)"
