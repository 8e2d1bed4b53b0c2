"""Which of a subject's attributes a question asks about, by a language's words: the words after
its determiner ("Which machine ..."), its cues, phrases and the words the subject's keys were
written in, or what its question word asks for ("who": a person). The keys themselves are
keys.py's."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from ..lexicon import Answer, Lexicon
from . import phrasebook
from .name_forms import MASK


def asked(question: str, lexicon: Lexicon, known: dict[str, list[str]]) -> str | None:
    """Which of `known` (an entity's attributes -> the words its keys were written in) `question`
    asks about: the one the words after its determiner name (`Lexicon.question_determiners`), else
    the one whose cues, phrases or keys its words hold, the longest match winning; None when none
    or a tie."""
    scored = _matched(question, lexicon, known)
    determined = _determined(question, lexicon)
    chosen = (phrasebook.longest({a: n for n, a in _matched(" ".join(determined), lexicon, known)})
              if determined else None)
    # What the question's determiner governs comes first ("Which machine does the user work on?":
    # the laptop, though "work on" is a project's longer phrase), unless the question names an
    # attribute sharing a phrase with it too: a writer's words may file either's values under the
    # other ("based in": a home city's and an office's), and the question cannot tell which.
    if chosen is not None and not {a for _, a in scored} & _sharing(lexicon).get(chosen, frozenset()):
        return chosen
    if chosen is None and determined:
        scored = _not_instead(scored, determined, lexicon)
    if not scored or len(scored) > 1 and scored[0][0] == scored[1][0]:
        return None
    return scored[0][1]


def _not_instead(scored: list[tuple[int, str]], determined: list[str], lexicon: Lexicon) -> list[tuple[int, str]]:
    """`scored` less the lexicon's attributes other than the one the determiner's words name by a
    phrase, where the subject holds none of that one ("Which Postgres version does billing-service
    run on?" asks no deploy target because "runs on" is one of its phrases): the lexicon's attributes
    are never one another, a key in the writer's own words may be any of them, and one sharing a
    phrase with it may hold its values ("based in")."""
    named = phrasebook.phrased(lexicon.stems(" ".join(determined)), lexicon)
    if not named:
        return scored
    kept = named.union(*(_sharing(lexicon).get(a, frozenset()) for a in named))
    lexicons = phrasebook.by_name(lexicon)
    return [(n, a) for n, a in scored if a in kept or a not in lexicons]


def _matched(question: str, lexicon: Lexicon, known: dict[str, list[str]]) -> list[tuple[int, str]]:
    """Each of `known` whose cues, phrases or keys `question` holds, with its longest match's
    length, longest first."""
    stems = lexicon.stems(question)
    cued = phrasebook.held(stems, lexicon)
    scored = []
    for attribute, keys in known.items():
        best = max((len(p) for p in (lexicon.stems(k, drop=lexicon.key_fillers) for k in keys)
                    if phrasebook.contains(stems, p)), default=0)
        best = max(best, cued.get(attribute, 0))
        if best:
            scored.append((best, attribute))
    return sorted(scored, reverse=True)


@functools.lru_cache(maxsize=8)
def _sharing(lexicon: Lexicon) -> dict[str, frozenset[str]]:
    """Each attribute -> the others it shares a phrase with ("home city" and "office": "based in")."""
    out: dict[str, set[str]] = {}
    for names in phrasebook.exact(lexicon).values():
        for name in names:
            out.setdefault(name, set()).update(names - {name})
    return {name: frozenset(others) for name, others in out.items()}


# The words after a question determiner that may name what it asks for: the noun and the words
# before it ("Which JS package manager", "What car").
DETERMINED_WORDS = 3


def _determined(question: str, lexicon: Lexicon) -> list[str]:
    """The few words right after the question's first determiner ("which", "what"), where they open
    on no stop word ("What does ...", "What is ..."); none without one."""
    words = lexicon.words(question)
    at = next((i for i, w in enumerate(words) if w in lexicon.question_determiners), None)
    if at is None or at + 1 >= len(words) or words[at + 1] in lexicon.stop_words:
        return []
    return words[at + 1:at + 1 + DETERMINED_WORDS]


def asked_for(question: str, lexicon: Lexicon, known: Iterable[str]) -> str | None:
    """Which of `known` (an entity's attributes) a question asks that names none of them in words,
    by what its question word asks for (`Lexicon.question_words`): "Who is on point for the refunds
    pipeline now?" its owner, the one of them whose values are people; "Where does team Skua chat
    these days?" its channel, not its standup time. None where its words name an attribute of that
    kind ("Where did I grow up?" asks the hometown, which the subject may hold under a key in other
    words, not its home city), where it has no such question word or asks for more than one kind,
    or where the subject has not exactly one attribute of that kind (a key in a writer's own words
    has none)."""
    kind = asked_kind(question, lexicon)
    by_name = phrasebook.by_name(lexicon)
    if kind is None or any(by_name[a].answers == kind for a in asked_of_any(question, lexicon)):
        return None
    fits = [a for a in dict.fromkeys(known) if a in by_name and by_name[a].answers == kind]
    return fits[0] if len(fits) == 1 else None


def asked_kind(question: str, lexicon: Lexicon) -> Answer | None:
    """What `question`'s question word asks for (`Lexicon.question_words`: "who" a person); None for
    none, or for words asking more than one kind."""
    asks = {lexicon.question_words[w] for w in lexicon.words(question) if w in lexicon.question_words}
    return next(iter(asks)) if len(asks) == 1 else None


# A present-tense question asks it several times (retrieval/focus.py: whether the subject's facts are
# one version each, where the chain starts, which memories state it), and a question comes again;
# ~0.3 ms a reading.
@functools.lru_cache(maxsize=1024)
def asked_of_any(question: str, lexicon: Lexicon) -> frozenset[str]:
    """Which of all the lexicon's attributes `question` asks about by their cues and phrases, the
    longest match winning, all of them on a tie ("Which phone ...": a handset or a number); none
    when none."""
    stems = lexicon.stems(question)
    held = phrasebook.held(stems, lexicon)
    longest = max(held.values(), default=0)
    tied = frozenset(name for name, length in held.items() if length == longest)
    if len(tied) < 2:
        return tied
    # On a tie, an attribute named only right after a determiner or an owner names what the question
    # asks of, not what it asks ("Who insures the car?", "Who manages the team?", "What laptop does the
    # team use?"; "Who is someone car insurer?", the user masked); where each is, the one after an
    # owner's word ("a seguradora do carro").
    owners = {lexicon.stems(w)[0] for w in lexicon.possessive_words}
    leads = owners | {lexicon.stems(w)[0] for w in (*phrasebook.leading_words(lexicon), MASK)}
    return (_not_only_after(tied, leads, stems, longest, lexicon)
            or _not_only_after(tied, owners, stems, longest, lexicon) or tied)


def _not_only_after(names: frozenset[str], leads: set[str], stems: tuple[str, ...], length: int,
                    lexicon: Lexicon) -> frozenset[str]:
    """Those of the attributes `names` that `stems` name somewhere other than right after one of `leads`."""
    return frozenset(name for name in names if any(at == 0 or stems[at - 1] not in leads
                                                   for at in phrasebook.found_at(stems, lexicon, name, length)))


@functools.lru_cache(maxsize=1024)
def words_of_asked(question: str, lexicon: Lexicon) -> frozenset[str]:
    """The stems of the words the lexicon names the attributes `question` asks with (their names,
    phrases and cues): what the question asks, never whom it asks it of ("Postgres" in "Which
    Postgres version does the ledger pipeline use?", "rate limit" in "What rate limit does the
    invoicing worker have?"). Stop words, key fillers ("current") and the lexicon's classifiers left
    out: a classifier names a subject's kind beside its name ("Where does team Plover chat?")."""
    by_name = phrasebook.by_name(lexicon)
    ignore = lexicon.stop_words | lexicon.classifiers | lexicon.key_fillers
    return frozenset(stem for name in asked_of_any(question, lexicon)
                     for phrase in (name, *by_name[name].phrases, *by_name[name].cues)
                     for stem in lexicon.stems(phrase, drop=ignore))
