"""Concurrent embedding calls joined into one batch (embeddings/coalescing.py): with the real local
model, and with a plain function standing in for one where a test must hold a run open."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import anyio
import numpy as np
import pytest

from mcp_memory.embeddings import EmbeddingError, make_embedder
from mcp_memory.embeddings.coalescing import JOIN_CHARACTERS, Coalescer
from mcp_memory.embeddings.local import MiniLMEmbedder

QUESTIONS = [f"What did Caroline say about her {thing}?" for thing in
             ("garden", "job", "sister", "trip", "painting", "dog", "class", "bike", "novel", "move")]


async def test_concurrent_questions_share_runs_and_get_their_own_vectors():
    emb = make_embedder("local", "minilm")
    alone = [np.asarray(await emb.embed_query(q)) for q in QUESTIONS]
    runs_before = emb._queue.runs
    together: list[np.ndarray] = [np.zeros(0)] * len(QUESTIONS)

    async def ask(i: int) -> None:
        together[i] = np.asarray(await emb.embed_query(QUESTIONS[i]))

    async with anyio.create_task_group() as tg:
        for i in range(len(QUESTIONS)):
            tg.start_soon(ask, i)
    assert emb._queue.runs - runs_before < len(QUESTIONS)  # some of them ran together
    for mine, lone in zip(together, alone, strict=True):
        # int8 activations are scaled per batch, so a vector moves a little with its company.
        assert float(mine @ lone) > 0.995


class Held:
    """A model stand-in whose runs wait until the test lets them go, recording each run."""

    def __init__(self) -> None:
        self.runs: list[tuple[list[str], bool]] = []
        self.started = [threading.Event() for _ in range(8)]
        self.gates = [threading.Event() for _ in range(8)]
        self.fail_on: str | None = None

    def __call__(self, texts: Sequence[str], is_query: bool) -> list[list[float]]:
        run = len(self.runs)
        self.runs.append((list(texts), is_query))
        self.started[run].set()
        self.gates[run].wait(10)
        if self.fail_on in texts:
            raise EmbeddingError("the model failed")
        return [[float(len(t)), 1.0 if is_query else 0.0] for t in texts]

    async def wait_for_run(self, run: int) -> None:
        await anyio.to_thread.run_sync(self.started[run].wait, 10)

    def open(self) -> None:
        for gate in self.gates:
            gate.set()


async def _start_and_hold(queue: Coalescer, held: Held, tg: anyio.abc.TaskGroup, results: dict) -> None:
    """A first call that occupies the model until its run is let go."""

    async def first() -> None:
        results["first"] = await queue(["first"], True)

    tg.start_soon(first)
    await held.wait_for_run(0)


async def test_a_lone_call_runs_at_once_and_calls_that_wait_run_together_by_kind():
    held = Held()
    queue = Coalescer(held, lambda: 16)
    results: dict[str, list[list[float]]] = {}

    async def call(name: str, texts: list[str], is_query: bool) -> None:
        results[name] = await queue(texts, is_query)

    async with anyio.create_task_group() as tg:
        await _start_and_hold(queue, held, tg, results)
        tg.start_soon(call, "q1", ["ab"], True)
        tg.start_soon(call, "d1", ["abc", "abcd"], False)
        tg.start_soon(call, "q2", ["abcde"], True)
        await anyio.wait_all_tasks_blocked()
        held.open()
    assert held.runs == [(["first"], True), (["ab", "abcde"], True), (["abc", "abcd"], False)]
    assert results == {"first": [[5.0, 1.0]], "q1": [[2.0, 1.0]], "q2": [[5.0, 1.0]],
                       "d1": [[3.0, 0.0], [4.0, 0.0]]}


async def test_a_run_holds_no_more_than_the_batch_size_and_long_texts_run_alone():
    held = Held()
    queue = Coalescer(held, lambda: 3)
    long_text = "x" * (JOIN_CHARACTERS + 1)

    async def call(texts: list[str]) -> None:
        await queue(texts, False)

    async with anyio.create_task_group() as tg:
        await _start_and_hold(queue, held, tg, {})
        tg.start_soon(call, ["a1", "a2"])
        tg.start_soon(call, ["b1", "b2"])  # would make four
        tg.start_soon(call, [long_text])  # a long text: batching it saves nothing
        tg.start_soon(call, ["c1"])
        tg.start_soon(call, [long_text + "y"])
        await anyio.wait_all_tasks_blocked()
        held.open()
    assert [texts for texts, _ in held.runs[1:]] == [
        ["a1", "a2", "c1"], ["b1", "b2"], [long_text], [long_text + "y"]]


async def test_a_failed_run_fails_every_call_in_it_and_the_next_run_works():
    held = Held()
    queue = Coalescer(held, lambda: 16)
    errors: list[str] = []

    async def call(text: str) -> None:
        try:
            await queue([text], True)
        except EmbeddingError as exc:
            errors.append(f"{text}: {exc}")

    async with anyio.create_task_group() as tg:
        await _start_and_hold(queue, held, tg, {})
        held.fail_on = "one"  # the joined run of "one" and "two" fails
        tg.start_soon(call, "one")
        tg.start_soon(call, "two")
        await anyio.wait_all_tasks_blocked()
        held.open()
    assert sorted(errors) == ["one: the model failed", "two: the model failed"]
    assert await queue(["three"], True) == [[5.0, 1.0]]


async def test_a_cancelled_caller_leaves_the_others_their_vectors():
    held = Held()
    queue = Coalescer(held, lambda: 16)
    results: dict[str, list[list[float]]] = {}
    scopes = {name: anyio.CancelScope() for name in ("gone", "runner", "kept")}

    async def call(name: str) -> None:
        with scopes[name]:
            results[name] = await queue([name], True)

    async with anyio.create_task_group() as tg:
        await _start_and_hold(queue, held, tg, results)
        for name in ("gone", "runner", "kept"):
            tg.start_soon(call, name)
            await anyio.wait_all_tasks_blocked()
        scopes["gone"].cancel()  # still waiting: it leaves the queue
        await anyio.wait_all_tasks_blocked()
        held.gates[0].set()  # the first run ends; "runner" (waiting longest) runs itself and "kept"
        await held.wait_for_run(1)
        scopes["runner"].cancel()  # the task running the model: its run still serves "kept"
        held.open()
    assert "gone" not in results
    assert results["kept"] == [[4.0, 1.0]]
    assert [texts for texts, _ in held.runs] == [["first"], ["runner", "kept"]]
    assert queue._waiting == []


@pytest.mark.parametrize("size", [1, 5])
async def test_the_embedders_batch_size_is_read_at_each_run(size):
    emb = make_embedder("local", "minilm")
    emb.batch_size = size
    await emb.embed_query("warm")
    runs = emb._queue.runs
    async with anyio.create_task_group() as tg:
        for q in QUESTIONS:
            tg.start_soon(emb.embed_query, q)
    made = emb._queue.runs - runs
    assert made >= len(QUESTIONS) / size
    if size == 1:
        assert made == len(QUESTIONS)


class SlowOnCue(MiniLMEmbedder):
    """The real model, held up for a while by one text (a long backfill batch, a busy machine)."""

    def _encode(self, state, texts, is_query):
        if "slow" in texts:
            time.sleep(1.5)
        return super()._encode(state, texts, is_query)


async def test_a_call_waiting_behind_a_slow_run_gives_up_at_its_own_timeout():
    emb = SlowOnCue()
    await emb.load()
    async with anyio.create_task_group() as tg:
        tg.start_soon(emb.embed_query, "slow")
        await anyio.sleep(0.2)  # the slow run holds the model
        started = time.perf_counter()
        with pytest.raises(TimeoutError):
            with anyio.fail_after(0.3):  # what vectors.py puts around every call
                await emb.embed_query("quick")
        # Waiting, it held no worker thread and could be let go at once, not when the model freed.
        assert time.perf_counter() - started < 1.0
    assert emb._queue._waiting == []
    assert len(await emb.embed_query("quick")) == emb.dimension
