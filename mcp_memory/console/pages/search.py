"""Search with the service's ranking and filters, and `explain` in words."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import Route

from ...models import SearchHit
from .. import forms
from ..web import Console, Ctx

LISTS = (("vector", "meaning (vector)"), ("fulltext", "words (full text)"), ("trigram", "spelling (trigram)"))


def explained(hit: SearchHit) -> dict[str, Any] | None:
    """Which lists found the hit and at what rank, and the factors that made its score."""
    e = hit.explain
    if e is None:
        return None
    found = [f"{label} #{int(e[key])}" for key, label in LISTS if e.get(key) is not None]
    return {"found": found or ["no list (carried by a reply or a version link)"], "fused": e.get("fused"),
            "reply": e.get("reply"), "recency": e.get("recency"), "score": hit.score,
            "superseded": hit.superseded_by}


async def search(ctx: Ctx) -> Response:
    q = ctx.params.get("q")
    f = forms.memory_filter(ctx.params, as_of=True)
    explain = ctx.params.flag("explain")
    limit = ctx.params.int("limit", 20, 1, 50)
    result = None
    if q:
        result = await (await ctx.service()).search(ctx.p, q, f, limit=limit, explain=explain)
    hits = [(h, explained(h)) for h in result.hits] if result else []
    return ctx.render("search.html", q=q, f=ctx.params, explain=explain, limit=limit, result=result, hits=hits)


def routes(console: Console) -> list[Route]:
    return [Route("/search", console.page(search), methods=["GET"])]
