"""Two memories that say one thing in the same words, read word by word: which differences make
them the same fact of something else rather than versions of one fact (the decisions guard's
rules past the names, decisions/guard.py).

Each rule was found in the offline replay of the scripted adversary's 4,600 recorded decisions
on the knowledge-update dev sets and kept only where it changed no right update on any set and
no other set's verdicts (its figures: wrong replaces applied, before -> after, at the guard's
floors 0.45 and 0.25). All but `opens_on_another_name` apply only between memories about no one
(guard.judge)."""

from __future__ import annotations

import difflib
import functools
import itertools
import re
from dataclasses import dataclass

from ..lexicon import Lexicon
from ..lexicon.english import ENGLISH
from ..retrieval.query import LABEL
from ..retrieval.values import values_of, words_of

# Longer memories are not compared word by word (`_aligned`).
FRAME_CHARS = 400
# A word, for comparing two memories word by word ("eu-west-1", "9:45", "GraphQL" each one). Not
# `values_of`'s reading, which cuts possessives: "User's working hours are Brazil time" would then
# share "user" with "User is on Japan time now, not Brazil time" and pass for the same words
# (a right update lost on workbench).
_TOKEN = re.compile(r"\w[\w'.:+@-]*\w|\w")
Block = tuple[str, int, int, int, int]  # a difflib opcode
Aligned = tuple[tuple[str, ...], tuple[str, ...], tuple[Block, ...]]  # both texts' words, and blocks
# A plain lower-case word: no digit, no capital ("carts", "uploads"), which names a thing where a
# value would be a number, a version or a name.
_PLAIN = re.compile(r"[a-z][a-z'-]*")
# Remarks in parentheses closing a note, before its full stop (`without_aside`).
_ASIDE = re.compile(r"(?:\s*\([^()]{1,40}\))+(?=\s*[.!]?\s*$)")
# A part of a thing named by a possessive: "The checkout worker's analytics replica", "owns the
# checkout service's client library" (`names_another_part`). Not a contraction: "it's now", "the
# team's moving"; not a name's attribute (`_a_things`).
_PART = re.compile(r"(?<![\w'-])([\w-]+)'s\s+([A-Za-z][\w-]*)")
# A channel or a handle ("#kestrel-ops", "@oncall"), which `_TOKEN` reads without its mark.
_HANDLE = re.compile(r"[#@](\w[\w'.:+@-]*\w|\w)")


@dataclass(frozen=True)
class _Words:
    """The lexicon's words these rules read (the rules themselves are English grammar: "'s",
    verb endings, a thing named in two words after a determiner)."""

    not_names: frozenset[str]
    # Words that open a sentence capitalised without naming anyone.
    not_a_name: frozenset[str]
    not_owners: frozenset[str]  # "it's", "that's", "let's": no one's part
    # Numbers in words are values ("three weeks" / "four weeks"), as digits are.
    numbers: frozenset[str]
    # How a plain word ends when it may be a verb ("uses", "adopted", "running").
    verb_endings: tuple[str, ...]
    # A thing named in two words where a note opens or after a determiner ("the", "a", "our",
    # "this", ...): "the reviews API", "Audit pipeline ..." (`another_thing_of_a_kind`). The two
    # words are looked ahead at, not taken, so a note opening on a verb still has the determiner
    # after it: "Moved the invoices API off ..." names "invoices API" (with a thing opening a note
    # after its label, under the adversary ops 5.0 -> 4.6% wrong at 0.45, 12.1 -> 11.7% at 0.25, no
    # other set changed, no right update lost).
    thing: re.Pattern[str]


@functools.lru_cache(maxsize=8)
def _words_of(lexicon: Lexicon) -> _Words:
    not_a_name = lexicon.not_names | lexicon.note_openers
    determiners = "|".join(f"[{d[0].upper()}{d[0]}]{re.escape(d[1:])}"
                           for d in sorted(lexicon.determiners, key=lambda d: (-len(d), d)))
    opener = rf"(?<![\w'-])(?:{determiners})\s+|" if determiners else ""
    thing = re.compile(rf"(?:{opener}^\s*)(?=([A-Za-z][a-z'-]*)\s+([A-Za-z][\w-]*)(?![\w'-]))")
    return _Words(lexicon.not_names, not_a_name, not_a_name | lexicon.not_owners, lexicon.number_words,
                  lexicon.verb_endings, thing)


