"""Hybrid retrieval on a real database with the default local embedder: the vector list,
fail-open writes and the backfill, the model check, recency, as_of, explain."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.embeddings import conflict_similarity
from mcp_memory.errors import Unavailable
from mcp_memory.models import Kind, Memory, MemoryFilter, Principal
from mcp_memory.repository import MemoryRepository
from mcp_memory.repository.embeddings import EmbeddingRepository
from mcp_memory.retrieval.query import word_pairs
from mcp_memory.service import MemoryService
from mcp_memory.vectors import Vectors, embedder_from


class Broken:
    """An embedder whose service is down."""

    model, dimension = "all-MiniLM-L6-v2-int8", 384

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise Unavailable("embedding service down")

    async def embed_query(self, text: str) -> list[float]:
        raise Unavailable("embedding service down")


class Counting:
    def __init__(self, inner) -> None:
        self.inner, self.model, self.dimension, self.calls = inner, inner.model, inner.dimension, 0

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += len(texts)
        return await self.inner.embed_documents(texts)

    async def embed_query(self, text: str) -> list[float]:
        return await self.inner.embed_query(text)


def service_with(database: Database, settings: Settings, embedder) -> MemoryService:
    vectors = Vectors(embedder, EmbeddingRepository(database.pool, database.admin), settings)
    return MemoryService(MemoryRepository(database.pool), settings, vectors)


async def test_vectors_find_meaning_without_shared_words(service: MemoryService, alice: Principal) -> None:
    pet = (await service.write(alice, "Our golden retriever Biscuit turns four in May")).memory
    await service.write(alice, "The quarterly tax filing is due on the 15th")
    hits = (await service.search(alice, "how old is my dog", explain=True)).hits
    assert hits[0].id == pet.id
    assert hits[0].explain["vector"] == 1 and hits[0].explain["fulltext"] is None


async def test_short_queries_use_trigram_for_typos(service: MemoryService, alice: Principal) -> None:
    target = (await service.write(alice, "Deploy with kubectl rollout restart")).memory
    await service.write(alice, "Lunch is at noon")
    hits = (await service.search(alice, "kubctl rollout", explain=True)).hits
    assert hits[0].id == target.id and hits[0].explain["trigram"] == 1
    long = (await service.search(alice, "what is the command we use to deploy a new release", explain=True)).hits
    assert all(h.explain["trigram"] is None for h in long)  # long questions skip the trigram list


async def test_trigram_only_rescues_what_full_text_cannot_fill(settings: Settings, service: MemoryService,
                                                               alice: Principal) -> None:
    s = settings.model_copy(update={"search_candidates": 10})
    svc = MemoryService(service.repo, s, service.vectors)
    for i in range(12):
        await svc.write(alice, f"Kafka topic orders-{i} keeps seven days of events")
    full = (await svc.search(alice, "Kafka", limit=12, explain=True)).hits
    # Full text filled its list of 10: no trigram list (it would be an arbitrary sample at scale).
    assert sum(h.explain["fulltext"] is not None for h in full) == 10
    assert all(h.explain["trigram"] is None for h in full)
    typo = (await svc.search(alice, "Kafak", limit=12, explain=True)).hits
    assert typo and all(h.explain["fulltext"] is None for h in typo)
    assert any(h.explain["trigram"] is not None for h in typo)


async def test_fail_open_write_then_backfill(database: Database, settings: Settings, alice: Principal) -> None:
    down = service_with(database, settings, Broken())
    written = (await down.write(alice, "Pancakes need two eggs and a cup of milk")).memory
    hits = (await down.search(alice, "pancakes recipe eggs", explain=True)).hits
    assert hits[0].id == written.id and hits[0].explain["vector"] is None  # found by full text
    async with database.admin.acquire() as conn:
        assert await conn.fetchval("SELECT embedding IS NULL FROM memories") is True

    up = service_with(database, settings, embedder_from(settings))
    assert await up.vectors.backfill(reembed=False, progress=False) == 1
    assert await up.vectors.backfill(reembed=False, progress=False) == 0  # resumable: nothing left
    hits = (await up.search(alice, "breakfast batter ingredients", explain=True)).hits
    assert hits[0].id == written.id and hits[0].explain["vector"] == 1


async def test_cache_spares_the_embedder(database: Database, settings: Settings, alice: Principal) -> None:
    counting = Counting(embedder_from(settings))
    service = service_with(database, settings, counting)
    first = (await service.write(alice, "Cached sentence")).memory
    await service.forget(alice, [first.id])
    await service.write(alice, "Cached sentence")
    assert counting.calls == 1


async def test_a_new_model_needs_a_reembed(database: Database, settings: Settings, alice: Principal,
                                           service: MemoryService) -> None:
    await service.write(alice, "Built with MiniLM")
    other = settings.model_copy(update={"embedding_model": "static-10k-64d-int8"})
    switched = service_with(database, other, embedder_from(other))
    with pytest.raises(Unavailable, match=r"built with embedding model all-MiniLM-L6-v2-int8 \(384.*--reembed"):
        await switched.vectors.prepare()
    assert await switched.vectors.backfill(reembed=True, progress=False) == 1
    await switched.vectors.prepare()  # now consistent
    hits = (await switched.search(alice, "MiniLM", explain=True)).hits
    assert hits[0].explain["vector"] == 1


async def test_recency_puts_the_newest_fact_first(service: MemoryService, alice: Principal,
                                                  settings: Settings) -> None:
    now = datetime.now(UTC)
    old = (await service.write(alice, "Maya lives in Lisbon, her home is in Lisbon",
                               occurred_at=now - timedelta(days=200))).memory
    new = (await service.write(alice, "Maya lives in Oslo now", occurred_at=now - timedelta(days=2))).memory
    hits = (await service.search(alice, "where does Maya live", explain=True)).hits
    assert [h.id for h in hits[:2]] == [new.id, old.id]
    assert hits[0].explain["recency"] > hits[1].explain["recency"] >= settings.recency_floor

    # as_of is the store as it stood: nothing had been written 100 days ago.
    assert (await service.search(alice, "where does Maya live", MemoryFilter(as_of=now - timedelta(days=100)))).hits \
        == []
    between = datetime.now(UTC)
    written_later = (await service.write(alice, "Maya adopted a cat")).memory
    assert written_later.id in {h.id for h in (await service.search(alice, "Maya cat")).hits}
    before = (await service.search(alice, "Maya cat", MemoryFilter(as_of=between))).hits
    assert {h.id for h in before} == {old.id, new.id}


async def test_excluded_words_exclude_everywhere(service: MemoryService, alice: Principal) -> None:
    apple = (await service.write(alice, "apple pie with cinnamon")).memory
    banana = (await service.write(alice, "apple and banana smoothie")).memory
    assert banana.id in {h.id for h in (await service.search(alice, "apple")).hits}
    for query in ("apple -banana", "apple cinnamon -banana", "smoothie -banana"):
        ids = {h.id for h in (await service.search(alice, query)).hits}
        assert banana.id not in ids, query
    assert apple.id in {h.id for h in (await service.search(alice, "apple -banana")).hits}


async def test_penalty_only_while_the_successor_lives(service: MemoryService, alice: Principal) -> None:
    old = (await service.write(alice, "The build runs on Jenkins")).memory
    new = (await service.write(alice, "The build moved to GitHub Actions", supersedes=[old.id])).memory
    penalised = {h.id: h.score for h in (await service.search(alice, "where does the build run")).hits}
    await service.forget(alice, [new.id])
    restored = {h.id: h.score for h in (await service.search(alice, "where does the build run")).hits}
    assert restored[old.id] > penalised[old.id] * 1.5


async def test_versions_of_a_fact_are_grouped_at_the_models_threshold(service: MemoryService, alice: Principal,
                                                                    settings: Settings) -> None:
    """MiniLM puts these two versions at cosine ~0.70: below the old fixed 0.8, above its own 0.65."""
    now = datetime.now(UTC)
    old = (await service.write(alice, "Felix Byrne lives in Porto and likes the neighbourhood.",
                               occurred_at=now - timedelta(days=400))).memory
    new = (await service.write(alice, "Felix Byrne is living in Nairobi.",
                               occurred_at=now - timedelta(days=300))).memory
    await service.write(alice, "Felix Byrne's birthday is on 3 March.")

    assert conflict_similarity(service.vectors.model) == 0.65

    async def ranked(**update: object) -> list:
        # Recency and the focus on the subject's answers off (the question, with no time word, asks
        # a home city): the rule alone must decide.
        s = settings.model_copy(update={"recency_floor": 1.0, "present_focus": False, **update})
        found = await MemoryService(service.repo, s, service.vectors).search(alice, "Where does Felix Byrne live?")
        return [h.id for h in found.hits]

    old_threshold = await ranked(conflict_similarity=0.8)
    assert old_threshold.index(old.id) < old_threshold.index(new.id)  # the wording favours the stale version
    models_own = await ranked()
    assert models_own.index(new.id) < models_own.index(old.id)


def test_newest_of_conflicting_versions_ranks_first() -> None:
    import numpy as np
    from pgvector import Vector

    from mcp_memory.retrieval.versions import newest_of_conflicts

    def row(name: str, vector: list[float], days_ago: int) -> dict:
        v = np.asarray(vector, dtype=np.float32)
        return {"name": name, "embedding": Vector(v / np.linalg.norm(v)),
                "occurred_at": datetime(2025, 1, 1, tzinfo=UTC) - timedelta(days=days_ago)}

    rows = [row("lisbon (old)", [1, 0.1, 0], 300), row("unrelated", [0, 0, 1], 1),
            row("oslo (new)", [1, 0.15, 0], 3), row("no vector", [1, 0, 0], 0)]
    rows[3]["embedding"] = None
    assert [r["name"] for r in newest_of_conflicts(rows, 0.9)] == ["oslo (new)", "unrelated", "lisbon (old)",
                                                                    "no vector"]
    assert newest_of_conflicts(rows, 1.0) == rows  # off
    # Turns of a conversation are not versions: a later turn saying the same replaces nothing.
    turns = [row("what kind of yoga is it (old)", [1, 0.1, 0], 300), row("a yoga studio? (new)", [1, 0.15, 0], 3)]
    for turn in turns:
        turn["kind"] = "episode"
    assert newest_of_conflicts(turns, 0.9) == turns
    assert [r["name"] for r in newest_of_conflicts([turns[0], rows[2]], 0.9)] == [
        "what kind of yoga is it (old)", "oslo (new)"]

    # The query's words decide first: "when did order 5 ship" keeps the older "order 5 shipped"
    # above "order 7 shipped", however alike their vectors; equal word matches go newest first.
    order5, order7 = row("order 5 shipped", [1, 0.1, 0], 30), row("order 7 shipped", [1, 0.12, 0], 2)
    order5["fts_key"], order7["fts_key"] = 9.1, 4.3
    assert [r["name"] for r in newest_of_conflicts([order5, order7], 0.9)] == ["order 5 shipped", "order 7 shipped"]
    order7["fts_key"] = 9.1 + 0.01
    assert [r["name"] for r in newest_of_conflicts([order5, order7], 0.9)] == ["order 7 shipped", "order 5 shipped"]


@pytest.mark.parametrize("fusion", ["relative", "rrf"])
async def test_fusion_shares(service: MemoryService, alice: Principal, settings: Settings, fusion: str) -> None:
    """Relative fusion gives each list's best candidate its whole weight and its worst none;
    reciprocal rank gives place r weight / (k + r) whatever the scores."""
    s = settings.model_copy(update={"fusion": fusion})
    svc = MemoryService(service.repo, s, service.vectors)
    best = (await svc.write(alice, "The quarterly budget spreadsheet lives in the finance drive")).memory
    await svc.write(alice, "Budget meetings are on Mondays")
    await svc.write(alice, "The office plants need water on Fridays")
    hits = (await svc.search(alice, "where is the quarterly budget spreadsheet", explain=True)).hits
    top = hits[0]
    assert top.id == best.id and top.explain["vector"] == 1 and top.explain["fulltext"] == 1
    both = s.weight_vector + s.weight_fulltext
    expected = both if fusion == "relative" else both / (s.rrf_k + 1)
    assert top.explain["fused"] == pytest.approx(expected, abs=1e-5)
    if fusion == "relative":  # the plants are last by meaning and match no word
        plants = next(h for h in hits if "plants" in h.snippet)
        assert plants.explain["fulltext"] is None and plants.explain["fused"] == pytest.approx(0, abs=1e-6)


def _conversation(service: MemoryService, p: Principal) -> Callable[..., Awaitable[Memory]]:
    """Writes turns of a conversation held three days ago, `minute` minutes in (episodes unless
    told otherwise)."""
    start = datetime.now(UTC) - timedelta(days=3)

    async def say(minute: int, text: str, kind: Kind = "episode", **fields: Any) -> Memory:
        return (await service.write(p, text, kind=kind, occurred_at=start + timedelta(minutes=minute),
                                    **fields)).memory
    return say


async def test_a_question_passes_its_score_to_its_reply(service: MemoryService, alice: Principal,
                                                        settings: Settings) -> None:
    """The answer shares no word with the search; the question written just before it does."""
    say = _conversation(service, alice)

    question = await say(0, "Sam: What are you researching these days, Jo?")
    reply = await say(1, "Jo: Adoption agencies, mostly the ones near Boston.")
    await say(2, "Jo: I walked the dog along the river this morning.")
    await say(3, "Sam: The bakery on Elm Street closed for good.")
    late_question = await say(100, "Sam: Is your research going well, Jo?")
    too_late = await say(140, "Jo: We plant the garden next spring.")  # 40 minutes on: no reply
    fact_question = await say(200, "Sam: Where does the research take you, Jo?")
    fact = await say(201, "Jo works for a charity in Boston.", kind="fact")  # facts stand alone
    await say(300, "Sam: Which research do you read, Jo?")
    elsewhere = await say(301, "Jo: Mostly old maps.", scope="user")  # another scope: no reply

    async def search(weight: float) -> dict:
        # Jo is about most of these turns: her name would leave the vector (tests/test_broad_names.py),
        # which moves the ranks this test reads the reply's share off.
        s = settings.model_copy(update={"reply_weight": weight, "preceding_weight": 0.0, "recency_floor": 1.0,
                                        "vector_name_share": 1.0})
        hits = (await MemoryService(service.repo, s, service.vectors).search(
            alice, "What is Jo researching?", limit=20, explain=True)).hits
        return {h.id: (i, h.explain) for i, h in enumerate(hits)}

    on, off = await search(settings.reply_weight), await search(0.0)
    assert on[reply.id][1]["reply"] == pytest.approx(settings.reply_weight * on[question.id][1]["fused"], abs=1e-5)
    # First, above the four questions that share the search's words (they only address Jo, the
    # reply is Jo's own); below all four without the question's share.
    assert on[reply.id][0] == 0 and off[reply.id][0] > 4
    assert off[reply.id][1]["reply"] == 0
    for stranger in (too_late, fact, elsewhere):
        assert on[stranger.id][1]["reply"] == 0
    assert on[late_question.id][1]["reply"] == on[fact_question.id][1]["reply"] == 0

    # A forget preview lists what matches the words or the meaning, never what merely answered it.
    preview = await service.forget_preview(alice, query="researching")
    assert reply.id not in {c.id for c in preview.candidates}
    assert question.id in {c.id for c in preview.candidates}


async def test_a_follow_up_question_passes_its_score_to_the_turn_before_it(
        service: MemoryService, alice: Principal, settings: Settings) -> None:
    """The turn that holds the answer shares no word with the search; the question following it
    up does. A turn that asks nothing passes nothing back."""
    say = _conversation(service, alice)
    trip = await say(0, "Ana: We hiked around Lake Bled for a week.")
    follow_up = await say(1, "Tom: Slovenia for your holiday, Ana? How was it?")
    await say(2, "Ana: The weather was perfect for it.")
    await say(3, "Tom: My sister adopted a cat last month.")
    cake = await say(4, "Ana: I baked a plum cake for the team.")
    await say(5, "Tom: Ana, that sounds like a holiday treat.")  # asks nothing: passes nothing back
    kitchen = await say(100, "Ana: I repainted the kitchen green.")
    await say(140, "Tom: Ana, was that your holiday project?")  # 40 minutes on: no follow-up to it
    starter = await say(200, "Ana keeps a sourdough starter in the fridge.", kind="fact")  # facts stand alone
    await say(201, "Tom: Ana, do you ever take a holiday from baking?")
    # Facts that match the search's name and some of its meaning: the hike only passes them lifted.
    await say(300, "Ana went to the dentist in May.", kind="fact")
    await say(301, "Ana goes to the office on Tuesdays.", kind="fact")

    async def search(weight: float) -> dict:
        s = settings.model_copy(update={"preceding_weight": weight, "recency_floor": 1.0, "vector_name_share": 1.0})
        hits = (await MemoryService(service.repo, s, service.vectors).search(
            alice, "Where did Ana go on holiday?", limit=20, explain=True)).hits
        return {h.id: (i, h.explain) for i, h in enumerate(hits)}

    on, off = await search(settings.preceding_weight), await search(0.0)
    assert on[trip.id][1]["reply"] == pytest.approx(settings.preceding_weight * on[follow_up.id][1]["fused"],
                                                    abs=1e-5)
    assert off[trip.id][1]["reply"] == 0
    assert on[trip.id][0] < off[trip.id][0]
    assert on[cake.id][1]["reply"] == on[kitchen.id][1]["reply"] == on[starter.id][1]["reply"] == 0


async def test_a_filter_does_not_change_which_turn_is_a_neighbour(service: MemoryService, alice: Principal,
                                                                   settings: Settings) -> None:
    """Under a tag filter a turn's neighbour is still the turn next to it, lifted only if the filter
    lets it through; never the nearest turn that happens to carry the tag."""
    say = _conversation(service, alice)

    trip = await say(0, "Ana: We hiked around Lake Bled for a week.", tags=["trip"])
    await say(1, "Tom: My sister adopted a cat last month.", tags=[])
    follow_up = await say(2, "Tom: Slovenia for your holiday, Ana? How was it?", tags=["trip"])
    question = await say(10, "Tom: Ana, what did you eat on holiday?", tags=["trip"])
    cheese = await say(11, "Ana: Mostly cheese, honestly.", tags=[])
    dumplings = await say(12, "Ana: Struklji, the rolled dumplings.", tags=["trip"])

    s = settings.model_copy(update={"recency_floor": 1.0})
    search = MemoryService(service.repo, s, service.vectors).search
    tagged = {h.id: h.explain for h in (await search(
        alice, "Where did Ana go on holiday?", MemoryFilter(tags=["trip"]), limit=20, explain=True)).hits}
    assert follow_up.id in tagged and question.id in tagged
    # The turn before the follow-up (the cat) and the reply to the question (the cheese) carry no
    # tag: neither is lifted, and the tagged turns beyond them are no neighbours.
    assert tagged[trip.id]["reply"] == tagged[dumplings.id]["reply"] == 0
    everything = {h.id: h.explain for h in (await search(
        alice, "Where did Ana go on holiday?", limit=20, explain=True)).hits}
    assert everything[trip.id]["reply"] == everything[dumplings.id]["reply"] == 0
    assert everything[cheese.id]["reply"] > 0


async def test_as_of_finds_the_neighbour_a_turn_had_then(service: MemoryService, alice: Principal) -> None:
    """A turn imported later between a question and its reply is no neighbour of either as the
    store stood before it arrived."""
    say = _conversation(service, alice)

    question = await say(0, "Sam: What are you researching these days, Jo?")
    reply = await say(2, "Jo: Adoption agencies, mostly the ones near Boston.")
    await asyncio.sleep(0.05)
    then = datetime.now(UTC)
    await asyncio.sleep(0.05)
    await say(1, "Jo: Give me a second, my tea is boiling over.")

    def replies(result) -> dict:
        return {h.id: h.explain["reply"] for h in result.hits}

    before = replies(await service.search(alice, "What is Jo researching?", MemoryFilter(as_of=then), explain=True))
    assert question.id in before and before[reply.id] > 0
    now = replies(await service.search(alice, "What is Jo researching?", explain=True))
    assert now.get(reply.id, 0) == 0  # the tea came between them


async def test_time_words_steer_instead_of_matching(service: MemoryService, alice: Principal) -> None:
    """'these days' is no content word: it must not lift another person's memory that says it."""
    now = datetime.now(UTC)
    ana = (await service.write(alice, "Ana Ferreira rents a flat in Ghent",
                               occurred_at=now - timedelta(days=90))).memory
    decoy = (await service.write(alice, "Leo Brandt does yoga every morning these days",
                                 occurred_at=now - timedelta(days=1))).memory
    result = await service.search(alice, "Which city is Ana Ferreira based in these days?", explain=True)
    ranked = [h.id for h in result.hits]
    assert ranked.index(ana.id) < ranked.index(decoy.id) if decoy.id in ranked else ranked[0] == ana.id
    assert result.intent is not None and result.intent.tense == "present"
    assert result.intent.phrases == ["these days"] and "these days" not in result.intent.matched
    assert (await service.search(alice, "Ana Ferreira flat", explain=True)).intent is None


