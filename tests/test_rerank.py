"""The opt-in reranker (retrieval/rerank.py): the real service over the real database, with a local
server on 127.0.0.1 speaking Voyage's rerank API (to the real `voyageai` SDK), TEI's /rerank and the
Cohere / Jina shape. The order follows the reranker's scores; a reranker that hangs, errs or answers
garbage leaves the search's own order, within the bound, with one warning line; off by default."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.models import Principal
from mcp_memory.retrieval.rerank import RerankError, Reranking, VoyageReranker, scores_from
from mcp_memory.service import MemoryService

from .conftest import principal
from .local_api import Answer, LocalAPI, error

LOGGER = "mcp_memory.retrieval.rerank"

# Eight memories a search for "coffee" finds, each with a tag of its own for the reranker to score.
NOTES = [f"[m{i}] {text}" for i, text in enumerate([
    "Alice drinks her coffee black every morning.",
    "The coffee machine in the office is broken again.",
    "Bob prefers tea, but brings coffee for Alice.",
    "Coffee beans from Ethiopia taste fruity.",
    "We met at the coffee shop on Main Street.",
    "Decaf coffee after 4 pm, said the doctor.",
    "The coffee grinder needs a new burr.",
    "A coffee stain on the contract made it unreadable.",
])]


def lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


def tag(text: str) -> str:
    return text[text.index("[m"):text.index("]") + 1]


class RerankAPI(LocalAPI):
    """POST /voyage/v1/rerank (Voyage), /tei/rerank (TEI) and /cohere/v1/rerank (Cohere / Jina).
    Each document is scored by `scores` (tag -> score; 0 for a tag not in it). `mode`: "ok",
    "hang" (sleep `hang_s`, then answer), "500", "garbage" (200 with an object of no scores),
    "short" (one document left unscored)."""

    def __init__(self) -> None:
        super().__init__()
        self.scores: dict[str, float] = {}
        self.mode = "ok"
        self.hang_s = 3.0

    def handle(self, path: str, body: dict[str, Any]) -> Answer:
        if self.mode == "hang":
            time.sleep(self.hang_s)
        if self.mode == "500":
            return error(500, "the model fell over")
        if self.mode == "garbage":
            return 200, {"nonsense": True, "results": "not a list"}
        if path == "/voyage/v1/rerank":
            docs = body["documents"]
        elif path == "/tei/rerank":
            docs = body["texts"]
        elif path == "/cohere/v1/rerank":
            docs = body["documents"]
        else:
            return error(404, f"no route {path}")
        scored = sorted(({"index": i, "score": self.scores.get(tag(d), 0.0)} for i, d in enumerate(docs)),
                        key=lambda r: -r["score"])  # the APIs answer best first: clients must read the index
        if self.mode == "short":
            scored = scored[:-1]
        if path == "/tei/rerank":
            return 200, scored
        results = [{"index": r["index"], "relevance_score": r["score"]} for r in scored]
        if path == "/cohere/v1/rerank":
            return 200, {"id": "rr-1", "results": results, "meta": {"billed_units": {"search_units": 1}}}
        return 200, {"object": "list", "data": results, "model": body["model"],
                     "usage": {"total_tokens": sum(len(d.split()) for d in docs)}}

    def reset(self) -> None:
        self.take()
        self.scores, self.mode, self.hang_s = {}, "ok", 3.0


@pytest.fixture(scope="module")
def api_server() -> Iterator[RerankAPI]:
    server = RerankAPI()
    server.start()
    yield server
    server.close()


@pytest.fixture
def api(api_server: RerankAPI) -> Iterator[RerankAPI]:
    api_server.reset()
    yield api_server
    api_server.reset()


def rerank_settings(settings: Settings, api: RerankAPI, provider: str = "tei", **more: Any) -> Settings:
    base = {"tei": api.base + "/tei", "cohere-compatible": api.base + "/cohere/v1",
            "voyage": api.base + "/voyage/v1"}[provider]
    return Settings(**{**settings.model_dump(), "rerank_provider": provider, "rerank_base_url": base,
                       "rerank_timeout_s": 1.0, **more})


@pytest.fixture
def reranked(database: Database, settings: Settings, api: RerankAPI) -> Callable[..., Any]:
    """A service as the server builds it, with a reranker over the local API."""
    async def make(provider: str = "tei", **more: Any) -> MemoryService:
        return await MemoryService.open(database, rerank_settings(settings, api, provider, **more))
    return make


async def stored(service: MemoryService, p: Principal, notes: list[str] = NOTES) -> None:
    for note in notes:
        await service.write(p, note)


async def order(service: MemoryService, p: Principal, query: str = "coffee", limit: int = 8,
                explain: bool = False) -> list[str]:
    return [tag(h.snippet) for h in (await service.search(p, query, limit=limit, explain=explain)).hits]


def inverted(tags: list[str]) -> dict[str, float]:
    """Scores that put the search's last hit first: an order it never gives by itself."""
    return {t: float(i) for i, t in enumerate(tags)}


