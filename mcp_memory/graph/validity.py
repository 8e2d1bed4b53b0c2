"""How long each value of an attribute held, read off its live keyed facts (newest valid first), the
one reading the entity profile and search's current-value-first share.

Validity is never stored: a one-at-a-time attribute's value holds until the next moment at which
another value of it is valid. Two values of one moment both hold (a writer's batch dated them
alike: repository/graph.py `_replace` replaced neither), unless one replaced the other (an undated
batch, in its order): that one ended the moment it began. A many-valued attribute's values all hold,
but one a later memory of the attribute said had ended (repository/graph.py `_end`) held until then."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Held:
    row: Mapping[str, Any]  # a keyed fact with its memory's id, valid_from, superseded_by
    until: datetime | None  # None: it holds now


def held(chain: Sequence[Mapping[str, Any]], single: bool) -> list[Held]:
    """Each of `chain` (one attribute's facts, newest valid first) with when it stopped holding."""
    moment_of = {r["id"]: r["valid_from"] for r in chain}
    if not single:
        # A value a later memory of the attribute said had ended ("no longer allergic to peanuts")
        # held until then; the rest all hold. `successor`: the live one (repository/sql.py).
        return [Held(r, end if (end := moment_of.get(r.get("successor", r["superseded_by"]))) is not None
                     and end >= r["valid_from"] else None) for r in chain]
    out: list[Held] = []
    newer: datetime | None = None  # the nearest later moment of another value
    moment: datetime | None = None
    for r in chain:
        if moment is not None and r["valid_from"] != moment:
            newer = moment
        moment = r["valid_from"]
        # Replaced by a value of its own moment (an undated batch's later item): it ended as it began.
        replaced_alike = r["superseded_by"] is not None and moment_of.get(r["superseded_by"]) == moment
        out.append(Held(r, newer if newer is not None else moment if replaced_alike else None))
    return out


@dataclass(frozen=True)
class AtNow:
    """One attribute's values as they stand at a moment: those holding then, those dated later
    ("moving to Berlin in March 2027", dated then: no value of now; what holds until it begins
    does), soonest first, and those that had ended, newest first."""

    holding: list[Held]
    upcoming: list[Held]
    ended: list[Held]


def at(values: Sequence[Held], now: datetime) -> AtNow:
    """`values` (newest valid first) as they stand at `now`: the one reading of which value is
    current, for the profile and for search alike."""
    holding = [v for v in values if v.row["valid_from"] <= now and (v.until is None or v.until > now)]
    upcoming = sorted((v for v in values if v.row["valid_from"] > now), key=lambda v: v.row["valid_from"])
    return AtNow(holding, upcoming, [v for v in values if v not in holding and v not in upcoming])


def held_within(values: Sequence[Held], start: datetime | None, end: datetime | None) -> list[Held]:
    """Those of `values` that held at some moment of [start, end) (either side open), in their order:
    a value that began before the span's end and had not ended by its start. One that ended as it
    began (replaced within its own moment) held at no moment."""
    return [v for v in values
            if (end is None or v.row["valid_from"] < end)
            and (v.until is None or (v.until > v.row["valid_from"] and (start is None or v.until > start)))]
