"""Names of a scope's speakers, left out of the question's vector.

A conversation's turns each carry their speaker ("Caroline: Cool! What did it look like?"), so in a
store of two people talking half the memories are the turns of the person a question names, and
the vector of "What is Caroline's relationship status?" was closest to her shortest turns, where
her name is most of the text. A name that much of the memories around it speaks (the turns of the
conversations it takes part in, and every note: a store of many conversations holds her as a store
of hers alone does) tells the vector only what those turns all share; left out, the vector searches
for what is asked of them, while the subject factor (statement.py) and full text still read the
name, and another conversation's turns are taken down (conversations.py). A person a few memories
are about keeps their name in the vector: there it picks their notes out of everyone's; and so does
one that notes, not turns, are about: their name is part of what each note says ("Ines Moreau lives
in Oslo"), and left out, another person's "lives in Berlin these days" came before her other facts
(docs/benchmarks.md, "A speaker's name out of the question's vector" and "A speaker's share of
their own conversations")."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from uuid import UUID

import asyncpg

from ..fresh import Fresh
from ..models import Principal
from ..repository.graph_reads import Spoken, share_spoken
from .conversations import SPEAKER_TURNS_READ
from .naming import Linked
from .narrowing import Remembered
from .whose import MASK


async def spoken_shares(conn: asyncpg.Connection, p: Principal, linked: Linked, share: float, gap_minutes: float,
                        remembered: Remembered) -> dict[str, tuple[Spoken, tuple[UUID, ...]]]:
    """Each of the question's subject words -> how many of the memories `p` sees are turns of its
    entities and what share of the memories around them (their conversations: the turns within
    `gap_minutes` of theirs, and every memory that is no turn; as far as telling whether it reaches
    `share`), and those entities; each entity's count `remembered` a minute, as a scope's size is."""
    groups: dict[tuple[UUID, ...], list[str]] = {}
    for word, ids in linked.entities.items():
        groups.setdefault(tuple(sorted(ids)), []).append(word)
    shares: dict[str, tuple[Spoken, tuple[UUID, ...]]] = {}
    for ids, words in groups.items():
        async def count(ids: tuple[UUID, ...] = ids) -> Spoken:
            return await share_spoken(conn, p, ids, share, gap_minutes, SPEAKER_TURNS_READ)
        spoken = await remembered(("spoken", p.user_id, p.agent_id, p.project_id, ids, share, gap_minutes), count)
        shares.update((word, (spoken, ids)) for word in words)
    return shares


def broad_names(shares: Mapping[str, tuple[Spoken, Sequence[UUID]]], share: float) -> list[str]:
    """The subject words (of `spoken_shares`) whose entities at least `share` of the scope's memories
    are turns of; none when `share` is 1 (off)."""
    return [word for word, (spoken, _) in shares.items() if spoken.share >= share] if share < 1 else []


def speakers(shares: Mapping[str, tuple[Spoken, Sequence[UUID]]], most: int) -> list[tuple[UUID, ...]]:
    """The entities of each subject word (of `spoken_shares`) that speaks turns in the scope, and no
    more than `most` of them, once for words naming the same ones."""
    return list(dict.fromkeys(tuple(ids) for spoken, ids in shares.values() if 0 < spoken.turns <= most))


def without_names(text: str, words: Sequence[str]) -> str | None:
    """`text` with each of `words` (and its possessive) as MASK, a name in full as one; None when
    nothing else is left ("Caroline?"), whose vector would be the mask's alone."""
    for word in sorted(words, key=len, reverse=True):
        text = re.sub(rf"\b{re.escape(word)}(?:'s)?\b", MASK, text)
    masked = " ".join(re.sub(rf"\b{MASK}(?:\s+{MASK})+\b", MASK, text).split())
    return masked if re.search(r"\w", re.sub(rf"\b{MASK}\b", "", masked)) else None


class Speakers:
    """Which of a scope's names its searches left out of the question's vector in the last minute,
    so the service embeds a question without them from the start, not as said and then again (a
    conversation's questions name its two speakers over and over); the search still decides."""

    def __init__(self) -> None:
        self._seen: Fresh[bool] = Fresh(keep=4096)

    def likely(self, p: Principal, words: Sequence[str]) -> list[str]:
        """Those of `words` a search of `p`'s scope left out within the minute."""
        return [w for w in words if self._seen.get((p.user_id, p.agent_id, p.project_id, w))]

    def tell(self, p: Principal, asked: Sequence[str], left_out: Sequence[str]) -> None:
        """A search of `p`'s scope named `asked` and left `left_out` of its vector."""
        for word in asked:
            self._seen.put((p.user_id, p.agent_id, p.project_id, word), word in left_out)
