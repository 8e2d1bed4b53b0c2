"""An episode's vector holds the turn before it (vectors.py `summed`, turn_vectors.py): by every
path that stores its vector (a write, a batch, an edit, the backfill, an import of our export),
only a turn of its own namespace, within `embedding_turn_minutes`; and a turn edited, forgotten or
restored has the episode after it embedded again."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import anyio
import numpy as np
import pytest

from mcp_memory.cli import main
from mcp_memory.composition import compose
from mcp_memory.config import Settings
from mcp_memory.db import Database, open_database
from mcp_memory.decisions import provider_from
from mcp_memory.decisions.jobs import DecisionWorker
from mcp_memory.importers import import_paths
from mcp_memory.models import Principal, WriteItem
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.service import MemoryService
from mcp_memory.vectors import summed

from .chat_api import ChatAPI
from .conftest import principal
from .exports import exported_with_vectors
from .test_decision_guard import result_of
from .test_decisions import decisions_settings, drain, jobs_of
from .test_embeddings import EmbeddingsAPI

T0 = datetime(2026, 5, 4, 18, 0, tzinfo=UTC)
WEIGHT = 1.0
QUESTION = "Ana: What games did you play at the birthday party?"
REPLY = "Tom: Some fun ones like charades and a scavenger hunt."
SAID = "Tom: my door code is 4471, by the way."


@pytest.fixture
def settings(settings):
    """The conftest's settings, with episodes embedded with the turn before them (off by default)."""
    return settings.model_copy(update={"embedding_turn_weight": WEIGHT})


async def _stored(db: Database, memory_id: UUID) -> np.ndarray:
    vector = await db.admin.fetchval("SELECT embedding FROM memories WHERE id = $1", memory_id)
    assert vector is not None
    return vector.to_numpy().astype(np.float64)


async def _expected(service: MemoryService, text: str, before: str | None) -> np.ndarray:
    assert service.vectors is not None
    own, *turn = await service.vectors.documents([text, *([before] if before else [])])
    return np.asarray(summed(own, turn[0], service.vectors.turn_weight) if turn else own)


async def _is(db: Database, service: MemoryService, memory_id: UUID, text: str, before: str | None) -> bool:
    return float(np.dot(await _stored(db, memory_id), await _expected(service, text, before))) > 0.99999


async def test_a_reply_is_embedded_after_what_it_answers_and_found_by_it(
        service: MemoryService, database: Database, alice: Principal) -> None:
    asked = await service.write(alice, QUESTION, kind="episode", occurred_at=T0)
    replied = await service.write(alice, REPLY, kind="episode", occurred_at=T0 + timedelta(minutes=1))
    assert await _is(database, service, asked.memory.id, QUESTION, None)
    assert await _is(database, service, replied.memory.id, REPLY, QUESTION)
    assert not await _is(database, service, replied.memory.id, REPLY, None)
    # The vector list alone (no words shared with the reply but "games"), among other replies.
    for i, other in enumerate(["Tom: The train was late again this morning.", "Tom: I made pasta for dinner.",
                               "Tom: Mostly rain all week, sadly.", "Tom: Work has been hectic lately."]):
        await service.write(alice, other, kind="episode", occurred_at=T0 + timedelta(hours=2 + i))
    assert service.vectors is not None
    query = np.asarray(await service.vectors.query("what did they do at the birthday party"))
    scores = {row["id"]: float(np.dot(row["embedding"].to_numpy(), query)) for row in await database.admin.fetch(
        "SELECT id, embedding FROM memories WHERE content LIKE 'Tom:%'")}
    assert max(scores, key=scores.__getitem__) == replied.memory.id
    # Other kinds stand alone; so does a turn more than the gap after the one before.
    note = await service.write(alice, "Tom likes board games.", occurred_at=T0 + timedelta(minutes=2))
    assert await _is(database, service, note.memory.id, "Tom likes board games.", None)
    late = await service.write(alice, "Ana: Anyone up for a walk?", kind="episode",
                               occurred_at=T0 + timedelta(hours=5, minutes=31))
    assert await _is(database, service, late.memory.id, "Ana: Anyone up for a walk?", None)


