"""The lexicon's attributes looked up by their words: which attributes a key's words are a phrase of
(by stems, as written, verbatim, run together), and which cues or phrases a text's stems hold. One
index per lexicon, built once: keys.py names a key's attribute with it, questions.py the attribute a
question asks."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any

from ..lexicon import Attribute, Lexicon


def _index(lexicon: Lexicon, form: Callable[[Lexicon, str], Hashable]) -> dict[Any, frozenset[str]]:
    """Each phrase (and attribute name) in `form` -> the attributes that use it; a phrase whose form
    is empty (fillers alone) is left out."""
    found: dict[Any, set[str]] = {}
    for attribute in lexicon.attributes:
        for phrase in (attribute.name, *attribute.phrases):
            if key := form(lexicon, phrase):
                found.setdefault(key, set()).add(attribute.name)
    return {k: frozenset(v) for k, v in found.items()}


@functools.lru_cache(maxsize=8)
def _phrases(lexicon: Lexicon) -> dict[tuple[str, ...], frozenset[str]]:
    """Each phrase's stems (fillers dropped) -> the attributes that use it."""
    return _index(lexicon, lambda lx, phrase: lx.stems(phrase, drop=lx.key_fillers))


@functools.lru_cache(maxsize=8)
def exact(lexicon: Lexicon) -> dict[str, frozenset[str]]:
    """Each phrase as written (lower case, fillers dropped) -> the attributes that use it: where two
    attributes share stems ("language", "languages"), the words themselves tell them apart."""
    return _index(lexicon, plain)


@functools.lru_cache(maxsize=8)
def verbatim(lexicon: Lexicon) -> dict[str, frozenset[str]]:
    """Each phrase as written, fillers kept -> the attributes that use it: "who owns it" is one
    attribute's phrase whole (the owner), though its words without fillers, "owns", are a
    project's too."""
    return _index(lexicon, lambda lx, phrase: " ".join(lx.words(phrase)))


@functools.lru_cache(maxsize=8)
def squashed(lexicon: Lexicon) -> dict[str, frozenset[str]]:
    """Each phrase with its words run together, hyphens out (fillers dropped) -> the attributes that
    use it: "oncall rotation", "on-call rotation" and "on call rotation" are one spelling."""
    return _index(lexicon, squash)


def squash(lexicon: Lexicon, words: str) -> str:
    return plain(lexicon, words).replace(" ", "").replace("-", "")


def plain(lexicon: Lexicon, words: str) -> str:
    return " ".join(w for w in lexicon.words(words) if w not in lexicon.key_fillers)


def whole(tidy: str, lexicon: Lexicon) -> frozenset[str]:
    """The attributes `tidy` is a phrase of whole, fillers aside or its words run together
    ("e-mail", "email"); none for words that only hold a cue of one."""
    return (_phrases(lexicon).get(lexicon.stems(tidy, drop=lexicon.key_fillers), frozenset())
            or squashed(lexicon).get(squash(lexicon, tidy), frozenset()))


@functools.lru_cache(maxsize=8)
def by_name(lexicon: Lexicon) -> dict[str, Attribute]:
    return {a.name: a for a in lexicon.attributes}


def contains(seq: tuple[str, ...], part: tuple[str, ...]) -> bool:
    n = len(part)
    return n > 0 and any(seq[i:i + n] == part for i in range(len(seq) - n + 1))


@functools.lru_cache(maxsize=512)
def parts(lexicon: Lexicon, attribute: Attribute) -> frozenset[tuple[str, ...]]:
    """The stems of an attribute's cues and of its name and phrases (fillers dropped)."""
    return frozenset({lexicon.stems(c) for c in attribute.cues}
                     | {lexicon.stems(p, drop=lexicon.key_fillers) for p in (attribute.name, *attribute.phrases)})


def cue_stems(text: str, lexicon: Lexicon) -> tuple[str, ...]:
    """`text`'s stems as its cues are read (`held`): each of the lexicon's idioms blanked, so "keeps
    two budgies at home" holds no cue of a home, and "Home for Greta is Berlin." still does."""
    stems = lexicon.stems(text)
    idioms = _idioms_by_first(lexicon)
    blanked: list[str] | None = None
    for at, stem in enumerate(stems):
        for idiom in idioms.get(stem, ()):
            if stems[at:at + len(idiom)] == idiom:
                blanked = blanked or list(stems)
                blanked[at:at + len(idiom)] = [""] * len(idiom)
    return tuple(blanked) if blanked is not None else stems


@functools.lru_cache(maxsize=8)
def _idioms_by_first(lexicon: Lexicon) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Each idiom's first stem -> the idioms' stems starting with it."""
    index: dict[str, list[tuple[str, ...]]] = {}
    for idiom in lexicon.idioms:
        if stems := lexicon.stems(idiom):
            index.setdefault(stems[0], []).append(stems)
    return {first: tuple(found) for first, found in index.items()}


@functools.lru_cache(maxsize=8)
def _parts_by_first(lexicon: Lexicon) -> dict[str, tuple[tuple[tuple[str, ...], str], ...]]:
    """Each cue's or phrase's first stem -> (its stems, its attribute), every attribute's."""
    index: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for attribute in lexicon.attributes:
        for part in parts(lexicon, attribute):
            if part:
                index.setdefault(part[0], []).append((part, attribute.name))
    return {first: tuple(parts) for first, parts in index.items()}


def held(stems: tuple[str, ...], lexicon: Lexicon, head: str | None = None) -> dict[str, int]:
    """Each attribute whose cues or phrases `stems` hold -> the length of the longest held; with a
    `head`, only cues and phrases that hold it count. Looked up by each stem, not by trying every cue."""
    index = _parts_by_first(lexicon)
    held: dict[str, int] = {}
    for at, stem in enumerate(stems):
        for part, name in index.get(stem, ()):
            if stems[at:at + len(part)] == part and len(part) > held.get(name, 0) and (head is None or head in part):
                held[name] = len(part)
    return held


@functools.lru_cache(maxsize=8)
def leading_words(lexicon: Lexicon) -> frozenset[str]:
    """The words that lead a noun as its determiner or the user's possessive ("the", "our", "user's";
    "o", "nosso"): what follows them is a thing, named or owned, not a verb or a value."""
    return frozenset({*lexicon.determiners, *(w for p in lexicon.user_possessives for w in lexicon.words(p))})


def found_at(stems: tuple[str, ...], lexicon: Lexicon, name: str, length: int) -> list[int]:
    """Where in `stems` a cue or phrase of the attribute `name`, `length` stems long, begins."""
    sized = [part for part in parts(lexicon, by_name(lexicon)[name]) if len(part) == length]
    return [at for at in range(len(stems)) for part in sized if stems[at:at + length] == part]


def phrased(stems: tuple[str, ...], lexicon: Lexicon) -> frozenset[str]:
    """The attributes one of whose phrases (not cues) `stems` hold."""
    return frozenset(name for phrase, names in _phrases(lexicon).items() if phrase and contains(stems, phrase)
                     for name in names)


def longest(held: dict[str, int]) -> str | None:
    """The one attribute `held` holds longest; None when none, or on a tie."""
    ranked = sorted(held.values(), reverse=True)
    if not ranked or len(ranked) > 1 and ranked[0] == ranked[1]:
        return None
    return next(name for name, length in held.items() if length == ranked[0])
