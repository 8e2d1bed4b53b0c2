"""The period a query names ("in October 2023", "on 13 October, 2023", "during June", "before
2019"): found in its text, taken out of the words matched, and given to the ranking, which lifts
the memories written in it (retrieval/search.py).

A named date says when, not what: as a full-text term "October" matches no memory of October
events ("We went camping last weekend"), and in a sentence embedding it only blurs the question.
Memories carry the time they were written (`occurred_at`), and what happened in a period is
mostly written in it or in the days after it ("last Friday I went …"), so the ranking widens the
period at its end (`MCP_MEMORY_PERIOD_AFTER_DAYS`). The words (month names, the words that
bound or lead a date) are the lexicon's; numbers and ISO dates are every language's."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from ..lexicon import Lexicon, phrases_pattern
from ..lexicon.english import ENGLISH

T = TypeVar("T")

_NEVER = "(?!)"  # what a part whose words a language leaves empty matches: nothing
_YEAR = r"(?P<year>19\d\d|2[01]\d\d)"
# Not inside a word, a hyphenated name or a number: "2019-style" and "version 2024.1" name no
# year.
_BEFORE, _AFTER = r"(?<![\w.-])", r"(?![\w-]|\.\d)"
#: A year as a word, read the same way.
YEAR = re.compile(_BEFORE + r"(19\d\d|2[01]\d\d)" + _AFTER)

_SPACE = re.compile(r"\s+")
_DANGLING = re.compile(r"\s+([?!.,;:])")


def _numbered(form: str, i: int) -> str:
    """`form` with its group names suffixed by `i`: Python's `re` wants each name once."""
    return re.sub(r"\?P<(\w+)>", lambda m: f"?P<{m[1]}{i}>", form)


def _optional(words: tuple[str, ...]) -> str:
    """One of `words` and the white space after it, or nothing."""
    return rf"(?:(?:{phrases_pattern(words)})\s+)?" if words else ""


@dataclass(frozen=True)
class _Dates:
    months: dict[str, int]  # every month name and abbreviation, lower case -> 1..12
    dated: re.Pattern[str]  # a day, a month or a year, maybe bounded ("before 2019")
    month_only: re.Pattern[str]  # a month named alone ("in June")


@functools.lru_cache(maxsize=8)
def _dates(lexicon: Lexicon) -> _Dates:
    """The lexicon's dates as patterns, built once per lexicon."""
    months = {**lexicon.months, **lexicon.month_abbreviations}
    # Full names, then abbreviations with an optional dot; "May" and "March" are words too, so a
    # month named without a day or year needs a word before it (below).
    month = "(?P<month>" + (phrases_pattern(tuple(months)) or _NEVER) + r")\.?"
    suffix = f"(?:{phrases_pattern(lexicon.day_suffixes)})?" if lexicon.day_suffixes else ""
    day = r"(?P<day>[0-3]?\d)" + suffix
    # Words that bound the period instead of naming it.
    bound = r"(?:(?P<bound>" + (phrases_pattern(tuple(lexicon.date_bounds)) or _NEVER) + r")\s+)?"
    day_month = r"\s+" + _optional(lexicon.day_month_joiners)
    month_year = r",?\s+" + _optional(lexicon.month_year_joiners)
    forms = [
        rf"{day}{day_month}{month}{month_year}{_YEAR}",            # 13 October 2023, 3 June, 2023
        rf"{month}\s+{day},?\s+{_YEAR}",                          # October 13, 2023
        rf"(?P<iso>{_YEAR}-(?P<iso_month>[01]\d)-(?P<iso_day>[0-3]\d))",  # 2023-10-13
        rf"{month}{month_year}{_YEAR}",                            # October 2023
        rf"{_YEAR}",                                               # 2023
    ]
    dated = re.compile(
        _BEFORE + bound + _optional(lexicon.date_leads)
        + "(?:" + "|".join(f"(?:{_numbered(form, i)})" for i, form in enumerate(forms)) + ")" + _AFTER,
        re.IGNORECASE)
    # A month alone ("in June", "during september", "last July"): that month of any year. Only full
    # names: "the opinion of Jan" names no month.
    full = "(?P<month>" + (phrases_pattern(tuple(lexicon.months)) or _NEVER) + ")"
    leads = rf"(?:(?:{phrases_pattern(lexicon.month_leads)})\s+)" if lexicon.month_leads else _NEVER
    month_only = re.compile(r"(?<![\w-])" + bound + leads + full + r"(?![\w-])", re.IGNORECASE)
    return _Dates(months, dated, month_only)


@dataclass(frozen=True)
class Period:
    """A span of time a query names: [start, end) in UTC, either side open, or a month of any
    year (`month`, 1-12) when the query names a month without its year."""

    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None
    phrase: str = ""

    @property
    def dated(self) -> bool:
        """Bounded by a date on at least one side (not a month of any year)."""
        return self.start is not None or self.end is not None


def _group(match: re.Match[str], name: str) -> str | None:
    for key, value in match.groupdict().items():
        if value is not None and re.fullmatch(rf"{name}\d*", key):
            return value
    return None


