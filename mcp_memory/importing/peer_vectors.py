"""Taking a peer's stored vectors instead of embedding every memory again, only when they are our
model's.

Embedding is most of an import's time (10,000 memories: ~50 s of MiniLM on two quiet cores). A
peer that stores each memory's vector (doobidoo's mcp-memory-service: sqlite-vec, float32) made
with the very model we run (its default all-MiniLM-L6-v2, on the same int8 ONNX file when set up
as ../shared/peers/setup_doobidoo.sh does) has already done that work. But the peer records only
the vectors' dimension, never which model made them, and a vector from another model stored beside
ours silently corrupts search. So before any is taken:

- the dimension must be ours;
- a sample is embedded again by our model: `SAMPLE` memories at random, every memory of at most
  `SHORT_CHARS` characters (where tokenisation differences show most) and the `LONGEST` longest
  (where a different truncation shows: the peer's tokenizer cuts at 128 tokens, ours at 256);
- every one of them must match: cosine, after normalising both, of at least `REUSE_MIN_COSINE`
  (the same file on the same model measures 1.00000; MiniLM's fp32 and int8 exports differ by far
  more than that).

Any failure and every memory is embedded again, as before, and the import's summary says why. The
vectors taken are normalised as ours are and lent to the embedding cache (model, text hash) one
write batch at a time (`lent`): the write path finds them there instead of calling the model and
stores them as its own; once the batch is written they leave the cache again, so a vector checked
only by sample never serves another write (the cache is shared by every user)."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..errors import Unavailable
from ..repository.embeddings import text_hash

if TYPE_CHECKING:
    from ..vectors import Vectors

#: The lowest cosine between the peer's vector and ours, for every memory of the sample, at which
#: the peer's vectors are taken as our model's.
REUSE_MIN_COSINE = 0.999
SAMPLE = 32
SHORT_CHARS = 32
LONGEST = 8
SEED = 52  # the same file gets the same sample, so the same verdict


@dataclass
class StoredVectors:
    """What a peer's file holds: its vectors' dimension, each memory's vector (by the key its
    reader puts in `original_id`), or why there are none to take."""

    dimension: int | None = None
    by_key: dict[str, np.ndarray] = field(default_factory=dict)
    why_none: str | None = None
    metric: str | None = None


def _unit(vector: np.ndarray) -> np.ndarray | None:
    vector = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(vector))
    if not np.isfinite(norm) or norm == 0.0:
        return None
    return vector / norm


def sample_of(texts: Sequence[str]) -> list[int]:
    """Which of `texts` to embed again: a random `SAMPLE`, every short one, the `LONGEST` longest;
    each distinct text once."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    chosen = random.Random(SEED).sample(range(len(texts)), min(SAMPLE, len(texts)))
    chosen += [i for i in order if len(texts[i]) <= SHORT_CHARS] + order[-LONGEST:]
    seen: set[str] = set()
    out = []
    for i in chosen:
        if texts[i] not in seen:
            seen.add(texts[i])
            out.append(i)
    return out


@dataclass
class Verdict:
    """The peer's vectors to take (by the text the write path embeds; unit length, float32
    values), and the line the import's summary shows."""

    note: str
    taken: dict[str, list[float]] = field(default_factory=dict)


async def take_verified(vectors: Vectors | None, stored: StoredVectors, items: Sequence[tuple[str, str | None]],
                        name: str) -> Verdict | None:
    """The peer's vectors for `items` (each the text the write path will embed, and the key of
    the peer's vector for it, None when it has none we may take) if a sample re-embedded by our
    model matches them; None when there is no embedder (nothing is embedded at all)."""
    if vectors is None or vectors.embedder is None or not items:
        return None
    embedder = vectors.embedder
    model, total = embedder.model, len(items)
    again = f"{name}: embedded all {total} memories again with {model}"
    if stored.why_none:
        return Verdict(f"{again}: {stored.why_none}")
    if stored.dimension != embedder.dimension:
        return Verdict(f"{again}: the peer's vectors have {stored.dimension} dimensions, {model}'s "
                       f"{embedder.dimension}")
    if stored.metric not in (None, "cosine"):
        return Verdict(f"{again}: the peer compares its vectors by {stored.metric}, not cosine")
    candidates: dict[str, np.ndarray] = {}  # text -> the peer's unit vector
    for text, key in items:
        vector = stored.by_key.get(key) if key is not None else None
        unit = _unit(vector) if vector is not None and vector.shape == (embedder.dimension,) else None
        if unit is not None:
            candidates.setdefault(text, unit)
    if not candidates:
        return Verdict(f"{again}: the peer holds no vector for them")
    texts = list(candidates)
    picked = [texts[i] for i in sample_of(texts)]
    if len(picked) == len(texts):
        return Verdict(f"{again}: so few that checking the peer's vectors would embed every one")
    try:
        ours = await embedder.embed_documents(picked)
    except (Unavailable, OSError) as exc:
        return Verdict(f"{again} (as they are written): the sample to check the peer's vectors could not be "
                       f"embedded ({exc})")
    cosines = [float(np.dot(unit, candidates[t])) if (unit := _unit(np.asarray(o))) is not None else -1.0
               for t, o in zip(picked, ours, strict=True)]
    # Ours, for the sample, cached as any vector of ours is: not embedded twice.
    await vectors.repo.remember(model, {text_hash(t): v for t, v in zip(picked, ours, strict=True)})
    lowest = min(cosines)
    if lowest < REUSE_MIN_COSINE:
        differ = sum(c < REUSE_MIN_COSINE for c in cosines)
        return Verdict(f"{again}: the peer's vectors are not {model}'s ({differ} of the {len(picked)} re-embedded to "
                       f"check differ: lowest cosine {lowest:.4f}, {REUSE_MIN_COSINE} needed)")
    checked = set(picked)
    taken = sum(1 for text, _ in items if text in candidates and text not in checked)
    rest = total - taken - sum(1 for text, _ in items if text in checked)
    line = (f"{name}: took the peer's vectors for {taken} memories, after {model} re-embedded {len(picked)} others "
            f"(a random {min(SAMPLE, len(texts))}, the shortest, the longest) and every one matched the peer's "
            f"(cosine >= {REUSE_MIN_COSINE}, lowest {lowest:.5f})")
    return Verdict(line + (f"; embedded {rest} that had no usable vector" if rest else ""),
                   {t: v.astype(np.float32).tolist() for t, v in candidates.items() if t not in checked})


@asynccontextmanager
async def lent(vectors: Vectors | None, taken: dict[str, list[float]], texts: Sequence[str]) -> AsyncIterator[None]:
    """The taken vectors of `texts` in the embedding cache while the block runs (one write batch)."""
    mine = {text_hash(t): taken[t] for t in texts if t in taken}
    if vectors is None or vectors.embedder is None or not mine:
        yield
        return
    model = vectors.embedder.model
    added = await vectors.repo.lend(model, mine)
    try:
        yield
    finally:
        await vectors.repo.forget(model, added)
