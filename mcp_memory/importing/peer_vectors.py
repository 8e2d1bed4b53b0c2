"""Taking a peer's stored vectors instead of embedding every memory again, only when they are our
model's.

Embedding is most of an import's time (10,000 memories: ~50 s of MiniLM on two quiet cores). A
peer that stores each memory's vector (doobidoo's mcp-memory-service: sqlite-vec, float32) made
with the very model we run (its default all-MiniLM-L6-v2, on the same int8 ONNX file when set up
as ../shared/peers/setup_doobidoo.sh does) has already done that work. But the peer records only
the vectors' dimension, never which model made them, and a vector from another model stored beside
ours silently corrupts search. So before any is taken:

- the dimension must be ours;
- a text longer than the peer cuts (`StoredVectors.max_tokens`: its tokenizer stops at 128
  tokens, ours at 256), counted by our model's own tokenizer, is never taken: the peer's vector is
  of the text's first 128 tokens, ours of more. Such texts are embedded by us and left out of the
  check below (they would fail it for that reason alone, and with them every memory was embedded
  again);
- a sample of the rest is embedded again by our model: `SAMPLE` memories at random, every memory
  of at most `SHORT_CHARS` characters (where tokenisation differences show most) and the `LONGEST`
  longest in tokens (where a cut shorter than the peer's said would show);
- every one of them must match: cosine, after normalising both, of at least `REUSE_MIN_COSINE`
  (the same file on the same model measures 1.00000; MiniLM's fp32 and int8 exports differ by far
  more than that).

Any failure and every memory is embedded again, as before, and the import's summary says why; when
the vectors are taken, it says how many were embedded by us and why (the sample, longer than the
peer's cut, no usable vector). The vectors taken are normalised as ours are and handed to the write
path with their batch (`MemoryService.write_many`'s `embeddings`), stored in the memories' own
transaction: they never enter the embedding cache (shared by every user), so a vector checked only
by sample can serve no other write, and an import killed half-way leaves none behind. Only our
model's own vectors, the sample's, are cached, as any vector of ours is."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..embeddings.base import Embedder, TokenCounter
from ..errors import Unavailable

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
    reader puts in `original_id`), or why there are none to take; `max_tokens`, the peer's cut: a
    text of more tokens than that (special ones included) has the vector of its beginning only."""

    dimension: int | None = None
    by_key: dict[str, np.ndarray] = field(default_factory=dict)
    why_none: str | None = None
    metric: str | None = None
    max_tokens: int | None = None


def _norm(vector: np.ndarray) -> float:
    """The vector's length in float64; 0 for one that has none (zero, or not finite)."""
    norm = float(np.linalg.norm(np.asarray(vector, dtype=np.float64)))
    return norm if np.isfinite(norm) else 0.0


def _unit(vector: np.ndarray) -> np.ndarray | None:
    norm = _norm(vector)
    return np.asarray(vector, dtype=np.float64) / norm if norm else None


def unit32(vector: np.ndarray, norm: float) -> np.ndarray:
    """The vector (of length `norm`) as float32 of unit length: itself when it already is one (ours,
    exported), so a store moved keeps its very vectors."""
    if abs(norm - 1.0) < 1e-6:
        return np.asarray(vector, dtype=np.float32)
    return (np.asarray(vector, dtype=np.float64) / norm).astype(np.float32)


def sample_of(texts: Sequence[str], sizes: Sequence[int] | None = None) -> list[int]:
    """Which of `texts` to embed again: a random `SAMPLE`, every short one, the `LONGEST` longest
    (by `sizes`, their tokens, else their characters); each distinct text once."""
    size = sizes if sizes is not None else [len(t) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: size[i])
    chosen = random.Random(SEED).sample(range(len(texts)), min(SAMPLE, len(texts)))
    chosen += [i for i in range(len(texts)) if len(texts[i]) <= SHORT_CHARS] + order[-LONGEST:]
    seen: set[str] = set()
    out = []
    for i in chosen:
        if texts[i] not in seen:
            seen.add(texts[i])
            out.append(i)
    return out


# What a vector is of: the text the write path embeds, and for an episode of our own export the
# turn before it, which its vector holds (vectors.py `summed`); a peer's, always None.
Embedded = tuple[str, str | None]


@dataclass
class Verdict:
    """The peer's vectors to take (by what the write path embeds; unit length, float32 arrays),
    and the line the import's summary shows."""

    note: str
    taken: dict[Embedded, np.ndarray] = field(default_factory=dict)


async def _cut_by_peer(embedder: Embedder, texts: list[str], most: int) -> tuple[list[int], str | None]:
    """Each text's tokens by our model's tokenizer, or why they cannot be counted."""
    if not isinstance(embedder, TokenCounter):
        return [], f"{embedder.model} cannot count tokens, to tell which texts the peer cut at {most}"
    try:
        return await embedder.count_tokens(texts), None
    except (Unavailable, OSError) as exc:
        return [], f"the texts' tokens could not be counted, to tell which the peer cut at {most} ({exc})"


