"""What a key in a writer's own words means by the lexicon's attributes: "car model" and "mobile
device" are no words of the lexicon, but plainly the car and the phone. Read by the embedder: the
key's words against each attribute's phrases, the closest phrase of each."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from weakref import WeakKeyDictionary

import numpy as np

from ..lexicon import Lexicon
from .focus import TextVectors

# How close words must be to an attribute's phrase to name it plainly: paraphrases of one short
# phrase ("mobile device" / "phone" .87, "car model" / "car" .71) and words near one attribute alone
# ("npm client": package manager .53, no other above .26) sit above it, verbs that could name
# several things ("persists to": team .49, owner .48) below (docs/benchmarks.md, "Keys in loose
# words").
PLAINLY = 0.5
# And this much closer than to any other attribute (or the one asked): "mobile device" is phone .87
# and phone number .84, so it names neither apart from the other.
MARGIN = 0.15
# Keys' words remembered per embedder (a writer reuses a few words for many subjects).
MAX_KEYS = 2048

_PHRASES: WeakKeyDictionary[object, dict[Lexicon, tuple[list[str], np.ndarray]]] = WeakKeyDictionary()
_KEYS: WeakKeyDictionary[object, OrderedDict[str, np.ndarray]] = WeakKeyDictionary()


async def _phrases(vectors: TextVectors, lexicon: Lexicon) -> tuple[list[str], np.ndarray] | None:
    """Each phrase of the lexicon's attributes with its attribute, embedded once per embedder
    (about 300 short texts for English, ~0.3 s on two cores)."""
    known = _PHRASES.setdefault(vectors, {})
    if lexicon not in known:
        pairs = [(a.name, p) for a in lexicon.attributes for p in dict.fromkeys((a.name, *a.phrases))]
        embedded = await vectors.documents_or_none([p for _, p in pairs])
        if embedded is None:
            return None
        known[lexicon] = ([a for a, _ in pairs], np.asarray(embedded, dtype=np.float32))
    return known[lexicon]


async def _keys(vectors: TextVectors, words: Sequence[str]) -> list[np.ndarray] | None:
    known = _KEYS.setdefault(vectors, OrderedDict())
    todo = [w for w in words if w not in known]
    embedded = await vectors.documents_or_none(todo) if todo else []
    if embedded is None:
        return None
    for w, vector in zip(todo, embedded, strict=True):
        known[w] = np.asarray(vector, dtype=np.float32)
    for w in words:
        known.move_to_end(w)
    while len(known) > MAX_KEYS:
        known.popitem(last=False)
    return [known[w] for w in words]


async def _closeness(vectors: TextVectors, lexicon: Lexicon, keys: Sequence[str]
                     ) -> dict[str, dict[str, float]] | None:
    """Each of `keys` -> each attribute of the lexicon -> the cosine of its closest phrase."""
    words = list(dict.fromkeys(keys))
    phrases = await _phrases(vectors, lexicon)
    embedded = await _keys(vectors, words)
    if phrases is None or embedded is None:
        return None
    names, matrix = phrases
    out: dict[str, dict[str, float]] = {}
    for key, row in zip(words, (np.stack(embedded) @ matrix.T) if embedded else [], strict=True):
        best: dict[str, float] = {}
        for name, cosine in zip(names, row.tolist(), strict=True):
            best[name] = max(best.get(name, -1.0), cosine)
        out[key] = best
    return out


async def named_plainly(vectors: TextVectors, lexicon: Lexicon, key: str) -> str | None:
    """The one attribute of the lexicon a key in a writer's own words plainly names: at least
    `PLAINLY` close and `MARGIN` closer than any other ("oncall area": `on-call` .78, `region` .46;
    not "mobile device": `phone` .87, `phone number` .84). None also without the embedder."""
    closeness = await _closeness(vectors, lexicon, [key])
    if not closeness or not closeness[key]:
        return None
    ranked = sorted(closeness[key].items(), key=lambda item: -item[1])
    (name, closest), runner_up = ranked[0], ranked[1][1] if len(ranked) > 1 else -1.0
    return name if closest >= max(PLAINLY, runner_up + MARGIN) else None


async def name_another(vectors: TextVectors, lexicon: Lexicon, keys: Sequence[str], attribute: str
                       ) -> dict[str, str] | None:
    """Those of `keys` (a writer's own words) that plainly name an attribute of the lexicon other
    than `attribute`, each with the attribute it names: the closest other attribute at least
    `PLAINLY` close to the words and `MARGIN` closer than `attribute` is. None without the embedder."""
    closeness = await _closeness(vectors, lexicon, keys)
    if closeness is None:
        return None
    out: dict[str, str] = {}
    for key, best in closeness.items():
        own = best.pop(attribute, -1.0)
        other, closest = max(best.items(), key=lambda item: item[1], default=("", -1.0))
        if closest >= max(own + MARGIN, PLAINLY):
            out[key] = other
    return out
