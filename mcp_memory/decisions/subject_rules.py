"""Whom two memories are about, for the decisions guard (guard.py): by the graph's stored mentions
where a writer or a model said it (graph/subjects.py), else by the text's names, read by rules each
with the figures that chose it (the guard's module docstring lists them). `why_not_same` is the
one question the guard asks; the rest are its parts, and `names` the text's names a test reads."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Sequence

from ..graph import subjects as stored_subjects
from ..graph.about_user import about_someone_else, named_persons_relation, speaks_of_user, without_user
from ..graph.names import RUN as _RUN
from ..graph.names import SUBJECT_WITHIN, WORD, object_of_opening, owned, runs
from ..graph.subjects import Subjects
from ..retrieval.focus import MASK
from ..retrieval.query import LABEL, word_pairs
from .wording import NOT_A_NAME

_POSSESSIVE = re.compile(r"'s$")
# A Slack channel or a handle opening a memory, after a note's label ("Standup: #deploys ..."):
# its subject, though not capitalised (ops 36.6 -> 34.8% wrong under the adversary, no other set
# changed).
_CHANNEL = re.compile(r"^\s*(?:.{1,30}?:\s+)?([#@][\w-]+)")
# A one-word label opening a note ("Calendar:", "Re-org:", "Rescheduled:") names no one: taken for
# a name, two teams' calendars were one subject and a reschedule another subject than its team's
# call (ops 20.4 -> 19.2% wrong under the adversary at 0.45, right updates applied 86 -> 90; crm
# one wrong fewer and one right more; no set lost one).
_ONE_WORD_LABEL = re.compile(r"^\s*[A-Z][\w'-]*:\s")
# A note opening on what it tells of a name ("Office for the Atlas team: based in Zurich.",
# "Sprint length for the Glacier team: ...", "Slack channel of the Lotus team: ..."): its opening
# word names no one. Taken for a name, every such note shared it with the others and was one
# subject with them, so another team's note passed for a version and the team's own note in other
# words ("The Delta team is based at the Copenhagen office.") was another subject (under the
# adversary at 0.45 dataset 2.1 -> 1.2% wrong, right updates applied 298 -> 307; at 0.25 6.3 ->
# 5.2%, 321 -> 332; no other set changed).
_OF_A_NAME = re.compile(r"\s*[A-Z][\w'-]*(?:\s+[a-z][\w'-]*)*\s+(?:for|of)\s+(?:the\s+)?[A-Z]")
# A note opening on a verb in the past tense before an acronym ("Rotated TLS certs for team
# Grebe.", "Upgraded CI runners in ...") names no one "Rotated TLS": read as a full name, every
# such note was about that someone, and the rules for notes about things never applied (ops 9.9 ->
# 9.2% wrong under the adversary at 0.45 and 19.3 -> 18.6% at 0.25, two records' notes of one fact
# counted apart as bench/decisions_tally.py does; no other set changed, no right update lost). A
# name ending so ("Ahmed Saleh") has no acronym after it.
_VERB_BEFORE_ACRONYM = re.compile(r"[A-Z][a-z]+ed\s+[A-Z]{2,}\b")
_ACRONYM = re.compile(r"(?<![\w'-])[A-Z]{2,}(?![\w'-])")  # "API", "TLS"


def names(text: str, anywhere: bool = False) -> list[tuple[str, ...]]:
    """The runs of capitalised words near the start of `text` (or anywhere), each as its
    lower-case words; a channel or handle opening it ("#eng-core is muted by most people") too."""
    opening = _CHANNEL.match(text)
    found = [(opening.group(1).lower(),)] if opening else []
    # Near the start: before the end of its SUBJECT_WITHIN-th word (found once: counting the words
    # before every run made a long text of short names quadratic, 22 s for 60,000 characters).
    early = list(itertools.islice(WORD.finditer(text), SUBJECT_WITHIN))
    limit = early[-1].end() if len(early) == SUBJECT_WITHIN and not anywhere else len(text) + 1
    # Only the names that start early count: one run of thousands of possessives ("Ab's Ab's
    # ...") made the subjects of two such texts compared pairwise, 12 s a pair.
    label = _ONE_WORD_LABEL.match(text)
    # A label followed by a name and nothing else names its value, not whom the note is about:
    # "Billing worker maintainer: Oskar Lund." is about the billing worker; taken for a note about
    # Oskar Lund, it was a version of "New maintainer of the billing API is Oskar Lund." (under
    # the adversary ops 18.2 -> 17.7% wrong at 0.25, workbench a right update more; no other set
    # changed). Read anywhere, it is still a name the other note may hold.
    valued = None if anywhere else LABEL.match(text)
    first = len(text) - len(text.lstrip())  # where the text's first word starts
    for start, run in runs(text):
        if start >= limit:
            break
        if label is not None and start < label.end() or start == first and _OF_A_NAME.match(text):
            continue
        # The object of the preposition a sentence opens on is not whom it is about ("After Quebec
        # City, Odalys Pellegrini ended up in Leipzig."); read anywhere, it is still a name.
        if not anywhere and object_of_opening(run.split(), text, start):
            continue
        if valued is not None and start == valued.end() and not text[start + len(run):].strip(" .!"):
            continue
        words = _words(run)
        if start == first and _VERB_BEFORE_ACRONYM.match(run):
            words = words[1:]
        if words:
            found.append(words)
    return found


def _same(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return set(a) <= set(b) or set(b) <= set(a)


def other_subject(new: str, old: str) -> str | None:
    """Why `old` is about another subject than `new`, or None if it may be the same."""
    if _user_note(new) and _user_note(old):
        return None
    if why := _user_and_their_person(new, old):
        return why
    mine, theirs = names(new), names(old)
    # Every name a text holds is read only when a rule below needs it (most pairs share a name
    # early), and then once.
    anywhere = functools.cache(functools.partial(names, anywhere=True))
    # A label may use up the first words ("1:1 notes: Congrats to Matteo Mwangi: new title ..."):
    # such a note naming no one early, beside one that does, is about its first full name (under
    # the adversary crm 1.6 -> 1.3% wrong at 0.45 and 21.6 -> 21.5% at 0.25, no other set changed;
    # without a label, ops and workbench lost right updates).
    if theirs and not mine and LABEL.match(new):
        mine = [n for n in anywhere(new) if len(n) > 1][:1]
    if mine and not theirs and LABEL.match(old):
        theirs = [n for n in anywhere(old) if len(n) > 1][:1]
    # The other's subject (its first name) named anywhere counts ("Dieter Vogel inherited Ottilie
    # Jablonski"), not any name it holds: "Katarina visited Berlin" is not about a Berlin resident.
    if mine and theirs and not any(_same(a, b) for a in mine for b in theirs) \
            and not any(_same(mine[0], b) for b in anywhere(old)) \
            and not any(_same(a, theirs[0]) for a in anywhere(new)):
        return (f"about {' '.join(theirs[0]).title()}, not {' '.join(mine[0]).title()}")
    return relation_differs(new, old, anywhere)


def _user_and_their_person(new: str, old: str) -> str | None:
    if _user_note(new) != _user_note(old) and (about_someone_else(new) or about_someone_else(old)):
        return "one is about the user, the other about someone in their life"
    return None


def relation_differs(new: str, old: str, anywhere: Callable[[str], list[tuple[str, ...]]] | None = None) -> str | None:
    """Why two memories naming one subject still tell facts of different ones: someone's
    relation against the person, or what two different names own. `anywhere`: `names(…,
    anywhere=True)`, cached by the caller."""
    anywhere = anywhere or functools.cache(functools.partial(names, anywhere=True))
    # "Kenji Chaudhry's brother has the phone number ..." is no fact of Kenji's (dataset 26.6 ->
    # 20.5% wrong under the adversary, life 7.2 -> 6.8; no right update lost on any set).
    new_role, old_role = named_persons_relation(new), named_persons_relation(old)
    if new_role != old_role:
        return f"one is about someone's {new_role or old_role}, the other is not"
    # What a name owns is that name's fact, whoever else both name: "Adaeze Halvorsen's manager:
    # Yasmin Haddad." is no version of "Yasmin Haddad is Leopold Kuznetsov's skip-level", nor
    # "Priya Mwangi's ThinkPad T14 died" of "Adaeze Halvorsen's ThinkPad T14 died" (under the
    # adversary at 0.45 crm 2.2 -> 1.7% wrong, life 0.5 -> 0.3%, at 0.25 crm 22.5 -> 21.9%, life
    # 6.8 -> 6.2%; no right update lost on any set).
    new_owners, old_owners = owners(new), owners(old)
    if new_owners and old_owners \
            and not any(_same(a, b) for a in new_owners for b in anywhere(old)) \
            and not any(_same(a, b) for a in old_owners for b in anywhere(new)):
        return f"about {' '.join(old_owners[0]).title()}'s, not {' '.join(new_owners[0]).title()}'s"
    return None


def owners(text: str, most: int = 3) -> list[tuple[str, ...]]:
    """The first `most` names in `text` that own something ("Leopold Kuznetsov's skip-level",
    "Mom's birthday"), each as its lower-case words: one fact has an owner or two, and each is
    compared with every name of the other text (all of them would be quadratic in a hostile
    text of thousands). The owners are graph/names.py's `owned`, as extraction's possessor reads
    them."""
    found = (words for name, _ in owned(text) if (words := _words(name)))
    return list(itertools.islice(found, most))


def _user_note(text: str) -> bool:
    """A note about the user: it speaks of them, and no one named before they are is its subject
    ("I moved to Lisbon", not "Soren Moreau laughed at my terrible pun")."""
    if not speaks_of_user(text) or about_someone_else(text):
        return False
    user_at = without_user(text, "\0").find("\0")  # where the first word for the user stands
    # A word opening the text is capitalised whether or not it names someone ("Everything runs on
    # my laptop"): only a full name, or a name further in, is a subject before the user.
    return not any(len(_words(m.group())) > 1 or m.start() > len(text) - len(text.lstrip()) and _words(m.group())
                   for m in _RUN.finditer(text[:user_at]))


def _words(run: str) -> tuple[str, ...]:
    return tuple(w for w in (_POSSESSIVE.sub("", w).lower() for w in run.split()) if w not in NOT_A_NAME)


def masked(text: str, subject: Sequence[tuple[str, ...]]) -> str:
    # One pass with every name, longest first: a pass per name was quadratic in a text of many
    # (37 s for 32,000 characters of "Ab:").
    names = sorted(set(subject), key=len, reverse=True)
    if names:
        alternatives = "|".join(r"\s+".join(map(re.escape, words)) for words in names)
        text = re.sub(r"(?<![\w'-])(?:" + alternatives + r")(?:'s)?(?![\w'-])", MASK, text, flags=re.IGNORECASE)
    return without_user(text, MASK)


def subject(text: str) -> tuple[str, ...] | None:
    """Whom or what `text` is about by its names: the first full name among its first words
    ("Home for Lorcan Jankowski is ..." is about Lorcan Jankowski, not "Home"), else its first
    single name ("Nilufar left Growth for Payments"); None when it names no one early."""
    early = names(text)
    return next((n for n in early if len(n) > 1), early[0] if early else None)


def same_subject(new: str, old: str) -> bool:
    """Whether two memories are about one subject by positive evidence, not only for want of a
    difference: both notes about the user; or one subject (`subject`) holding the other
    ("Nilufar" / "Heard today: Nilufar Pereira"), or the old memory's subject named anywhere in
    the new one ("Diego Yilmaz took over from Hana Dubois as Kwame Larsen's manager" of "Kwame
    Larsen reports to Hana Dubois"; not the other way round: "Niklas Oduya's team lead is Ahmed
    Saleh" is no fact of Ahmed's); or, when either names no one, a pair of content words both
    hold ("badges worker"; `_thing_pairs`)."""
    if other_subject(new, old):
        return False
    if _user_note(new) or _user_note(old):
        # A note naming no one by a full name, and no one else's, is the user's too ("Migrated
        # the repo from npm to pnpm").
        return all(_user_note(t) or not _names_in_full(t) and not about_someone_else(t)
                   for t in (new, old))
    mine, theirs = subject(new), subject(old)
    if mine and theirs:
        return _same(mine, theirs) or any(_same(a, theirs) for a in names(new, anywhere=True))
    # Naming no one, neither says whom it is about: the attribute check decides ("The backend is
    # Kotlin" / "The backend is Java").
    return not (mine or theirs) or bool(_thing_pairs(new) & _thing_pairs(old))


def _thing_pairs(text: str) -> set[tuple[str, str]]:
    """`word_pairs` without a number or version in them: a shared time or region is a value, not
    a thing both speak of ("The all-hands is at 10:15 these days." is not about "Team Wharf syncs
    daily at 10:15."; under the adversary ops 15.6 -> 15.4% and dataset 7.5 -> 7.3% wrong at 0.45,
    25.0 -> 24.8% and 11.8 -> 11.6% at 0.25, no other set changed)."""
    return {pair for pair in word_pairs(text) if not any(c.isdigit() for word in pair for c in word)}


def subject_names(new: str, old: str, stored_new: Subjects | None = None,
                  stored_old: Subjects | None = None) -> list[tuple[str, ...]]:
    """The names both texts hold (anywhere) that are the subject of one of them: what is masked.
    The others are values ("from Railway to AWS Lambda", "left the Amsterdam office"), and so is
    every name in two notes about the user, whose words are masked instead: "VS Code" masked,
    "I switched from VS Code to Zed" no longer named the value it replaces in "I use VS Code"
    (under the adversary at 0.45 right updates applied on assistant 47 -> 85 and workbench 59 ->
    70 with no wrong one more; at 0.25 169 -> 182 and 136 -> 142, wrong 54 -> 51 and 48 -> 48; no
    other set changed. Either one a note about the user: ops and workbench wrong ones more).
    Where the graph has both about the same subject (`stored_new`, `stored_old`), its names are
    the subject, not the text's reading of it ("The user dropped Jenkins; ..." reads as about
    Jenkins)."""
    if _user_note(new) and _user_note(old):
        return []
    said = stored_subjects.subject_names(stored_new, stored_old)
    subjects = ([s for s in (subject(new), subject(old)) if s] if said is None
                else [_words(name) for name in said])
    theirs = names(old, anywhere=True)
    return [a for a in names(new, anywhere=True)
            if any(_same(a, b) for b in theirs) and any(_same(a, s) for s in subjects)]


def owned_by_someone(text: str) -> bool:
    """Whether `text` is about someone, so the words around its things are that someone's values
    ("Jovan added to storage on-call", "I drink tea every morning"): a note about the user, or a
    full name among its first words. A name further on is a value ("Escalations for the coupons
    API go to Priti Shah"; ops 19.2 -> 18.1% wrong under the adversary at 0.45, 29.1 -> 27.9% at
    0.25, no other set changed). A name ending on an acronym names a thing, not someone ("Webhooks
    API traffic is served out of eu-north-1." / "Webhooks pipeline traffic ..."; ops 7.2 -> 6.1%
    wrong under the adversary at 0.45, 14.9 -> 13.2% at 0.25, no other set changed, no right
    update lost)."""
    return _user_note(text) or _names_in_full(text, things_too=False)


def _names_in_full(text: str, things_too: bool = True) -> bool:
    """Whether `text` names someone by a full name among its first words; unless `things_too`, a
    name ending on an acronym ("Webhooks API") does not count."""
    acronyms = set() if things_too else {m.group().lower() for m in _ACRONYM.finditer(text)}
    return any(len(name) > 1 and name[-1] not in acronyms for name in names(text))


# Why a memory is not taken for the same subject when nothing says it is another one either.
UNSURE = "not about the same subject by our check"


def why_not_same(new: str, old: str, stored_new: Subjects | None, stored_old: Subjects | None) -> str | None:
    """Why `old` is not about the subject of `new` (None: it is). Where a writer or a model said
    whom either is about, the graph's stored mentions say who (graph/subjects.py); the text still
    says whether a fact is that someone's or their brother's, and what each name owns. Where the
    graph has them apart and the text finds one subject, or only one of them was said about, the
    replace waits as a suggestion; refused by the graph alone only when both were said about."""
    by_graph = stored_subjects.compare(stored_new, stored_old)
    if by_graph == "same":
        return _user_and_their_person(new, old) or relation_differs(new, old)
    text = None if same_subject(new, old) else (other_subject(new, old) or UNSURE)
    if by_graph is None or text not in (None, UNSURE):
        return text
    assert stored_new is not None and stored_old is not None
    # The graph has them apart where the text is sure of nothing, or of the same subject.
    return stored_subjects.why_other(stored_new, stored_old) if by_graph == "other" and text == UNSURE else UNSURE