async def test_a_question_about_the_past_does_not_push_old_versions_down(service: MemoryService,
                                                                         alice: Principal) -> None:
    old = (await service.write(alice, "The build runs on Jenkins",
                               occurred_at=datetime.now(UTC) - timedelta(days=400))).memory
    await service.write(alice, "The build moved to GitHub Actions", supersedes=[old.id])
    present = {h.id: h for h in (await service.search(alice, "where does the build run", explain=True)).hits}
    past = {h.id: h for h in (await service.search(alice, "where did the build run previously",
                                                   explain=True)).hits}
    assert present[old.id].explain["recency"] < 1 and past[old.id].explain["recency"] == 1
    # Neither superseded nor old counts against it: its score is its fused score.
    assert past[old.id].explain["sql_score"] == pytest.approx(past[old.id].explain["fused"], rel=1e-4)
    assert present[old.id].score < present[old.id].explain["fused"] * 0.6


@pytest.mark.parametrize("when", ["1215-06-15 00:00:00+00", "0001-01-01 00:00:00+00", "9999-12-31 00:00:00+00"])
async def test_any_stored_date_leaves_search_working(service: MemoryService, database: Database, alice: Principal,
                                                     when: str) -> None:
    """The recency factor once underflowed for a memory dated centuries ago, failing every search
    in its namespace."""
    odd = (await service.write(alice, "Magna Carta was sealed at Runnymede")).memory
    fresh = (await service.write(alice, "Runnymede meadow walk on Sunday")).memory
    async with database.admin.acquire() as conn:
        await conn.execute("UPDATE memories SET occurred_at = $1::text::timestamptz WHERE id = $2", when, odd.id)
    hits = {h.id: h for h in (await service.search(alice, "Runnymede", explain=True)).hits}
    assert {odd.id, fresh.id} <= hits.keys()
    assert 0.7 <= hits[odd.id].explain["recency"] <= 1


