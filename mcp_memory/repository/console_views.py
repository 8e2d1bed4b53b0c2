"""What the console shows beyond the tools' reads: how many memories a browse filter matches (for
page numbers), browse narrowed by a piece of text, and memories per day by when they happened.
All under the caller's principal and row-level security, with the same scope rule and filters as
`memory_list`."""

from __future__ import annotations

from datetime import date, datetime

from ..models import Memory, MemoryFilter, Principal
from .memories import MemoryRepository
from .memory_rows import to_memory
from .sql import Sql, live, visible


async def count_live(repo: MemoryRepository, p: Principal, f: MemoryFilter | None) -> int:
    q = Sql()
    where = live(q, p, f)
    async with repo.transaction(p) as conn:
        return int(await conn.fetchval(f"SELECT count(*) FROM memories m WHERE {' AND '.join(where)}", *q.args))


async def occurred_per_day(repo: MemoryRepository, p: Principal, since: datetime) -> list[tuple[date, int]]:
    """Memories per UTC day of `occurred_at` since `since` (forgotten ones too: they happened), so an
    import of a year's notes spreads over the year instead of piling onto the day it ran."""
    q = Sql()
    where = visible(q, p)
    async with repo.transaction(p) as conn:
        rows = await conn.fetch(
            f"""SELECT (m.occurred_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n FROM memories m
                WHERE {where} AND m.occurred_at >= {q.arg(since)} AND m.occurred_at <= now() + interval '1 day'
                GROUP BY 1 ORDER BY 1""", *q.args)
    return [(r["day"], r["n"]) for r in rows]


async def list_containing(repo: MemoryRepository, p: Principal, f: MemoryFilter | None, text: str, order: str,
                          limit: int, offset: int) -> tuple[list[Memory], int]:
    """Browse narrowed to memories whose title or content contains `text` (case-insensitive, taken
    literally: % and _ are not wildcards), one page by offset, with how many match."""
    q = Sql()
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    like = q.arg(pattern)
    where = [*live(q, p, f),
             f"(m.content ILIKE {like} OR coalesce(m.title, '') ILIKE {like})"]
    keys = {"recent": "m.occurred_at DESC, m.id DESC", "oldest": "m.occurred_at ASC, m.id ASC",
            "importance": "m.importance DESC, m.occurred_at DESC, m.id DESC"}[order]
    async with repo.transaction(p) as conn:
        total = int(await conn.fetchval(f"SELECT count(*) FROM memories m WHERE {' AND '.join(where)}", *q.args))
        rows = await conn.fetch(f"SELECT * FROM memories m WHERE {' AND '.join(where)} ORDER BY {keys} "
                                f"LIMIT {q.arg(limit)} OFFSET {q.arg(offset)}", *q.args)
    return [to_memory(r) for r in rows], total
