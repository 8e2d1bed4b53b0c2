"""Our own check on what a model may replace (issue 27 item 11).

A small local model marks true facts replaced by memories about something else: "Bianca's
birthday is on 5 January" by "Caleb's birthday is on 25 May" (another person), "Arjun is allergic
to penicillin" by "Arjun uses Neovim every day now" (another attribute). Protecting the store is
our job, not the model's, so before an UPDATE, DELETE or NONE is applied each target must pass:

- subject: when both memories name someone or something, they name the same one ("Caleb" is
  "Caleb Okafor", "Katarina Mbeki" is not "Katarina Nascimento"); a note about the user is not
  about a person in their life;
- attribute: with the subject's names and the words for the user masked, the two texts say the
  same kind of thing (cosine of their embeddings at least `ATTRIBUTE_FLOOR`), or the new one names
  a value the old one holds ("left Leipzig for Berlin" replaces "lives in Leipzig").

A target about another subject is refused outright. A target about the same subject whose
attribute differs is a low-confidence replace: it is not applied but kept in the job's result as a
suggestion (`suggested`), which the user sees in `mcp-memory jobs list` and may apply by hand.
When the embedder is not answering the attribute cannot be judged, and the replace is a
suggestion too: a decision only removes a fact from view when we agree with the model."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol
from uuid import UUID

import numpy as np

from ..retrieval.about_user import about_someone_else, speaks_of_user, without_user
from ..retrieval.focus import MASK, values_of
from ..retrieval.query import NOT_NAMES

# Masked cosine (MiniLM): at 0.25, of a fact and its next version on the knowledge-update dev sets
# 79% (life) .. 96% (dataset) pass; of distractors, 4% (life) .. 55% (dataset, "her sister's phone").
ATTRIBUTE_FLOOR = 0.25
# A target this much less similar (masked) than the closest of its subject's candidates is not the
# version the new memory replaces.
CLOSEST_MARGIN = 0.05
# A subject comes early in a memory ("Greta Ibarra drives ...", "FYI: Chiara ...").
SUBJECT_WITHIN = 5
# Words that open a sentence capitalised without naming anyone.
_NOT_NAMES = NOT_NAMES | frozenset("""user user's fyi note notes update after before since now today yesterday
moved switched from standup also just new prod""".split())
_RUN = re.compile(r"(?<![\w'-])[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")
_WORD = re.compile(r"\w[\w'-]*")
_POSSESSIVE = re.compile(r"'s$")


class Embeds(Protocol):
    async def documents_or_none(self, texts: Sequence[str], batch: int = 32) -> list[list[float]] | None: ...


def names(text: str, anywhere: bool = False) -> list[tuple[str, ...]]:
    """The runs of capitalised words near the start of `text` (or anywhere), each as its
    lower-case words."""
    found = []
    for m in _RUN.finditer(text):
        if not anywhere and len(_WORD.findall(text[:m.start()])) >= SUBJECT_WITHIN:
            continue
        words = tuple(w for w in (_POSSESSIVE.sub("", w).lower() for w in m.group().split()) if w not in _NOT_NAMES)
        if words:
            found.append(words)
    return found


def _same(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return set(a) <= set(b) or set(b) <= set(a)


def other_subject(new: str, old: str) -> str | None:
    """Why `old` is about another subject than `new`, or None if it may be the same."""
    new_user, old_user = _user_note(new), _user_note(old)
    if new_user and old_user:
        return None
    if new_user != old_user and (about_someone_else(new) or about_someone_else(old)):
        return "one is about the user, the other about someone in their life"
    mine, theirs = names(new), names(old)
    # The other's subject (its first name) named anywhere counts ("Dieter Vogel inherited Ottilie
    # Jablonski"), not any name it holds: "Katarina visited Berlin" is not about a Berlin resident.
    if mine and theirs and not any(_same(a, b) for a in mine for b in theirs) \
            and not any(_same(mine[0], b) for b in names(old, anywhere=True)) \
            and not any(_same(a, theirs[0]) for a in names(new, anywhere=True)):
        return (f"about {' '.join(theirs[0]).title()}, not {' '.join(mine[0]).title()}")
    return None


def _user_note(text: str) -> bool:
    return speaks_of_user(text) and not about_someone_else(text)


def masked(text: str, subject: Sequence[tuple[str, ...]]) -> str:
    for words in sorted(subject, key=len, reverse=True):
        pattern = r"(?<![\w'-])" + r"\s+".join(map(re.escape, words)) + r"(?:'s)?(?![\w'-])"
        text = re.sub(pattern, MASK, text, flags=re.IGNORECASE)
    return without_user(text, MASK)


@dataclass
class Verdict:
    """Which targets a decision may act on, and why the others may not."""

    allowed: list[UUID] = field(default_factory=list)
    refused: dict[UUID, str] = field(default_factory=dict)  # another subject: never applied
    suggested: dict[UUID, str] = field(default_factory=dict)  # low confidence: the user decides


async def check(new: str, targets: Sequence[tuple[UUID, str]], vectors: Embeds | None,
                floor: float = ATTRIBUTE_FLOOR, among: Sequence[tuple[UUID, str]] = ()) -> Verdict:
    """Each target (id, its text) that the new memory's decision replaces, judged. `among`: every
    candidate the model was shown (targets included): a target must also be about as close to
    the new memory, masked, as the closest of the same subject's candidates (a small model lists
    all of a person's memories; only the one holding the same attribute is a version)."""
    verdict = Verdict()
    same_subject: list[tuple[UUID, str]] = []
    for memory_id, text in targets:
        why = other_subject(new, text)
        if why:
            verdict.refused[memory_id] = f"guard: {why}"
        else:
            same_subject.append((memory_id, text))
    if not same_subject:
        return verdict
    chosen = {m for m, _ in same_subject}
    rivals = [(m, t) for m, t in among if m not in chosen and other_subject(new, t) is None]
    judged = same_subject + rivals
    # Only the names both share are the subject: the others are values ("from Railway to AWS Lambda").
    mine = names(new)
    shared = [[a for a in mine for b in names(text) if _same(a, b)] for _, text in judged]
    texts = [masked(new, s) for s in shared]
    texts += [masked(text, s) for (_, text), s in zip(judged, shared, strict=True)]
    embedded = await vectors.documents_or_none(texts) if vectors is not None else None
    n = len(judged)
    cosines = ([float(np.dot(embedded[k], embedded[n + k])) for k in range(n)] if embedded is not None else None)
    best = max(cosines) if cosines else 0.0
    for k, (memory_id, _) in enumerate(same_subject):
        ignore = frozenset(w for name in shared[k] for w in name) | {MASK}
        if values_of(texts[k], ignore) & values_of(texts[n + k], ignore):
            verdict.allowed.append(memory_id)  # the new memory names the value it replaces
        elif cosines is None:
            verdict.suggested[memory_id] = "guard: the embedder is not answering, so the attribute was not checked"
        elif cosines[k] < floor:
            verdict.suggested[memory_id] = (f"guard: same subject, but another attribute by our check "
                                            f"(masked similarity {cosines[k]:.2f} < {floor:.2f})")
        elif cosines[k] < best - CLOSEST_MARGIN:
            verdict.suggested[memory_id] = (f"guard: another memory of the same subject is closer to it by our "
                                            f"check (masked similarity {cosines[k]:.2f} < {best:.2f})")
        else:
            verdict.allowed.append(memory_id)
    return verdict