async def test_a_write_says_what_it_touches(service: MemoryService, alice: Principal) -> None:
    lisbon = (await service.write(alice, "Maya Okafor lives in Lisbon")).memory
    jenkins = (await service.write(alice, "The build runs on Jenkins")).memory
    moved = await service.write(alice, "Maya Okafor moved to Oslo last month")
    related = {r.id: r for r in moved.related}
    assert lisbon.id in related and jenkins.id not in related
    assert moved.memory.id not in related and 0 < related[lisbon.id].similarity <= 1
    assert moved.memory.superseded_by is None and (await service.get_one(alice, lisbon.id)).superseded_by is None
    # Named in supersedes: already handled, so not listed again; a duplicate lists nothing.
    again = await service.write(alice, "Maya Okafor's new apartment is in Berlin", supersedes=[moved.memory.id])
    assert moved.memory.id not in {r.id for r in again.related} and lisbon.id in {r.id for r in again.related}
    assert (await service.write(alice, "Maya Okafor lives in Lisbon")).related == []
    # An update of the content says it too.
    updated = await service.update(alice, jenkins.id, content="Maya Okafor lives in Porto now")
    assert lisbon.id in {r.id for r in updated.related}


async def test_the_person_asked_about_outranks_namesakes_and_shared_words(service: MemoryService,
                                                                           alice: Principal) -> None:
    """A rarer generic word ("fit") must not beat the name: the memories of a namesake and of
    someone sharing a first name lose to the one person named in full."""
    others = ["Wendell Jankowski stays fit by rowing.", "Zofia Pavel stays fit with judo.",
              "Henrik Eriksen stays fit with rowing.", "Yusuf Pellegrini stays fit by cycling."]
    for text in others:
        await service.write(alice, text)
    own = await service.write(alice, "Pavel Jankowski plays squash twice a week to stay fit.")
    found = await service.search(alice, "How does Pavel Jankowski stay fit currently?", explain=True)
    assert found.hits[0].id == own.memory.id, [h.snippet for h in found.hits]
    # The namesakes' notes are about someone else the graph knows: they lose as much.
    assert found.hits[0].explain["subject"] > 1 and found.hits[1].explain["subject"] < 1


