"""Browse page by page (keyset cursors) with filters and sort; how many match, which page this is,
the previous page (the cursors behind this page ride in the URL); select rows to forget."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.responses import Response
from starlette.routing import Route

from ...models import MemoryFilter, MemoryPage
from ...service import MemoryService
from .. import forms
from ..web import Console, Ctx

PAGE = 25
MAX_BACK = 40  # pages a "previous" chain remembers (older ones: back to the first page)


async def browse(ctx: Ctx) -> Response:
    f = forms.memory_filter(ctx.params)
    order = forms.order(ctx.params)
    size = ctx.params.int("size", PAGE, 1, 100)
    service = await ctx.service()
    text = ctx.params.get("text")
    if text:
        return await _containing(ctx, service, f, order, size, text)
    cursor = ctx.params.get("cursor") or None
    page = await service.list(ctx.p, f, order=order, limit=size, cursor=cursor)  # type: ignore[arg-type]
    total = await service.review.count(ctx.p, f)
    back = [c.strip() for c in ctx.params.values.get("back", [])][-MAX_BACK:]
    keep = {k: v for k, v in ctx.params.values.items() if k not in ("cursor", "back", "done")}

    def url(to: str | None, trail: list[str]) -> str:
        return "?" + urlencode({**keep, **({"cursor": to} if to else {}), **({"back": trail} if trail else {})},
                               doseq=True)

    next_url = url(page.next_cursor, [*back, cursor or ""]) if page.next_cursor else None
    prev_url = url(back[-1] or None, back[:-1]) if back else (url(None, []) if cursor else None)
    number = len(back) + 1 if cursor else 1
    pages = max(1, -(-total // size))
    sort_url = {o: "?" + urlencode({**{k: v for k, v in keep.items() if k != "order"}, "order": o}, doseq=True)
                for o in forms.ORDERS}
    return ctx.render("browse.html", f=ctx.params, order=order, page=page, next_url=next_url, prev_url=prev_url,
                      first_url=url(None, []) if cursor else None, total=total, number=number, pages=pages,
                      sort_url=sort_url)


async def _containing(ctx: Ctx, service: MemoryService, f: MemoryFilter | None, order: str, size: int,
                      text: str) -> Response:
    """A text filter: pages by number (a count of what matches is at hand anyway)."""
    number = ctx.params.int("page", 1, 1, 1_000_000)
    memories, total = await service.review.containing(ctx.p, f, text, order, size, (number - 1) * size)
    pages = max(1, -(-total // size))
    keep = {k: v for k, v in ctx.params.values.items() if k not in ("page", "cursor", "back", "done")}

    def url(n: int) -> str:
        return "?" + urlencode({**keep, "page": str(n)}, doseq=True)

    sort_url = {o: "?" + urlencode({**{k: v for k, v in keep.items() if k != "order"}, "order": o}, doseq=True)
                for o in forms.ORDERS}
    return ctx.render("browse.html", f=ctx.params, order=order, page=MemoryPage(memories=memories, next_cursor=None),
                      next_url=url(number + 1) if number < pages else None,
                      prev_url=url(number - 1) if number > 1 else None, first_url=url(1) if number > 2 else None,
                      total=total, number=number, pages=pages, sort_url=sort_url)


def routes(console: Console) -> list[Route]:
    return [Route("/browse", console.page(browse), methods=["GET"])]