# English's, for the readers that are given no lexicon (decisions/guard.py).
NOT_A_NAME = _words_of(ENGLISH).not_a_name


def without_aside(text: str) -> str:
    """`text` without the remarks in parentheses closing it ("Rotated TLS certs for team Upland
    (noted again)."): how a note came, not what it says, so two notes are compared without them
    (under the adversary ops 6.1 -> 5.0% wrong at 0.45, 13.2 -> 12.1% at 0.25, no other set
    changed, no right update lost). Only notes the rules read at all (FRAME_CHARS)."""
    return text if len(text) > FRAME_CHARS else _ASIDE.sub("", text)


def _words(text: str) -> tuple[str, ...]:
    """The words after any label, as they are written."""
    return tuple(t.rstrip(".:") for t in _TOKEN.findall(LABEL.sub("", text, count=1)))


def _aligned(new: str, old: str, least: int | None = None) -> Aligned | None:
    """Both texts' words after any label ("Heard today:"), lower case, and the blocks where they
    differ, when they say one thing in the same words (at least half of them, in order, or at
    least `least`); None otherwise."""
    if max(len(new), len(old)) > FRAME_CHARS:
        return None  # one fact is said briefly; aligning two long texts is quadratic (339 s at the limit)
    a, b, blocks = _align(new, old)
    changed = tuple(block for block in blocks if block[0] != "equal")
    same = sum(i2 - i1 for tag, i1, i2, _, _ in blocks if tag == "equal")
    enough = min(len(a), len(b)) / 2 if least is None else least
    return (a, b, changed) if changed and same >= enough else None


@functools.lru_cache(maxsize=1024)  # `judge` asks every rule of a pair; the cache holds short texts only
def _align(new: str, old: str) -> Aligned:
    a, b = (tuple(w.lower() for w in _words(text)) for text in (new, old))
    return a, b, tuple(difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes())


def opens_on_another_name(new: str, old: str, lexicon: Lexicon = ENGLISH) -> bool:
    """The same words opening on another name and naming another value further on: "Kasimir
    replaced the MacBook Pro 14 with a ThinkPad X1 Carbon." / "Priya replaced the MacBook Pro 14
    with a ThinkPad T14." (the full name both hold, "MacBook Pro", passed for their subject). With
    nothing else changed, the opening word may be the value itself ("Rust is my main language" /
    "Python is my main language"), which this leaves to the other checks. Under the adversary crm
    2.6 -> 2.2% wrong at 0.45 and 22.9 -> 22.5% at 0.25."""
    aligned = _aligned(new, old)
    if aligned is None:
        return False
    a, b, changed = aligned
    if changed[0] != ("replace", 0, 1, 0, 1) or {a[0], b[0]} & _words_of(lexicon).not_a_name or \
            not all(LABEL.sub("", text, count=1).lstrip()[:1].isupper() for text in (new, old)):
        return False
    mine, theirs = values_of(new, frozenset()), values_of(old, frozenset())
    return any(tag == "replace" and mine & set(a[i1:i2]) and theirs & set(b[j1:j2])
               for tag, i1, i2, j1, j2 in changed[1:])


def ends_on_its_value(new: str, old: str) -> bool:
    """The same words ending on a value `old` names: "The webhooks pipeline exposes a GraphQL
    endpoint" / "The scheduling pipeline exposes a GraphQL endpoint", "Prod for the geo pipeline
    sits in us-west-2." / "Prod for the rosters pipeline sits in us-west-2.". Under the adversary
    at 0.45 ops 24.7 -> 22.3% and dataset 16.0 -> 12.5% wrong, at 0.25 34.8 -> 32.4% and 20.5 ->
    17.0%. A channel or a handle is a value too ("Questions for team Cinder -> #platform-help." /
    "Questions for team Vole -> #platform-help."; ops 14.8 -> 14.2% at 0.45 and 24.1 -> 23.6% at
    0.25)."""
    aligned = _aligned(new, old)
    if aligned is None:
        return False
    values = values_of(old, frozenset()) | {h.lower() for h in _handles(old)}
    return bool(values & set(aligned[0][aligned[2][-1][2]:]))