# --- the order follows the reranker ----------------------------------------------------------------

@pytest.mark.parametrize("provider", ["tei", "cohere-compatible", "voyage"])
async def test_the_order_follows_the_rerankers_scores(service: MemoryService, alice: Principal, api: RerankAPI,
                                                      reranked: Any, provider: str) -> None:
    await stored(service, alice)
    before = await order(service, alice)
    assert sorted(before) == sorted(tag(n) for n in NOTES)
    assert api.take() == []  # the service without a reranker asked nobody
    api.scores = inverted(before)
    more = {"rerank_api_key": "va-test"} if provider == "voyage" else {"rerank_model": "bge-reranker-v2-m3"}
    result = await (await reranked(provider, **more)).search(alice, "coffee", limit=8, explain=True)
    assert [tag(h.snippet) for h in result.hits] == before[::-1]
    # Each hit holds the score of its place, best first, and explain shows the reranker's own.
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert [h.explain["rerank"] for h in result.hits] == [float(i) for i in range(7, -1, -1)]
    (request,) = api.take()
    body = request["body"]
    if provider == "tei":
        assert request["path"] == "/tei/rerank"
        assert body["truncate"] is True and "model" not in body
        documents = body["texts"]
    elif provider == "cohere-compatible":
        assert request["path"] == "/cohere/v1/rerank"
        assert body["model"] == "bge-reranker-v2-m3"
        documents = body["documents"]
    else:  # the real voyageai SDK's request
        assert request["path"] == "/voyage/v1/rerank"
        assert request["headers"]["authorization"] == "Bearer va-test"
        assert body["model"] == "rerank-2.5" and body["truncation"] is True
        documents = body["documents"]
    assert body["query"] == "coffee"
    assert [tag(d) for d in documents] == before  # sent in the search's order, scored by index


async def test_the_search_finds_top_n_and_returns_limit(service: MemoryService, alice: Principal, api: RerankAPI,
                                                        reranked: Any) -> None:
    """limit 2 with rerank_top_n 6: the reranker orders six hits, so its favourite may come from
    below the first two; with rerank_top_n 3 under limit 5, the last two keep their places."""
    await stored(service, alice)
    before = await order(service, alice)
    api.scores = {before[5]: 9.0, before[4]: 8.0}
    wide = await reranked(rerank_top_n=6)
    assert await order(wide, alice, limit=2) == [before[5], before[4]]
    assert len(api.take()[0]["body"]["texts"]) == 6

    api.scores = {before[2]: 9.0}
    narrow = await reranked(rerank_top_n=3)
    assert await order(narrow, alice, limit=5, explain=True) == [before[2], before[0], before[1], *before[3:5]]
    assert [tag(d) for d in api.take()[0]["body"]["texts"]] == before[:3]
    hits = (await narrow.search(alice, "coffee", limit=5, explain=True)).hits
    assert [h.explain["rerank"] is None for h in hits] == [False, False, False, True, True]


