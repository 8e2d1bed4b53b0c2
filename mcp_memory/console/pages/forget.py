"""Forgetting with the service's own flow: choose by selection (ids) or by query and filters,
preview what would go (a single-use token bound to exactly those memories at their versions),
confirm; and restore from the recently forgotten list until the restore window ends."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ...errors import InvalidInput
from ...limits import MAX_BATCH
from .. import forms
from ..web import Console, Ctx


def max_batch(ctx: Ctx) -> int:
    """The largest preview this session may ask for: what the service allows it, no more."""
    return MAX_BATCH if ctx.p.can("admin") else ctx.console.settings.forget_max_batch


async def forget_form(ctx: Ctx) -> Response:
    return ctx.render("forget.html", f=ctx.params, q=ctx.params.get("q"), max_batch=max_batch(ctx),
                      default_limit=min(20, max_batch(ctx)))


async def preview(ctx: Ctx) -> Response:
    service = await ctx.service()
    ids = list(dict.fromkeys(ctx.form.ids("ids")))
    q = ctx.form.get("q") or None
    f = forms.memory_filter(ctx.form)
    most = max_batch(ctx)
    if len(ids) > most:  # said, not silently cut to the first ones
        raise InvalidInput(f"ids: {len(ids)} memories are ticked; one preview covers at most {most}: untick "
                           f"{len(ids) - most} and preview again")
    limit = len(ids) if ids else ctx.form.int("limit", min(20, most), 1, most)
    result = await service.forget_preview(ctx.p, query=None if ids else q, f=None if ids else f, ids=ids or None,
                                          limit=limit, force=ctx.form.flag("force"))
    return ctx.render("forget_preview.html", result=result, q=q, by_ids=bool(ids))


async def confirm(ctx: Ctx) -> Response:
    service = await ctx.service()
    token = ctx.form.get("token")
    if not token:
        raise InvalidInput("token: missing; preview first, then confirm")
    result = await service.forget_execute(ctx.p, token, ids=ctx.form.ids("ids") or None,
                                          reason=ctx.form.get("reason") or None)
    return ctx.render("forget_done.html", result=result)


async def forgotten(ctx: Ctx) -> Response:
    items = await (await ctx.service()).review.forgotten(ctx.p, ctx.params.int("limit", 50, 1, 200))
    return ctx.render("forgotten.html", items=items, purge_days=ctx.console.settings.purge_after_days)


async def restore(ctx: Ctx) -> Response:
    ids = ctx.form.ids("ids")
    if not ids:
        raise InvalidInput("ids: select at least one memory to restore")
    result = await (await ctx.service()).restore(ctx.p, ids, reason=ctx.form.get("reason") or None)
    if len(result.restored) == 1:
        return ctx.redirect(f"/memories/{result.restored[0].id}", done="restored")
    return ctx.redirect("/forgotten", done="restored")


def routes(console: Console) -> list[Route]:
    return [Route("/forget", console.page(forget_form), methods=["GET"]),
            Route("/forget/preview", console.page(preview), methods=["POST"]),
            Route("/forget/confirm", console.page(confirm), methods=["POST"]),
            Route("/forgotten", console.page(forgotten), methods=["GET"]),
            Route("/restore", console.page(restore), methods=["POST"])]
