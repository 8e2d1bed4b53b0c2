"""The Python stage after the SQL: versions of one fact and superseded memories re-ordered among
the places the ranking gave them."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg
import numpy as np

from ..graph import subjects as stored
from ..graph.about_user import about_someone_else, speaks_of_user, without_user
from ..graph.name_forms import name_words
from ..graph.names import RUN as _RUN
from ..graph.names import SUBJECT_WITHIN, USER_NAME, WORD
from ..models import SearchHit
from .alike import alike
from .focus import MASK, TextVectors
from .query import LABEL, NOT_NAMES, word_pairs
from .values import names_its_value

# Full-text keys closer than this hold the same query words (the rest is ts_rank's tie-break).
LEXICAL_TIE = 0.05


def newest_of_conflicts(rows: list[asyncpg.Record], threshold: float) -> list[asyncpg.Record]:
    """Memories that say nearly the same thing (cosine ≥ threshold: "lives in Lisbon", "moved to
    Oslo") are versions of one fact: among the places they hold in the ranking, the newest takes
    the best. Unrelated results keep their order, so this costs nothing where age means nothing.
    Episodes are left where they are: a turn is what was said at its moment, and a later turn
    saying much the same ("Is it a yoga studio?", "What kind of yoga is it?") replaces nothing
    (LoCoMo nDCG@10 .608 -> .611, every category the same or better; R@10 cannot move)."""
    ordered = list(rows)
    for positions in alike(rows, threshold):
        # Only versions the query's words match as well as the best one's trade places: "when
        # did order 5 ship" keeps "order 5 shipped" above the newer "order 7 shipped".
        words = {i: rows[i].get("fts_key") or 0.0 for i in positions}
        leaders = [i for i in positions if words[i] >= max(words.values()) - LEXICAL_TIE]
        if len(leaders) > 1:
            newest_first = sorted((rows[i] for i in leaders), key=lambda r: r["occurred_at"], reverse=True)
            for position, row in zip(leaders, newest_first, strict=True):
                ordered[position] = row
    return ordered


def successors_first(hits: list[SearchHit]) -> list[SearchHit]:
    """A superseded memory never ranks above the memory that replaced it."""
    ordered = list(hits)
    position = {h.id: i for i, h in enumerate(ordered)}
    for hit in hits:
        successor = hit.superseded_by
        if successor in position and position[successor] > position[hit.id]:
            ordered.remove(hit)
            ordered.insert(ordered.index(next(h for h in ordered if h.id == successor)) + 1, hit)
            position = {h.id: i for i, h in enumerate(ordered)}
    return ordered


def likely_versions(content: str, near: Sequence[tuple[Any, float]], same_fact: float) -> list[tuple[Any, float]]:
    """Of the memories nearest a new one (row, cosine; closest first), those that may be earlier
    versions of what it says or near-duplicates: close enough to be versions by the model's own
    threshold (`same_fact`), or sharing a pair of content words with it (the subject: "Odalys
    Pellegrini", "coupons pipeline", "user ... prefers"). The rest say the same kind of thing of
    someone else ("Katarina Mbeki is based in Tbilisi" for "Odalys Pellegrini moved to Berlin").
    When none is left, all are: a memory sharing no words with any is still told what is near.
    On the knowledge-update sets, from the 10 nearest, 5 at most: earlier version listed
    .946 -> .956 (life), .935 -> .949 (ops), .997 -> 1.000 (dataset), other memories listed per
    update 3.3 -> 2.2, 3.5 -> 2.5, 3.2 -> 2.8."""
    mine = word_pairs(content)
    kept = [(row, cosine) for row, cosine in near if cosine >= same_fact or mine & word_pairs(row["content"])]
    return kept or list(near)


# How many of the user's own notes `related` lists: masked, a note is about as close to the
# user's other facts as to its own earlier versions, so more would mostly be other facts.
USER_NOTE_VERSIONS = 2
# Masked similarity sits lower than whole-sentence similarity: the floor is this much below the
# related threshold (MiniLM: 0.40 -> 0.20).
USER_NOTE_FLOOR_BELOW = 0.20


def is_user_note(content: str) -> bool:
    """A note about the user an agent works for, whom it never names ("I drive a Kia Niro", "User
    prefers tabs"), rather than about someone in their life."""
    return speaks_of_user(content) and not about_someone_else(content)


def masked_note(content: str) -> str:
    """What a note says of the user, the words for the user masked: what `user_note_versions`
    compares."""
    return without_user(content, MASK)


async def user_note_versions(content: str, near: Sequence[tuple[Any, float]], vectors: TextVectors,
                             floor: float, same_fact: float) -> list[tuple[Any, float]] | None:
    """For a note about the user (or one about no one, with nothing above the related threshold):
    of the nearest memories, the user's own notes whose cosine with it, the words for the user
    masked on both sides, is at least `floor` ("someone drive a Kia Niro", "someone owns a Tesla
    Model 3", "Got someone new Mini Cooper"), or that are near-duplicates whole; closest masked
    first. Whole, such notes share no words and sit below the related threshold. None when the
    embedder is not answering (then `likely_versions`).
    On the assistant / workbench sets: earlier version listed .546 -> .944 / .481 -> .821 with
    0.41 / 0.41 other memories per update."""
    notes = [(row, cosine) for row, cosine in near if not about_someone_else(row["content"])]
    if not notes:
        return []
    texts = [masked_note(t) for t in (content, *(row["content"] for row, _ in notes))]
    embedded = await vectors.documents_or_none(texts)
    if embedded is None:
        return None
    matrix = np.asarray(embedded)
    masked = matrix[1:] @ matrix[0]
    kept = [(k, float(masked[k])) for k, (_, cosine) in enumerate(notes) if masked[k] >= floor or cosine >= same_fact]
    return [notes[k] for k, _ in sorted(kept, key=lambda kc: -kc[1])]


# Masked cosine (MiniLM) at or above which a memory about the same subject says the same kind of
# thing as the new one: an earlier version of it rather than another of the subject's facts.
EARLIER_VERSION_FLOOR = 0.45
_CAPITALISED = re.compile(r"(?<![\w'-])[A-Z][\w'-]*")


# Where a subject's run must start: within SUBJECT_WITHIN words, and for `subjects` within this
# many characters (no real text has five words longer than that; a hostile one is cut short).
SUBJECT_CHARS = 240


def subjects(text: str) -> tuple[frozenset[str], ...]:
    """The runs of capitalised words among the first words of `text`, each as its lower-case
    words: whom or what it is about ("Greta Ibarra", "Remind Greta Ibarra")."""
    return _subjects(text[:SUBJECT_CHARS])


@functools.lru_cache(maxsize=2048)  # a write compares its text with every candidate's
def _subjects(text: str) -> tuple[frozenset[str], ...]:
    found: list[frozenset[str]] = []
    for m in _RUN.finditer(text):
        if len(WORD.findall(text[:m.start()])) >= SUBJECT_WITHIN:
            break
        words = frozenset(re.sub(r"'s$", "", w).lower() for w in m.group().split()) - NOT_NAMES
        if words:
            found.append(words)
    # One capitalised word opening the text before another run is how a note starts ("Heard
    # today: Benedikt Pereira ...", "Update - ..."), not whom it is about.
    if len(found) > 1 and len(found[0]) == 1 and _lone_opener(text) is not None:
        found = found[1:]
    return tuple(found)


def _lone_opener(text: str) -> str | None:
    """The capitalised word `text` opens with, when no other capitalised word follows it."""
    lead = _RUN.match(text.lstrip())
    return lead.group() if lead is not None and len(lead.group().split()) == 1 else None


def named_subject(text: str) -> frozenset[str] | None:
    """The subject `text` surely names: the first named run of its sentence, past any labels
    ("1:1 notes: Re-org: Lars Petersen takes over ..." is about Lars Petersen). None when that is
    unsure: the sentence opens with one capitalised word, which sentence case capitalises whether
    or not it is a name ("Escalations for the webhooks pipeline ...", "Manager change for ...",
    "Congrats to ..."; a possessive marks a name: "Greta's birthday ..."), or the text is about
    someone in a life ("User's son ...", "Kenji Chaudhry's brother ..."), whose subject is that
    relation."""
    if about_someone_else(text):
        return None
    body = text[:SUBJECT_CHARS]
    for _ in range(3):  # "1:1 notes: Re-org: Lars Petersen ..."
        label = LABEL.match(body)
        if label is None:
            break
        body = body[label.end():]
    runs = subjects(body)
    # Sentence case capitalises an opening word either way; a possessive marks a name, a function
    # word is none.
    word = _lone_opener(body)
    unsure = word is not None and not word.endswith("'s") and word.lower() not in NOT_NAMES
    return runs[0] if runs and not unsure else None


def same_subject(new: str, old: str) -> bool:
    """Whether two memories are about one subject: both notes about the user, or one's first
    named run holds the other's ("Greta Ibarra" / "Remind Greta Ibarra"; not "Cressida Baptiste" /
    "Cressida Grimaldi", nor "Zainab Novak" / "Ines Olawale" growing up on a farm alike); with
    no name early in either, a shared pair of content words ("coupons pipeline")."""
    mine, theirs = subjects(new), subjects(old)
    if mine and theirs:  # the first names: "Emeka ... studied at ETH Zurich" is not about ETH Zurich
        return mine[0] <= theirs[0] or theirs[0] <= mine[0]
    if is_user_note(new) or is_user_note(old):
        return is_user_note(new) and is_user_note(old)
    return bool(word_pairs(new) & word_pairs(old))


def shared_names(a: str, b: str) -> frozenset[str]:
    """The capitalised words (lower case, possessives cut) both texts hold: their common subject
    ("Greta", "Ibarra"), or a value both name ("Lisbon")."""
    def caps(text: str) -> set[str]:
        return {re.sub(r"'s$", "", w).lower() for w in _CAPITALISED.findall(text)} - NOT_NAMES
    return frozenset(caps(a) & caps(b))


def _with_subject(text: str, subject: str, names: frozenset[str]) -> str:
    """`text` opening on `subject` when it names none of `names` (nor, for the user, the user)."""
    holds = speaks_of_user(text) if subject == USER_NAME else any(
        re.search(rf"(?<![\w'-]){re.escape(name)}(?![\w-])", text, re.IGNORECASE) for name in names)
    stripped = text.lstrip()
    return text if holds or not stripped else f"{subject} {stripped[0].lower()}{stripped[1:]}"


def masked_pair(new: str, old: str, said: Sequence[str] = ()) -> tuple[str, str, frozenset[str]]:
    """Both texts with what they share of the subject masked (the names both hold and the words
    for the user), and those names. `said`: the subject's names where the graph has both about it
    (`GraphSubjects`), each of their words masked wherever either text holds it; a text holding
    none of them gets the first as its subject, as it would have said it ("Lives in Berlin now."
    about Greta Ibarra is compared as "someone someone lives in Berlin now.", the form "Greta
    Ibarra lives in Lisbon." takes: .39 -> .52 with MiniLM, as the text's own reading compares)."""
    if said:
        names = frozenset().union(*(name_words(name) for name in said if name != USER_NAME)) - NOT_NAMES
        new, old = (_with_subject(text, said[0], names) for text in (new, old))
    else:
        names = shared_names(new, old)
        # Only the subject is masked: a value both name stays ("left Plumtree Media" / "works at
        # Plumtree Media"), for `earlier_versions` to see.
        subject = frozenset().union(*(runs[0] for runs in (subjects(new), subjects(old)) if runs))
        names = names & subject or names

    def mask(text: str) -> str:
        for name in sorted(names, key=len, reverse=True):
            text = re.sub(rf"(?<![\w'-]){re.escape(name)}(?:'s)?(?![\w'-])", MASK, text, flags=re.IGNORECASE)
        return without_user(text, MASK)
    return mask(new), mask(old), names


# How many of a named subject's own memories `related` lists, closest with the subject masked
# first: an earlier version phrased unlike the new memory is often not among the subject's
# memories closest whole ("packed everything into a van and drove to Kaunas" / "moved to
# Lisbon"), while masked it is among the first three for 93% of circle's updates
# (bench/closeness_ceiling.py).
SUBJECT_VERSIONS = 3


@dataclass(frozen=True)
class GraphSubjects:
    """What the graph's stored mentions say of a new memory against each candidate, where a writer
    or a model said whom one of them is about (graph/subjects.py `compare`): per candidate id,
    "same", "other" or "apart" (absent where the graph says nothing), and the subject's names where
    "same". The readers of a memory's text ask this first; "apart" leaves it to the text."""
    verdicts: Mapping[UUID, str] = field(default_factory=dict)
    names: Mapping[UUID, Sequence[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, new: stored.Subjects | None, olds: Mapping[UUID, stored.Subjects]) -> GraphSubjects:
        verdicts = {i: stored.compare(new, old) for i, old in olds.items()}
        return cls({i: v for i, v in verdicts.items() if v is not None},
                   {i: stored.subject_names(new, olds[i]) or () for i, v in verdicts.items() if v == "same"})

    def same(self, row_id: UUID) -> bool | None:
        """Whether the graph has the candidate about the new memory's subject (None: it does not say)."""
        verdict = self.verdicts.get(row_id)
        return None if verdict not in ("same", "other") else verdict == "same"

    def differs(self, content: str, rows: Sequence[Any]) -> bool:
        """Whether the graph says of any of `rows` what the text's reading does not: a memory about
        the subject that `subject_versions` would not take for one, or another subject's that
        `same_subject` would. Where it never does, the text's list stands (and is not embedded again)."""
        named = named_subject(content) is not None
        for row in rows:
            said = self.same(row["id"])
            if said is None:
                continue
            text = same_subject(content, row["content"])
            if said != text or said and not (named and named_subject(row["content"]) is not None):
                return True
        return False


NO_GRAPH = GraphSubjects()


def _same_subject(content: str, row: Any, graph: GraphSubjects) -> bool:
    said = graph.same(row["id"])
    return same_subject(content, row["content"]) if said is None else said


class _Unanswered:
    """An embedder that answers nothing: for judging, once the embedder has failed, what needs no
    embedding, without asking it (and waiting on it) again."""

    async def query(self, text: str) -> list[float] | None:
        return None

    async def documents_or_none(self, texts: Sequence[str], batch: int = 32) -> list[list[float]] | None:
        return None


UNANSWERED: TextVectors = _Unanswered()


def names_its_value_masked(new: str, old: str, said: Sequence[str] = ()) -> bool:
    """`names_its_value` of the two texts with their subject masked (`masked_pair`; `said`: its
    names where the graph has them): "left Plumtree Media for Saltmarsh Bank" of "works at
    Plumtree Media", whoever's name the subject is."""
    masked_new, masked_old, names = masked_pair(new, old, said)
    return names_its_value(masked_new, masked_old, names | {MASK} | NOT_NAMES)


async def masked_similarities(content: str, rows: Sequence[Any], vectors: TextVectors,
                              known: Mapping[UUID, float] | None = None,
                              graph: GraphSubjects = NO_GRAPH) -> dict[UUID, float] | None:
    """Each row's cosine with `content`, what they share of the subject masked on both sides
    (`masked_pair`, the graph's names of it where it has them); those in `known` are not embedded
    again. None when the embedder is not answering."""
    found = dict(known or {})
    todo = [row for row in rows if row["id"] not in found]
    if todo:
        pairs = [masked_pair(content, row["content"], graph.names.get(row["id"], ()))[:2] for row in todo]
        embedded = await vectors.documents_or_none([t for pair in pairs for t in pair])
        if embedded is None:
            return None
        for k, row in enumerate(todo):
            found[row["id"]] = float(np.dot(embedded[2 * k], embedded[2 * k + 1]))
    return {row["id"]: found[row["id"]] for row in rows}


async def subject_versions(content: str, near: Sequence[tuple[Any, float]], vectors: TextVectors,
                           graph: GraphSubjects = NO_GRAPH
                           ) -> tuple[list[tuple[Any, float]], dict[UUID, float]] | None:
    """Of the nearest memories (row, cosine), those about the subject `content` names, each surely
    naming its own (`named_subject`, `same_subject`: not "Moved the alerts API off ..." for "Uploads
    API ..."), or that the graph has about it (`graph`), closest first with the subject masked on
    both sides (the cosine each keeps is the whole texts'), and their masked similarities. None when
    the embedder is not answering."""
    def about_it(row: Any) -> bool:
        said = graph.same(row["id"])
        if said is not None:
            return said
        return named_subject(row["content"]) is not None and same_subject(content, row["content"])

    same = [(row, cosine) for row, cosine in near if row["content"] != content and about_it(row)]
    masked = await masked_similarities(content, [row for row, _ in same], vectors, graph=graph)
    if masked is None:
        return None
    return sorted(same, key=lambda rc: -masked[rc[0]["id"]]), masked


async def earlier_versions(content: str, rows: Sequence[Any], vectors: TextVectors,
                           floor: float = EARLIER_VERSION_FLOOR,
                           known: Mapping[UUID, float] | None = None,
                           graph: GraphSubjects = NO_GRAPH) -> dict[UUID, bool | None]:
    """Which of `rows` (the memories `related` lists for a new one saying `content`) look like
    earlier versions of it: about the same subject (`same_subject`) and saying the same kind of
    thing of it, judged with the subject masked on both sides ("someone drives a Hyundai Ioniq" /
    "someone drives a Subaru Outback these days", not "someone is reading a thriller set in
    Iceland"): the one of them with the highest masked cosine, if at least `floor`. A memory about
    the subject whose value the new one names beside a new value is one too, whatever its wording
    ("left Plumtree Media and signed with Saltmarsh Bank"). `known`: masked similarities already
    found (`masked_similarities`). Where the graph has whom both are about (`graph`), it says
    whether the subject is the same, and its names are masked. With the embedder not answering,
    what needs no embedding is still judged (another subject's memory is none, one whose value the
    new one names is one) and the rest is unknown (None). Measured in bench/versions_related.py
    (flag precision, wrong supersedes)."""
    flags: dict[UUID, bool | None] = {}
    judged: list[Any] = []
    for row in rows:
        text = row["content"]
        if not _same_subject(content, row, graph):
            flags[row["id"]] = False
            continue
        if names_its_value_masked(content, text, graph.names.get(row["id"], ())):
            flags[row["id"]] = True
        else:
            judged.append(row)
    if judged:
        cosines = await masked_similarities(content, judged, vectors, known, graph)
        if cosines is None:
            return flags | {row["id"]: None for row in judged}
        # Only the closest: the versions before it were superseded by it when it was written (and
        # are no longer listed), while the subject's other facts, short notes alike once masked
        # ("someone joined the company in 2019"), pass the floor too.
        best = max(judged, key=lambda row: cosines[row["id"]])["id"]
        for row in judged:
            flags[row["id"]] = row["id"] == best and cosines[row["id"]] >= floor
    return flags