def test_word_pairs_join_content_words_across_one_word() -> None:
    assert word_pairs("Maya Okafor's flat is in Porto") == {("maya", "okafor"), ("maya", "flat"), ("okafor", "flat")}
    assert ("user", "prefers") in word_pairs("User now prefers spaces") & word_pairs("User prefers tabs")
    assert word_pairs("I moved to Berlin") == {("moved", "berlin")}  # "to" skipped over, not paired


async def test_related_leaves_out_the_same_thing_said_of_someone_else(service: MemoryService,
                                                                      alice: Principal) -> None:
    """Other people's memories in the same words are near a new one, but not its versions."""
    others = [(await service.write(alice, text)).memory.id for text in (
        "Katarina Mbeki moved to Berlin last year.", "Esra Quispe lives in Berlin now.",
        "Henrik Eriksen settled in Berlin.", "Yusuf Bergstrom is based in Berlin these days.")]
    oslo = (await service.write(alice, "Odalys Pellegrini has settled down in Oslo.")).memory
    moved = await service.write(alice, "Odalys Pellegrini relocated to Berlin.")
    listed = {r.id for r in moved.related}
    assert oslo.id in listed and not listed & set(others), [r.snippet for r in moved.related]

    service.settings = service.settings.model_copy(update={"related_limit": 0})
    assert (await service.write(alice, "Odalys Pellegrini relocated to Lisbon.")).related == []


