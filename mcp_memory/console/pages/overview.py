"""The overview: memories per day by when they happened (occurred_at, so an import spreads over
its dates), by kind and by scope, embedding coverage, the largest
tags, and what retention takes next. Every chart has its table (always rendered); the vendored
Chart.js draws the pictures when scripts run."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ..web import Console, Ctx


async def overview(ctx: Ctx) -> Response:
    service = await ctx.service()
    days = ctx.params.int("days", 30, 1, 366)
    stats = await service.overview.stats(ctx.p, top_tags=ctx.params.int("tags", 12, 1, 50))
    per_day = await service.review.occurred_per_day(ctx.p, days)
    purge = await service.review.purge_next(ctx.p, 10)
    embedded = stats.active - stats.without_vector
    charts = {
        "per_day": {"type": "bar", "label": "memories",
                    "labels": [d.isoformat() for d, _ in per_day], "values": [n for _, n in per_day]},
        "by_kind": {"type": "bar", "label": "live memories", "labels": list(stats.by_kind),
                    "values": list(stats.by_kind.values())},
        "by_scope": {"type": "doughnut", "label": "live memories", "labels": list(stats.by_scope),
                     "values": list(stats.by_scope.values())},
        "coverage": {"type": "doughnut", "label": "live memories", "labels": ["with a vector", "without a vector"],
                     "values": [embedded, stats.without_vector]},
        "tags": {"type": "bar", "label": "live memories", "horizontal": True, "labels": list(stats.top_tags),
                 "values": list(stats.top_tags.values())},
    }
    return ctx.render("overview.html", stats=stats, per_day=per_day, purge=purge, charts=charts, days=days,
                      embedded=embedded, stale_days=service.settings.stale_after_days,
                      purge_days=service.settings.purge_after_days)


def routes(console: Console) -> list[Route]:
    return [Route("/", console.page(overview), methods=["GET"])]