def qualifies_another_thing(new: str, old: str, lexicon: Lexicon = ENGLISH) -> bool:
    """The same words with another plain word before one both hold: the thing named differs, not
    its value ("Storage for the carts service: SQLite." / "Storage for the wallets service: MySQL
    8.", "Moved the uploads API off us-west-2; ..." / "Moved the invoices API off eu-west-1; ...").
    A number, a version or a capitalised word in that place is a value ("three weeks" / "four
    weeks", "the eu-north-1 region", "the Go language" / "the Ruby language"); a possessive is the
    same word ("team" / "team's"). Under the adversary at 0.45 ops 22.3 -> 20.4% and dataset 12.4
    -> 10.1% wrong, at 0.25 32.4 -> 30.3% and 16.9 -> 14.4%."""
    aligned = _aligned(new, old)
    if aligned is None:
        return False
    a, b, changed = aligned
    w = _words_of(lexicon)
    as_written = _words(new), _words(old)
    for tag, i1, i2, j1, j2 in changed:
        if tag != "replace" or i2 - i1 != 1 or j2 - j1 != 1 or i2 >= len(a) or j2 >= len(b):
            continue
        if a[i2] != b[j2] or a[i2] in w.not_names:
            continue
        mine, theirs = as_written[0][i1], as_written[1][j1]
        if mine.removesuffix("'s") != theirs.removesuffix("'s") and all(
                _plain(word, frozenset(), w) for word in (mine, theirs)):
            return True
    return False


def names_another_thing(new: str, old: str, lexicon: Lexicon = ENGLISH) -> bool:
    """The same words but for the thing they are about, named in a word or two with a plain word on
    both sides ("Cleaned up stale feature flags in payouts worker." / "... in team Foxglove.",
    "Infra note - badges API hosted in eu-north-1." / "... pricing worker hosted in eu-north-1."),
    and every other difference a value on both sides ("Moved the thumbnails worker off
    eu-north-1; ..." / "Moved the badges API off eu-central-1; ..."). One word against one is
    left to `qualifies_another_thing`: alone at the end it is the value ("Lockfile is from bun." /
    "Lockfile is from pnpm."). A number, a channel or a handle there is a value too ("team
    Dunlin -> #kestrel-ops" / "-> #incidents-live"). Under the adversary at 0.45 ops 18.1 ->
    15.6% and dataset 10.1 -> 7.5% wrong, at 0.25 27.9 -> 25.0% and 14.4 -> 11.8%; with two words
    in common enough, ops 15.4 -> 14.8% at 0.45 and 24.8 -> 24.1% at 0.25, dataset 11.6 -> 11.5%
    at 0.25. A capitalised word after a common noun both hold is a name of that noun's kind ("in
    team Lapwing" / "in team Foxglove"; after a verb, "uses Linear" / "uses Jira", the value):
    ops 9.2 -> 8.8% at 0.45 and 18.6 -> 18.2% at 0.25 (two records' notes of one fact counted
    apart, see bench/decisions_tally.py), no other set changed."""
    # Every other difference a value, two words in common suffice: "Infra note - audit service
    # hosted in eu-central-1." / "... wallets API hosted in ca-central-1." share two of five.
    aligned = _aligned(new, old, least=2)
    if aligned is None:
        return False
    w = _words_of(lexicon)
    written = _words(new), _words(old)
    handles = _handles(new) | _handles(old)
    things = 0
    for tag, i1, i2, j1, j2 in aligned[2]:
        mine, theirs = written[0][i1:i2], written[1][j1:j2]
        if tag != "replace":
            return False
        # The name and the value may differ side by side: "Questions for team Skua -> #oncall." /
        # "Questions for team Ibis -> #kestrel-ops." (another team and its channel; under the
        # adversary ops 4.6 -> 4.1% wrong at 0.45, 11.7 -> 11.2% at 0.25, no other set changed).
        named = (mine[:1], theirs[:1]) if _values_after_one(mine, theirs, handles, w) else (mine, theirs)
        if _another_name(mine, theirs, handles, w) or (
                i1 and j1 and aligned[0][i1 - 1] == aligned[1][j1 - 1]
                and _named_after_a_noun(written[0][i1 - 1], *named, handles, w)
                and _follows(new, written[0][i1 - 1], mine[0]) and _follows(old, written[1][j1 - 1], theirs[0])):
            things += 1
        elif not (any(_value(word, handles, w) for word in mine) and any(_value(word, handles, w) for word in theirs)):
            return False
    return things == 1