async def test_related_finds_the_users_own_earlier_note(service: MemoryService, alice: Principal) -> None:
    """An agent's notes about its user: the earlier car shares no word with the new one and is
    below the related threshold whole; with the words for the user masked it is the closest of the
    user's notes. The neighbour's car, in the same words and newer, is no version of it."""
    kia = (await service.write(alice, "I drive a Kia Niro.")).memory
    for text in ("User works at Quillstone.", "User is allergic to cats.", "The user lives in Ghent."):
        await service.write(alice, text)
    neighbour = (await service.write(alice, "My neighbour just bought a Renault Zoe.")).memory
    mini = await service.write(alice, "Got my new Mini Cooper from the dealer.")
    listed = [r.id for r in mini.related]
    assert listed and listed[0] == kia.id, [r.snippet for r in mini.related]
    assert neighbour.id not in listed and len(listed) <= 2


async def test_related_for_a_clipped_note_with_nothing_near(service: MemoryService, alice: Principal) -> None:
    """A note that names no one ("Production runs on Heroku.") and has nothing above the related
    threshold is compared with the user's notes as one about the user is."""
    fly = (await service.write(alice, "We deploy to Fly.io.")).memory
    for text in ("User works at Quillstone.", "The user lives in Ghent.", "The client hosts on Render."):
        await service.write(alice, text)
    heroku = await service.write(alice, "Production runs on Heroku.")
    assert [r.id for r in heroku.related][:1] == [fly.id], [r.snippet for r in heroku.related]
    assert len(heroku.related) <= 2


