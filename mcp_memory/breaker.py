"""A circuit breaker for the embedder: while it is failing, calls skip it at once instead of each
waiting out the full timeout."""

from __future__ import annotations

import time

from .telemetry import metrics

BACKOFF = 1.5


class Breaker:
    """Closed: calls go through. After `threshold` failures in a row it opens: calls are refused
    at once. The first probe may go `first_probe_s` after opening; each failed probe makes the
    wait 1.5 times longer, up to `cooldown_s` (doubling left a 10 s outage found healed 5.5 s late
    in bench/faults.py: a hung probe adds its timeout to each wait). An embedder down for seconds
    is thus found healed within seconds, one down for an hour costs a probe per cooldown. One call
    at a time probes; a success closes the breaker (and says it healed), a failure opens it again
    for the next, longer wait."""

    def __init__(self, *, threshold: int = 3, cooldown_s: float = 30.0, first_probe_s: float = 1.0,
                 name: str = "embedder") -> None:
        self.threshold, self.cooldown_s = threshold, cooldown_s
        self.first_probe_s = min(first_probe_s, cooldown_s)
        self.name = name
        self.failures = 0
        self.opened_at: float | None = None
        self.wait_s = self.first_probe_s
        self._probing = False

    @property
    def open(self) -> bool:
        return self.opened_at is not None

    def next_probe_in(self) -> float:
        """Seconds until a probe may go (0: now; inf: closed, nothing to probe)."""
        if self.opened_at is None:
            return float("inf")
        if self._probing:  # a call is probing now: look again a little later
            return self.first_probe_s
        return max(0.0, self.opened_at + self.wait_s - time.monotonic())

    def allows(self) -> bool:
        if self.opened_at is None:
            return True
        if self._probing or time.monotonic() - self.opened_at < self.wait_s:
            return False
        self._probing = True  # this caller probes; the others keep skipping until it answers
        return True

    def failed(self) -> None:
        self.failures += 1
        probed, self._probing = self._probing, False
        if self.opened_at is not None and probed:
            self.wait_s = min(self.cooldown_s, self.wait_s * BACKOFF)
            self.opened_at = time.monotonic()
        elif self.opened_at is None and self.failures >= self.threshold:
            self.wait_s = self.first_probe_s
            self.opened_at = time.monotonic()
            metrics.BREAKER_OPEN.labels(self.name).set(1)
            metrics.BREAKER_OPENINGS.labels(self.name).inc()

    def succeeded(self) -> bool:
        """Record a success; True when it closes an open breaker (the embedder healed)."""
        healed = self.opened_at is not None
        self.failures, self.opened_at, self._probing = 0, None, False
        self.wait_s = self.first_probe_s
        if healed:
            metrics.BREAKER_OPEN.labels(self.name).set(0)
        return healed