async def take_verified(vectors: Vectors | None, stored: StoredVectors,
                        items: Sequence[tuple[Embedded, str | None]], name: str, *,
                        owner: str = "the peer") -> Verdict | None:
    """The stored vectors for `items` (each what the write path will embed, and the key of the
    stored vector for it, None when it has none we may take) if a sample re-embedded by our model
    matches them, texts the peer cut short left out; None when there is no embedder (nothing is
    embedded at all). `owner`: whose vectors they are, as the summary line says it (a peer's, or
    our own export's)."""
    if vectors is None or vectors.embedder is None or not items:
        return None
    embedder = vectors.embedder
    model, total = embedder.model, len(items)
    again = f"{name}: embedded all {total} memories again with {model}"
    if stored.why_none:
        return Verdict(f"{again}: {stored.why_none}")
    if stored.dimension != embedder.dimension:
        return Verdict(f"{again}: {owner}'s vectors have {stored.dimension} dimensions, {model}'s "
                       f"{embedder.dimension}")
    if stored.metric not in (None, "cosine"):
        return Verdict(f"{again}: {owner} compares its vectors by {stored.metric}, not cosine")
    # what is embedded -> the stored vector as it is and its length (a million of them: no copies
    # until one is taken)
    candidates: dict[Embedded, tuple[np.ndarray, float]] = {}
    for embedded, key in items:
        vector = stored.by_key.get(key) if key is not None else None
        if vector is not None and vector.shape == (embedder.dimension,) and (norm := _norm(vector)):
            candidates.setdefault(embedded, (vector, norm))
    if not candidates:
        return Verdict(f"{again}: {owner} holds no vector for them")
    texts = list(candidates)
    sizes: list[int] | None = None
    long: set[Embedded] = set()
    if stored.max_tokens is not None:
        sizes, why = await _cut_by_peer(embedder, [t for t, _ in texts], stored.max_tokens)
        if why:
            return Verdict(f"{again}: {why}")
        long = {t for t, n in zip(texts, sizes, strict=True) if n > stored.max_tokens}
        sizes = [n for t, n in zip(texts, sizes, strict=True) if t not in long]
        texts = [t for t in texts if t not in long]
        if not texts:
            return Verdict(f"{again}: every one is longer than {owner}'s {stored.max_tokens} tokens (its vectors "
                           "are of their beginnings)")
    picked = [texts[i] for i in sample_of([t for t, _ in texts], sizes)]
    if len(picked) == len(texts):
        return Verdict(f"{again}: so few that checking {owner}'s vectors would embed every one")
    # Bounded as a write's embedding is (a hanging model would hold the import for its SDK's
    # retries), and cached as any vector of ours: not embedded twice.
    ours = await vectors.documents_or_none([t for t, _ in picked], befores=[b for _, b in picked])
    if ours is None:
        return Verdict(f"{name}: took none of {owner}'s vectors: {model} failed or did not answer within "
                       f"{vectors.settings.embedding_timeout_s:g} s to check them; its memories are embedded "
                       "once it answers")
    cosines = [float(np.dot(unit, candidates[t][0]) / candidates[t][1])
               if (unit := _unit(np.asarray(o))) is not None else -1.0
               for t, o in zip(picked, ours, strict=True)]
    lowest = min(cosines)
    if lowest < REUSE_MIN_COSINE:
        differ = sum(c < REUSE_MIN_COSINE for c in cosines)
        return Verdict(f"{again}: {owner}'s vectors are not {model}'s ({differ} of the {len(picked)} re-embedded to "
                       f"check differ: lowest cosine {lowest:.4f}, {REUSE_MIN_COSINE} needed)")
    checked = set(picked)
    taken = {t: unit32(*candidates[t]) for t in texts if t not in checked}
    counts = {"taken": 0, "checked": 0, "long": 0}
    for embedded, _ in items:
        what = ("taken" if embedded in taken else "checked" if embedded in checked
                else "long" if embedded in long else None)
        if what:
            counts[what] += 1
    rest = total - sum(counts.values())
    line = (f"{name}: took {owner}'s vectors for {counts['taken']} memories, after {model} re-embedded "
            f"{counts['checked']} others (a random {min(SAMPLE, len(texts))}, the shortest, the longest) and every "
            f"one matched {owner}'s (cosine >= {REUSE_MIN_COSINE}, lowest {lowest:.5f})")
    if counts["long"]:
        line += (f"; embedded {counts['long']} longer than {owner}'s {stored.max_tokens} tokens (its vectors are of "
                 "their beginnings)")
    return Verdict(line + (f"; embedded {rest} that had no usable vector" if rest else ""), taken)