def _span(match: re.Match[str], months: dict[str, int]) -> tuple[datetime, datetime] | None:
    """[start, end) of a dated phrase: a day, a month or a year; None for an impossible date."""
    year = int(_group(match, "year") or 0)
    if _group(match, "iso"):
        month, day = int(_group(match, "iso_month") or 0), int(_group(match, "iso_day") or 0)
    else:
        name = _group(match, "month")
        month = months[_as_listed(name)] if name else 0
        day = int(_group(match, "day") or 0)
    try:
        if day:
            start = datetime(year, month, day, tzinfo=UTC)
            return start, _days(start, 1)
        if month:
            return datetime(year, month, 1, tzinfo=UTC), _month_after(year, month)
        return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    except ValueError:  # "31 June 2023"
        return None


def _bounded(bound: str | None, start: datetime, end: datetime,
             lexicon: Lexicon) -> tuple[datetime | None, datetime | None]:
    if not bound:
        return start, end
    kind = lexicon.date_bounds[_as_listed(bound)]
    if kind in ("before", "until"):
        return None, (start if kind == "before" else end)
    return (end if kind == "after" else start), None  # after, since


def find_period(text: str, lexicon: Lexicon = ENGLISH) -> tuple[Period | None, str]:
    """The period `text` names and `text` without it, read with `lexicon`'s words. Several dated
    phrases ("between May 2023 and July 2023") give the span from the first start to the last end;
    a month named without a year only counts when no full date is there."""
    dates = _dates(lexicon)
    spans: list[tuple[datetime | None, datetime | None]] = []
    phrases: list[str] = []

    def take(match: re.Match[str]) -> str:
        span = _span(match, dates.months)
        if span is None:
            return match.group(0)
        spans.append(_bounded(match.group("bound"), *span, lexicon))
        phrases.append(match.group(0))
        return " "

    rest = dates.dated.sub(take, text)
    if spans:
        starts = [s for s, _ in spans]
        ends = [e for _, e in spans]
        period = Period(start=None if None in starts else min(s for s in starts if s is not None),
                        end=None if None in ends else max(e for e in ends if e is not None),
                        phrase="; ".join(phrases))
        return period, tidy(rest, text)
    match = dates.month_only.search(text)
    if match is None:
        return None, text
    period = Period(month=dates.months[_as_listed(match.group("month"))], phrase=match.group(0))
    return period, tidy(text[:match.start()] + " " + text[match.end():], text)


def began_on(text: str, lexicon: Lexicon = ENGLISH, now: datetime | None = None) -> datetime | None:
    """The start of the one dated phrase `text` names (a day, a month of a year, a year; maybe
    after a bound opening a span: "since 2019"), or, read against `now`, of the one day, week, month
    or year it names from then ("yesterday", "two weeks ago", "last month", "next year"); None
    where it names none or several, or an impossible date, or a bound ending a span ("before
    2019"). Reading stops at the second phrase, whatever the text's length."""
    dates, relative = _dates(lexicon), _relative(lexicon)
    found = list(itertools.islice(dates.dated.finditer(text), 2))
    if now is not None and len(found) < 2:
        found += itertools.islice(relative.finditer(text), 2 - len(found))
    if len(found) != 1:
        return None
    if now is not None and found[0].re is relative:
        return _from(found[0], lexicon, now)
    span = _span(found[0], dates.months)
    return _bounded(found[0].group("bound"), *span, lexicon)[0] if span is not None else None


@functools.lru_cache(maxsize=8)
def _relative(lexicon: Lexicon) -> re.Pattern[str]:
    """The lexicon's days, and its units of time counted back or named next to now, as one pattern
    (`began_on`); a shape the language leaves empty matches nothing."""
    units = "(?:" + (phrases_pattern(tuple(lexicon.time_units)) or _NEVER) + ")"
    # The unit before or after this one, or the day of the week ("last Monday").
    named = "(?:" + (phrases_pattern((*lexicon.time_units, *lexicon.weekdays)) or _NEVER) + ")"
    count = r"(?:\d{1,3}|" + (phrases_pattern(tuple(lexicon.counts)) or _NEVER) + ")"

    def words(w: tuple[str, ...]) -> str:
        return "(?:" + (phrases_pattern(w) or _NEVER) + ")"

    shapes = [
        "(?P<day>" + (phrases_pattern(tuple(lexicon.days_from_today)) or _NEVER) + ")",
        rf"(?P<n1>{count})\s+(?P<u1>{units})\s+{words(lexicon.ago_after)}",
        rf"{words(lexicon.ago_before)}\s+(?P<n2>{count})\s+(?P<u2>{units})",
        rf"{words(lexicon.last_before)}\s+(?P<last1>{named})",
        rf"(?P<last2>{named})\s+{words(lexicon.last_after)}",
        rf"{words(lexicon.next_before)}\s+(?P<next1>{named})",
        rf"(?P<next2>{named})\s+{words(lexicon.next_after)}",
    ]
    return re.compile(r"(?<![\w'-])(?:" + "|".join(shapes) + r")(?![\w'-])", re.IGNORECASE)


