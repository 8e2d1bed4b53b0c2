"""A question about the present: how each of its subject's memories relates to it and to the
others (`similarities`); which of them answer it, the newest of those first, is answering.py's.

Every memory about Odalys shares her name, and in a sentence embedding the name weighs more than
what is said of her: "What town is Odalys in now?" comes out closer to "Odalys owns a Nissan Leaf"
than to "Odalys left Leipzig behind for Berlin". With the names taken out of all sides what is
left is the predicate. The subject's memory closest to the question starts a chain; the others
join it by single linkage (each the one closest to any already in), and the chain ends where the
level at which they join the closest's cluster drops most: versions of one fact resemble each
other, however each is phrased, more than they resemble the question or the subject's other facts.
Those go first, newest first; other facts about the subject (and stable ones, which no newer
version contradicts) and everything else follow in their order.

A question that names nobody but speaks of the user an agent works for ("What car do I drive
now?") is about every result not about someone in the user's life (by its words, or by whom the
graph files it about: whose.py `about_their_people`), the words for the user masked
(graph/about_user.py); one about someone in the user's life ("Where does my sister
live now?") is about the results that name them so. Any other question that names nobody
("What is the coupons pipeline persisting to these days?") is about the longest run of its words
that at least two of the results share ("coupons pipeline"), masked the same way.

A memory naming a value one in the chain names ("9:45", "Brightwater Health") joins it: an update
often names the value it replaces.

The chain takes the subject's memories for versions of one fact, and with three of them the
closest and the next always answer: a new user's "The user lives in Bristol.", "... works at
Brightwater Analytics." and "The user's editor is Zed." answered "Where does the user live now?"
with the newer employer. Where every one of the subject's memories states an attribute in the
lexicon's words (its cues and phrases, graph/keys.py) and no two the same one, none is a version of
another: those stating another attribute than the question asks are no answer, and the rest chain
as before. A memory that states none by such words may be a version of any of them ("trying Helix
for good now"), so one such leaves the chain to decide, as does a question asking none. One that
states the asked attribute in those words answers wherever the chain ends ("Signe Dahl took over
as someone's line manager."): a version worded unlike the others links to them no closer than the
subject's other facts, and the cut left it out.

A question with no time word at all asks the present value too when it asks an attribute that
holds one value at a time and not for good ("Which team is Ottilie on?"; not "Where did she grow
up?", `Attribute.settled`), where two of the subject's memories may be versions of it
(`versions_said`); where it speaks of the user alone (`asks_of_user_alone`), where two of them state the
asked attribute in the lexicon's words (`versions_said`'s `stated_only`). There the chain's single
cut is trusted less: memories as alike as the versions rule holds for one fact (alike.py), by
their vectors with the subject masked, answer with any answer among them, since the forced cut of
three ("The search pipeline's rate limit is 50 / 200 / 500 per second") dropped the newest. (For a
present-tense question that cost ops and life newest@1; by their stored vectors, a subject's short
notes were alike by the name they share.) The asked attribute's words name no subject ("Postgres"
in "Which Postgres version ...", "rate limit"), and a memory stating the attribute of someone else
by a possessive ("Priya's manager is Aisha" for "Who manages Aisha?") or about someone in the
subject's life ("Aisha's sister has a manager ...") is none of the subject's (whose.py).

Measured on the knowledge-update dev sets: newest-first life .59 -> .86, ops .62 -> .87,
assistant .42 -> .79; newest@1 life .25 -> .81, ops .28 -> .84, assistant .28 -> .56, workbench
.30 -> .40; the generator's own set and LoCoMo unchanged. The masked texts are embedded once and
kept in the embedding cache."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import Protocol
from uuid import UUID

import asyncpg
import numpy as np

from ..graph import phrasebook
from ..graph.about_user import asks_of_user_alone, without_user
from ..graph.keys import cued_in
from ..graph.name_forms import Name
from ..graph.questions import asked_kind, asked_of_any
from ..lexicon import Answer, Lexicon
from ..models import MOMENTS
from .alike import groups
from .answering import Closeness
from .query import LABEL, NOT_NAMES, ParsedQuery
from .values import is_number, names_a_channel, value_runs, values_of, words_of
from .whose import MASK, names_its_subject, question_mask, subject_positions, without_names


class TextVectors(Protocol):
    async def query(self, text: str) -> list[float] | None: ...

    async def documents_or_none(self, texts: Sequence[str], batch: int = 32) -> list[list[float]] | None: ...


def applies(parsed: ParsedQuery) -> bool:
    """A question about now, and no period ("what did Mel paint in her latest project in July
    2023" is about July 2023, not about now); or one with no time words at all that asks only
    attributes holding one value at a time and not for good (`changing`): "Which team is Ottilie
    on?" asks where she is now as surely as "Which team is Ottilie on now?"."""
    if parsed.period is not None:
        return False
    if parsed.tense == "present":
        return True
    asked = parsed.asked or parsed.text
    if parsed.phrases or parsed.lexicon.past_auxiliaries.intersection(parsed.lexicon.words(asked)):
        return False  # "Where did Odalys live?" may ask any of her cities
    # "Who is my manager?" too: of the user, `similarities` asks more of the memories (`versions_said`).
    return parsed.keyed_now or changing(asked, parsed.lexicon)


def changing(question: str, lexicon: Lexicon) -> bool:
    """Whether `question` asks attributes, each holding one value at a time (a newer replaces the
    older) that is not held for good (`Attribute.settled`: "Where did Greta grow up?", "When is
    Greta's birthday?" ask the one value, and a memory of hers that is newer is no version of it)."""
    asked = asked_of_any(question, lexicon)
    attributes = phrasebook.by_name(lexicon)
    return bool(asked) and all(attributes[a].single and not attributes[a].settled for a in asked)


async def similarities(rows: Sequence[asyncpg.Record], parsed: ParsedQuery,
                       vectors: TextVectors, conflict: float, *, sequence: bool = False) -> dict[UUID, Closeness]:
    """Each subject memory in the window against the question and chained to the others, the
    subject masked everywhere; empty when fewer than two are there or the embedder is not
    answering. `conflict`: the cosine at which vectors say one fact (versions.py). `sequence`: the
    question itself says the attribute had values in turn ("before VS Code", then.py), so of the
    user, too, the memories need not state it in the lexicon's words to be compared."""
    positions, unnamed = subject_positions(rows, parsed)
    if len(positions) < 2:
        return {}
    # The time words stay: among one subject's memories they are no decoys, and a statement of a
    # changed present says so ("now works for", "these days", "latest car"): newest first life
    # .71 -> .75, ops .66 -> .68 against the question without them.
    masked = _asked_without(parsed, unnamed)
    texts = [compared(rows[i]["content"], unnamed, parsed.lexicon) for i in positions]
    # The words decide before anything is embedded: a masked question is a text no search has
    # asked, so its vector is a model run of its own (bench/stdio_latency.py's new questions).
    # Of the user, two must state the attribute, unless the user's keyed facts say it has values; a
    # question naming what it asks of ("What version of Next.js are we on?") is of that.
    stated_only = (not sequence and not parsed.keyed_now and asks_of_user_alone(parsed.text, parsed.lexicon)
                   and not names_its_subject(parsed))
    asked = words_of(parsed.asked or parsed.text)
    ignore = asked | NOT_NAMES | {MASK}
    attributes = asked_of_any(masked, parsed.lexicon)
    stated = [stated_in(text, parsed.lexicon) for text in texts]
    if parsed.tense != "present" and not versions_said(masked, texts, parsed.lexicon, stated_only=stated_only):
        # No two may be versions of it; where one alone states it and the rest other attributes, it
        # answers and they do not ("Lena moved to Graz." came first for "Where does Lena work?").
        sole = sole_statement(attributes, stated)
        return {} if sole is None else stated_alone([rows[i]["id"] for i in positions], texts, stated, sole, ignore)
    # Both at once: the masked texts' lookup in the embedding cache while the question embeds.
    question, documents = await asyncio.gather(vectors.query(masked), vectors.documents_or_none(texts))
    if question is None or documents is None:
        return {}
    matrix = np.asarray(documents)
    to_question = matrix @ np.asarray(question)
    off = stating_another(masked, texts, parsed.lexicon)
    on = [i for i in range(len(positions)) if i not in off] or list(range(len(positions)))
    within = matrix[on]
    start = chain_start(to_question[on], [texts[i] for i in on], masked, parsed.lexicon)
    order_on, links = chain(within @ within.T, start)
    order = [on[j] for j in order_on] + [i for i in range(len(positions)) if i not in on]
    links = links + [-1.0] * (len(order) - len(links))
    # The versions rule's groups answer only a question with no time word (the module's docstring),
    # read from the masked vectors: by their stored ones a colleague's short notes were one group by
    # the name they share (his office, the language he speaks, where he studied), and an answer among
    # them brought in the rest.
    together = groups(matrix, conflict) if parsed.tense != "present" else []
    group = {i: g for g, members in enumerate(together) for i in members}
    nameless = naming_nothing(attributes, texts, ignore, parsed.lexicon, asked_kind(masked, parsed.lexicon))
    return {rows[positions[i]]["id"]: Closeness(float(to_question[i]), step, links[step],
                                                values_of(texts[i], ignore), i not in on, group.get(i),
                                                bool(attributes & stated[i]), i in nameless,
                                                stated[i] if attributes and not attributes & stated[i] else frozenset(),
                                                names_a_channel(texts[i], ignore))
            for step, i in enumerate(order)}


# A number right after the subject, masked ("someone 22 is now the minimum."): what `Attribute.numbered`
# values are written so.
_NUMBERED = re.compile(rf"(?<![\w'-]){MASK}\s+v?\d", re.IGNORECASE)


def stated_in(text: str, lexicon: Lexicon) -> frozenset[str]:
    """What a subject's memory, names masked, states by the lexicon's words (graph/keys.py `cued_in`)
    or by a number right after the subject ("Node.js 22 is now the minimum." states a version,
    `Attribute.numbered`)."""
    cued = cued_in(text, lexicon)
    if _NUMBERED.search(text):
        cued |= {a.name for a in lexicon.attributes if a.numbered}
    return cued


def naming_nothing(attributes: frozenset[str], texts: Sequence[str], ignore: frozenset[str],
                   lexicon: Lexicon, kind: Answer | None = None) -> set[int]:
    """Which of `texts` (a subject's memories, names masked) state no value of the asked
    `attributes`, where each of those is valued by names (`Attribute.valued_by_names`: a manager, an
    office, a car): they name no value (`value_runs`, less the words in `ignore`) and state none of
    the attributes in the lexicon's words ("someone moved in with her parents." states a home by
    "moved"). A question asking no attribute by its words asks for what its question word does
    (`kind`: "Who do I answer to at the moment?", a person). A person's name holds no digit, so
    where each asks a person, values that all hold one are none of theirs ("someone switched to a
    Sony Xperia 10." for "Who is someone dating?"); a place's may ("eu-central-1"), but a number or a
    time alone is no place ("Team someone standup @ 9:30." for "Where does team someone chat?"). Read
    only to take them out of the answers, not off the chain: off it, they moved the chain's cut, and
    life lost two questions and ops three (docs/benchmarks.md, seventy-second stop)."""
    by_name = phrasebook.by_name(lexicon)
    if attributes and not all(by_name[a].valued_by_names for a in attributes):
        return set()
    if not attributes and kind not in ("person", "place"):
        return set()
    answer = {by_name[a].answers for a in attributes} if attributes else {kind}

    def names_one(text: str) -> bool:
        runs = value_runs(text, ignore)
        if answer == {"person"}:
            return any(not any(c.isdigit() for word in run for c in word) for run in runs)
        if answer == {"place"}:
            return any(not all(is_number(word) for word in run) for run in runs)
        return bool(runs)

    return {i for i, text in enumerate(texts) if not names_one(text) and not attributes & stated_in(text, lexicon)}


def _asked_without(parsed: ParsedQuery, unnamed: Callable[[str], str]) -> str:
    return unnamed(parsed.asked or parsed.text)


def question_beside(parsed: ParsedQuery) -> str | None:
    """The question as `similarities` will embed it, its subject taken out, where the focus applies
    and the question alone tells whom it is about (whose.py `question_mask`): embedded with the
    question in one run of the model (searching.py), it is in the query cache when asked for. For a
    question with no time word the words may yet decide that nothing is compared (`versions_said`);
    on the knowledge-update sets they did for 1 of 295 such questions given a text beside (more often
    for one of the user alone, where two memories must state the attribute)."""
    return masked_question(parsed) if applies(parsed) else None


def masked_question(parsed: ParsedQuery) -> str | None:
    """The question as `similarities` embeds it where the question alone tells whom it is about."""
    mask = question_mask(parsed)
    return _asked_without(parsed, mask) if mask is not None else None


def compared(text: str, unnamed: Callable[[str], str], lexicon: Lexicon) -> str:
    """A subject's memory as `similarities` compares it: the subject taken out (`unnamed`), and a
    label that only says how the note came."""
    return unlabelled(unnamed(text), lexicon)


# The subjects a memory is written about whose comparable forms are embedded with it: each is a text
# more in the write's batch.
FORMS_WRITTEN = 2


def forms_of(content: str, kind: str, about: Sequence[Name], lexicon: Lexicon) -> list[str]:
    """The texts a question about the present will compare `content` by (`compared`), for each of
    the first subjects it is about: the user, or a name in capitals as questions name them (each
    word of it masked, as a question's names are). Embedded in one batch with the memory when it is
    written (writing.py), so a new question about them finds them cached: before, a question meeting
    a subject's memories no search had compared embedded them then, a batch of up to a window's
    (35-45 ms on 2 cores). A question naming them otherwise ("Greta" of "Greta Ibarra ...")
    still embeds its own. None for moments, which the focus never compares."""
    if kind in MOMENTS:
        return []
    forms: list[str] = []
    for name in [n for n in about if n.user or n.display[:1].isupper()][:FORMS_WRITTEN]:
        unnamed = (partial(without_user, mask=MASK, lexicon=lexicon) if name.user
                   else partial(without_names, names=name.display.split()))
        form = compared(content, unnamed, lexicon)
        if form != content and form not in forms:
            forms.append(form)
    return forms


def versions_said(question: str, texts: Sequence[str], lexicon: Lexicon, *, stated_only: bool = False) -> bool:
    """Whether two of the subject's memories (`texts`) may be versions of the attribute `question`
    asks: each states it in the lexicon's words, or no attribute in them ("transferred to
    Identity"). A question with no time word may ask a fact stated once ("Which licence covers the
    consent worker?"), and the subject's newer memories stating other attributes ("... schema lives
    in Cassandra") are no versions of it: ops's stable facts first .125 -> .208, every changing
    fact's figure the same.

    `stated_only`: two must state it. In an agent's store every note is the user's, and a new
    user's first facts, one of each, chain as versions ("I live in Halifax.", "User is on the
    payroll of Brightwater Health.") where nothing in the question says the newest answers; with
    any note stating nothing counted, "Where is home for me?" got the employer first
    (docs/benchmarks.md, sixty-third stop)."""
    asked = asked_of_any(question, lexicon)
    return sum(1 for text in texts if (stated := stated_in(text, lexicon)) & asked or not (stated or stated_only)) >= 2


def stated_alone(ids: Sequence[UUID], texts: Sequence[str], stated: Sequence[frozenset[str]], sole: int,
                 ignore: frozenset[str]) -> dict[UUID, Closeness]:
    """The subject's memories (`ids`, their masked `texts` and what each states, `stated_in`) where
    one alone states the asked attribute (`sole_statement`): it answers, the others state another
    attribute and do not. The words decide, so nothing is embedded: no cosine is measured
    (`Closeness.compared`)."""
    order = [sole, *(i for i in range(len(texts)) if i != sole)]
    return {ids[i]: Closeness(0.0, step, 1.0 if i == sole else -1.0, values_of(texts[i], ignore), off=i != sole,
                              says_asked=i == sole, states_other=frozenset() if i == sole else stated[i],
                              compared=False)
            for step, i in enumerate(order)}


def sole_statement(asked: frozenset[str], stated: Sequence[frozenset[str]]) -> int | None:
    """Of a subject's memories, by what each states (`stated_in`), the one stating an `asked`
    attribute, where it is the only one and every other states another; None otherwise. Read where
    no two of them may be versions of it (`versions_said`): then a question with no time word asks a
    fact stated once, as a stable one is. A user's note stating nothing ("I'm in Lisbon these
    days.") may yet be a version: none is chosen over it."""
    saying = [i for i, said in enumerate(stated) if asked & said]
    return saying[0] if asked and len(saying) == 1 and all(stated) else None


def chain_start(to_question: np.ndarray, texts: Sequence[str], question: str, lexicon: Lexicon) -> int:
    """Where the chain starts: the memory closest to the question, unless a memory states the
    attribute the question asks in the lexicon's words (cues and phrases, graph/keys.py) and the
    closest does not; then the closest of those. A subject's memories share more than their
    predicate, so the closest may be another fact ("someone relocated to the Singapore office." for
    "Who does someone report to currently?", above "Manager change for someone: Yasmin Haddad."),
    and the chain from it gathers that fact's versions. The closest keeps its place where it states
    nothing in the lexicon's words but shares a word with the question: it may be a version of any
    attribute ("Home for someone is Berlin." for "Where does someone call home at present?"; the
    chain from the cued "someone lives in Lisbon." left it out and life lost that question). One
    sharing no word is closest by its shape only ("someone ownership handed from Oskar Lund to
    Priti Shah." for "Who owns the someone now?"). Rules only, newest first / newest@1: crm .675 /
    .300 -> .680 / .320, circle .782 -> .791, ops .870 / .840 -> .890 / .860, assistant .792 / .558
    -> .800 / .567, workbench .742 / .400 -> .758 / .425; life and the generator's set the same."""
    closest = int(np.argmax(to_question))
    asked = asked_of_any(question, lexicon)
    if not asked:
        return closest
    stated = stated_in(texts[closest], lexicon)
    if stated & asked or not stated and _shares_a_word(question, texts[closest], lexicon):
        return closest
    saying = [i for i, text in enumerate(texts) if asked & stated_in(text, lexicon)]
    return max(saying, key=lambda i: float(to_question[i])) if saying else closest


def _shares_a_word(question: str, text: str, lexicon: Lexicon) -> bool:
    """Whether `text` holds a stem of the question's words other than stop words and the mask."""
    ignore = lexicon.stop_words | {MASK}
    return bool(set(lexicon.stems(question, drop=ignore)) & set(lexicon.stems(text, drop=ignore)))


def unlabelled(text: str, lexicon: Lexicon) -> str:
    """`text` without a label that only says how the note came ("Heard today:", "From standup:",
    "1:1 notes:", "Update -": words of `Lexicon.note_openers`, function words, numbers): one
    person's notes taken in one way share it whatever they state, so it joined their job title and
    their on-call rotation in one chain, and "standup" read as a cue of the standup time. A label
    naming what is stated ("Ottilie's manager:", "Rescheduled:") stays."""
    label = LABEL.match(text)
    if label is None:
        return text
    said = lexicon.note_openers | lexicon.stop_words
    rest = text[label.end():]
    if rest.strip() and all(w in said or not any(c.isalpha() for c in w) for w in lexicon.words(label.group())):
        return rest
    return text


def stating_another(question: str, texts: Sequence[str], lexicon: Lexicon) -> set[int]:
    """Which of `texts` (a subject's memories, names masked) state other attributes than
    `question` asks about, where each states one in the lexicon's words and no two the same: a
    subject's facts, one version each. Empty otherwise: any that states none, or two that state one
    attribute, or a question that asks none, leave the chain to decide. Taken off the chain with
    memories that state nothing in those words among them, the cue words cost newest-first on
    life, ops and assistant: a version says what it states apart ("new apartment" of a home city,
    "works for" of a manager) (docs/benchmarks.md, "A new user's first facts, by the words of what
    each states")."""
    asked = asked_of_any(question, lexicon)
    if not asked:
        return set()
    cued: list[frozenset[str]] = []
    for text in texts:
        stated = stated_in(text, lexicon)
        if not stated or any(stated & c for c in cued):
            return set()
        cued.append(stated)
    return {i for i, c in enumerate(cued) if not asked & c}


def chain(cosines: np.ndarray, start: int) -> tuple[list[int], list[float]]:
    """Single linkage from `start`: each step adds the memory closest to any already added; the
    order, and the cosine each one joined at (1 for `start`)."""
    order, links = [start], [1.0]
    nearest = cosines[start].copy()
    nearest[start] = -np.inf
    for _ in range(len(cosines) - 1):
        step = int(np.argmax(nearest))
        order.append(step)
        links.append(float(nearest[step]))
        nearest = np.maximum(nearest, cosines[step])
        nearest[order] = -np.inf
    return order, links
