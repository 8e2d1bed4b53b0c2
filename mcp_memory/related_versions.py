"""What a new memory may replace: the visible live memories near it, for `related` (the agent's
list) and for the decisions' candidates (the same list), each saying whether it looks like an
earlier version of the new memory."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from .config import Settings
from .embeddings import conflict_similarity
from .graph.about_user import about_someone_else
from .models import MOMENTS, Principal, RelatedMemory, human_age
from .repository import MemoryRepository
from .repository.related import nearest
from .retrieval import versions
from .retrieval.focus import TextVectors
from .vectors import Vectors


class Near(NamedTuple):
    """The nearest memories and how many of them to list; `earlier`, when already judged, the
    ids of the first `keep` of them and which look like earlier versions (`earlier_versions`).
    `replaces`: False for an episode, which has no earlier versions. `pool`: the widest nearest
    fetched, among which `by_graph` finds the subject's own memories; `graph`: what the graph's
    stored mentions said of them, once read."""
    rows: list[tuple[Any, float]]
    keep: int
    earlier: tuple[tuple[UUID, ...], dict[UUID, bool | None]] | None = None
    replaces: bool = True
    pool: Sequence[tuple[Any, float]] = ()
    graph: versions.GraphSubjects = versions.NO_GRAPH


class RelatedVersions:
    def __init__(self, repo: MemoryRepository, settings: Settings, vectors: Vectors | None) -> None:
        self.repo = repo
        self.settings = settings
        self.vectors = vectors

    def applies(self, vector: list[float] | None) -> bool:
        return vector is not None and self.vectors is not None and self.settings.related_limit > 0

    def companions(self, content: str, kind: str) -> list[str]:
        """The texts `neighbours` will embed to judge a new memory, to embed with it in one batch:
        a note about the user is compared masked; an episode, which replaces nothing, is not."""
        if self.settings.related_limit > 0 and kind not in MOMENTS and versions.is_user_note(content):
            return [versions.masked_note(content)]
        return []

    async def neighbours(self, p: Principal, vector: list[float], content: str, extra: int,
                         exclude: UUID | None = None, before: datetime | None = None,
                         kind: str | None = None, wide: bool = False) -> Near:
        """The visible live memories near `vector` that may be earlier versions of `content` or
        near-duplicates, closest first, and how many of them to list. Of the 2 x related_limit
        (+ `extra`) nearest above the related threshold, `likely_versions`; for a memory that
        names its subject, the subject's own memories among the 4 x related_limit nearest come
        first (`_subject_first`). A note about the user, whose versions share no words and sit
        below the threshold, or a note with nothing above it that is about no one else ("Default
        shell: zsh."), is compared with the user's notes among the 4 x related_limit nearest, the
        words for the user masked. `wide`: fetch the 4 x related_limit nearest whatever the text
        names, for `by_graph` to choose from (the memory's mentions are stored, or about to be)."""
        vectors = self.vectors
        assert vectors is not None
        threshold = self.settings.related_similarity
        if threshold is None:
            threshold = max(0.0, conflict_similarity(vectors.model) - 0.25)
        same_fact, limit = conflict_similarity(vectors.model), self.settings.related_limit

        async def near(n: int, floor: float) -> list[tuple[Any, float]]:
            return await nearest(self.repo, p, vector, model=vectors.model, dimension=vectors.dimension,
                                 exclude=exclude, limit=n * limit + extra, min_similarity=floor,
                                 created_before=before)

        if kind in MOMENTS:
            # A turn is what was said at its moment and replaces nothing (search leaves episodes
            # where they are too): its nearest are listed, none judged an earlier version, and no
            # masked text is embedded for it (long first-person turns spent ~3/4 of the slowest
            # writes' time embedding them).
            return Near(versions.likely_versions(content, await near(2, threshold), same_fact), limit,
                        replaces=False)
        widest: list[tuple[Any, float]] | None = await near(4, 0.0) if wide else None
        if not versions.is_user_note(content):
            named = versions.named_subject(content) is not None
            widest = await near(4, 0.0) if named and widest is None else widest
            pool = widest if widest is not None else await near(2, threshold)
            likely = versions.likely_versions(content, [(r, cosine) for r, cosine in pool if cosine >= threshold]
                                              [:2 * limit + extra], same_fact)
            if named and (first := await self._subject_first(content, pool, likely)) is not None:
                return first._replace(pool=pool)
            if likely or about_someone_else(content):
                return (await self._judged(content, likely, limit))._replace(pool=widest or [])
        rows = widest if widest is not None else await near(4, 0.0)
        chosen = await versions.user_note_versions(content, rows, vectors,
                                                   threshold - versions.USER_NOTE_FLOOR_BELOW, same_fact)
        if chosen is not None:
            return (await self._judged(content, chosen, min(limit, versions.USER_NOTE_VERSIONS)))._replace(pool=rows)
        above = [(r, cosine) for r, cosine in rows if cosine >= threshold][:2 * limit + extra]
        return (await self._judged(content, versions.likely_versions(content, above, same_fact), limit)
                )._replace(pool=rows)

    async def by_graph(self, p: Principal, memory_id: UUID, content: str, near: Near, told: bool = True) -> Near:
        """`near` read again by the graph's stored mentions, once the new memory `memory_id` has
        them: where a writer or a model said whom it or a candidate is about (graph/subjects.py
        `compare`), the subject's own memories among the pool come first (up to SUBJECT_VERSIONS,
        closest with the subject's names masked), another subject's after the rest, and the
        earlier versions are judged with the graph's answer to "about the same subject?" instead
        of the text's ("Lives in Berlin now." said about Greta Ibarra is not about Berlin, and "Greta
        Ibarra lives in Lisbon." is its earlier version). Where the graph says nothing, or the same
        as the text (`GraphSubjects.differs`), `near` as it was. `told`: whether a writer or a
        model said whom the new memory is about; if not, and of no candidate either, the graph
        holds only the rules' reading of the texts and is not read."""
        if not near.replaces or not near.pool or self.vectors is None:
            return near
        if not told and not any(r["said_about"] for r, _ in near.pool):
            return near
        candidates = [(r, c) for r, c in near.pool if r["content"] != content and r["kind"] not in MOMENTS]
        stored = await self.repo.subjects(p, [memory_id, *(r["id"] for r, _ in candidates)])
        graph = versions.GraphSubjects.of(stored.get(memory_id),
                                          {r["id"]: stored[r["id"]] for r, _ in candidates if r["id"] in stored})
        if not graph.differs(content, [r for r, _ in candidates]):
            return near
        found = await versions.subject_versions(content, candidates, self.vectors, graph)
        if found is None:  # the embedder is not answering: the text's list, judged by the graph's subjects
            judged = await self._judged(content, near.rows, near.keep, graph=graph, vectors=versions.UNANSWERED)
            return judged._replace(pool=near.pool)
        ranked, masked = found
        first = ranked[:versions.SUBJECT_VERSIONS]
        shown = {r["id"] for r, _ in first}
        rest = sorted(((r, c) for r, c in near.rows if r["id"] not in shown),
                      key=lambda rc: graph.same(rc[0]["id"]) is False)  # stable: the rest keep their order
        # The subject's own and one more, as for a named subject, also where the text's reading
        # listed fewer (2 for a note about the user): on the sets of notes about the user, earlier
        # version listed .821 / .944 with the text's 2 -> .957 / .980 with 4 (.881 / .960 with 2),
        # others per write .53 / .50 -> 1.46 / 1.54 (bench/versions_related.py --writer about).
        keep = versions.SUBJECT_VERSIONS + 1 if first else near.keep
        judged = await self._judged(content, first + rest, keep, known=masked, graph=graph)
        return judged._replace(pool=near.pool)

    async def _subject_first(self, content: str, pool: list[tuple[Any, float]],
                             likely: list[tuple[Any, float]]) -> Near | None:
        """For a memory that names its subject (`named_subject`): up to SUBJECT_VERSIONS of the
        subject's own memories, closest with the subject masked first, then the nearest of the
        rest, since a version may name the subject elsewhere ("Oskar Lund rotated off the billing
        API; Aurelio Conti took it" for "Ping Wiebke Janssen for anything billing API"). None when
        nothing in the pool is about the subject, or the embedder is not answering."""
        assert self.vectors is not None
        found = await versions.subject_versions(content, pool, self.vectors)
        if not found or not found[0]:
            return None
        ranked, masked = found
        first = ranked[:versions.SUBJECT_VERSIONS]
        shown = {r["id"] for r, _ in first}
        return await self._judged(content, first + [(r, c) for r, c in likely if r["id"] not in shown],
                                  versions.SUBJECT_VERSIONS + 1, known=masked)

    async def _judged(self, content: str, rows: list[tuple[Any, float]], keep: int,
                      known: dict[UUID, float] | None = None,
                      graph: versions.GraphSubjects = versions.NO_GRAPH,
                      vectors: TextVectors | None = None) -> Near:
        """`rows` with the earlier versions among the first `keep` judged now: a write runs
        `neighbours` beside its insert, so the masked texts are embedded while the insert's
        transaction waits on the database (a quarter of LoCoMo's writes embedded two long texts
        here after the insert, 20-50 ms of their time). `listed` judges again only when it
        shows other rows (the write's supersedes, or the same text in another scope). `vectors`:
        another embedder than the service's (`versions.UNANSWERED`, once it has failed)."""
        assert self.vectors is not None
        # The same text in another scope is no earlier version of this one (it would take the
        # flag, and cost an embedding), nor is what was said at a moment (a turn, a session's summary).
        first = [r for r, _ in rows if r["content"] != content and r["kind"] not in MOMENTS][:keep]
        flags = (await versions.earlier_versions(content, first, vectors or self.vectors, known=known, graph=graph)
                 if first else {})
        return Near(rows, keep, (tuple(r["id"] for r in first), flags), graph=graph)

    async def listed(self, content: str, near: Near, skip: set[UUID] | frozenset[UUID]) -> list[RelatedMemory]:
        """The entries `related` shows of `near`, those in `skip` left out."""
        rows = [(r, similarity) for r, similarity in near.rows if r["id"] not in skip][:near.keep]
        if not rows or self.vectors is None:  # without an embedder nothing is near
            return []
        chars = self.settings.snippet_chars
        known = near.earlier
        earlier: dict[UUID, bool | None]
        if not near.replaces:
            earlier = {r["id"]: False for r, _ in rows}
        elif known is not None and known[0] == tuple(r["id"] for r, _ in rows):
            earlier = known[1]
        else:
            earlier = await versions.earlier_versions(content, [r for r, _ in rows if r["kind"] not in MOMENTS],
                                                      self.vectors, graph=near.graph)
        return [RelatedMemory(id=r["id"], snippet=r["content"][:chars], kind=r["kind"], age=human_age(r["occurred_at"]),
                              similarity=round(similarity, 4), superseded_by=r["successor"],
                              earlier_version=earlier.get(r["id"]))
                for r, similarity in rows]

    async def related(self, p: Principal, memory_id: UUID, content: str, vector: list[float] | None, *,
                      skip: frozenset[UUID] | set[UUID] = frozenset(),
                      before: datetime | None = None, kind: str | None = None) -> list[RelatedMemory]:
        """Visible live memories close to `vector` (the memory `memory_id` was written with, saying
        `content`): likely earlier versions of the same fact or near-duplicates, closest first.
        Those in `skip` (already superseded by it) and those already superseded by another are
        left out. `before`: only memories stored before then (a decision's candidates)."""
        if vector is None or not self.applies(vector):
            return []
        near = await self.neighbours(p, vector, content, len(skip), exclude=memory_id, before=before, kind=kind,
                                     wide=True)
        return await self.listed(content, await self.by_graph(p, memory_id, content, near), skip)
