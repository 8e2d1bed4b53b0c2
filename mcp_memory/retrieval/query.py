"""What a query asks for, before any list is built: the words to match, the words to exclude, and
its temporal intent.

Questions carry words about time, not content ("Which city is Ana based in *these days*?").
As full-text terms they match unrelated memories ("Leo uses Vim every day *now*") and outrank
the right subject, so they are taken out of what the lists match and steer the ranking instead:
a question about the present wants the newest version of a fact first, and a question about
the past must not see older versions pushed down."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Literal
from uuid import UUID

from ..graph.about_user import asks_of_user_alone, without_user
from ..graph.names import NOT_NAMES, WORD, full_names_of, slugs, subject_of
from ..graph.questions import asked_of_any
from ..lexicon import Lexicon, phrases_pattern
from ..lexicon.english import ENGLISH
from ..models import QueryIntent, QueryPeriod
from .dates import YEAR, Period, find_period, tidy

__all__ = ["NOT_NAMES", "ParsedQuery", "full_names_of", "intent_of", "parse_query", "subject_of"]

Tense = Literal["present", "past"]


def tenses(lexicon: Lexicon) -> dict[Tense, tuple[str, ...]]:
    """The phrases that say which time a question is about (the lexicon's `present` and `past`).
    Lower case; a phrase matches as whole words, case-insensitively."""
    return {"present": lexicon.present, "past": lexicon.past}


# English's, for the readers that are given no lexicon.
TEMPORAL_PHRASES: dict[Tense, tuple[str, ...]] = tenses(ENGLISH)


@functools.lru_cache(maxsize=8)
def _patterns(lexicon: Lexicon) -> dict[Tense, re.Pattern[str]]:
    # Longest first, so "right now" is taken whole before "now".
    return {tense: re.compile(rf"(?<![\w'-])(?:{phrases_pattern(phrases)})(?![\w'-])", re.IGNORECASE)
            for tense, phrases in tenses(lexicon).items() if phrases}


@dataclass(frozen=True)
class ParsedQuery:
    text: str  # what the candidate lists match (the word lists: `matched`): time words and exclusions removed
    excluded: list[str]
    tense: Tense | None = None
    phrases: tuple[str, ...] = ()
    year: int | None = None
    period: Period | None = None  # the span of time it names ("in October 2023"), taken out of `text`
    subject: tuple[str, ...] = ()  # the names the question is about ("Pavel", "Jankowski")
    full_names: tuple[tuple[str, ...], ...] = ()  # those of them written together (("Pavel", "Jankowski"),)
    asked: str = ""  # the question as asked, time words kept (exclusions removed)
    # The language it was read in: the stages after parsing read its words (statement.py: the text
    # search configuration and the greetings).
    lexicon: Lexicon = field(default=ENGLISH, repr=False, compare=False)
    # What the word lists (full text, trigram) match: `text`, without the words for the user when it
    # asks an attribute of the user (`words_to_match`); None: `text`.
    words: str | None = None
    # It asks, with no time word, an attribute its subject's keyed facts hold one value of at a time
    # ("Who is Acme's CEO?", keyed "ceo"; "Which car do I have?"): a question about now (focus.py
    # `applies`, `similarities`; set once the facts are read, keyed.py `asked_now`).
    keyed_now: bool = False
    # Of a question about the user alone: the memories among the best results that the graph files
    # about someone in the user's life (whose.py `about_their_people`), none of them the user's.
    about_their_people: frozenset[UUID] = frozenset()

    @property
    def matched(self) -> str:
        return self.text if self.words is None else self.words


def split_query(query: str) -> tuple[str, list[str]]:
    """('what to find', ['excluded', 'words']): a leading '-' excludes a word everywhere."""
    words = query.split()
    excluded = [w[1:] for w in words if w.startswith("-") and len(w) > 1]
    return " ".join(w for w in words if not (w.startswith("-") and len(w) > 1)), excluded


def parse_query(query: str, lexicon: Lexicon = ENGLISH) -> ParsedQuery:
    """`query` read in `lexicon`'s language: its time words, the period it names, whom it names."""
    wanted, excluded = split_query(query)
    found: dict[Tense, list[str]] = {}
    # "before 2019" is both: a past tense and a period that ends when 2019 begins.
    period, text = find_period(wanted, lexicon)
    for tense, pattern in _patterns(lexicon).items():
        matches = [m.group(0).lower() for m in pattern.finditer(wanted)]
        if matches:
            found[tense] = matches
            text = pattern.sub(" ", text)
    # A single year is also recorded on its own (`explain`'s intent.year); as a period it lifts what
    # was written in it rather than narrowing to it.
    years = set(YEAR.findall(wanted))
    year = int(years.pop()) if len(years) == 1 else None
    # A query about both times ("used to … and now?") states no single intent.
    tense: Tense | None = next(iter(found)) if len(found) == 1 else None
    text = tidy(text, wanted)
    phrases = tuple(p for ps in found.values() for p in ps)
    return ParsedQuery(text=text, excluded=excluded, tense=tense, phrases=phrases, year=year, period=period,
                       subject=subject_of(text, lexicon), full_names=full_names_of(text, lexicon), asked=wanted,
                       lexicon=lexicon, words=words_to_match(text, lexicon))


def words_to_match(text: str, lexicon: Lexicon = ENGLISH) -> str | None:
    """`text` without its words for the user when it asks one of the lexicon's attributes of the
    user ("Who does the user work for now?"), else None. In a user's own store every memory is
    about the user, written as "User works at ..." or "I started a new job at ...": as a word to
    match, "user" lifts the first kind over the second and says nothing of which attribute, so
    the memories of any attribute written in the third person outranked the newest version of
    the one asked. The vector list still reads the whole question. Rules only, newest first /
    newest@1: assistant .800 / .567 -> .817 / .575; the other knowledge-update sets the same."""
    if not asks_of_user_alone(text, lexicon) or not asked_of_any(text, lexicon):
        return None
    rest = tidy(without_user(text, " ", lexicon), text)
    return rest if rest != text else None


def intent_of(parsed: ParsedQuery) -> QueryIntent | None:
    """What `explain` shows of the query's time: None when it says nothing about time."""
    if not (parsed.tense or parsed.year or parsed.period):
        return None
    period = parsed.period and QueryPeriod(phrase=parsed.period.phrase, start=parsed.period.start,
                                           end=parsed.period.end, month=parsed.period.month)
    return QueryIntent(tense=parsed.tense, phrases=list(parsed.phrases), year=parsed.year, period=period,
                       matched=parsed.matched)


def phrases_of(text: str, lexicon: Lexicon = ENGLISH) -> list[str]:
    """The runs of words of `text` (`word_runs`), then its slugs (names.py `slugs`: "billing-service"):
    what a question may be about when it names nobody."""
    return word_runs(text, lexicon) + slugs(text, lexicon)


RUN_WORDS = 4  # the most words a run of a question's words holds


def word_runs(text: str, lexicon: Lexicon = ENGLISH) -> list[str]:
    """Runs of two to `RUN_WORDS` words that begin and end with a content word ("coupons pipeline",
    "team Umbra"), longest first."""
    words = WORD.findall(text)
    runs = []
    for n in range(RUN_WORDS, 1, -1):
        for i in range(len(words) - n + 1):
            run = words[i:i + n]
            if run[0].lower() not in lexicon.not_names and run[-1].lower() not in lexicon.not_names:
                runs.append(" ".join(run))
    return runs


# A note's label: up to three words closed by a colon or a dash ("1:1 notes:", "Update -").
LABEL = re.compile(r"^\s*(?:\S+\s+){0,2}?\S+(?::|\s+-)\s+")


@functools.lru_cache(maxsize=4096)  # a write compares its text with each near memory's, which recur
def word_pairs(text: str, lexicon: Lexicon = ENGLISH) -> frozenset[tuple[str, str]]:
    """Each content word with the next and the one after it, lower case, possessives cut: "Maya
    Okafor's flat" gives (maya, okafor), (maya, flat), (okafor, flat); "User now prefers tabs"
    shares (user, prefers) with "User prefers spaces". Two memories sharing a pair likely speak
    of one thing."""
    words = [w.lower().removesuffix("'s") for w in WORD.findall(text)]
    return frozenset((a, b) for i, a in enumerate(words) for b in words[i + 1:i + 3]
                     if a not in lexicon.not_names and b not in lexicon.not_names)
