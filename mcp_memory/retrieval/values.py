"""The values a memory names (a number, a time, a code, a name within a sentence) and how two
memories' values relate: what an update replaces ("left Plumtree Media for Saltmarsh Bank" of
"works at Plumtree Media"), and values of no kind in common (a person is no region). Read by the
present-tense focus (focus.py), the versions rule (versions.py), the decisions' guard and wording,
and the structure's filing of a value."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .query import LABEL
from .whose import POSSESSIVE

# What a memory names that could be the value of a fact: a number, a time or a version ("9:45",
# "ca-central-1", "MySQL 8"), a capitalised word within a sentence ("Brightwater Health"), or a
# channel ("#oncall", "#kestrel-ops": Slack's, IRC's, Matrix's mark, whatever the language).
_TOKEN = re.compile(r"\w[\w'-]*(?:[:.]\d+)*")
_SENTENCE_END = ".:;!?"
_NUMBER = re.compile(r"\d+(?:[:.]\d+)*")
# A channel's mark right before a token: not within a word ("C#", "a#b") nor doubled ("##").
_CHANNEL = re.compile(r"(?<![\w#])#\w")


def values_of(text: str, ignore: frozenset[str]) -> frozenset[str]:
    """The values `text` names, lower case, other than the words in `ignore`."""
    return frozenset(word for token, _ in _values(text) if (word := _word(token)) not in ignore)


def value_kinds(text: str) -> frozenset[str]:
    """The kinds of value `text` names, which versions of one attribute share: a number ("9:30",
    "14", "8.0"), a code ("us-east-1", "2x", "14th") or a name ("Yaw Boateng", "M3"; a number
    after a word with a capital too, "Framework 13", "MySQL 8", "iPhone 15")."""
    return frozenset(kind for _, kind in _values(text))


def values_of_another_kind(new: str, old: str) -> bool:
    """Values of no kind in common (`value_kinds`), so another attribute: a person is no region
    ("Consent pipeline maintainer: Yaw Boateng." / "Consent pipeline lives in ca-central-1."), a
    year no team ("... joined the company in 2016." / "... joined Billing squad."), a count no
    ordinal ("The Nova team has 14 engineers." / "... celebrated its 14th release."). Read with the
    subject masked (guard.judge), and only when the new memory names no value of the old one beside
    a new one. Under the adversary at 0.45 ops 7.6 -> 7.2% and dataset 7.0 -> 6.8% wrong, at 0.25
    ops 16.0 -> 14.9%, dataset 11.1 -> 9.8%, crm 21.5 -> 18.0% and workbench 14.4 -> 13.1%; no
    other set changed, no right update lost (a number after a word with a capital read as a
    number, "upgraded to an iPhone 15" / "uses a Sony Xperia 10" on circle lost three). The
    structure reads it too, before it files a value the lexicon's order alone placed (structure.py)."""
    mine, theirs = (value_kinds(LABEL.sub("", text, count=1)) for text in (new, old))
    return bool(mine and theirs and not mine & theirs)


def _values(text: str) -> Iterator[tuple[str, str]]:
    """Each value `text` names with its kind (`value_kinds`): a token with a digit, a capitalised
    word that does not open a sentence, or a channel's name (a name: "#oncall")."""
    for match, kind in _value_matches(text):
        yield match.group(), kind


def _value_matches(text: str) -> Iterator[tuple[re.Match[str], str]]:
    """`_values`, each token as its match (`value_runs` reads what stands between them)."""
    # What stands before each token, kept as the tokens go: the text before every token, stripped,
    # made a long text quadratic.
    end, last = 0, ""  # where the previous token ends, and that token
    for match in _TOKEN.finditer(text):
        token = match.group()
        gap = text[end:match.start()].rstrip()
        opens_sentence = not (gap or last) or (gap or last)[-1] in _SENTENCE_END
        if any(c.isdigit() for c in token):
            number = _NUMBER.fullmatch(token) is not None
            after_a_name = any(c.isupper() for c in last) and not gap  # "MySQL 8", "iPhone 15"
            yield match, ("name" if after_a_name or not (number or token.islower()) else
                          "number" if number else "code")
        elif token[0].isupper() and not opens_sentence or _a_channel(text, match.start()):
            yield match, "name"
        end, last = match.end(), token


def names_a_channel(text: str, ignore: frozenset[str]) -> bool:
    """Whether `text` names a channel ("#oncall") other than those in `ignore` (as `values_of` reads it)."""
    return "#" in text and any(_a_channel(text, m.start()) for m in _TOKEN.finditer(text)
                               if _word(m.group()) not in ignore)


def _a_channel(text: str, start: int) -> bool:
    """Whether the token of `text` at `start` is a channel's name, the mark right before it."""
    return _CHANNEL.match(text, max(start - 1, 0)) is not None


def _word(token: str) -> str:
    """A token as values are compared: lower case, its possessive cut ("Priya's" is "priya")."""
    return POSSESSIVE.sub("", token).lower()


def is_number(value: str) -> bool:
    """Whether a value (`values_of`) is a number or a time alone ("14", "9:30", "8.0")."""
    return _NUMBER.fullmatch(value) is not None


def words_of(text: str) -> frozenset[str]:
    """Every word of `text` as `values_of` reads it (lower case, possessives cut), values or not."""
    return frozenset(_word(m.group()) for m in _TOKEN.finditer(text))


def names_its_value(new: str, old: str, ignore: frozenset[str]) -> bool:
    """Whether `new` names a value `old` names and another one `old` does not say at all: "left
    Plumtree Media for Saltmarsh Bank" of "works at Plumtree Media". The same value alone is the
    same fact of another thing ("emits metrics to Prometheus"). A word `old` says where
    `values_of` does not read it as a value is no new one: "Aurelio" opening a clause ("Oskar Lund
    rotated off the billing API; Aurelio Conti took it.") is still the name in "New maintainer of
    the reviews API is Aurelio Conti.". The value shared is one name in both (`value_runs`, one
    holding the other: "Haddad" opening a clause is "Yasmin Haddad"); a word of two names is not
    ("inherited Oisin Esposito" / "is Zoltan Esposito's manager", "is on the Data Infra team" /
    "is a Data Scientist")."""
    new_runs, old_runs = value_runs(new, ignore), value_runs(old, ignore)
    mine, theirs = (frozenset(word for run in runs for word in run) for runs in (new_runs, old_runs))  # values_of
    shared = any(set(a) <= set(b) or set(b) <= set(a) for a in new_runs for b in old_runs)
    return shared and bool(mine - theirs - words_of(old))


def value_runs(text: str, ignore: frozenset[str]) -> set[tuple[str, ...]]:
    """The values `text` names as whole names: each run of values with nothing but white space
    between them ("Plumtree Media", "MySQL 8"), lower case, less the words in `ignore`."""
    runs: list[list[str]] = []
    end = None
    for match, _ in _value_matches(text):
        if end is None or text[end:match.start()].strip():
            runs.append([])
        runs[-1].append(_word(match.group()))
        end = match.end()
    return {kept for run in runs if (kept := tuple(w for w in run if w not in ignore))}
