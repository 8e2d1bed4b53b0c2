"""How long a model call may take: as long as the model's own calls have taken, within bounds.

A model on this machine (a small one on a CPU) takes a minute for a decision and three for a
session's facts where a hosted one takes a second: one fixed timeout either kills every local job
or waits minutes on a hung remote endpoint. Unless the timeout is set, a call may take
`HEADROOM` times the slowest of the kind's recent calls, never less than where it started (by where
the model runs) nor more than `decisions_timeout_max_s`; a call that ran out doubles the next one's
allowance, so a slow model is found on the retry, not given up on. A job's lease covers the calls it
may make (a decision and its second look) with the margin."""

from __future__ import annotations

from collections import deque
from typing import Literal
from urllib.parse import urlsplit

from ..config import LEASE_MARGIN_S, DecisionSettings
from ..netaddr import is_loopback

Call = Literal["decision", "prompt"]  # a decision's JSON; a plain prompt (a session's facts, a second look)

START_REMOTE_S = 30.0  # a hosted model or a client's: a decision takes seconds
START_HERE_S = 300.0  # a model on this machine: Qwen2.5-Coder-1.5B took 54-116 s a decision, 170 s an extraction
HEADROOM = 4.0
RECENT = 8
CALLS_PER_JOB = 2  # a decision, then a second look at a replace it proposes


def served_here(settings: DecisionSettings) -> bool:
    """Whether decisions go to a model on this machine (an `openai-compatible` endpoint on
    loopback), where small models run: the stricter and slower defaults are theirs."""
    host = urlsplit(settings.decisions_base_url or "").hostname or ""
    return settings.decisions_provider == "openai-compatible" and is_loopback(host)


class Pace:
    def __init__(self, settings: DecisionSettings) -> None:
        self.fixed: float | None = settings.decisions_timeout_s
        self.start = self.fixed or (START_HERE_S if served_here(settings) else START_REMOTE_S)
        self.most = max(self.start, settings.decisions_timeout_max_s)
        self.lease_set = settings.decisions_lease_s
        if self.lease_set is not None and self.fixed is None:  # a job's calls end within its lease
            self.most = max(1.0, min(self.most, (self.lease_set - LEASE_MARGIN_S) / CALLS_PER_JOB))
            self.start = min(self.start, self.most)
        self._took: dict[Call, deque[float]] = {}

    @classmethod
    def fixed_at(cls, seconds: float) -> Pace:
        """Every call may take `seconds`, and a job's lease covers its calls at that."""
        return cls(DecisionSettings(decisions_timeout_s=seconds))

    def timeout(self, call: Call) -> float:
        """How long the next call of this kind may take."""
        if self.fixed is not None:
            return self.fixed
        took = self._took.get(call)
        return min(self.most, max(self.start, HEADROOM * max(took))) if took else self.start

    def took(self, call: Call, seconds: float) -> None:
        """A call of this kind answered in `seconds`."""
        self._took.setdefault(call, deque(maxlen=RECENT)).append(seconds)

    def ran_out(self, call: Call, allowed: float) -> None:
        """A call of this kind did not answer within `allowed`: the next may take twice that."""
        self.took(call, 2 * allowed / HEADROOM)

    def lease(self) -> float:
        """How long a claimed job is its worker's: the set lease, or its calls at their timeouts."""
        if self.lease_set is not None:
            return self.lease_set
        return CALLS_PER_JOB * max(self.timeout("decision"), self.timeout("prompt")) + LEASE_MARGIN_S

    def slow(self) -> bool:
        """Whether the model takes longer than a hosted one may (doctor says so)."""
        return any(max(t) > START_REMOTE_S for t in self._took.values() if t)
