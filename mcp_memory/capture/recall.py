"""What the hooks give the model: at session start the pinned core and the project's few most
recent memories; with each prompt the memories relevant to it, above a relevance floor and under
a character budget (nothing when nothing is relevant). Always delimited as data (context.py).

Capture stores one thing several times: the turn as an episode, the sentence that set off a
trigger as a fact linked to it, and the assistant's reply, which usually says it back ("Got it:
black instead of autopep8"). Recall counts such a group once, shown by its distilled member; the
turns a session's summary among the hits sums up are that summary's group, shown by it. It
leaves out what the session's start block already gave it (a ledger per session under the data
dir says what that was). Everything shown passes through redaction once more, in case a secret
was stored by another way than capture."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar
from uuid import UUID

from .. import context
from ..config import Settings
from ..embeddings import conflict_similarity
from ..hookprotocol import MIN_PROMPT_WORDS
from ..models import CoreMemories, Memory, MemoryFilter, Principal, SearchHit
from ..service import MemoryService, asks
from .localfiles import write_private
from .redact import redact

log = logging.getLogger(__name__)

# Kinds worth bringing back at session start; episodes are the raw conversation.
DISTILLED = ["fact", "preference", "decision", "procedure", "identity", "note"]
SEARCH_RESERVE_S = 0.25  # kept for the searches when the prompt's vector is late
# Candidates searched per slot: a group (fact, episode, reply) can take three of them.
CANDIDATES_PER_SLOT = 4
# A group that shares words with the prompt may be this much less close in meaning and still
# count: two signals agreeing. A paraphrase ("Which Python formatter do I use?") sits at 0.2-0.3
# cosine from what it asks about, under the floor for meaning alone.
WORDS_MARGIN = 0.10
# A group much farther from the prompt than its closest relevant memory is about something else
# that happens to clear the floor (bench/recall_quality.py: 0.15 lost an answer whose question was
# closer than the answer; 0.25 let in more irrelevant lines).
RELATIVE_GAP = 0.20
STEM_CHARS = 6
STEM_SCAN = 2000   # characters of a memory looked at for shared words (a turn can be 8,000)
# A word of any language: letters, then letters or digits (lower case by then).
_WORD = re.compile(r"[^\W\d_][^\W_]+")
# Two memories whose words (numbers aside) overlap this much say the same thing: a note repeated
# with another ticket number or owner, a fact stated again in another session.
SAME_WORDS = 0.8
LEDGER_DIR = "recall-sessions"
LEDGER_DAYS = 7   # ledgers of sessions untouched this long are removed

M = TypeVar("M", Memory, SearchHit)


# --- groups --------------------------------------------------------------------------------------

def group_of(m: Memory) -> str:
    """What a memory says, as an identity: the turn of the session it was captured from. A
    trigger fact, the episode of the turn it was found in and the assistant's reply to that turn
    share it; anything else (written by an agent, imported) is its own group."""
    meta = m.metadata or {}
    session, turn = meta.get("session_id"), meta.get("turn")
    if meta.get("captured_from") and isinstance(session, str) and isinstance(turn, int):
        if m.kind == "episode" and meta.get("role") == "assistant" and turn > 0:
            turn -= 1   # turns alternate speakers: the one before a reply is what it answers
        return f"turn:{session}:{turn}"
    episode = meta.get("episode_id")
    if m.kind != "episode" and isinstance(episode, str):
        return f"memory:{episode}"
    return f"memory:{m.id}"


def _representative(members: list[SearchHit], memories: dict[str, Memory]) -> SearchHit:
    """The distilled member (a fact says the point in a sentence), else the best ranked turn that
    does not ask (a question's reply holds its answer: "Can you find out why?" / "The task is
    enqueued before the transaction commits"), else the best ranked one. Members are in rank
    order."""
    def says(h: SearchHit) -> int:
        m = memories[str(h.id)]
        return 0 if m.kind != "episode" else 2 if asks(m.content) else 1

    return min(members, key=says)


# --- the ledger: what session start gave a session ---------------------------------------------

class Ledger:
    """Ids and groups a session's start block showed, in a user-only JSON file under the data dir
    (written aside, then moved into place). Losing it costs a repeated memory, never recall:
    every failure here is logged and ignored."""

    def __init__(self, settings: Settings, p: Principal, session_id: str) -> None:
        who = "\x1f".join([p.user_id, p.agent_id or "", p.project_id or "", session_id])
        self.folder = Path(settings.data_dir) / LEDGER_DIR
        self.path = self.folder / f"{hashlib.sha256(who.encode()).hexdigest()[:32]}.json"

    def read(self) -> set[str]:
        """Ids and group keys shown; empty when the session start recorded nothing."""
        try:
            entry = json.loads(self.path.read_bytes())
            return {str(v) for v in [*entry["ids"], *entry["groups"]]}
        except FileNotFoundError:
            return set()
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.debug("recall ledger unreadable (%s): %s", self.path, exc)
            return set()

    def write(self, memories: Iterable[Memory]) -> None:
        shown = list(memories)
        data = json.dumps({"ids": [str(m.id) for m in shown], "groups": sorted({group_of(m) for m in shown})})
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._prune()
            write_private(self.path, data)
        except OSError as exc:
            log.debug("recall ledger not written (%s): %s", self.path, exc)

    def _prune(self) -> None:
        cutoff = time.time() - LEDGER_DAYS * 86400
        for old in self.folder.iterdir():
            with contextlib.suppress(OSError):
                if old.stat().st_mtime < cutoff:
                    old.unlink()


# --- output --------------------------------------------------------------------------------------

def _cleaned(memories: Sequence[M]) -> list[M]:
    """Second line of defence: capture redacts before storing, but an agent's memory_write, an
    import or an older version of capture may have stored a secret. One warning line names the
    memories that held one, so they can be forgotten or edited."""
    out: list[M] = []
    held: list[str] = []
    for m in memories:
        title = redact(m.title)[0] if m.title else m.title
        field = "content" if isinstance(m, Memory) else "snippet"
        text, kinds = redact(getattr(m, field))
        if kinds or title != m.title:
            held.append(str(m.id))
        out.append(m.model_copy(update={"title": title, field: text}))
    if held:
        log.warning("%d memories shown redacted: they hold what looks like a secret (forget or edit them: %s)",
                    len(held), ", ".join(held))
    return out


def _fit(memories: Sequence[M], budget: int) -> list[M]:
    kept, used = [], 0
    for m in memories:
        cost = len(context.render_memory(m)) + 1
        if used + cost > budget:
            break
        kept.append(m)
        used += cost
    return kept


# --- session start -------------------------------------------------------------------------------

async def _start_memories(service: MemoryService, settings: Settings, p: Principal,
                          model: str | None) -> tuple[CoreMemories, list[Memory]]:
    """The pinned core and the recent memories session start shows (before redaction)."""
    core = await service.overview.core(p, model)
    recent: list[Memory] = []
    if settings.session_start_recent:
        f = MemoryFilter(kinds=DISTILLED, scope="project" if p.project_id else None)  # type: ignore[arg-type]
        page = await service.list(p, f, order="recent", limit=settings.session_start_recent + len(core.memories),
                                  structured=False)
        pinned = {m.id for m in core.memories}
        recent = _fit([m for m in page.memories if m.id not in pinned][: settings.session_start_recent],
                      settings.recall_budget_chars)
    return core, recent


async def session_context(service: MemoryService, settings: Settings, p: Principal, model: str | None = None,
                          session_id: str | None = None) -> str:
    """`session_id`: the ledger of that session starts over with what this block shows (a new
    session, or one whose context was compacted)."""
    core, recent = await _start_memories(service, settings, p, model)
    if session_id:
        Ledger(settings, p, session_id).write([*core.memories, *recent])
    shown = _cleaned([*core.memories, *recent])
    core, recent = core.model_copy(update={"memories": shown[:len(core.memories)]}), shown[len(core.memories):]
    parts = []
    if core.memories:
        parts.append(context.render_core(core))
    if recent:
        where = f"project {p.project_id}" if p.project_id else "you"
        parts.append(context.render(recent, f"Recent memories for {where} (newest first)."))
    return "\n\n".join(parts)


# --- prompt recall -------------------------------------------------------------------------------

def recall_floor(settings: Settings, model: str | None) -> float:
    if settings.recall_min_similarity is not None:
        return settings.recall_min_similarity
    return max(0.0, conflict_similarity(model) - 0.3)


def worth_recalling(prompt: str) -> bool:
    """A slash command or a one-word reply ("yes", "continue") asks nothing to look up."""
    prompt = prompt.strip()
    return not prompt.startswith("/") and len(prompt.split()) >= MIN_PROMPT_WORDS


def _stems(text: str, stop: frozenset[str]) -> set[str]:
    """Content words cut to their first six letters: a crude stem that still joins what the
    full-text stemmer keeps apart ("formatter" -> formatt, "formatting" -> format). `stop`: the
    words of a prompt that say nothing about its subject (the lexicon's `prompt_stop_words`)."""
    return {w[:STEM_CHARS] for w in _WORD.findall(text.lower()) if len(w) >= 4 and w not in stop}


def _groups(prompt: str, hits: list[SearchHit], memories: dict[str, Memory],
            closeness: tuple[dict[str, float], float] | None, seen: set[str],
            stop: frozenset[str], summarised: Mapping[UUID, UUID] | None = None) -> list[list[SearchHit]]:
    """The relevant groups of the hits, in the order of each group's best ranked member.

    The fused score ranks; it says nothing absolute. A group is relevant when a member is close
    in meaning to the prompt (cosine above the floor), or a little less close while the group
    also shares words with the prompt (two signals agreeing); without the prompt's vector, when
    a member shares words with it. Left out besides: a group much farther from the prompt than
    its closest relevant memory, and one the session was already shown (any member or the group).
    `closeness`: each hit's cosine to the prompt and the floor for meaning alone; `summarised`:
    the turns a summary among the hits sums up, to it (their group is the summary's)."""
    groups: dict[str, list[SearchHit]] = {}
    for h in hits:
        m = memories.get(str(h.id))
        if m is not None:
            summary = (summarised or {}).get(h.id)
            groups.setdefault(group_of(memories.get(str(summary), m) if summary else m), []).append(h)
    words = _stems(prompt, stop)

    def full_text(members: list[SearchHit]) -> bool:
        return any(h.explain and h.explain.get("fulltext") is not None for h in members)

    def shares_words(members: list[SearchHit]) -> bool:
        return full_text(members) or any(
            words & _stems(f"{memories[str(h.id)].title or ''} {memories[str(h.id)].content[:STEM_SCAN]}", stop)
            for h in members)

    best: dict[str, float] = {}
    for key, members in groups.items():
        if closeness is None:
            if full_text(members):
                best[key] = 1.0
            continue
        similarity, floor = closeness
        top = max((similarity[str(h.id)] for h in members if str(h.id) in similarity), default=None)
        if top is not None and (top >= floor or top >= floor - WORDS_MARGIN and shares_words(members)):
            best[key] = top
    bar = max(best.values(), default=0.0) - RELATIVE_GAP
    return [members for key, members in groups.items() if key in best and best[key] >= bar
            and key not in seen and not any(str(h.id) in seen for h in members)]


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(re.sub(r"\d+", " ", text.lower())) if len(w) >= 3)


def _distinct(groups: list[list[SearchHit]], memories: dict[str, Memory], limit: int) -> list[SearchHit]:
    """Each group's representative, leaving out one whose words are (nearly) those of a better
    ranked one, up to `limit`."""
    kept: list[tuple[SearchHit, frozenset[str]]] = []
    for members in groups:
        rep = _representative(members, memories)
        words = _words(memories[str(rep.id)].content[:STEM_SCAN])
        if not any(len(words & other) >= SAME_WORDS * len(words | other) for _, other in kept):
            kept.append((rep, words))
            if len(kept) == limit:
                break
    return [rep for rep, _ in kept]


async def prompt_context(service: MemoryService, settings: Settings, p: Principal, prompt: str,
                         session_id: str | None = None, deadline: float | None = None) -> str:
    """`deadline` (time.monotonic) bounds the wait for the prompt's vector."""
    if settings.recall_limit == 0 or settings.recall_budget_chars == 0 or not worth_recalling(prompt):
        return ""
    prompt = prompt.strip()[:1000]
    # memory_search's own search (its stages: time words, versions, the present-tense focus, the
    # graph's keyed facts), never reranked. A cold hook process still loading the model waits for
    # the prompt's vector only while enough of the budget is left for the search: then full text
    # alone recalls.
    wait = None if deadline is None else deadline - time.monotonic() - SEARCH_RESERVE_S
    found = await service.recall_search(p, prompt, limit=settings.recall_limit * CANDIDATES_PER_SLOT,
                                        vector_wait=wait)
    vectors = service.vectors
    if found.cosine is None and vectors is not None:
        log.info("recall without the vector list: the embedder was not ready in time")
    # This session's own turns are already in the model's context.
    own = f"session:{session_id}" if session_id else None
    hits = [h for h in found.hits if own not in h.tags]
    if not hits:
        return ""
    memories = {str(i): m for i, m in found.memories.items()}
    similarity = {str(i): s for i, s in (found.cosine or {}).items()}
    closeness = (similarity, recall_floor(settings, vectors.model)) if found.cosine is not None and vectors else None
    seen = Ledger(settings, p, session_id).read() if session_id else set()
    stop = service.lexicon.prompt_stop_words
    shown = _distinct(_groups(prompt, hits, memories, closeness, seen, stop, found.summarised), memories,
                      settings.recall_limit)
    kept = _fit(_cleaned(shown), settings.recall_budget_chars)
    if not kept:
        return ""
    return context.render(kept, "Memories that may be relevant to this prompt (auto-recall).")