def _from(match: re.Match[str], lexicon: Lexicon, now: datetime) -> datetime:
    """The start of what a `_relative` match names, read against `now`: a day, the day a count of
    units back (the same day of the month or year, the last where it has none), the unit before
    or after this one (the week seven days off, the month's or year's first day), or the day of the
    week before or after this day ("last Monday", "next Friday": never this day itself)."""
    today = datetime(now.year, now.month, now.day, tzinfo=UTC)
    groups = {k: v for k, v in match.groupdict().items() if v is not None}
    if "day" in groups:
        return _days(today, lexicon.days_from_today[_as_listed(groups["day"])])
    named = _as_listed(next(v for k, v in groups.items() if k[:-1] in ("u", "last", "next")))
    step = -1 if "last1" in groups or "last2" in groups else 1
    if named in lexicon.weekdays:
        return _weekday(today, lexicon.weekdays[named], step)
    unit = lexicon.time_units[named]
    if "u1" in groups or "u2" in groups:
        said = groups.get("n1") or groups["n2"]
        n = int(said) if said.isdigit() else lexicon.counts[_as_listed(said)]
        return _shifted(today, unit, -n)
    if unit == "month":
        return _shifted(today.replace(day=1), "month", step)
    if unit == "year":
        return today.replace(year=today.year + step, month=1, day=1)
    return _shifted(today, unit, step)


def _as_listed(words: str) -> str:
    """`words` as the lexicon lists them: lower case, one space between ("Last  Month" -> "last month")."""
    return _SPACE.sub(" ", words.lower())


def _weekday(today: datetime, weekday: int, step: int) -> datetime:
    """The start of the latest `weekday` (Monday 0) before `today` (`step` -1), or the first after it."""
    apart = (step * (weekday - today.weekday())) % 7 or 7
    return _days(today, step * apart)


def _days(day: datetime, n: int) -> datetime:
    """The start of the day `n` days after `day`'s."""
    return datetime.fromordinal(day.toordinal() + n).replace(tzinfo=UTC)


def _month_after(year: int, month: int) -> datetime:
    """The first day of the month after `month` (1-12) of `year`."""
    return datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)


def _shifted(day: datetime, unit: str, n: int) -> datetime:
    """`day` moved by `n` units, the day of the month kept where the month has it, else its last."""
    if unit in ("day", "week"):
        return _days(day, n * (7 if unit == "week" else 1))
    year, month = divmod(day.year * 12 + day.month - 1 + n * (12 if unit == "year" else 1), 12)
    last = _days(_month_after(year, month + 1), -1).day
    return datetime(year, month + 1, min(day.day, last), tzinfo=UTC)


def tidy(rest: str, original: str) -> str:
    """`rest`, what is left of `original` once words about time are taken out, with its spaces
    and punctuation mended; `original` itself when nothing but time words was there (they are
    then what it is about)."""
    # A time phrase opening the question leaves its comma behind ("In March 2025, what was ...").
    rest = _DANGLING.sub(r"\1", _SPACE.sub(" ", rest)).strip().lstrip(",;: ")
    return rest if any(ch.isalnum() for ch in rest) else original


@dataclass(frozen=True)
class Bound:
    """A question placing what it asks before or after a value rather than a date ("Where did Priya
    live before Lisbon?"): the bound's kind, the word after it, and where the two stand."""

    kind: str  # "before", "after" or "since" (the lexicon's `date_bounds`)
    word: str  # lower case
    start: int
    end: int

    def nearest_first(self, items: Iterable[T], moment: Callable[[T], datetime], pivot: datetime) -> list[T]:
        """Those of `items` on this bound's side of `pivot` (the moment of what names the value),
        the nearest first: before it the latest first, after or since it the earliest first."""
        later = self.kind != "before"
        return sorted((i for i in items if (moment(i) > pivot if later else moment(i) < pivot)), key=moment,
                      reverse=not later)


@functools.lru_cache(maxsize=8)
def _bound_then_word(lexicon: Lexicon) -> re.Pattern[str]:
    article = rf"(?:(?:{phrases_pattern(lexicon.articles)})\s+)?" if lexicon.articles else ""
    return re.compile(rf"(?<![\w'-])({phrases_pattern(tuple(lexicon.date_bounds))})\s+{article}([\w'-]+)",
                      re.IGNORECASE)


def value_bounds(question: str, lexicon: Lexicon = ENGLISH) -> list[Bound]:
    """Each bound of time in `question` followed by a word that may be a value ("before Lisbon",
    "after the Tesla": its article passed over), in order: a stop word after it names none, and
    "until" and "by" bound a time only before a date ("Who is managed by Signe?")."""
    found = []
    for match in _bound_then_word(lexicon).finditer(question):
        word = match.group(2).lower()
        kind = lexicon.date_bounds[" ".join(match.group(1).lower().split())]
        if word not in lexicon.stop_words and kind in ("before", "after", "since"):
            found.append(Bound(kind, word, match.start(), match.end()))
    return found