async def test_the_reranker_reads_the_whole_text_and_the_question_as_asked(
        service: MemoryService, alice: Principal, api: RerankAPI, reranked: Any) -> None:
    long = "[m9] coffee " + "filler words about nothing much " * 20 + "THE END MARKER"
    assert len(long) > service.settings.snippet_chars
    await stored(service, alice, [NOTES[0], long])
    await order(await reranked(), alice, query="coffee these days -tea")
    (request,) = api.take()
    assert request["body"]["query"] == "coffee these days"  # time words kept, exclusions out
    (sent,) = [d for d in request["body"]["texts"] if d.startswith("[m9]")]
    assert sent.endswith("THE END MARKER")  # not the 400-character snippet


async def test_only_the_principals_own_memories_are_sent(service: MemoryService, alice: Principal,
                                                         api: RerankAPI, reranked: Any) -> None:
    bob = principal("bob", agent="agent-b", project="proj-y")
    await stored(service, alice, NOTES[:3])
    await service.write(bob, "[m7] Bob's secret coffee recipe: cardamom.")
    await order(await reranked(), alice)
    (request,) = api.take()
    assert sorted(tag(d) for d in request["body"]["texts"]) == ["[m0]", "[m1]", "[m2]"]
    assert not any("cardamom" in d for d in request["body"]["texts"])


# --- failing open -----------------------------------------------------------------------------------

