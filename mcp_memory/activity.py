"""Whether a server's searches are running, for work that waits for a quiet moment (the pages read
as a server starts, db/warmup.py): a search's page reads and a bulk read share one disk."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Activity:
    def __init__(self) -> None:
        self.running = 0
        self.last_ended = float("-inf")  # time.monotonic() when the last one ended

    @contextmanager
    def search(self) -> Iterator[None]:
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            self.last_ended = time.monotonic()

    def busy(self, quiet_s: float) -> bool:
        """A search runs, or one ended less than `quiet_s` ago (the next of a burst is likely near)."""
        return self.running > 0 or time.monotonic() - self.last_ended < quiet_s