def another_thing_of_a_kind(new: str, old: str, lexicon: Lexicon = ENGLISH) -> bool:
    """Two things, each named by a qualifier and a kind ("billing API", "Audit pipeline") where a
    note opens or after a determiner, that share one of the two words but not the other, in
    sentences of any shape: "New maintainer of the reviews API is Aurelio Conti." / "... rotated
    off the billing API; ..." (another of one kind), "Audit worker storage migration to MySQL 8
    landed." / "Audit pipeline swapped ClickHouse for MySQL 8." (another kind), neither note saying
    the other's pair. A kind is a lower-case word no verb ending has ("worker", not "moved") or an
    acronym; a qualifier is a plain word ("the Amsterdam office" is a value). Only between notes
    about no one (guard.judge): about someone the qualifier is their value ("swapped onto the
    streaming rotation" / "onto the auth rotation", "joined a cycling group" / "a bouldering
    group"). Under the adversary at 0.45 ops 8.7 -> 7.6% and dataset 7.3 -> 7.0% wrong, at 0.25
    17.7 -> 16.0% and 11.5 -> 11.1%, no other set changed, no right update lost; another of one kind
    applied to every note, crm lost two right updates, life and workbench one."""
    if max(len(new), len(old)) > FRAME_CHARS:
        return False  # one fact is said briefly
    w = _words_of(lexicon)
    mine, theirs = _things(new, old, w), _things(old, new, w)
    for (qualifier, kind), (plain, noun) in mine.items():
        for (other_qualifier, other_kind), (other_plain, other_noun) in theirs.items():
            if qualifier == other_qualifier and kind != other_kind and noun and other_noun \
                    or kind == other_kind and qualifier != other_qualifier and plain and other_plain:
                return True
    return False


def names_another_part(new: str, old: str, lexicon: Lexicon = ENGLISH) -> bool:
    """One note about a part of a thing the other does not speak of: "The checkout worker's
    analytics replica uses Postgres version 17." is no version of "The checkout worker uses
    Postgres 13.", nor "The Kestrel team's alerts go to a separate Slack channel, #dev-alerts." of
    "The Kestrel team's Slack channel is #squad.". The part is the word after a thing's possessive
    ("The Indigo team owns the profile pipeline's client library."); the other note speaks of it
    when it holds that word anywhere ("The Kelvin team's sprint length is two weeks." / "The Kelvin
    team now uses a sprint length of one week ..."). Only between notes about no one (guard.judge):
    a person's possessive names their attribute ("Priya Fischer's manager is ..." / "Priya Fischer
    reports to ..."). Under the adversary at 0.45 dataset 6.8 -> 2.1% wrong, at 0.25 12.5 -> 6.3%,
    no other set changed, no right update lost."""
    if max(len(new), len(old)) > FRAME_CHARS:
        return False  # one fact is said briefly
    return any(part not in words_of(other) for text, other in ((new, old), (old, new))
               for part in _parts(text, _words_of(lexicon)))


def _parts(text: str, w: _Words) -> set[str]:
    """The parts `text` names by a possessive (`_PART`), in lower case; no verb's participle
    ("the team's moving")."""
    participles = tuple(e for e in w.verb_endings if len(e) > 1)
    return {part for m in _PART.finditer(text) if _a_things(m.group(1), w)
            and (part := m.group(2).lower()) not in w.not_a_name and not part.endswith(participles)}