async def test_a_batch_embeds_each_turn_after_the_one_before_in_its_own_namespace(
        service: MemoryService, database: Database, alice: Principal) -> None:
    stored = await service.write(alice, QUESTION, kind="episode", occurred_at=T0)
    elsewhere = principal(project="proj-y")  # the same user's other project: never a turn before
    other = await service.write(elsewhere, "Bob: Did the deploy go out?", kind="episode",
                                occurred_at=T0 + timedelta(seconds=30))
    turns = [REPLY, "Ana: Who won the scavenger hunt?", "Tom: My cousin did, by a mile."]
    written = await service.write_many(alice, [
        WriteItem(content=t, kind="episode", occurred_at=T0 + timedelta(minutes=1)) for t in turns])
    ids = [m.id for m in written.memories]
    assert await _is(database, service, ids[0], turns[0], QUESTION)  # the store's turn before the batch
    assert await _is(database, service, ids[1], turns[1], turns[0])  # the same time: the batch's order
    assert await _is(database, service, ids[2], turns[2], turns[1])
    assert await _is(database, service, other.memory.id, "Bob: Did the deploy go out?", None)
    # One sent later, dated between two of them, comes after the one dated before it, and the one
    # dated after it now holds it.
    between = await service.write(alice, "Ana: (waves)", kind="episode", occurred_at=T0 + timedelta(seconds=1))
    assert await _is(database, service, between.memory.id, "Ana: (waves)", QUESTION)
    assert await _is(database, service, ids[0], turns[0], "Ana: (waves)")
    assert stored.memory.id != between.memory.id


async def test_a_batch_in_any_order_holds_what_the_stored_rule_says(
        service: MemoryService, database: Database) -> None:
    """Batches of turns of two namespaces, in shuffled order, some at the same time, some without
    one, some far apart, written over turns already stored: each stored vector is the one the
    store's own rule (repository/turns.py, as the backfill reads it) gives it."""
    rng = random.Random(48)
    spaces = [principal(project="proj-x"), principal(project="proj-y")]
    texts = iter(f"{who}: turn {i} about the {topic}." for i in range(400)
                 for who, topic in [(rng.choice(["Ana", "Tom", "Eli"]), rng.choice(["party", "trip", "build"]))])
    ids: list[tuple[Principal, UUID]] = []
    for _ in range(4):
        p = rng.choice(spaces)
        items = [WriteItem(content=next(texts), kind=rng.choice(["episode", "episode", "episode", "note"]),
                           occurred_at=rng.choice([None, T0 + timedelta(minutes=rng.choice([0, 5, 5, 20, 45, 90]))]))
                 for _ in range(25)]
        written = await service.write_many(p, items)
        ids += [(p, m.id) for m in written.memories]
    assert service.vectors is not None
    for p, memory_id in ids:
        kind, content, before = (await service.repo.turns_before(p, [memory_id], 30))[memory_id]
        assert await _is(database, service, memory_id, content, before if kind == "episode" else None), content


async def test_a_turn_whose_own_vector_is_given_gets_the_turn_before_added(
        service: MemoryService, database: Database, alice: Principal) -> None:
    """As a peer's import hands `write_many` the texts' own vectors."""
    assert service.vectors is not None
    own = await service.vectors.documents([QUESTION, REPLY], [None, None])
    written = await service.write_many(alice, [WriteItem(content=t, kind="episode", occurred_at=T0)
                                               for t in (QUESTION, REPLY)], embeddings=own)
    assert await _is(database, service, written.memories[0].id, QUESTION, None)
    assert await _is(database, service, written.memories[1].id, REPLY, QUESTION)


async def test_an_edited_turn_has_itself_and_the_turn_after_it_embedded_again(
        service: MemoryService, database: Database, alice: Principal) -> None:
    asked = await service.write(alice, QUESTION, kind="episode", occurred_at=T0)
    replied = await service.write(alice, REPLY, kind="episode", occurred_at=T0 + timedelta(minutes=1))
    edited = "Ana: What did you cook for the birthday party?"
    await service.update(alice, asked.memory.id, content=edited)
    assert await _is(database, service, asked.memory.id, edited, None)
    assert await _is(database, service, replied.memory.id, REPLY, edited)
    # Moved an hour on, the reply follows no turn within the gap.
    await service.update(alice, replied.memory.id, occurred_at=T0 + timedelta(hours=1))
    assert await _is(database, service, replied.memory.id, REPLY, None)
    # A turn moved away from between two leaves the one after it holding the one before it.
    last = await service.write(alice, "Ana: Sounds fun!", kind="episode", occurred_at=T0 + timedelta(minutes=2))
    middle = await service.write(alice, "Tom: We also baked.", kind="episode", occurred_at=T0 + timedelta(minutes=1))
    assert await _is(database, service, last.memory.id, "Ana: Sounds fun!", "Tom: We also baked.")
    await service.update(alice, middle.memory.id, occurred_at=T0 + timedelta(hours=3))
    assert await _is(database, service, last.memory.id, "Ana: Sounds fun!", edited)


