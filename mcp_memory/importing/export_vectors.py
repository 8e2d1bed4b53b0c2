"""Each memory's vector in our own export, so that moving a store does not embed every memory again
(on two cores MiniLM embeds about a hundred memories a second: a million would take hours).

The export's header names the model and dimension (`embedding`); a memory embedded by that model
carries its vector as base64 of little-endian float32 (`vector`: exact, and about 2 KB for 384
dimensions). An import takes them only for the model it embeds with, and only after a sample
re-embedded by it matches (importing/peer_vectors.py, as for a peer's vectors): a model of the
same name built differently, or an edited file, is embedded again rather than trusted."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidInput
from .peer_vectors import StoredVectors, Verdict, take_verified

if TYPE_CHECKING:
    from ..vectors import Vectors

ENCODING = "base64-float32-le"


def header(model: str, dimension: int, turns: tuple[float, float] = (0.0, 0.0)) -> dict[str, Any]:
    """`turns`: what an episode's vector holds of the turn before it, (weight, minutes) (vectors.py)."""
    return {"model": model, "dimension": dimension, "encoding": ENCODING,
            "turns": {"weight": turns[0], "minutes": turns[1]}}


def encoded(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def embedding_of(head: Any, number: int) -> tuple[str, int, tuple[float, float]] | None:
    """The model, dimension and turns (`header`) an export's header says its vectors are of, None
    when it has none. An export without turns is older than them: its episodes' vectors are their
    own texts'."""
    if head is None:
        return None
    if (not isinstance(head, dict) or head.get("encoding") != ENCODING or not isinstance(head.get("model"), str)
            or not isinstance(head.get("dimension"), int) or not 0 < head["dimension"] <= 16000):
        raise InvalidInput(f"line {number}: embedding must be {{'model': NAME, 'dimension': N, "
                           f"'encoding': '{ENCODING}'}}")
    turns = head.get("turns", {"weight": 0.0, "minutes": 0.0})
    if (not isinstance(turns, dict) or not all(isinstance(turns.get(k), int | float) for k in ("weight", "minutes"))
            or not 0 <= turns["weight"] <= 1 or turns["minutes"] < 0):
        raise InvalidInput(f"line {number}: embedding.turns must be {{'weight': 0..1, 'minutes': >= 0}}")
    return head["model"], head["dimension"], (float(turns["weight"]), float(turns["minutes"]))


def decoded(text: Any, dimension: int | None, number: int) -> np.ndarray:
    """A record's vector, checked against the header's dimension."""
    if dimension is None:
        raise InvalidInput(f"line {number}: a vector, but the header names no embedding model")
    try:
        raw = base64.b64decode(text, validate=True) if isinstance(text, str) else b""
    except binascii.Error:
        raw = b""
    if len(raw) != 4 * dimension:
        raise InvalidInput(f"line {number}: vector must be {dimension} float32 values as base64 ({ENCODING})")
    vector = np.frombuffer(raw, dtype="<f4")
    if not np.isfinite(vector).all():
        raise InvalidInput(f"line {number}: vector holds a value that is not a finite number")
    return vector


# A turn before an episode its vector may or may not hold (`turns_before`).
UNSURE = "\x00unsure"


def turns_before(memories: Sequence[dict[str, Any]], vectors: Vectors | None,
                 turns: tuple[float, float] | None) -> list[str | None]:
    """For each exported memory (typed: importing/files.py), the text of the turn before it, which
    its vector holds (`embedding_turn_weight`; repository/turns.py's rule over the file's
    memories), or None: for a memory that is no live episode, or has no turn before. `UNSURE` for
    one whose vector may not hold it: every episode of a file whose `turns` (its header's) are not
    this store's rule, and one whose turn before was stored after it (it was embedded before that
    turn existed) or has a forgotten turn between the two (it may have been embedded while that one
    was live); those vectors are not taken."""
    minutes = vectors.turn_minutes if vectors is not None else 0.0
    if vectors is not None and turns is not None and turns != vectors.turns:
        return [UNSURE if m["kind"] == "episode" else None for m in memories]
    out: list[str | None] = [None] * len(memories)
    if minutes <= 0:
        return out
    gap = timedelta(minutes=minutes)
    episodes = sorted((i for i, m in enumerate(memories) if m["kind"] == "episode"),
                      key=lambda i: (memories[i]["agent_id"] or "", memories[i]["project_id"] or "",
                                     memories[i]["occurred_at"], memories[i]["created_at"], memories[i]["id"]))
    last_live: int | None = None
    forgotten_since = False
    namespace: tuple[str, str] | None = None
    for i in episodes:
        m = memories[i]
        here = (m["agent_id"] or "", m["project_id"] or "")
        if here != namespace:
            namespace, last_live, forgotten_since = here, None, False
        if m["deleted_at"] is not None:
            forgotten_since = True
            continue
        j = last_live
        if j is not None and memories[j]["occurred_at"] >= m["occurred_at"] - gap:
            earlier = memories[j]
            out[i] = (UNSURE if forgotten_since or earlier["created_at"] > m["created_at"]
                      else earlier["content"])
        elif forgotten_since:
            out[i] = UNSURE
        last_live, forgotten_since = i, False
    return out


async def take(vectors: Vectors | None, model: str | None,
               items: Sequence[tuple[str, str, np.ndarray | None, str | None]], name: str) -> Verdict | None:
    """The export's vectors for `items` (each the memory's text, its id, the vector the file holds
    for it, `model`'s by the header, and the text of the turn before it: `turns_before`) when
    `model` is the one we embed with and a sample re-embedded matches them; None when the file
    holds none, or there is no embedder."""
    if vectors is None or vectors.embedder is None or model is None:
        return None
    items = [(text, key, None if before == UNSURE else vector, before) for text, key, vector, before in items]
    held = {key: vector for _, key, vector, _ in items if vector is not None}
    if not held:
        return None
    if model != vectors.embedder.model:
        return Verdict(f"{name}: embedded its memories again with {vectors.embedder.model}: its vectors are "
                       f"{model}'s")
    stored = StoredVectors(dimension=len(next(iter(held.values()))), by_key=held)
    return await take_verified(vectors, stored, [((text, before), key) for text, key, _, before in items
                                                 if key in held], name, owner="the export")