async def test_a_hanging_reranker_gives_the_search_order_within_the_bound(
        service: MemoryService, alice: Principal, api: RerankAPI, reranked: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    await stored(service, alice)
    before = await order(service, alice)
    api.scores, api.mode, api.hang_s = inverted(before), "hang", 5.0
    slow = await reranked(rerank_timeout_s=0.5)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        started = time.monotonic()
        hits = (await slow.search(alice, "coffee", limit=8, explain=True)).hits
        took = time.monotonic() - started
    assert [tag(h.snippet) for h in hits] == before
    assert all(h.explain["rerank"] is None for h in hits)
    assert 0.5 <= took < 2.5, took  # the bound, not the reranker's 5 s
    (line,) = lines(caplog)
    assert line.levelno == logging.WARNING and line.exc_info is None
    assert "no answer within 0.5 s" in line.getMessage() and "/tei/rerank" in line.getMessage()


@pytest.mark.parametrize("mode, said", [("500", "HTTP 500: {\"error\": {\"message\": \"the model fell over\"}}"),
                                        ("garbage", "answered no list of scores"),
                                        ("short", "scored 7 of 8 documents")])
@pytest.mark.parametrize("provider", ["tei", "voyage"])
async def test_an_erring_reranker_gives_the_search_order_and_one_clear_line(
        service: MemoryService, alice: Principal, api: RerankAPI, reranked: Any,
        caplog: pytest.LogCaptureFixture, mode: str, said: str, provider: str) -> None:
    await stored(service, alice)
    before = await order(service, alice)
    api.scores, api.mode = inverted(before), mode
    broken = await reranked(provider, rerank_api_key="va-test")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert await order(broken, alice) == before
    assert len(api.take()) == 1  # no retries inside the search's bound
    (line,) = lines(caplog)
    assert line.levelno == logging.WARNING and line.exc_info is None
    message = line.getMessage()
    assert "kept in their own order" in message
    if provider == "tei":
        assert said in message
    else:  # the SDK words its errors itself; ours says what and where
        assert "voyage rerank (rerank-2.5 at " in message
        assert {"500": "HTTP 500", "garbage": "answered no list of scores",
                "short": "scored 7 of 8 documents"}[mode] in message


async def test_a_dead_reranker_is_skipped_then_probed_again(service: MemoryService, alice: Principal,
                                                            api: RerankAPI, reranked: Any,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    await stored(service, alice)
    before = await order(service, alice)
    api.scores, api.mode = inverted(before), "500"
    flaky = await reranked()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        for _ in range(3):
            assert await order(flaky, alice) == before
        assert len(api.take()) == 3
        assert "skipping it for a while" in lines(caplog)[-1].getMessage()
        started = time.monotonic()
        assert await order(flaky, alice) == before  # open: nothing is sent, nothing waited on
        assert api.take() == [] and time.monotonic() - started < 0.5
        api.mode = "ok"
        await asyncio.sleep(1.1)  # the first probe may go 1 s after the breaker opened
        assert await order(flaky, alice) == before[::-1]
    assert len(api.take()) == 1
    assert "the reranker answers again" in lines(caplog)[-1].getMessage()


async def test_without_the_voyageai_package_the_search_says_so_and_goes_on(
        service: MemoryService, alice: Principal, api: RerankAPI, reranked: Any,
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    await stored(service, alice, NOTES[:3])
    before = await order(service, alice)
    monkeypatch.setitem(sys.modules, "voyageai", None)  # as if it were not installed
    with pytest.raises(RerankError, match=r"pip install 'mcp-memory\[voyage\]'"):
        await VoyageReranker(api_key="va-test").rerank("q", ["a", "b"])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert await order(await reranked("voyage", rerank_api_key="va-test"), alice) == before
    assert "needs the voyageai package" in lines(caplog)[-1].getMessage()
    assert api.take() == []


# --- off by default ---------------------------------------------------------------------------------

async def test_off_by_default_nothing_is_sent(database: Database, settings: Settings, service: MemoryService,
                                              alice: Principal, api: RerankAPI) -> None:
    assert Settings().rerank_provider == "none" and service.reranking is None
    # An endpoint configured without a provider turns nothing on.
    quiet = await MemoryService.open(database, Settings(**{**settings.model_dump(),
                                                          "rerank_base_url": api.base + "/tei"}))
    assert quiet.reranking is None
    await stored(service, alice, NOTES[:3])
    hits = (await quiet.search(alice, "coffee", explain=True)).hits
    assert len(hits) == 3 and all("rerank" not in h.explain for h in hits)
    assert api.take() == []


async def test_a_forget_preview_is_not_reranked(service: MemoryService, alice: Principal, api: RerankAPI,
                                                reranked: Any) -> None:
    await stored(service, alice, NOTES[:3])
    preview = await (await reranked()).forget_preview(alice, query="coffee")
    assert preview.token and api.take() == []


def test_an_http_reranker_needs_its_endpoint() -> None:
    with pytest.raises(ValueError, match="MCP_MEMORY_RERANK_BASE_URL"):
        Settings(rerank_provider="tei")
    assert Reranking.from_settings(Settings(rerank_provider="voyage")) is not None  # the Voyage API by default


@pytest.mark.parametrize("answer, count, message", [
    ({"results": [{"index": 0, "relevance_score": 1}, {"index": 0, "relevance_score": 2}]}, 2, "out of place"),
    ([{"index": 2, "score": 1.0}], 2, "out of place"),
    ([{"index": 0, "score": "high"}], 1, "not a number"),
    ([{"index": 0, "score": float("nan")}], 1, "not a number"),
    ([{"index": True, "score": 1.0}], 1, "out of place"),
    ({"data": None}, 1, "no list of scores"),
    ([1, 2], 2, "not an object"),
])
def test_answers_that_do_not_score_every_document_are_refused(answer: Any, count: int, message: str) -> None:
    with pytest.raises(RerankError, match=message):
        scores_from(answer, count, "here")


def test_every_answer_shape_reads_the_same() -> None:
    tei = [{"index": 1, "score": 0.9}, {"index": 0, "score": 0.1}]
    cohere = {"results": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]}
    voyage = {"data": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]}
    assert scores_from(tei, 2, "x") == scores_from(cohere, 2, "x") == scores_from(voyage, 2, "x") == [0.1, 0.9]
