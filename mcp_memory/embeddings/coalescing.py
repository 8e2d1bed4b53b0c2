"""Concurrent calls to a local model run as one batch (embeddings/local_base.py's queue).

A model on the CPU pays a fixed cost per call, which for a short text is most of it: MiniLM int8
on two cores spends ~11 ms of CPU on a lone text under 40 characters and ~7 ms a text in a batch
of eight; past ~100 characters a batch saves nothing (bench/embed_coalescing.py, and the figures
in docs/benchmarks.md). Under a resident server or HTTP clients, questions arrive while the model
is busy with another; they wait, and the next run takes all of them that fit. An idle model runs
a lone call at once: no call ever waits for company.

One run is one kind (documents or queries: some models embed them differently), at most
``batch_size`` texts, and joins only calls whose texts are all short (`JOIN_CHARACTERS`); a call's
own texts are never split. Runs start from the oldest waiting call, so a question waits at most
one batch behind a backfill, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import anyio
import anyio.to_thread

from mcp_memory.embeddings.base import EmbeddingError

#: The longest text (in characters) a call may hold to share a run with others: batches of eight
#: texts under 70 characters cost 0.63-0.81 of lone calls' CPU, 70-110 0.81-0.98, longer ones
#: 0.90-1.17 (padding to the longest and the attention over it outweigh the call's fixed cost).
JOIN_CHARACTERS = 100

Vectors = list[list[float]]


@dataclass(eq=False)
class _Call:
    texts: Sequence[str]
    is_query: bool
    short: bool = field(init=False)
    #: Set when the call's vectors (or error) are in, or when it is its turn to run the model.
    wake: anyio.Event = field(init=False, default_factory=anyio.Event)
    vectors: Vectors | None = None
    error: BaseException | None = None

    def __post_init__(self) -> None:
        self.short = all(len(text) <= JOIN_CHARACTERS for text in self.texts)

    @property
    def done(self) -> bool:
        return self.vectors is not None or self.error is not None


class Coalescer:
    """Runs ``run(texts, is_query)`` (blocking, in a worker thread) for the calls of one event
    loop, one run at a time, each run taking the waiting calls that fit; ``batch_size()`` is read
    at each run (an embedder's may be changed after it is made).

    The turn to run the model passes from call to call: the oldest waiting call runs the next
    batch in its own task, and each call is woken once, with its vectors or with the turn.
    """

    def __init__(self, run: Callable[[Sequence[str], bool], Vectors], batch_size: Callable[[], int]) -> None:
        self._run = run
        self._batch_size = batch_size
        self._waiting: list[_Call] = []
        self._turn: _Call | None = None  # the call whose task runs the model now, or is about to
        #: Runs made (tests and benchmarks read it).
        self.runs = 0

    async def __call__(self, texts: Sequence[str], is_query: bool) -> Vectors:
        call = _Call(texts, is_query)
        self._waiting.append(call)
        try:
            if self._turn is None:
                self._turn = call
            else:
                await call.wake.wait()
            if not call.done:  # its turn: it is the oldest waiting call
                await self._run_batch()
        finally:
            if call in self._waiting:  # cancelled while waiting: nobody runs it now
                self._waiting.remove(call)
            if self._turn is call:
                self._pass_turn()
        if call.error is not None:
            raise call.error
        assert call.vectors is not None
        return call.vectors

    def _pass_turn(self) -> None:
        self._turn = self._waiting[0] if self._waiting else None
        if self._turn is not None:
            self._turn.wake.set()

    def _take(self) -> list[_Call]:
        """The oldest waiting call and, when its texts are short, the later short ones of its
        kind that fit beside it."""
        first = self._waiting[0]
        taken = [first]
        count, most = len(first.texts), self._batch_size()
        for call in self._waiting[1:] if first.short else ():
            if call.short and call.is_query == first.is_query and count + len(call.texts) <= most:
                taken.append(call)
                count += len(call.texts)
        for call in taken:
            self._waiting.remove(call)
        return taken

    async def _run_batch(self) -> None:
        calls = self._take()
        try:
            texts = [text for call in calls for text in call.texts]
            # run_sync lets no cancellation of this task in until the thread is done, and the
            # hand-over below has no checkpoint: the other tasks' calls get their vectors even
            # when this one is cancelled (tested).
            try:
                vectors = await anyio.to_thread.run_sync(self._run, texts, calls[0].is_query)
            except Exception as exc:  # noqa: BLE001 - every call of the run gets the error
                for call in calls:
                    call.error = exc
            else:
                self.runs += 1
                start = 0
                for call in calls:
                    call.vectors = vectors[start : start + len(call.texts)]
                    start += len(call.texts)
        finally:
            for call in calls:
                if not call.done:  # the run itself was torn down: nobody is left to run these
                    call.error = EmbeddingError("the embedding run was interrupted")
                call.wake.set()
