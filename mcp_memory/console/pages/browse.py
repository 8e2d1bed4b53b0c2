"""Browse page by page (keyset cursors) with filters and sort; select rows to forget."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.responses import Response
from starlette.routing import Route

from .. import forms
from ..web import Console, Ctx

PAGE = 25


async def browse(ctx: Ctx) -> Response:
    f = forms.memory_filter(ctx.params)
    order = forms.order(ctx.params)
    size = ctx.params.int("size", PAGE, 1, 100)
    page = await (await ctx.service()).list(ctx.p, f, order=order, limit=size,  # type: ignore[arg-type]
                                            cursor=ctx.params.get("cursor") or None)
    keep = {k: v for k, v in ctx.params.values.items() if k != "cursor"}
    next_url = f"?{urlencode({**keep, 'cursor': page.next_cursor}, doseq=True)}" if page.next_cursor else None
    first_url = f"?{urlencode(keep, doseq=True)}" if ctx.params.get("cursor") else None
    return ctx.render("browse.html", f=ctx.params, order=order, page=page, next_url=next_url, first_url=first_url)


def routes(console: Console) -> list[Route]:
    return [Route("/browse", console.page(browse), methods=["GET"])]
