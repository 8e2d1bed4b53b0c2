"""A period named in a query ("in October 2023", "on 3 June, 2023", "during June", "before
2019"): recognised, taken out of the words matched, and lifting the memories written in it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.lexicon.portuguese import PORTUGUESE
from mcp_memory.models import Principal
from mcp_memory.repository import MemoryRepository
from mcp_memory.retrieval.dates import began_on, find_period
from mcp_memory.service import MemoryService


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(("query", "start", "end", "rest"), [
    ("What painting did Mel show on October 13, 2023?", day(2023, 10, 13), day(2023, 10, 14),
     "What painting did Mel show?"),
    ("Who did Maria have dinner with on 3 June, 2023?", day(2023, 6, 3), day(2023, 6, 4),
     "Who did Maria have dinner with?"),
    ("what did we ship on the 2nd of ... no: 2 Feb 2024", day(2024, 2, 2), day(2024, 2, 3),
     "what did we ship on the 2nd of... no:"),
    ("What did Maria donate in December 2023?", day(2023, 12, 1), day(2024, 1, 1), "What did Maria donate?"),
    ("what changed in Sept. 2025", day(2025, 9, 1), day(2025, 10, 1), "what changed"),
    ("How often did Mel go to the beach in 2023?", day(2023, 1, 1), day(2024, 1, 1),
     "How often did Mel go to the beach?"),
    ("deploys since 2024-03-05", day(2024, 3, 5), None, "deploys"),
    ("Where did Ana work before 2019?", None, day(2019, 1, 1), "Where did Ana work?"),
    ("Where did Ana work after 2019?", day(2020, 1, 1), None, "Where did Ana work?"),
    ("What happened between May 2023 and July 2023?", day(2023, 5, 1), day(2023, 8, 1),
     "What happened between and?"),
    # A phrase opening the question takes its lead ("Back in") and leaves no comma behind.
    ("Back in September 2024, what was Quinn's title?", day(2024, 9, 1), day(2024, 10, 1),
     "what was Quinn's title?"),
])
def test_dated_periods(query: str, start: datetime | None, end: datetime | None, rest: str) -> None:
    period, text = find_period(query)
    assert period is not None and (period.start, period.end, period.month) == (start, end, None)
    assert text == rest


@pytest.mark.parametrize(("query", "month", "rest"), [
    ("When did Melanie go camping in June?", 6, "When did Melanie go camping?"),
    ("What did we plan during SEPTEMBER", 9, "What did we plan"),
    ("the offsite last March", 3, "the offsite"),
])
def test_a_month_without_its_year_is_that_month_of_any_year(query: str, month: int, rest: str) -> None:
    period, text = find_period(query)
    assert period is not None and (period.start, period.end, period.month) == (None, None, month)
    assert text == rest


@pytest.mark.parametrize("query", [
    "May I see my notes?",          # a month's name that is a word
    "What is the march schedule",
    "port 2019-style config",       # a number inside an identifier
    "party on 31 June 2023",        # no such day
    "the 12 monkeys",
    "What changed in version 2024.1?",  # a release number
    "the opinion of Jan on the design",  # an abbreviation alone is a name, not a month
])
def test_no_period(query: str) -> None:
    assert find_period(query) == (None, query)


async def test_a_named_month_lifts_what_was_written_in_it(service: MemoryService, alice: Principal,
                                                          settings: Settings, database: Database) -> None:
    """Two trips, told alike: the one written in (or just after) the month asked about wins, and
    with the factor off the other one (the newer) does."""
    for filler in ("Evan: the car needs new tyres before winter", "Sam: I drove to work in the rain",
                   "Evan: the lake house has a new dock"):
        await service.write(alice, filler, occurred_at=day(2026, 1, 20))
    october = (await service.write(alice, "Evan: we went up to the lake in the new car last weekend",
                                   occurred_at=day(2025, 11, 3))).memory
    later = (await service.write(alice, "Evan: we drive to the lake a lot with the new car",
                                 occurred_at=day(2026, 3, 9))).memory
    result = await service.search(alice, "Where did Evan drive in October 2025?", explain=True)
    hits = {h.id: h for h in result.hits}
    assert result.hits[0].id == october.id
    assert hits[october.id].explain["period"] == settings.period_boost and hits[later.id].explain["period"] == 1
    assert result.intent is not None and result.intent.period is not None
    assert result.intent.period.phrase == "in October 2025" and "October" not in result.intent.matched

    off = MemoryService(MemoryRepository(database.pool), settings.model_copy(update={"period_boost": 1.0}),
                        service.vectors)
    assert (await off.search(alice, "Where did Evan drive in October 2025?")).hits[0].id == later.id
    # A month named without its year: that month of any year.
    assert (await service.search(alice, "Where did Evan drive in March?")).hits[0].id == later.id


@pytest.mark.parametrize(("when", "lifted_by"), [("0001-01-01 00:00:00+00", "Runnymede before 2019"),
                                                 ("9999-12-31 00:00:00+00", "Runnymede since 2019")])
async def test_a_dated_query_over_odd_dates_still_answers(service: MemoryService, database: Database,
                                                          alice: Principal, settings: Settings, when: str,
                                                          lifted_by: str) -> None:
    odd = (await service.write(alice, "Magna Carta was sealed at Runnymede")).memory
    async with database.admin.acquire() as conn:
        await conn.execute("UPDATE memories SET occurred_at = $1::text::timestamptz WHERE id = $2", when, odd.id)
    for query in ("Runnymede in June", "Runnymede in June 1215", "Runnymede before 2019", "Runnymede since 2019"):
        hits = (await service.search(alice, query, explain=True)).hits
        assert [h.id for h in hits] == [odd.id]
        assert hits[0].explain["period"] == (settings.period_boost if query == lifted_by else 1)


def test_the_period_is_shown_as_data() -> None:
    from mcp_memory.retrieval import intent_of, parse_query
    intent = intent_of(parse_query("What did Ana start in 2023?"))
    assert intent is not None and intent.period is not None
    assert intent.period.start == day(2023, 1, 1) and intent.period.end == day(2024, 1, 1)
    assert intent_of(parse_query("What did Ana start?")) is None


async def test_the_period_through_mcp(settings: Settings) -> None:
    """A client sees the period in `intent` and in each hit's `explain`, and the result validates
    against the tool's published output schema (the SDK's client checks it)."""
    from mcp import Client

    from mcp_memory.server import build_server

    async with Client(build_server(settings), mode="legacy") as client:
        for content, when in (("Shipped version 3 of the ledger service.", "2025-03-12T10:00:00Z"),
                              ("Shipped version 4 of the ledger service.", "2025-09-02T10:00:00Z")):
            written = await client.call_tool("memory_write", {"content": content, "occurred_at": when})
            assert not written.is_error, written.content[0].text
        result = await client.call_tool("memory_search", {"query": "ledger service release in March 2025",
                                                          "explain": True})
        assert not result.is_error, result.content[0].text
        found = result.structured_content
        assert found["intent"]["period"] == {"phrase": "in March 2025", "start": "2025-03-01T00:00:00Z",
                                             "end": "2025-04-01T00:00:00Z", "month": None}
        assert found["hits"][0]["snippet"].startswith("Shipped version 3")
        assert [h["explain"]["period"] for h in found["hits"]] == [settings.period_boost, 1]
        assert '"phrase":"in March 2025"' in result.content[0].text  # the lean text for the model


@pytest.mark.parametrize(("text", "start"), [
    ("Priya Raman moved to Berlin in March 2026.", day(2026, 3, 1)),
    ("Priya has lived in Porto since 2019.", day(2019, 1, 1)),
    ("Priya is moving to Leeds on 3 May 2027.", day(2027, 5, 3)),
    # None where it names no date, a month of no year, several dates, an impossible one, a span's end.
    ("Priya moved to Berlin.", None),
    ("Priya moved to Berlin in March.", None),
    ("Priya left Hooli in 2018 and joined Initech in May 2019.", None),
    ("Priya joined on 31 June 2023.", None),
    ("Priya worked at Initech before 2020.", None),
])
def test_the_one_date_a_memory_names_is_when_it_began(text: str, start: datetime | None) -> None:
    assert began_on(text) == start


def test_the_one_date_is_read_in_the_lexicons_words_and_stops_at_the_second() -> None:
    assert began_on("A Priya mudou-se para Berlim em março de 2026.", PORTUGUESE) == day(2026, 3, 1)
    assert began_on("in 2019 " * 4000) is None


NOW = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)


@pytest.mark.parametrize(("text", "start"), [
    ("Priya Raman moved to Leeds last month.", day(2026, 11, 1)),
    ("Priya joined Acme two weeks ago.", day(2026, 11, 23)),
    ("Priya started at Talkdesk yesterday.", day(2026, 12, 6)),
    ("Priya left Hooli 3 years ago.", day(2023, 12, 7)),
    ("Priya moves to Faro next year.", day(2027, 1, 1)),
    # A day of the week before or after the day of writing (a Monday), never that day itself; one
    # said alone ("on Monday") may be either, and is not read.
    ("Priya moved to Leeds last Monday.", day(2026, 11, 30)),
    ("Priya moved to Leeds last Sunday.", day(2026, 12, 6)),
    ("Priya moves to Leeds next Friday.", day(2026, 12, 11)),
    ("Priya moves to Leeds next Monday.", day(2026, 12, 14)),
    ("Priya moved to Leeds on Monday.", None),
    # "today" says no more than the time of writing; a date with a relative phrase is two dates.
    ("Priya started at Talkdesk today.", None),
    ("Priya moved last month, in March 2026.", None),
    ("The last time we met.", None),
])
def test_a_date_said_from_now_is_read_against_the_time_of_writing(text: str, start: datetime | None) -> None:
    assert began_on(text, now=NOW) == start
    assert began_on(text) is None or start is None  # with no time of writing, none of them is read


def test_a_date_said_from_now_in_portuguese_and_months_without_the_day() -> None:
    assert began_on("A Priya mudou-se há duas semanas.", PORTUGUESE, NOW) == day(2026, 11, 23)
    assert began_on("Mudou-se no mês passado.", PORTUGUESE, NOW) == day(2026, 11, 1)
    assert began_on("Começa no próximo mês.", PORTUGUESE, NOW) == day(2027, 1, 1)
    assert began_on("Mudou-se 3 meses atrás.", PORTUGUESE, NOW) == day(2026, 9, 7)
    assert began_on("Mudou-se na segunda-feira passada.", PORTUGUESE, NOW) == day(2026, 11, 30)
    assert began_on("Muda-se na próxima sexta.", PORTUGUESE, NOW) == day(2026, 12, 11)
    assert began_on("Muda-se no sábado que vem.", PORTUGUESE, NOW) == day(2026, 12, 12)
    # A month back from the 31st of March is the last day of February.
    assert began_on("one month ago", now=datetime(2026, 3, 31, tzinfo=UTC)) == day(2026, 2, 28)
    assert began_on("a year ago", now=datetime(2024, 2, 29, tzinfo=UTC)) == day(2023, 2, 28)
