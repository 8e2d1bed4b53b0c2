"""A circuit breaker for the embedder: while it is failing, calls skip it at once instead of each
waiting out the full timeout."""

from __future__ import annotations

import time


class Breaker:
    """Closed: calls go through. After `threshold` failures in a row it opens for `cooldown_s`:
    calls are refused at once. Then one call at a time may probe; a success closes it (and says
    it healed), a failure opens it again."""

    def __init__(self, *, threshold: int = 3, cooldown_s: float = 30.0) -> None:
        self.threshold, self.cooldown_s = threshold, cooldown_s
        self.failures = 0
        self.opened_at: float | None = None
        self._probing = False

    @property
    def open(self) -> bool:
        return self.opened_at is not None

    def allows(self) -> bool:
        if self.opened_at is None:
            return True
        if self._probing or time.monotonic() - self.opened_at < self.cooldown_s:
            return False
        self._probing = True  # this caller probes; the others keep skipping until it answers
        return True

    def failed(self) -> None:
        self.failures += 1
        self._probing = False
        if self.failures >= self.threshold:
            self.opened_at = time.monotonic()

    def succeeded(self) -> bool:
        """Record a success; True when it closes an open breaker (the embedder healed)."""
        healed = self.opened_at is not None
        self.failures, self.opened_at, self._probing = 0, None, False
        return healed