def _a_things(owner: str, w: _Words) -> bool:
    """A possessive's owner that is a thing: a common noun or an acronym ("worker's", "team's",
    "API's"). A name owns an attribute ("Mom's car is a Volvo" / "Mom drives a Kia now"), and a
    pronoun's "'s" is a contraction ("it's", "that's")."""
    return (owner.islower() or owner.isupper() and len(owner) > 1) and owner.lower() not in w.not_owners


def _things(text: str, other: str, w: _Words) -> dict[tuple[str, str], tuple[bool, bool]]:
    """The things `text` names where it opens or after a determiner, each (qualifier, kind) in
    lower case with whether the qualifier is a plain word and the kind a noun, but for the pairs
    `other` says too, anywhere."""
    said = set(itertools.pairwise(w.lower() for w in _TOKEN.findall(other)))
    found: dict[tuple[str, str], tuple[bool, bool]] = {}

    def add(m: re.Match[str], part: str) -> None:
        qualifier, kind = m.group(1), m.group(2)
        pair = (qualifier.lower(), kind.lower())
        if {*pair} & w.not_names or pair in said:
            return
        plain = qualifier.islower() or m.start(1) == len(part) - len(part.lstrip())  # where it opens
        noun = kind.islower() and not kind.endswith(w.verb_endings) or kind.isupper() and len(kind) > 1
        found[pair] = (plain or found.get(pair, (False, noun))[0], noun)

    for m in w.thing.finditer(text):
        add(m, text)
    # A note with a label opens again after it ("Infra note - pricing worker hosted in ...").
    label = LABEL.match(text)
    if label and (m := w.thing.match(body := text[label.end():])):
        add(m, body)
    return found


def _handles(text: str) -> frozenset[str]:
    return frozenset(m.group(1) for m in _HANDLE.finditer(text))


def _values_after_one(mine: tuple[str, ...], theirs: tuple[str, ...], handles: frozenset[str], w: _Words) -> bool:
    """Both sides a word followed by values only ("Skua #oncall" / "Ibis #kestrel-ops")."""
    return len(mine) > 1 and len(theirs) > 1 and all(_value(word, handles, w) for word in mine[1:] + theirs[1:])


def _another_name(mine: tuple[str, ...], theirs: tuple[str, ...], handles: frozenset[str], w: _Words) -> bool:
    """Two names of a thing: a word or two each, three or more in all, a plain word in both, no
    word in common and no number or handle."""
    both = mine + theirs
    return (len(mine) <= 2 and len(theirs) <= 2 and len(both) > 2
            and not {word.lower() for word in mine} & {word.lower() for word in theirs}
            and not any(_number(word, w) or word in handles for word in both)
            and all(any(_plain(word, handles, w) for word in side) for side in (mine, theirs)))


def _named_after_a_noun(before: str, mine: tuple[str, ...], theirs: tuple[str, ...], handles: frozenset[str],
                        w: _Words) -> bool:
    """Two names, a capitalised word each, after a common noun both hold: "team Bittern" / "team
    Grebe" are two teams. After a verb the name is the value ("The team uses Jira." / "...
    Linear."): a word ending as verbs do ("uses", "adopted", "running") is no noun here."""
    return (len(mine) == len(theirs) == 1 and _plain(before, handles, w) and not before.endswith(w.verb_endings)
            and all(word[:1].isupper() and not _number(word, w) and word not in handles for word in mine + theirs))


def _follows(text: str, before: str, word: str) -> bool:
    """`word` stands right after `before` in `text`, nothing but a space between them: "default
    branch Trunk", not "default branch: Trunk" (there the noun is a label, the word its value)."""
    return re.search(rf"(?<![\w'-]){re.escape(before)}\s+{re.escape(word)}(?![\w'-])", text) is not None


def _plain(word: str, handles: frozenset[str], w: _Words) -> bool:
    return bool(_PLAIN.fullmatch(word)) and word not in w.not_names and word not in w.numbers and word not in handles


def _number(word: str, w: _Words) -> bool:
    return any(c.isdigit() for c in word) or word.lower() in w.numbers


def _value(word: str, handles: frozenset[str], w: _Words) -> bool:
    return _number(word, w) or word in handles or word[:1].isupper()