async def _three_turns_and_a_decider(database: Database, settings, chat: ChatAPI, p: Principal,
                                     **over) -> tuple[MemoryService, MemoryService, DecisionWorker, UUID, UUID]:
    """QUESTION, SAID and REPLY written a minute apart with no decisions (no jobs for them); a
    service whose writes the scripted model decides, and its worker. The turn said and the reply."""
    service = await MemoryService.open(database, settings)
    s = decisions_settings(settings, chat.url, **over)
    decider = await MemoryService.open(database, s)
    worker = DecisionWorker(database.admin, decider, provider_from(s), s)
    await service.write(p, QUESTION, kind="episode", occurred_at=T0)
    code = (await service.write(p, SAID, kind="episode", occurred_at=T0 + timedelta(minutes=1))).memory
    after = (await service.write(p, REPLY, kind="episode", occurred_at=T0 + timedelta(minutes=2))).memory
    assert await _is(database, service, after.id, REPLY, SAID)
    return service, decider, worker, code.id, after.id


async def test_an_accepted_suggestion_to_forget_a_turn_leaves_the_turn_after_it_not_holding_it(
        database: Database, settings, chat: ChatAPI, alice: Principal) -> None:
    """The guard keeps the model's DELETE of a turn about someone else as a suggestion; the user
    accepts it: the turn after it no longer holds it."""
    service, decider, worker, code, after = await _three_turns_and_a_decider(database, settings, chat, alice)
    await decider.write(alice, "Priya Raman's gate code 4471 was wrong.", occurred_at=T0 + timedelta(minutes=3))
    chat.script(("json", {"action": "DELETE", "ids": ["1"], "reason": "the code was wrong"}))
    await drain(worker)
    job = (await jobs_of(database))[-1]
    assert list(result_of(job)["suggested"]) == [str(code)]
    assert await _is(database, service, after, REPLY, SAID)
    assert (await decider.accept_suggestion(alice, job["id"]))["accepted"] == [str(code)]
    assert await _is(database, service, after, REPLY, QUESTION)


async def test_a_memory_made_a_turn_or_no_longer_one_is_held_by_the_turn_after_it_or_not(
        service: MemoryService, database: Database, alice: Principal) -> None:
    baked = "Tom: We also baked a cake."
    await service.write(alice, QUESTION, kind="episode", occurred_at=T0)
    note = await service.write(alice, baked, kind="note", occurred_at=T0 + timedelta(minutes=1))
    reply = await service.write(alice, REPLY, kind="episode", occurred_at=T0 + timedelta(minutes=2))
    assert await _is(database, service, reply.memory.id, REPLY, QUESTION)
    await service.update(alice, note.memory.id, kind="episode")
    assert await _is(database, service, note.memory.id, baked, QUESTION)
    assert await _is(database, service, reply.memory.id, REPLY, baked)
    await service.update(alice, note.memory.id, kind="note")
    assert await _is(database, service, note.memory.id, baked, None)
    assert await _is(database, service, reply.memory.id, REPLY, QUESTION)


async def test_a_forgotten_turn_leaves_no_vector_and_a_restored_one_is_followed_again(
        service: MemoryService, database: Database, alice: Principal) -> None:
    secret = "Tom: my door code is 4471, by the way."
    turns = [QUESTION, secret, REPLY]
    written = await service.write_many(alice, [WriteItem(content=t, kind="episode",
                                                         occurred_at=T0 + timedelta(minutes=i))
                                               for i, t in enumerate(turns)])
    ids = [m.id for m in written.memories]
    assert await _is(database, service, ids[2], REPLY, secret)
    await service.forget(alice, [ids[1]], reason="said by mistake")
    assert await _is(database, service, ids[2], REPLY, QUESTION)
    await service.restore(alice, [ids[1]])
    assert await _is(database, service, ids[2], REPLY, secret)
    # Forgotten together and one brought back: it no longer holds the other.
    await service.forget(alice, [ids[0], ids[1]])
    await service.restore(alice, [ids[1]])
    assert await _is(database, service, ids[1], secret, None)


async def _every_turn_follows_the_rule(database: Database, service: MemoryService, p: Principal) -> None:
    """Each live memory's stored vector is the one the store's own rule gives it (repository/turns.py)."""
    ids = [r["id"] for r in await database.admin.fetch(
        "SELECT id FROM memories WHERE user_id = $1 AND deleted_at IS NULL", p.user_id)]
    assert service.vectors is not None
    minutes = service.vectors.turn_minutes
    for memory_id, (kind, content, before) in (await service.repo.turns_before(p, ids, minutes)).items():
        assert await _is(database, service, memory_id, content, before if kind == "episode" else None), content


