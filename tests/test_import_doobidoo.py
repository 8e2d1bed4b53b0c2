"""Importing doobidoo's mcp-memory-service database. The fixture was written by the real peer
(mcp-memory-service 12.4.0) through its own MCP tools: tests/fixtures/doobidoo/make_fixture.py."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcp_memory.config import Settings
from mcp_memory.db import Database, open_database
from mcp_memory.errors import InvalidInput
from mcp_memory.importers import import_paths
from mcp_memory.importing import doobidoo
from mcp_memory.importing.files import detect_format
from mcp_memory.models import Principal
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.service import MemoryService

FIXTURE = Path(__file__).parent / "fixtures" / "doobidoo" / "memories.db.gz"
LIVE = {
    "The staging database runs PostgreSQL 16 on port 5433.",
    "Alice prefers squash merges and conventional commit messages.",
    "Decided to use Redis for the session cache instead of memcached.",
    "The CI pipeline takes about twelve minutes on the main branch.",
    "Ünïcode survives: naïve café, 東京, emoji 🚀.",
    "The deploy script lives in ops/deploy.sh; it needs VPN access and sudo.",
}


@pytest.fixture
def peer_db(tmp_path: Path) -> Path:
    path = tmp_path / "sqlite_vec.db"
    path.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    return path


def _peer_rows(path: Path) -> dict[str, sqlite3.Row]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return {r["content"]: r for r in conn.execute("SELECT * FROM memories")}
    finally:
        conn.close()


def test_reads_live_current_memories_with_their_tags_types_times_and_provenance(peer_db: Path) -> None:
    drafts = {d.content: d for d in doobidoo.read(peer_db)}
    # the deleted row and the version the peer's versioned update superseded stay out
    assert set(drafts) == LIVE
    rows = _peer_rows(peer_db)
    for content, draft in drafts.items():
        row = rows[content]
        assert draft.occurred_at == datetime.fromtimestamp(row["created_at"], UTC)
        assert draft.metadata["source"] == "mcp-memory-service"
        assert draft.metadata["original_id"] == row["content_hash"]
        assert draft.metadata["original_type"] == row["memory_type"]
    staging = drafts["The staging database runs PostgreSQL 16 on port 5433."]
    assert (staging.kind, staging.tags) == ("fact", ["infra", "database"])
    alice = drafts["Alice prefers squash merges and conventional commit messages."]
    assert (alice.kind, alice.tags, alice.metadata["author"]) == ("preference", ["preferences", "git"], "alice")
    ci = drafts["The CI pipeline takes about twelve minutes on the main branch."]  # updated in place by the peer
    assert (ci.tags, ci.metadata["measured"]) == (["ci", "timing"], "2026-11")
    assert drafts["Decided to use Redis for the session cache instead of memcached."].kind == "decision"
    deploy = drafts["The deploy script lives in ops/deploy.sh; it needs VPN access and sudo."]
    assert deploy.metadata["original_parent_id"] == rows[
        "The deploy script lives in ops/deploy.sh and needs VPN access."]["content_hash"]


def test_detection_by_content_and_refusals(peer_db: Path, tmp_path: Path) -> None:
    renamed = tmp_path / "anything.bin"
    renamed.write_bytes(peer_db.read_bytes())
    assert detect_format(renamed) == "doobidoo"
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    with pytest.raises(InvalidInput, match="SQLite database but not mcp-memory-service's; the formats"):
        detect_format(other)
    cut = tmp_path / "copied-half.db"  # the peer's file cut short (a copy that did not finish)
    cut.write_bytes(peer_db.read_bytes()[:4096])
    with pytest.raises(InvalidInput, match=r"copied-half.db: an SQLite database that cannot be read \(database disk "
                                           r"image is malformed\); the formats"):
        detect_format(cut)
    text = tmp_path / "MEMORY.md"
    text.write_text("- a note\n")
    with pytest.raises(InvalidInput, match="not SQLite"):
        detect_format(text, "doobidoo")
    with pytest.raises(InvalidInput, match="an SQLite database, not markdown"):
        detect_format(peer_db, "markdown")


async def test_import_dry_run_then_twice(service: MemoryService, database: Database, alice: Principal,
                                         peer_db: Path) -> None:
    maintenance = MaintenanceRepository(database.admin)
    dry = await import_paths(service, maintenance, alice, [peer_db], dry_run=True, progress=False)
    assert (dry.dry_run, dry.created, dry.unchanged) == (True, 6, 0)
    assert dry.planned == {"fact in project proj-x": 1, "preference in project proj-x": 1,
                           "decision in project proj-x": 1, "note in project proj-x": 3}
    assert len(dry.first) == 5 and dry.first[0].startswith("[fact, project proj-x] The staging database")
    assert (await service.list(alice, limit=100)).memories == []  # a dry run writes nothing

    first = await import_paths(service, maintenance, alice, [peer_db], progress=False)
    assert (first.created, first.unchanged) == (6, 0)
    stored = {m.content: m for m in (await service.list(alice, limit=100)).memories}
    assert set(stored) == LIVE
    rows = _peer_rows(peer_db)
    for content, memory in stored.items():
        # namespaces come from the importing identity, the original time is kept
        assert (memory.scope.level, memory.scope.agent_id, memory.scope.project_id) == ("project", None, "proj-x")
        assert memory.occurred_at == datetime.fromtimestamp(rows[content]["created_at"], UTC)
        assert memory.metadata["original_id"] == rows[content]["content_hash"]
        assert memory.source == "import:sqlite_vec.db"
    hits = (await service.search(alice, "which cache did we pick for sessions")).hits
    assert hits[0].snippet == "Decided to use Redis for the session cache instead of memcached."

    second = await import_paths(service, maintenance, alice, [peer_db], progress=False)
    assert (second.created, second.unchanged) == (0, 6)
    again = await import_paths(service, maintenance, alice, [peer_db], dry_run=True, progress=False)
    assert (again.created, again.unchanged, again.planned) == (0, 6, {})


@pytest.mark.parametrize(("column", "value", "why"), [
    ("metadata", "'{not json'", "metadata is not JSON"),
    ("content", "CAST(X'4361666afb' AS TEXT)", "its content is not UTF-8 text"),
    ("created_at", "NULL, created_at_iso = 'yesterday'", "created_at is not a time"),
])
async def test_a_row_it_cannot_read_refuses_the_whole_import(service: MemoryService, database: Database,
                                                             alice: Principal, peer_db: Path, tmp_path: Path,
                                                             column: str, value: str, why: str) -> None:
    good = tmp_path / "MEMORY.md"
    good.write_text("- Imported before the bad file would be read\n")
    with sqlite3.connect(peer_db) as conn:
        row_id = conn.execute("SELECT id FROM memories WHERE content LIKE 'Decided%'").fetchone()[0]
        conn.execute("DROP TRIGGER IF EXISTS memories_fts_au")  # the peer's full-text index is not ours to keep
        conn.execute(f"UPDATE memories SET {column} = {value} WHERE id = ?", (row_id,))
    maintenance = MaintenanceRepository(database.admin)
    with pytest.raises(InvalidInput, match=rf"memories row id {row_id} .*{why}.*nothing was imported"):
        await import_paths(service, maintenance, alice, [good, peer_db], progress=False)
    assert (await service.list(alice, limit=100)).memories == []


# --- the peer's vectors: taken when they are our model's, never otherwise --------------------------

MANY = Path(__file__).parent / "fixtures" / "doobidoo" / "many.db.gz"  # 123 memories, make_many.py
MANY_COUNT = 123
# make_many.py's long_texts(): of 138, 192, 274 and 129 tokens by our model's tokenizer, longer than the
# peer's cut (128): the peer's vectors of them are of their first 128 tokens. A fifth of exactly 128 is not.
LONGER_THAN_THE_CUT = 4
QUESTIONS = ["who owns the billing service", "which build is slow on CI", "what does Hana like for lunch",
             "database migration decision", "who covers during the holiday", "file handle leak",
             "Friday deploys", "tea", "outdated runbook after the incident", "who mentors whom in Rust"]


@pytest.fixture
def many_db(tmp_path: Path) -> Path:
    path = tmp_path / "many.db"
    path.write_bytes(gzip.decompress(MANY.read_bytes()))
    return path


def _rewrite_vectors(path: Path, change: Callable[[np.ndarray], np.ndarray]) -> None:
    """The peer's vectors changed in place, in sqlite-vec's own chunk table (no extension needed)."""
    with sqlite3.connect(path) as conn:
        for chunk_id, blob in conn.execute("SELECT rowid, vectors FROM memory_embeddings_vector_chunks00").fetchall():
            matrix = np.frombuffer(blob, dtype="<f4").reshape(-1, 384)
            conn.execute("UPDATE memory_embeddings_vector_chunks00 SET vectors = ? WHERE rowid = ?",
                         (change(matrix).astype("<f4").tobytes(), chunk_id))


async def _stored(database: Database, user: str = "alice") -> dict[str, np.ndarray]:
    rows = await database.admin.fetch("SELECT content, embedding, embedding_model FROM memories WHERE user_id = $1",
                                      user)
    assert {r["embedding_model"] for r in rows} == {"all-MiniLM-L6-v2-int8"}
    return {r["content"]: np.asarray(r["embedding"].to_list(), dtype=np.float64) for r in rows}


def _cosines(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> np.ndarray:
    assert set(a) == set(b)
    return np.array([float(a[t] @ b[t]) / float(np.linalg.norm(a[t]) * np.linalg.norm(b[t])) for t in a])


async def _search_all(service: MemoryService, p: Principal) -> list[list[str]]:
    return [[h.snippet for h in (await service.search(p, q, limit=10)).hits] for q in QUESTIONS]


async def _tokens(service: MemoryService, texts: list[str]) -> dict[str, int]:
    """Each text's tokens by our model's own tokenizer."""
    assert service.vectors is not None
    return dict(zip(texts, await service.vectors.embedder.count_tokens(texts), strict=True))  # type: ignore[union-attr]


async def test_the_peers_vectors_are_taken_and_search_as_embedding_again_would(
        service: MemoryService, database: Database, alice: Principal, many_db: Path, settings: Settings,
        make_db: Callable[[], Any], tmp_path: Path) -> None:
    maintenance = MaintenanceRepository(database.admin)
    report = await import_paths(service, maintenance, alice, [many_db], progress=False)
    assert report.created == MANY_COUNT
    (line,) = report.embedding
    found = re.match(r"many\.db: took the peer's vectors for (\d+) memories, after all-MiniLM-L6-v2-int8 "
                     r"re-embedded (\d+) others .* every one matched .*; embedded (\d+) longer than the peer's 128 "
                     r"tokens \(its vectors are of their beginnings\)$", line)
    assert found, line
    taken = int(found.group(1))
    assert taken >= 60 and int(found.group(3)) == LONGER_THAN_THE_CUT
    assert taken + int(found.group(2)) + LONGER_THAN_THE_CUT == MANY_COUNT
    # never in the embedding cache (shared by every user): only ours are, the sample's and the long ones'
    assert await database.admin.fetchval("SELECT count(*) FROM embedding_cache") == MANY_COUNT - taken
    reused = await _stored(database, "alice")
    # written in one statement per batch, each row still stamped in the file's order (a decision
    # weighs a memory against those written before it)
    order = await database.admin.fetch("SELECT content, created_at FROM memories WHERE user_id = 'alice' "
                                       "ORDER BY created_at")
    assert [r["content"] for r in order] == [d.content for d in doobidoo.read(many_db)]
    assert len({r["created_at"] for r in order}) == MANY_COUNT

    # Those vectors are the file's: a trace of noise (cosine 0.999998 to the peer's own, far inside the
    # check) tells them from our model's, which for most texts are the peer's to the bit.
    traced = _copy(many_db, tmp_path / "traced.db")
    _rewrite_vectors(traced, lambda m: m + np.random.default_rng(3).normal(0, 1e-4, m.shape))
    bob = Principal(**{**alice.model_dump(), "user_id": "bob"})
    traced_report = await import_paths(service, maintenance, bob, [traced], progress=False)
    assert traced_report.embedding[0].startswith(f"traced.db: took the peer's vectors for {taken} memories")
    file_vectors = _peer_vectors(traced)
    stored_bob = await _stored(database, "bob")
    assert sum(np.array_equal(stored_bob[t].astype(np.float32),
                              (file_vectors[t] / np.linalg.norm(file_vectors[t])).astype(np.float32))
               for t in stored_bob) == taken

    # The same file, its vectors unusable (shifted a little): every memory embedded again by our model,
    # in a database of its own (so no cache), and searches give what the taken vectors gave.
    other = _copy(many_db, tmp_path / "other.db")
    _rewrite_vectors(other, lambda m: m + 0.01)
    fresh_db = await open_database(settings.model_copy(update={"database_url": await make_db()}))
    try:
        fresh = await MemoryService.open(fresh_db, settings)
        again = await import_paths(fresh, MaintenanceRepository(fresh_db.admin), alice, [other], progress=False)
        assert again.created == MANY_COUNT
        assert again.embedding[0].startswith(f"other.db: embedded all {MANY_COUNT} memories again with "
                                             "all-MiniLM-L6-v2-int8: the peer's vectors are not "
                                             "all-MiniLM-L6-v2-int8's")
        embedded = await _stored(fresh_db, "alice")
        assert _cosines(reused, embedded).min() >= 0.9999
        assert await _search_all(service, alice) == await _search_all(fresh, alice)
    finally:
        await fresh_db.close()


def _copy(source: Path, target: Path) -> Path:
    target.write_bytes(source.read_bytes())
    return target


def _peer_vectors(path: Path) -> dict[str, np.ndarray]:
    stored = doobidoo.stored_vectors(path)
    return {d.content: stored.by_key[d.metadata["original_id"]].astype(np.float64) for d in doobidoo.read(path)}


async def test_texts_longer_than_the_peers_cut_are_embedded_by_us_and_the_rest_taken(
        service: MemoryService, database: Database, alice: Principal, many_db: Path) -> None:
    """The peer cuts a text at 128 tokens, ours at 256: its vector of a longer text is of the text's
    beginning. Those (counted by our tokenizer) are embedded by our model, the others taken; before,
    they failed the sample check and every memory was embedded again."""
    peer = _peer_vectors(many_db)
    tokens = await _tokens(service, list(peer))
    long = {t for t, n in tokens.items() if n > doobidoo.MAX_TOKENS}
    assert sorted(tokens[t] for t in long) == [129, 138, 192, 274] and 128 in tokens.values()
    report = await import_paths(service, MaintenanceRepository(database.admin), alice, [many_db], progress=False)
    assert report.created == MANY_COUNT and report.embedding[0].startswith("many.db: took the peer's vectors for ")
    stored = await _stored(database)
    assert service.vectors is not None
    ours = dict(zip(long, await service.vectors.embedder.embed_documents(list(long)), strict=True))  # type: ignore[union-attr]
    for text in long:  # our model's vector of the whole text (to 256 tokens), not the peer's of its beginning
        assert float(stored[text] @ np.asarray(ours[text])) >= 0.99999
        assert _cosines({text: stored[text]}, {text: peer[text]})[0] < 0.999
    # the text of exactly 128 tokens, which the peer did not cut, has the peer's vector (taken or checked)
    (whole,) = [t for t, n in tokens.items() if n == doobidoo.MAX_TOKENS]
    assert _cosines({whole: stored[whole]}, {whole: peer[whole]})[0] >= 0.99999


async def test_given_vectors_are_checked_by_write_many(service: MemoryService, alice: Principal) -> None:
    from mcp_memory.models import WriteItem

    items = [WriteItem(content="Ines keeps the spare keys."), WriteItem(content="The boiler is serviced in May.")]
    with pytest.raises(InvalidInput, match=r"embeddings\[1\] has 3 dimensions, all-MiniLM-L6-v2-int8's 384; "
                                           "nothing was written"):
        await service.write_many(alice, items, embeddings=[None, [0.1, 0.2, 0.3]])
    with pytest.raises(InvalidInput, match="embeddings has 1 vectors for 2 items"):
        await service.write_many(alice, items, embeddings=[None])
    assert (await service.list(alice, limit=10)).memories == []


@pytest.mark.parametrize(("change", "why"), [
    # as close as another export of MiniLM would be (cosine ~0.99 to ours)
    (lambda m: m + np.random.default_rng(1).normal(0, 0.0075, m.shape), "the peer's vectors are not"),
    (lambda m: np.random.default_rng(2).normal(0, 1, m.shape), "the peer's vectors are not"),
    (lambda m: m * 0, "the peer holds no vector for them"),
])
async def test_vectors_from_another_model_are_never_stored(service: MemoryService, database: Database,
                                                           alice: Principal, many_db: Path, change: Any,
                                                           why: str) -> None:
    before = _peer_vectors(many_db)
    _rewrite_vectors(many_db, change)
    after = _peer_vectors(many_db)
    report = await import_paths(service, MaintenanceRepository(database.admin), alice, [many_db], progress=False)
    assert report.created == MANY_COUNT
    assert report.embedding[0].startswith(f"many.db: embedded all {MANY_COUNT} memories again with "
                                          f"all-MiniLM-L6-v2-int8: {why}")
    stored = await _stored(database)
    # what is stored is our model's (the file's vectors before the change, where the peer did not cut
    # the text), not the changed ones
    tokens = await _tokens(service, list(stored))
    within = {t for t in stored if tokens[t] <= doobidoo.MAX_TOKENS}
    assert len(within) == MANY_COUNT - LONGER_THAN_THE_CUT
    assert _cosines({t: stored[t] for t in within}, {t: before[t] for t in within}).min() >= 0.9999
    if np.any(np.linalg.norm(np.stack(list(after.values())), axis=1)):
        assert _cosines(stored, after).max() < 0.999


async def test_an_export_with_vectors_takes_them_only_of_our_dimension(service: MemoryService, database: Database,
                                                                       alice: Principal, many_db: Path,
                                                                       tmp_path: Path) -> None:
    """The peer's JSON export carries vectors when written with include_embeddings."""
    stored = doobidoo.stored_vectors(many_db)
    conn = sqlite3.connect(many_db)
    rows = conn.execute("SELECT content, content_hash, created_at FROM memories").fetchall()
    conn.close()

    def export(name: str, dimension: int) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps({
            "export_metadata": {"source_machine": "test", "include_embeddings": True},
            "memories": [{"content": c, "content_hash": h, "tags": ["team"], "created_at": t, "memory_type": "note",
                          "metadata": {}, "embedding": stored.by_key[h][:dimension].tolist()} for c, h, t in rows]}))
        return path

    report = await import_paths(service, MaintenanceRepository(database.admin), alice,
                                [export("short.json", 256)], progress=False)
    assert report.embedding == [f"short.json: embedded all {MANY_COUNT} memories again with all-MiniLM-L6-v2-int8: "
                                "the peer's vectors have 256 dimensions, all-MiniLM-L6-v2-int8's 384"]
    bob = Principal(**{**alice.model_dump(), "user_id": "bob"})
    report = await import_paths(service, MaintenanceRepository(database.admin), bob,
                                [export("whole.json", 384)], progress=False)
    assert report.created == MANY_COUNT and report.embedding[0].startswith("whole.json: took the peer's vectors for ")


def test_the_peers_vector_layout_is_checked(many_db: Path) -> None:
    """A slot sqlite-vec does not mark as holding that row's vector gives no vectors at all."""
    assert len(doobidoo.stored_vectors(many_db).by_key) == MANY_COUNT
    with sqlite3.connect(many_db) as conn:
        conn.execute("UPDATE memory_embeddings_rowids SET chunk_offset = chunk_offset + 1 WHERE rowid = 5")
    broken = doobidoo.stored_vectors(many_db)
    assert broken.by_key == {} and broken.why_none == ("the vector of memories row id 5 is not where sqlite-vec 0.1 "
                                                       "keeps it")
