"""Which attribute a key names, by a language's words (which one a question asks is questions.py's; both
look the lexicon's attributes up in phrasebook.py).

A writer's key is in its own words ("home city", "lives in", "where they live"): those of one
attribute of the lexicon are that attribute; different attributes are never merged, and a key the
lexicon does not know is an attribute of its own, named by its stems ("favourite colour" and
"favourite colours" are one). Cosine similarity of key phrases cannot do this with the shipped
embedder: "employer" is closer to "job title" (.61) than "where they live" to "home city" (.44)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace

from ..lexicon import Attribute, Lexicon
from . import phrasebook


@dataclass(frozen=True)
class Key:
    attribute: str  # the attribute's name: the lexicon's, or the key's own stems
    words: str  # the key as written, spaces tidied
    single: bool  # holds one value at a time
    # Other attributes the same words name ("based in": a home city, or an office): the subject's own
    # facts decide (repository/graph.py), this attribute when it has none of them.
    alternatives: tuple[str, ...] = ()
    # Those of the alternatives that hold many values at a time ("language": a program's one, or
    # the languages someone speaks).
    many: frozenset[str] = frozenset()
    # Attributes in a writer's own words that this key's text restates the subject's value of
    # (structure.py `adopted`): their facts are filed under this attribute before it replaces.
    absorbs: tuple[str, ...] = ()
    # The text's cues chose among the attributes the words name (`cued_by`): what the text says
    # outweighs what the subject already holds.
    cued: bool = False

    def within(self, known: set[str] | frozenset[str]) -> Key:
        """This key as the attribute of it the subject already has facts of, if one, unless the
        text's cues chose: a handset's "Pixel 7" keyed "phone" is no phone number however many of
        those the subject holds."""
        if self.cued or self.attribute in known or not self.alternatives:
            return self
        chosen = next((a for a in self.alternatives if a in known), None)
        return replace(self, attribute=chosen, single=chosen not in self.many, alternatives=(),
                       many=frozenset()) if chosen else self


def in_lexicon(attribute: str, lexicon: Lexicon) -> bool:
    """Whether `attribute` is one of the lexicon's, not a key's own words."""
    return attribute in phrasebook.by_name(lexicon)


def phrase_of(words: str, lexicon: Lexicon) -> Attribute | None:
    """The one attribute `words` are a phrase of whole, fillers aside ("standup": the standup
    time's); None for none or several, and for words that only hold a cue of one ("docs site")."""
    named = phrasebook.whole(" ".join(words.split()), lexicon)
    return phrasebook.by_name(lexicon)[next(iter(named))] if len(named) == 1 else None


# Read for each key of a batch and, on every keyed write, for the subject's stored facts of its
# attribute: cached, as `key_of` is.
@functools.lru_cache(maxsize=4096)
def qualified(words: str, lexicon: Lexicon) -> tuple[str, frozenset[str]] | None:
    """For a key of one of the lexicon's attributes: its head word's stem and the stems of the words
    that qualify it ("node version": version, {node}; "home address": address, {home}). A key the
    lexicon names by its head word alone is qualified only by words that are not its attribute's
    own ("request rate limit": limit, {}). None for own words."""
    key = key_of(words, lexicon)
    if key is None or not in_lexicon(key.attribute, lexicon):
        return None
    tidy = " ".join(words.split())
    head = _head(lexicon, tidy)
    if head is None:
        return None
    content = frozenset(lexicon.stems(tidy, drop=lexicon.stop_words | lexicon.key_fillers)) - {head}
    if phrasebook.whole(tidy, lexicon):
        return head, content
    own = phrasebook.parts(lexicon, phrasebook.by_name(lexicon)[key.attribute])
    return head, content - {stem for part in own for stem in part}


def qualifier_in(text: str, head: str, lexicon: Lexicon) -> frozenset[str]:
    """The stems of the word a text qualifies a key's head word with, where its key did not: "work"
    of "The user's work laptop is a ThinkPad X1." keyed "laptop". Only a plain word between a
    determiner or an owner and the head ("the login shell", "Heron's analytics database"; head
    first, "o notebook gamer"): no verb ("switched editors"), name or value ("a ThinkPad laptop"),
    function word, filler ("my new laptop": the one in use) or earlier value ("the old laptop")."""
    words = lexicon.tokens(text[:CUES_WITHIN_CHARS])
    skip = lexicon.stop_words | lexicon.key_fillers | lexicon.past_qualifiers
    leads = phrasebook.leading_words(lexicon)
    found: set[str] = set()
    for at, word in enumerate(words):
        if lexicon.stems(word) != (head,):
            continue
        lead, beside = (at - 2, at - 1) if lexicon.head_last else (at - 1, at + 1)
        if lead < 0 or beside >= len(words):
            continue
        led = words[lead].lower()
        other = words[beside]
        if (led in leads or _POSSESSIVE.fullmatch(led)) and other.islower() and other.isalpha() \
                and other not in skip and (stem := lexicon.stems(other)) != (head,):
            found.update(stem)
    return frozenset(found)


def holds_one(attribute: str, lexicon: Lexicon) -> bool:
    """Whether the lexicon's `attribute` holds one value at a time (home city) or many (allergies)."""
    return phrasebook.by_name(lexicon)[attribute].single


def kind_of(words: str, lexicon: Lexicon) -> str | None:
    """The kind of memory that states the attribute `words` name (the lexicon's `Attribute.kind`),
    when every attribute they may name agrees on one; None otherwise, or for a key of its own."""
    key = key_of(words, lexicon)
    if key is None:
        return None
    by_name = phrasebook.by_name(lexicon)
    kinds = {by_name[a].kind if a in by_name else None for a in (key.attribute, *key.alternatives)}
    return kinds.pop() if len(kinds) == 1 else None


def _head(lexicon: Lexicon, words: str) -> str | None:
    """The stem of a key's head word: its last word that is no function word in a language that puts
    the head last ("works on time": time), its first in one that puts it first."""
    content = lexicon.stems(words, drop=lexicon.stop_words | lexicon.key_fillers)
    if not content:
        return None
    return content[-1] if lexicon.head_last else content[0]


def none_of_the_subjects(words: str, lexicon: Lexicon) -> bool:
    """Whether a key states no value its subject holds now: one of a person in someone's life, named
    as the owner ("wife's employer", "sister's manager": the user of "The user's wife works at
    Globex." keyed so had their own employer replaced), or an earlier one ("previous employer",
    "old team": `Lexicon.past_qualifiers`). An attribute of its own words, then."""
    lower = words.lower()
    return (any(m.group(1) in lexicon.people for m in _POSSESSIVE.finditer(lower))
            or any(w in lexicon.past_qualifiers for w in lexicon.words(lower)))


_POSSESSIVE = re.compile(r"([^\W_]+)['’]s(?![\w'’])")


@functools.lru_cache(maxsize=4096)
def key_of(words: str, lexicon: Lexicon) -> Key | None:
    """The attribute `words` names; None when they hold nothing but fillers. Stored keys are read
    again on every keyed write of their subject, so this is cached."""
    tidy = " ".join(words.split())
    stems = lexicon.stems(tidy, drop=lexicon.key_fillers)
    if not stems:
        return None
    # "wife's employer", "previous employer": an attribute of its own words
    elsewhere = none_of_the_subjects(tidy, lexicon)
    named = frozenset() if elsewhere else phrasebook.whole(tidy, lexicon)
    if len(named) > 1:
        named = phrasebook.exact(lexicon).get(phrasebook.plain(lexicon, tidy), frozenset()) & named or named
    if len(named) > 1:
        named = phrasebook.verbatim(lexicon).get(" ".join(lexicon.words(tidy)), frozenset()) & named or named
    if named:
        # In the lexicon's order: the first is taken when the subject has none of the others.
        first, *others = [a for a in lexicon.attributes if a.name in named]
        return Key(first.name, tidy, first.single, tuple(a.name for a in others),
                   many=frozenset(a.name for a in others if not a.single))
    if not elsewhere and (valued := _value_of(tidy, lexicon)) is not None:
        return valued
    if not elsewhere:
        # The longest cue that holds the key's head word, of one attribute alone ("what they drive",
        # "carries the pager for"; not "works on time", a time zone, whose head is "time"). Requiring
        # the cue to be the whole key cost more right updates than it saved wrong ones (crm).
        cued = phrasebook.longest(phrasebook.held(stems, lexicon, head=_head(lexicon, tidy)))
        if cued is not None:
            attribute = phrasebook.by_name(lexicon)[cued]
            return Key(attribute.name, tidy, attribute.single)
    # Its own attribute. A plural head ("favourite colours") holds many values.
    last = lexicon.words(tidy)[-1]
    plural = last != stems[-1] and last.endswith("s") and not last.endswith("ss")
    return Key(" ".join(stems), tidy, not plural)


def _value_of(words: str, lexicon: Lexicon) -> Key | None:
    """The attribute whose value a key names by a word for what that value is (`Lexicon.value_words`)
    beside the attribute's own words: "office city" is the office (its head "city" made it a home
    city), "team name" the team, "car model" the car. None unless the rest is a phrase of the
    lexicon's whole ("work" of "work location" only holds an employer's cue)."""
    plain = lexicon.words(words)
    if len(plain) < 2:
        return None
    head, rest = (plain[-1], plain[:-1]) if lexicon.head_last else (plain[0], plain[1:])
    if head not in lexicon.value_words:
        return None
    said = " ".join(rest)
    if not phrasebook.whole(said, lexicon):
        return None
    key = key_of(said, lexicon)
    return replace(key, words=words) if key is not None else None


def own_attribute(words: str, lexicon: Lexicon) -> str | None:
    """The attribute `words` name when it is one of their own (not the lexicon's): what `key_of`
    names them; None for the lexicon's or for fillers alone."""
    key = key_of(words, lexicon)
    return key.attribute if key is not None and not in_lexicon(key.attribute, lexicon) else None


# A text's cues are read from this much of it, as its names are (graph/names.py): a keyed write of a
# long text would otherwise stem all of it on the event loop.
CUES_WITHIN_CHARS = 2000


def cue_of(key: Key, text: str, lexicon: Lexicon) -> str | None:
    """The one of the attributes `key`'s words name that the text's cues name ahead of the others
    (`cued_by`); None where the key names one attribute, or the cues choose none."""
    if not key.alternatives:
        return None
    stems = phrasebook.cue_stems(text[:CUES_WITHIN_CHARS], lexicon)

    def held(attribute: Attribute) -> tuple[int, int]:
        """(its longest cue or phrase the text holds, how many of them): "phone" is a number's
        word and a handset's, "iPhone" only a handset's."""
        found = [len(p) for p in phrasebook.parts(lexicon, attribute) if phrasebook.contains(stems, p)]
        return max(found, default=0), len(found)

    by_name = phrasebook.by_name(lexicon)
    scored = sorted(((held(by_name[a]), a) for a in (key.attribute, *key.alternatives)), reverse=True)
    return None if scored[0][0] == (0, 0) or scored[0][0] == scored[1][0] else scored[0][1]


def cued_by(key: Key, text: str, lexicon: Lexicon) -> Key:
    """`key` with the one of the attributes its words name that the text's cues alone name put
    first ("language" in "Keiko speaks Japanese and English": the languages she speaks, not a
    program's one language), ahead of the lexicon's order and of the subject's own facts
    (`within`)."""
    cued = cue_of(key, text, lexicon)
    if cued is None:
        return key
    if cued == key.attribute:
        return replace(key, cued=True)
    named = (key.attribute, *key.alternatives)
    chosen = phrasebook.by_name(lexicon)[cued]
    others = tuple(a for a in named if a != chosen.name)
    return replace(key, attribute=chosen.name, single=chosen.single, alternatives=others,
                   many=frozenset(a for a in others if not phrasebook.by_name(lexicon)[a].single), cued=True)


def filed_by_default(attribute: str, words: str, text: str, instead: str, lexicon: Lexicon) -> bool:
    """Whether a fact filed under `attribute` in `words` may as well be of `instead`: its words name
    both, and neither its text's cues chose (`cue_of`). ("based in" of "Fenna is based in
    Toronto." went to the lexicon's first, a home city, with nothing to tell it from an office.)
    The text is read only where the words name both."""
    key = key_of(words, lexicon)
    return (key is not None and instead != attribute and instead in {key.attribute, *key.alternatives}
            and cue_of(key, text, lexicon) is None)


# A present-tense question reads each of the subject's memories in its window (retrieval/focus.py),
# the same texts search after search.
@functools.lru_cache(maxsize=4096)
def cued_in(text: str, lexicon: Lexicon) -> frozenset[str]:
    """Every attribute of the lexicon whose cues or phrases `text`'s words hold."""
    return frozenset(phrasebook.held(phrasebook.cue_stems(text[:CUES_WITHIN_CHARS], lexicon), lexicon))


def key_in(text: str, lexicon: Lexicon, names: list[str]) -> Key | None:
    """The attribute a text states of its subject by rules: the one attribute whose cues or phrases
    its words hold (names left out: "Greta Town" is no town); None when none or several do. The
    key's words are the cue found."""
    masked = text
    for name in sorted(names, key=len, reverse=True):
        masked = masked.replace(name, " ")
    cued = phrasebook.longest(phrasebook.held(phrasebook.cue_stems(masked, lexicon), lexicon))
    if cued is None:
        return None
    attribute = phrasebook.by_name(lexicon)[cued]
    return Key(attribute.name, attribute.name, attribute.single)