async def test_related_when_the_insert_commits_before_the_lookup(service: MemoryService, alice: Principal,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The neighbours of a new memory are looked up while it is inserted; when the insert commits
    first (as under load), the new memory itself is not among them: it would be the nearest, and
    with it "Production runs on Heroku." listed nothing (CI, 1 run in ~60 with the CPU busy)."""
    import mcp_memory.related_versions as related_versions
    looked_up = related_versions.nearest

    async def after_the_insert(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.3)
        return await looked_up(*args, **kwargs)

    fly = (await service.write(alice, "We deploy to Fly.io.")).memory
    for text in ("User works at Quillstone.", "The client hosts on Render."):
        await service.write(alice, text)
    monkeypatch.setattr(related_versions, "nearest", after_the_insert)
    heroku = await service.write(alice, "Production runs on Heroku.")
    assert [r.id for r in heroku.related] == [fly.id], [r.snippet for r in heroku.related]
    oslo = (await service.write(alice, "I live in Oslo.")).memory
    assert oslo.id in {r.id for r in (await service.write(alice, "I moved to Berlin.")).related}


async def test_related_without_shared_words_still_lists_what_is_near(service: MemoryService,
                                                                     alice: Principal) -> None:
    """First-person notes share no content words; the nearest are listed as before."""
    oslo = (await service.write(alice, "I live in Oslo.")).memory
    moved = await service.write(alice, "I moved to Berlin.")
    assert oslo.id in {r.id for r in moved.related}
    tabs = (await service.write(alice, "User prefers tabs for indentation.")).memory
    spaces = await service.write(alice, "User now prefers spaces.")
    assert spaces.related[0].id == tabs.id
