"""Memories that say nearly the same thing, by their stored vectors: versions of one fact ("lives in
Lisbon", "moved to Oslo"), whatever the question. Read by the versions rule (versions.py); the focus
on a subject's answers groups their vectors with the subject masked the same way (focus.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import asyncpg
import numpy as np

from ..models import MOMENTS


def alike(rows: Sequence[asyncpg.Record], threshold: float) -> list[list[int]]:
    """The positions of `rows` in groups of two or more whose vectors are within `threshold`
    (cosine) of one another, transitively. Episodes are in none: a turn is what was said at its
    moment, and a later one saying much the same replaces nothing. Nothing with a threshold of 1 or
    more, or without two vectors of one width (mid-reembed, two models' vectors do not compare)."""
    if len(rows) < 2:
        return []
    vectors = {i: r["embedding"].to_numpy() for i, r in enumerate(rows)
               if r["embedding"] is not None and r.get("kind") not in MOMENTS}
    if not vectors:
        return []
    width = len(next(iter(vectors.values())))
    with_vectors = [i for i, v in vectors.items() if len(v) == width]
    if len(with_vectors) < 2:
        return []
    matrix = np.stack([vectors[i] for i in with_vectors])
    return [[with_vectors[k] for k in members] for members in groups(matrix, threshold)]


def groups(matrix: np.ndarray, threshold: float) -> list[list[int]]:
    """The rows of `matrix` (unit vectors) in groups of two or more within `threshold` (cosine) of
    one another, transitively; none with a threshold of 1 or more (the rule off)."""
    if threshold >= 1:
        return []
    similar = matrix @ matrix.T >= threshold
    return linked(len(matrix), ((int(a), int(b)) for a, b in zip(*np.nonzero(np.triu(similar, 1)), strict=True)))


def linked(count: int, pairs: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Positions 0 .. `count` - 1 in groups of two or more joined by `pairs`, transitively
    (union-find: one pass over the pairs)."""
    group = list(range(count))

    def root(i: int) -> int:
        while group[i] != i:
            group[i] = group[group[i]]
            i = group[i]
        return i

    for a, b in pairs:
        group[root(a)] = root(b)
    members: dict[int, list[int]] = {}
    for k in range(count):
        members.setdefault(root(k), []).append(k)
    return [positions for positions in members.values() if len(positions) > 1]
