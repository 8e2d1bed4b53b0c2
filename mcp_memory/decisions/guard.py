"""Our own check on what a model may replace (issue 27 item 11).

A small local model marks true facts replaced by memories about something else: "Bianca's
birthday is on 5 January" by "Caleb's birthday is on 25 May" (another person), "Arjun is allergic
to penicillin" by "Arjun uses Neovim every day now" (another attribute). Protecting the store is
our job, not the model's, so before an UPDATE, DELETE or NONE is applied each target must pass:

- subject (decisions/subject_rules.py; the graph's stored mentions first where a writer or a
  model said whom a memory is about): by positive evidence (`same_subject`): both notes about the
  user, or one subject's name holding the other's ("Caleb" is "Caleb Okafor", "Katarina Mbeki"
  is not "Katarina Nascimento", "ETH Zurich" where two people studied is no subject), or the old
  memory's subject named in the new one ("Diego Yilmaz took over from Hana Dubois as Kwame
  Larsen's manager"); a note about the user is not about a person in their life, nor about a
  named person who "gave me a lift";
  a named person's brother or mentor is not that person; what two different names own ("X's
  manager", "Y's laptop") are two people's facts; a channel opening a note is a subject, a
  one-word label ("Calendar:") none, nor a name that is all a label is followed by ("Billing
  worker maintainer: Oskar Lund."), nor the word opening what a note tells of a name ("Office for
  the Atlas team: ..."), nor the object of the preposition a note opens on ("After Quebec City,
  Odalys Pellegrini ended up in Leipzig.": the lexicon's `prepositions`, as graph/names.py reads it);
  the same words opening on another name, with another value further on, are another person's
  fact ("Kasimir replaced the MacBook Pro 14 with ..." / "Priya replaced the MacBook Pro 14 with
  ..."); between memories about no one (neither the user nor a full name among their first
  words), the same words ending on the same value are the same fact of another thing ("The
  webhooks pipeline exposes a GraphQL endpoint" / "The scheduling pipeline exposes a GraphQL
  endpoint"), and so are the same words with another plain word before one both hold ("Storage
  for the carts service: ..." / "Storage for the wallets service: ...") or another thing named in
  a word or two ("in payouts worker" / "in team Foxglove", "team Skua -> #oncall" / "team Ibis ->
  #kestrel-ops"), and, in sentences of any shape, two things named in two words sharing one ("the
  reviews API" / "the billing API", "Audit worker" / "Audit pipeline"; decisions/wording.py), and
  a part of a thing the other note does not speak of ("The checkout worker's analytics replica"
  / "The checkout worker"), all
  read without a remark in parentheses closing a note ("(noted again)"); each a suggestion at
  most; a name ending on an acronym ("Webhooks API") names a thing, not someone;
- attribute: two of the lexicon's attributes keyed of the one subject (a writer's or a model's
  `key`) are never one fact, a suggestion at most (graph/subjects.py `other_attribute`), and
  one of them that holds one value at a time keyed in both, the new one true since later, is one
  attribute (`one_attribute`: "The user's tests use unittest." / "The tests are switching to
  pytest.", both `test framework`, masked only .44 alike), whose replace a second look confirms as
  one by closeness (a small model's keys say which attribute a memory touches, not that it
  states a newer value: "The Pixel died." keyed `phone`); else,
  with the subject's names (the graph's, where it has both about one subject) and the words for
  the user masked, the two texts say the same kind of thing (cosine of their embeddings at least
  the floor, `ATTRIBUTE_FLOOR` unless
  MCP_MEMORY_DECISIONS_GUARD_FLOOR says otherwise, and about as close as the closest of the
  subject's other candidates), or the new one names a value the old one holds beside one the old
  one does not say at all ("left Leipzig for Berlin" replaces "lives in Leipzig"; a note's label
  names no value); otherwise values of no kind in common (a name, a code, a number) are another
  attribute, a suggestion at most.

A target about another subject is refused outright. A target about the same subject whose
attribute differs, or one whose subject our check cannot confirm, is a low-confidence replace: it
is not applied but kept in the job's result as a suggestion (`suggested`), which the user sees in
`mcp-memory jobs list` and may apply by hand (`mcp-memory jobs accept`, `memory_accept_suggestion`).
When the embedder is not answering the attribute cannot be judged, and the replace is a
suggestion too: a decision only removes a fact from view when we agree with the model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol
from uuid import UUID

import numpy as np

from ..config import DecisionSettings
from ..graph.subjects import Subjects, one_attribute, other_attribute
from ..retrieval.focus import MASK
from ..retrieval.query import LABEL, NOT_NAMES
from ..retrieval.values import names_its_value, values_of_another_kind
from .pace import served_here
from .subject_rules import UNSURE, masked, owned_by_someone, subject_names, why_not_same
from .wording import (
    another_thing_of_a_kind,
    ends_on_its_value,
    names_another_part,
    names_another_thing,
    opens_on_another_name,
    qualifies_another_thing,
    without_aside,
)

# Masked cosine (MiniLM) at or above which a memory about the same subject may say the same kind
# of thing as the new one (with the closest of them). Every candidate `related` listed on the
# knowledge-update sets judged as if a model replaced it: of those no earlier version, accepted
# circle 4.4%, crm 11.0%, life 5.4%, dataset 14.4%, workbench 24.2%, assistant 31.3%, ops 22.5%;
# of true earlier versions, 74%, 68%, 63%, 69%, 64%, 74%, 50%. At 0.35: 0.8% .. 16% of the
# others, 32% .. 59% of the versions.
# The floor unless MCP_MEMORY_DECISIONS_GUARD_FLOOR says otherwise (`floor_for`).
ATTRIBUTE_FLOOR = 0.25
# The floor for a model served on this machine. Small local models replace whatever they are
# shown (Qwen2.5-Coder-1.5B answered UPDATE to every list). With the model's second look
# (second_look.py, on for such a model), 0.50 is the lowest floor in steps of 0.05 at which a model
# that replaces everything gets ≤ 1% of its decisions wrong on every one of our seven dev sets
# (ops 0.9%, crm 0.6%, workbench 0.9%, the rest ≤ 0.3%), keeping 84-97% of the right updates
# applied at 0.45, where ops is at 1.8% and crm at 0.8%; the rest wait as suggestions
# (docs/benchmarks.md, "Decisions guard: one name, and the floor with a second look").
LOCAL_MODEL_FLOOR = 0.50
# A target this much less similar (masked) than the closest of its subject's candidates is not the
# version the new memory replaces.
CLOSEST_MARGIN = 0.05
def floor_for(settings: DecisionSettings) -> float:
    """The attribute floor the worker judges with: the setting, or by where the model runs."""
    if settings.decisions_guard_floor is not None:
        return settings.decisions_guard_floor
    return LOCAL_MODEL_FLOOR if served_here(settings) else ATTRIBUTE_FLOOR


class Embeds(Protocol):
    async def documents_or_none(self, texts: Sequence[str], batch: int = 32) -> list[list[float]] | None: ...


# Why a memory is taken for the same fact of something else (decisions/wording.py).
OTHER_THING = "it says what the new memory says in the same words, about something else by our check"
# Why a memory about the same thing is taken for another attribute of it (decisions/wording.py).
OTHER_VALUES = "its values are of another kind than the new memory's (a name, a code, a number) by our check"
# Why a memory about the same thing is taken for another attribute of it (graph/subjects.py).
OTHER_KEY = "it states another attribute of the same subject"
@dataclass(frozen=True)
class Judged:
    """How one older memory stands to a new one, by our own check."""

    other_subject: str | None  # why it is not the same subject's version
    maybe: bool = False  # that reason is our check's doubt, not a certainty: the user decides
    similarity: float | None = None  # masked cosine (None: another subject, or the embedder is down)
    names_value: bool = False  # the new memory names its value beside a new one ("left X for Y")
    earlier: bool | None = False  # an earlier version of the new memory (None: could not be judged)


async def judge(new: str, olds: Sequence[str], vectors: Embeds | None,
                floor: float = ATTRIBUTE_FLOOR, margin: float = CLOSEST_MARGIN,
                stored_new: Subjects | None = None, stored_olds: Sequence[Subjects | None] | None = None
                ) -> list[Judged]:
    """Each of `olds` judged as an earlier version of `new` or not: what the guard lets a
    decision replace. (`related`'s `earlier_version` still comes from retrieval/versions.py:
    listed from the 20 nearest by this judgement, flag precision fell on ops and dataset.) An
    earlier version is about the same subject (`same_subject`) and either names
    a value the new memory names beside a new one ("left Plumtree Media and signed with Saltmarsh
    Bank" / "works at Plumtree Media"), or says the same kind of thing: with the subject's names
    and the words for the user masked on both sides, a cosine of at least `floor` and within
    `margin` of the closest of the subject's memories judged with it (the subject's other
    facts pass a floor too; the version is the closest). `stored_new`, `stored_olds`: whom each is
    about by the graph (`subject_rules.why_not_same`), where it has read them."""
    stored = list(stored_olds) if stored_olds is not None else [None] * len(olds)
    subject = [why_not_same(new, old, stored_new, theirs) for old, theirs in zip(olds, stored, strict=True)]
    same = [k for k, why in enumerate(subject) if why is None]
    out = [Judged(other_subject=why, maybe=why == UNSURE) for why in subject]
    if not same:
        return out
    shared = {k: subject_names(new, olds[k], stored_new, stored[k]) for k in same}
    pairs = {k: (masked(new, shared[k]), masked(olds[k], shared[k])) for k in same}
    embedded = await vectors.documents_or_none([t for k in same for t in pairs[k]]) if vectors is not None else None
    cosines = ({k: float(np.dot(embedded[2 * i], embedded[2 * i + 1])) for i, k in enumerate(same)}
               if embedded is not None else {})
    best = max(cosines.values(), default=0.0)
    new_owned = owned_by_someone(new)
    bare = without_aside(new)
    for k in same:
        if why := other_attribute(stored_new, stored[k]):
            out[k] = Judged(other_subject=f"{OTHER_KEY}: {why}", maybe=True)
            continue
        unnamed = not new_owned and not owned_by_someone(olds[k])
        ignore = frozenset(w for name in shared[k] for w in name) | {MASK} | NOT_NAMES
        # A note's label names no value: "1:1 notes:" in both once made any two of a colleague's
        # notes share the value "1:1" (crm 23.3 -> 22.9% wrong under the adversary, no other set
        # changed; a dash closing it too, "Update -", changes no verdict of the replay).
        replaces = names_its_value(LABEL.sub("", pairs[k][0], count=1), LABEL.sub("", pairs[k][1], count=1), ignore)
        # The same words about something else (decisions/wording.py: each rule with its figures;
        # ending on the same value, unless the new one names the old value beside a new one, "now
        # in eu-west-1 instead of ca-central-1"). About no one (`_owned_by_someone`), a memory's
        # subject is a run of common words the names above cannot tell apart; about someone, the
        # words around a name are values ("X took over from Y and now leads the Unity team" / "Y
        # leads the Unity team", "added to storage on-call" / "added to streaming on-call", "I
        # drink tea every morning" / "I drink coffee every morning").
        bare_old = without_aside(olds[k])
        if opens_on_another_name(bare, bare_old) or not replaces and unnamed and ends_on_its_value(bare, bare_old) \
                or unnamed and (qualifies_another_thing(bare, bare_old) or names_another_thing(bare, bare_old)
                                or another_thing_of_a_kind(bare, bare_old) or names_another_part(bare, bare_old)):
            out[k] = Judged(other_subject=OTHER_THING, maybe=True)
            continue
        keyed = one_attribute(stored_new, stored[k])
        if not replaces and not keyed and values_of_another_kind(*pairs[k]):
            out[k] = Judged(other_subject=OTHER_VALUES, maybe=True)
            continue
        cosine = cosines.get(k)
        earlier: bool | None = (True if replaces or keyed else None if cosine is None
                                else cosine >= floor and cosine >= best - margin)
        out[k] = Judged(other_subject=None, similarity=cosine, names_value=replaces, earlier=earlier)
    return out


@dataclass
class Verdict:
    """Which targets a decision may act on, and why the others may not."""

    allowed: list[UUID] = field(default_factory=list)
    # allowed by the masked cosine or the keys alone, not by a value named (second_look.py)
    by_closeness: set[UUID] = field(default_factory=set)
    refused: dict[UUID, str] = field(default_factory=dict)  # another subject: never applied
    suggested: dict[UUID, str] = field(default_factory=dict)  # low confidence: the user decides


async def check(new: str, targets: Sequence[tuple[UUID, str]], vectors: Embeds | None,
                floor: float = ATTRIBUTE_FLOOR, among: Sequence[tuple[UUID, str]] = (),
                stored: Mapping[UUID, Subjects] | None = None, new_id: UUID | None = None) -> Verdict:
    """Each target (id, its text) that the new memory's decision replaces, judged (`judge`) among
    every candidate the model was shown (`among`, targets included): only an earlier version by
    our check is applied (a small model lists all of a person's memories; only the one holding
    the same attribute is a version). `stored`: whom the new memory (`new_id`) and each candidate
    are about by the graph (repository `subjects`)."""
    verdict = Verdict()
    chosen = {m for m, _ in targets}
    judged = list(targets) + [(m, t) for m, t in among if m not in chosen]
    stored = stored or {}
    found = await judge(new, [t for _, t in judged], vectors, floor, stored_new=stored.get(new_id) if new_id else None,
                        stored_olds=[stored.get(m) for m, _ in judged])
    for (memory_id, _), j in zip(targets, found[:len(targets)], strict=True):
        if j.other_subject and j.maybe:
            verdict.suggested[memory_id] = f"guard: {j.other_subject}"
        elif j.other_subject:
            verdict.refused[memory_id] = f"guard: {j.other_subject}"
        elif j.earlier:
            verdict.allowed.append(memory_id)
            if not j.names_value:
                verdict.by_closeness.add(memory_id)
        elif j.similarity is None:
            verdict.suggested[memory_id] = "guard: the embedder is not answering, so the attribute was not checked"
        elif j.similarity < floor:
            verdict.suggested[memory_id] = (f"guard: same subject, but another attribute by our check "
                                            f"(masked similarity {j.similarity:.2f} < {floor:.2f})")
        else:
            best = max((x.similarity or 0.0) for x in found)
            verdict.suggested[memory_id] = (f"guard: another memory of the same subject is closer to it by our "
                                            f"check (masked similarity {j.similarity:.2f} < {best:.2f})")
    return verdict

