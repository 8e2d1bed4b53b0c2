"""How the search statement tells that a memory names the question's subject: its text names
them as a whole word (or, for someone named in full, by the first name alone), or the graph's stored
mentions say it names them; and, for the factor's second look, that it speaks of them rather than
to them. SQL fragments for retrieval/statement.py."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from uuid import UUID

from ..repository import Sql


def whole_word(name: str) -> str:
    """A PostgreSQL regular expression matching `name` as a whole word (\\m, \\M)."""
    return r"\m" + re.escape(name) + r"\M"


# The subject factor is first given for naming someone at all, then taken back from those of the
# best this many places past the limit that only address them.
ADDRESSED_WINDOW = 10


def speaks_of(name: str, greetings: Sequence[str] = ()) -> str:
    """A PostgreSQL regular expression matching `name` as a whole word where a text speaks of
    them rather than to them. A turn that addresses someone ("Thanks, Mel! I painted this", "How
    are you, Mel?", "Hey Mel, ...") is its speaker's, not about them (LoCoMo R@10 .756 -> .760,
    nDCG@10 .600 -> .608). Addressed: after a greeting, before "!" or "?", or set off by commas
    ("Wow, Mel, ..."); "Anna, Mel and I" and "I met Mel, who" still speak of them. Its
    lookbehinds cost ~4 ms per 1,000 texts, so only the best candidates are tested. `greetings`:
    the lexicon's words that greet or thank the one named next ("Hey Mel,", "Thanks Mel!")."""
    n = whole_word(name)
    greeting = "|".join(f"[{w[0].upper()}{w[0]}]{re.escape(w[1:])}" for w in greetings)
    after_greeting = rf"(?<!\m(?:{greeting})\s)" if greeting else ""
    return rf"(?<!,\s){after_greeting}{n}(?!\s*[!?])|(?<=,\s){n}(?!\s*[,.!?])"


def _first_name_alone(name: str) -> str:
    """A PostgreSQL regular expression matching a first name with no other name next to it: "From
    standup: Benedikt picked up Osprey." but not "Benedikt Nascimento" nor "Zofia Benedikt",
    someone else."""
    return r"(?<![[:upper:]][[:alnum:]'-]*\s)" + whole_word(name) + r"(?!\s+[[:upper:]])"


def naming(q: Sql, text: str, subject: Sequence[str], full_names: Sequence[tuple[str, ...]],
            pattern: Callable[[str], str], linked: Linked | None = None) -> str:
    """A condition: `text` names everyone in `subject` (each matched by `pattern`). A person the
    question names in full ("Benedikt Pereira") may be called by the first name alone: a note
    among colleagues rarely repeats the surname ("From standup: Benedikt picked up Osprey."), and
    it is one of their memories for the present-tense focus too (retrieval/focus.py).
    `linked`: where a name is a known entity, a memory the graph says names it does too, in any of
    its words ("Odalys", a merged alias, a writer's `about` that its text leaves out)."""
    firsts = {rest: run[0] for run in full_names for rest in run[1:]}
    clauses = []
    for name in subject:
        clause = f"{text} ~ {q.arg(pattern(name))}"
        if name in firsts:
            clause = f"({clause} OR {text} ~ {q.arg(_first_name_alone(firsts[name]))})"
        if linked is not None and linked.entities.get(name):
            clause = f"({clause} OR {linked.condition(q, name)})"
        clauses.append(clause)
    return " AND ".join(clauses)


@dataclass(frozen=True)
class Linked:
    """The graph's reading of whom a question names: each of its subject's words (`ParsedQuery.subject`)
    -> the known entities it is, and whether a memory must be about them (`role` 'about': the
    spoken-of test) or only name them. A memory's stored mentions say so: written once, when the
    memory was, from the writer's `about`, the rules and the model's extraction."""

    user_id: str
    entities: Mapping[str, Sequence[UUID]]
    role: str | None = None

    def about(self) -> Linked:
        return replace(self, role="about")

    def about_another(self, q: Sql, moments: Sequence[str], *, user_asked: bool) -> str:
        """A condition: the memory (m) is not a moment and the graph files it about an entity none
        of the question's names is ("Dana Okafor is based in the Lagos office." for "Which office
        is Kenji in?"), nor the user where the question speaks of them too ("What CI do we use?":
        "We use Postgres 14 ..." is the user's). A conversation's turn is about its speaker and
        answers questions about the other as often: moments are left to the conversation's own
        factor."""
        ids = sorted({i for found in self.entities.values() for i in found})
        user = (" AND NOT EXISTS (SELECT 1 FROM entities e WHERE e.user_id = me.user_id AND e.id = me.entity_id "
                "AND e.kind = 'user')" if user_asked else "")
        return (f"m.kind <> ALL({q.arg(list(moments))}::text[]) AND EXISTS (SELECT 1 FROM memory_entities me "
                f"WHERE me.user_id = {q.arg(self.user_id)} AND me.memory_id = m.id AND me.role = 'about' "
                f"AND me.entity_id <> ALL({q.arg(ids)}::uuid[]){user})")

    def condition(self, q: Sql, name: str) -> str:
        role = f" AND me.role = {q.arg(self.role)}" if self.role else ""
        return (f"EXISTS (SELECT 1 FROM memory_entities me WHERE me.user_id = {q.arg(self.user_id)} "
                f"AND me.memory_id = m.id AND me.entity_id = ANY({q.arg(list(self.entities[name]))}::uuid[]){role})")


def first_name_of(q: Sql, full_names: Sequence[tuple[str, ...]], config: str) -> tuple[str, str]:
    """For one of the question's words (`lexeme`), if it is the surname of someone the question
    names in full: their first name's full-text query and the pattern of it alone
    (`_first_name_alone`); NULLs otherwise."""
    if not full_names:
        return "NULL::tsquery", "NULL::text"
    lasts = q.arg([run[-1] for run in full_names])
    firsts = q.arg([run[0] for run in full_names])
    alone = q.arg([_first_name_alone(run[0]) for run in full_names])
    pick = (f"FROM unnest({lasts}::text[], {firsts}::text[], {alone}::text[]) a(last, first, alone) "
            f"WHERE plainto_tsquery({config}, a.last) = quote_literal(lexeme)::tsquery LIMIT 1")
    return f"(SELECT plainto_tsquery({config}, a.first) {pick})", f"(SELECT a.alone {pick})"
