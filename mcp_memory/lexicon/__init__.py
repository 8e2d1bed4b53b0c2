"""A language's words as data: what the graph room, retrieval, decisions and capture read of a
language. One `Lexicon` per language, passed as a value; adding a language adds a module beside
english.py and changes no code. Imports nothing of the package: every layer may read it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import snowballstemmer


@dataclass(frozen=True)
class Attribute:
    """One attribute a memory may state of its subject (a home city, an employer).

    `phrases`: how a writer names it as a key ("home city", "lives in"); `cues`: words that point to
    it in a question or a statement ("live", "town"); `single`: it holds one value at a time (a
    newer value replaces the older), else values accumulate (allergies, languages)."""

    name: str
    phrases: tuple[str, ...]
    cues: tuple[str, ...] = ()
    single: bool = True


@dataclass(frozen=True)
class Lexicon:
    language: str  # Snowball's name for it ("english")
    text_search: str  # PostgreSQL's text search configuration
    # Words in a key that name no attribute ("their", "current"): dropped before keys are compared.
    key_fillers: frozenset[str]
    # Words no question is about (stop words), for matching a question with a key.
    stop_words: frozenset[str]
    # How a writer names the user in `about` ("me", "the user").
    user_names: frozenset[str]
    attributes: tuple[Attribute, ...] = field(default=())
    # Words a memory uses to say a value no longer holds ("no longer allergic to ...").
    ended: tuple[str, ...] = ()

    @cached_property
    def _stemmer(self) -> snowballstemmer.stemmer:
        return snowballstemmer.stemmer(self.language)

    def words(self, text: str) -> list[str]:
        return [w for w in re.findall(r"[^\W_]+(?:['’-][^\W_]+)*", text.lower())]

    def stems(self, text: str, *, drop: frozenset[str] = frozenset()) -> tuple[str, ...]:
        """The stems of `text`'s words, those in `drop` left out, possessives cut."""
        words = [re.sub(r"['’]s$", "", w) for w in self.words(text)]
        return tuple(self._stemmer.stemWord(w) for w in words if w and w not in drop)
