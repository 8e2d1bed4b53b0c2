"""Values kept a short while, the last few of them: what a store does not change by much in a
minute (a scope's size, which names its searches leave out of a question's vector)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Fresh(Generic[V]):
    """The last `keep` values put, each for `fresh_s` seconds after it was put."""

    def __init__(self, fresh_s: float = 60.0, keep: int = 1024) -> None:
        self._fresh_s, self._keep = fresh_s, keep
        self._values: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        """What was put for `key` less than `fresh_s` ago; None otherwise."""
        known = self._values.get(key)
        return known[1] if known is not None and time.monotonic() - known[0] <= self._fresh_s else None

    def put(self, key: Hashable, value: V) -> None:
        self._values[key] = (time.monotonic(), value)
        self._values.move_to_end(key)
        while len(self._values) > self._keep:
            self._values.popitem(last=False)

    def clear(self) -> None:
        self._values.clear()
