"""The period a query names ("in October 2023", "on 13 October, 2023", "during June", "before
2019"): found in its text, taken out of the words matched, and given to the ranking, which lifts
the memories written in it (retrieval/search.py).

A named date says when, not what: as a full-text term "October" matches no memory of October
events ("We went camping last weekend"), and in a sentence embedding it only blurs the question.
Memories carry the time they were written (`occurred_at`), and what happened in a period is
mostly written in it or in the days after it ("last Friday I went …"), so the ranking widens the
period at its end (`MCP_MEMORY_PERIOD_AFTER_DAYS`). English month names; add a language by adding
its names to `_MONTHS`."""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime

_MONTHS: dict[str, int] = {}
for _number in range(1, 13):
    _MONTHS[calendar.month_name[_number].lower()] = _number
    _MONTHS[calendar.month_abbr[_number].lower()] = _number
_MONTHS["sept"] = 9

# Full names, then abbreviations with an optional dot; "May" and "March" are words too, so a
# month named without a day or year needs a preposition before it (below).
_MONTH = "(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>19\d\d|2[01]\d\d)"
# Words that bound the period instead of naming it.
_BOUND = r"(?:(?P<bound>before|until|till|by|prior\s+to|after|since)\s+)?"
_LEAD = r"(?:(?:in|on|during|of|around|throughout|early|late|mid-?)\s+)?"

_FORMS = [
    rf"{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}",          # 13 October 2023, 3 June, 2023
    rf"{_MONTH}\s+{_DAY},?\s+{_YEAR}",                     # October 13, 2023
    rf"(?P<iso>{_YEAR}-(?P<iso_month>[01]\d)-(?P<iso_day>[0-3]\d))",  # 2023-10-13
    rf"{_MONTH},?\s+{_YEAR}",                              # October 2023
    rf"{_YEAR}",                                           # 2023
]
# A month alone ("in June", "during september", "last July"): that month of any year. Only full
# names: "the opinion of Jan" names no month.
_FULL_MONTH = "(?P<month>" + "|".join(calendar.month_name[n].lower() for n in range(1, 13)) + ")"
_MONTH_ONLY = re.compile(
    r"(?<![\w-])" + _BOUND + r"(?:(?:in|during|throughout|early|late|mid-?|last|this|of)\s+)"
    + _FULL_MONTH + r"(?![\w-])", re.IGNORECASE)


def _numbered(form: str, i: int) -> str:
    """`form` with its group names suffixed by `i`: Python's `re` wants each name once."""
    return re.sub(r"\?P<(\w+)>", lambda m: f"?P<{m[1]}{i}>", form)


# Not inside a word, a hyphenated name or a number: "2019-style" and "version 2024.1" name no
# year.
_BEFORE, _AFTER = r"(?<![\w.-])", r"(?![\w-]|\.\d)"
_DATED = re.compile(
    _BEFORE + _BOUND + _LEAD + "(?:" + "|".join(f"(?:{_numbered(form, i)})" for i, form in enumerate(_FORMS))
    + ")" + _AFTER, re.IGNORECASE)
#: A year as a word, read the same way.
YEAR = re.compile(_BEFORE + r"(19\d\d|2[01]\d\d)" + _AFTER)

_SPACE = re.compile(r"\s+")
_DANGLING = re.compile(r"\s+([?!.,;:])")


@dataclass(frozen=True)
class Period:
    """A span of time a query names: [start, end) in UTC, either side open, or a month of any
    year (`month`, 1-12) when the query names a month without its year."""

    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None
    phrase: str = ""


def _group(match: re.Match[str], name: str) -> str | None:
    for key, value in match.groupdict().items():
        if value is not None and re.fullmatch(rf"{name}\d*", key):
            return value
    return None


def _span(match: re.Match[str]) -> tuple[datetime, datetime] | None:
    """[start, end) of a dated phrase: a day, a month or a year; None for an impossible date."""
    year = int(_group(match, "year") or 0)
    if _group(match, "iso"):
        month, day = int(_group(match, "iso_month") or 0), int(_group(match, "iso_day") or 0)
    else:
        name = _group(match, "month")
        month = _MONTHS[name.lower()] if name else 0
        day = int(_group(match, "day") or 0)
    try:
        if day:
            start = datetime(year, month, day, tzinfo=UTC)
            return start, datetime.fromordinal(start.toordinal() + 1).replace(tzinfo=UTC)
        if month:
            return (datetime(year, month, 1, tzinfo=UTC),
                    datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC))
        return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    except ValueError:  # "31 June 2023"
        return None


def _bounded(bound: str | None, start: datetime, end: datetime) -> tuple[datetime | None, datetime | None]:
    if not bound:
        return start, end
    bound = _SPACE.sub(" ", bound.lower())
    if bound in ("before", "until", "till", "by", "prior to"):
        return None, (start if bound in ("before", "prior to") else end)
    return (end if bound == "after" else start), None  # after, since


def find_period(text: str) -> tuple[Period | None, str]:
    """The period `text` names and `text` without it. Several dated phrases ("between May 2023
    and July 2023") give the span from the first start to the last end; a month named without a
    year only counts when no full date is there."""
    spans: list[tuple[datetime | None, datetime | None]] = []
    phrases: list[str] = []

    def take(match: re.Match[str]) -> str:
        span = _span(match)
        if span is None:
            return match.group(0)
        spans.append(_bounded(match.group("bound"), *span))
        phrases.append(match.group(0))
        return " "

    rest = _DATED.sub(take, text)
    if spans:
        starts = [s for s, _ in spans]
        ends = [e for _, e in spans]
        period = Period(start=None if None in starts else min(s for s in starts if s is not None),
                        end=None if None in ends else max(e for e in ends if e is not None),
                        phrase="; ".join(phrases))
        return period, tidy(rest, text)
    match = _MONTH_ONLY.search(text)
    if match is None:
        return None, text
    period = Period(month=_MONTHS[match.group("month").lower()], phrase=match.group(0))
    return period, tidy(text[:match.start()] + " " + text[match.end():], text)


def tidy(rest: str, original: str) -> str:
    """`rest`, what is left of `original` once words about time are taken out, with its spaces
    and punctuation mended; `original` itself when nothing but time words was there (they are
    then what it is about)."""
    rest = _DANGLING.sub(r"\1", _SPACE.sub(" ", rest)).strip()
    return rest if any(ch.isalnum() for ch in rest) else original