async def test_a_turn_a_decision_forgets_or_rewrites_is_no_longer_held_by_the_turn_after_it(
        database: Database, settings, chat: ChatAPI, alice: Principal) -> None:
    """A model's DELETE of a turn (a note's decision, whose candidates include turns), and its
    UPDATE's merged text for a new turn (turns are decided when nothing extracts from them): the
    turn after each holds what is there now; the merged turn holds the turn before it, as a write
    would."""
    service, decider, worker, code, after = await _three_turns_and_a_decider(
        database, settings, chat, alice, decisions_guard=False, extraction=False)
    await decider.write(alice, "Tom's door code 4471 was wrong.", occurred_at=T0 + timedelta(minutes=3))
    # The candidates, closest first: the reply (which holds the code), then the code.
    chat.script(("json", {"action": "DELETE", "ids": ["2"], "reason": "the code was wrong"}))
    await drain(worker)
    assert result_of((await jobs_of(database))[-1])["applied"] == [str(code)]
    assert await _is(database, service, after, REPLY, QUESTION)

    later = (await service.write(alice, "Ana: Sounds fun!", kind="episode",
                                 occurred_at=T0 + timedelta(minutes=5))).memory
    new = (await decider.write(alice, "Tom: the gate code is 9932 now.", kind="episode",
                               occurred_at=T0 + timedelta(minutes=4))).memory
    merged = "Tom: the gate code is 9932 now; the door code is unchanged."
    chat.script(("json", {"action": "UPDATE", "ids": ["1"], "reason": "newer", "text": merged}))
    await drain(worker)
    assert result_of((await jobs_of(database))[-1]).get("merged")
    assert await _is(database, service, new.id, merged, REPLY)
    assert await _is(database, service, later.id, "Ana: Sounds fun!", merged)
    await _every_turn_follows_the_rule(database, service, alice)


@pytest.fixture(scope="module")
def embeddings_api() -> Iterator[EmbeddingsAPI]:
    server = EmbeddingsAPI()
    server.start()
    yield server
    server.close()


async def test_a_turn_edited_while_the_model_hangs_leaves_no_stale_vector_after_it(
        embeddings_api: EmbeddingsAPI, settings, database: Database, alice: Principal) -> None:
    def served(timeout_s: float) -> Settings:
        return settings.model_copy(update={
            "embedding_provider": "openai", "embedding_model": "text-embedding-3-small", "embedding_api_key": "sk-test",
            "embedding_base_url": embeddings_api.url("openai"), "embedding_timeout_s": timeout_s,
            "embedding_breaker_failures": 1})

    writer = await MemoryService.open(database, served(30))
    turns = [QUESTION, "Tom: my door code is 4471.", REPLY]
    written = await writer.write_many(alice, [
        WriteItem(content=t, kind="episode", occurred_at=T0 + timedelta(minutes=i)) for i, t in enumerate(turns)])
    ids = [m.id for m in written.memories]
    assert await database.admin.fetchval("SELECT count(*) FROM memories WHERE embedding IS NULL") == 0
    service = await MemoryService.open(database, served(0.5))
    embeddings_api.delay = 2.0  # hangs past the timeout
    try:
        edited = await service.update(alice, ids[1], content="Tom: my door code is (removed).")
    finally:
        embeddings_api.delay = 0.0
    assert edited.status == "updated"
    # Neither the edited turn nor the one after it keeps a vector of the text edited away.
    assert await database.admin.fetchval("SELECT count(*) FROM memories WHERE embedding IS NULL") == 2
    assert writer.vectors is not None
    assert await writer.vectors.backfill(reembed=False, progress=False) == 2
    assert await _is(database, writer, ids[2], REPLY, "Tom: my door code is (removed).")


async def test_the_backfill_embeds_a_turn_as_a_write_would_have(
        service: MemoryService, database: Database, alice: Principal) -> None:
    first = await service.write(alice, QUESTION, kind="episode", occurred_at=T0)
    second = await service.write(alice, REPLY, kind="episode", occurred_at=T0 + timedelta(minutes=1))
    await database.admin.execute("UPDATE memories SET embedding = NULL, embedding_model = NULL")
    assert service.vectors is not None
    assert await service.vectors.backfill(reembed=False, progress=False) == 2
    assert await _is(database, service, first.memory.id, QUESTION, None)
    assert await _is(database, service, second.memory.id, REPLY, QUESTION)


async def test_a_store_that_turns_the_weight_on_embeds_its_episodes_again_with_backfill_episodes(
        make_db: Callable, settings: Settings, alice: Principal, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = await make_db()
    alone = settings.model_copy(update={"database_url": url, "embedding_turn_weight": 0})
    db = await open_database(alone)
    try:
        before = (await compose(db, alone)).service
        await before.write(alice, QUESTION, kind="episode", occurred_at=T0)
        replied = await before.write(alice, REPLY, kind="episode", occurred_at=T0 + timedelta(minutes=1))
        await before.write(alice, "Tom likes board games.", occurred_at=T0 + timedelta(minutes=2))
        assert await _is(db, before, replied.memory.id, REPLY, None)
        monkeypatch.setenv("MCP_MEMORY_EMBEDDING_TURN_WEIGHT", str(WEIGHT))
        code = await anyio.to_thread.run_sync(main, ["backfill", "--episodes", "--quiet", "--database-url", url])
        assert code == 0 and "embedded 2 memories" in capsys.readouterr().out
        after = (await compose(db, settings.model_copy(update={"database_url": url}))).service
        assert await _is(db, after, replied.memory.id, REPLY, QUESTION)
    finally:
        await db.close()


async def test_with_no_weight_every_turn_is_embedded_alone(make_db: Callable, settings, alice: Principal) -> None:
    alone = settings.model_copy(update={"database_url": await make_db(), "embedding_turn_weight": 0})
    db = await open_database(alone)
    try:
        service = (await compose(db, alone)).service
        await service.write(alice, QUESTION, kind="episode", occurred_at=T0)
        replied = await service.write(alice, REPLY, kind="episode", occurred_at=T0 + timedelta(minutes=1))
        assert await _is(db, service, replied.memory.id, REPLY, None)
    finally:
        await db.close()


async def test_an_import_of_our_export_takes_the_turns_vectors_made_after_the_turn_before(
        service: MemoryService, database: Database, alice: Principal, empty_store, tmp_path: Path,
        make_db: Callable, settings: Settings) -> None:
    texts = [f"{'Ana' if i % 2 else 'Tom'}: turn {i} about the release train and week {i} of the rota."
             for i in range(120)]
    written = await service.write_many(alice, [WriteItem(content=t, kind="episode",
                                                         occurred_at=T0 + timedelta(minutes=i))
                                               for i, t in enumerate(texts)])
    # A forgotten turn leaves the one after it unsure: embedded after it, or after the one before?
    await service.forget(alice, [written.memories[60].id], reason="test")
    source = {r["id"]: r["embedding"].to_numpy() for r in await database.admin.fetch(
        "SELECT id, embedding FROM memories")}
    dump = tmp_path / "export.jsonl"
    dump.write_text(await exported_with_vectors(service, database.admin, alice.user_id))
    target, db = empty_store
    report = await import_paths(target, MaintenanceRepository(db.admin), alice, [dump], progress=False)
    assert report.created == 120
    [line] = report.embedding
    assert line.startswith("export.jsonl: took the export's vectors for ") and "every one matched" in line
    imported = {r["id"]: r["embedding"] for r in await db.admin.fetch("SELECT id, embedding FROM memories")}
    unsure = written.memories[61].id
    assert imported[unsure] is None
    taken = [i for i, v in imported.items() if v is not None]
    assert len(taken) >= 70
    for i in taken:
        assert np.array_equal(imported[i].to_numpy(), source[i])
    assert target.vectors is not None
    await target.vectors.backfill(reembed=False, progress=False)
    assert await _is(db, target, unsure, texts[61], texts[59])
    header, *lines = [json.loads(line) for line in dump.read_text().splitlines()]
    records = [line for line in lines if line["type"] == "memory"]
    assert header["embedding"]["turns"] == {"weight": WEIGHT, "minutes": 30.0}
    assert sum(r["memory"]["kind"] == "episode" for r in records) == 120
    # A store that embeds episodes alone takes none of those vectors: it embeds them its own way.
    alone = settings.model_copy(update={"database_url": await make_db(), "embedding_turn_weight": 0})
    other = await open_database(alone)
    try:
        elsewhere = (await compose(other, alone)).service
        await import_paths(elsewhere, MaintenanceRepository(other.admin), alice, [dump], progress=False)
        assert await other.admin.fetchval("SELECT count(*) FROM memories WHERE embedding IS NOT NULL") == 0
        assert elsewhere.vectors is not None
        await elsewhere.vectors.backfill(reembed=False, progress=False)
        assert await _is(other, elsewhere, written.memories[5].id, texts[5], None)
    finally:
        await other.close()
