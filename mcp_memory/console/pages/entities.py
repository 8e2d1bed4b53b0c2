"""Entities: the list (most named first, with counts) and one entity's page (its profile with each
keyed attribute's current and earlier values, the memories naming it newest first, the entities it
appears with, what was merged into it, the edits that touched it), and the edits a person makes
there, each recorded and undoable: merge, split, fix or remove a memory's key. Only the service's
`entities` part is called; every refusal is the service's own message and changes nothing."""

from __future__ import annotations

from uuid import UUID

from starlette.responses import Response
from starlette.routing import Route

from ...errors import InvalidInput, PermissionDenied
from .. import forms
from ..web import Console, Ctx


def _entity_id(name: str, raw: str) -> UUID:
    try:
        return UUID(raw.strip())
    except ValueError:
        raise InvalidInput(f"{name}: {forms.clip(raw)!r} is not an entity id; nothing was changed") from None


def _editing(ctx: Ctx) -> None:
    """The all-namespaces view reads; an edit is made in one namespace."""
    if ctx.session.all_namespaces:
        raise PermissionDenied("the all-namespaces view is read-only: pick one namespace to edit entities in; "
                               "nothing was changed")


async def listing(ctx: Ctx) -> Response:
    limit = ctx.params.int("limit", 100, 1, 500)
    found = await (await ctx.service()).entities.list(ctx.p, limit)
    return ctx.render("entities.html", entities=found.entities, limit=limit)


async def show(ctx: Ctx) -> Response:
    entity_id = _entity_id("id", ctx.request.path_params["id"])
    service = await ctx.service()
    limit = ctx.params.int("limit", 100, 1, 500)
    page = await service.entities.page(ctx.p, entity_id, limit)
    may_write = ctx.p.can("write") and not ctx.session.all_namespaces
    take_in, go_into = await service.entities.merge_candidates(ctx.p, entity_id) if may_write else ([], [])
    return ctx.render("entity.html", page=page, e=page.entity, may_write=may_write, take_in=take_in, go_into=go_into,
                      limit=limit)


async def merge(ctx: Ctx) -> Response:
    _editing(ctx)
    into, source = ctx.form.get("into"), ctx.form.get("source")
    if not into or not source:
        raise InvalidInput("into and source: name both entities (pick one in the list); nothing was changed")
    edit = await (await ctx.service()).entities.merge(ctx.p, _entity_id("into", into), _entity_id("source", source),
                                                      reason=ctx.form.get("reason") or None)
    return ctx.redirect(f"/entities/{edit.entity}", done="merged")


async def split(ctx: Ctx) -> Response:
    _editing(ctx)
    merged = _entity_id("id", ctx.request.path_params["id"])
    edit = await (await ctx.service()).entities.split(ctx.p, merged, reason=ctx.form.get("reason") or None)
    return ctx.redirect(f"/entities/{edit.entity}", done="split")


async def fix_key(ctx: Ctx) -> Response:
    _editing(ctx)
    raw = ctx.form.get("memory")
    if not raw:
        raise InvalidInput("memory: missing; use the form beside the value; nothing was changed")
    memory = forms.uuid("memory", raw)
    remove = ctx.form.flag("remove")
    words = ctx.form.get("attribute")
    if not remove and not words:
        raise InvalidInput("attribute: say which attribute the memory states ('job title'), or remove its key; "
                           "nothing was changed")
    edit = await (await ctx.service()).entities.fix_key(ctx.p, memory, None if remove else words,
                                                        reason=ctx.form.get("reason") or None)
    back = ctx.form.get("entity")
    shown = next((e for e in edit.entities if str(e) == back), edit.entity)  # only an entity the fix touched
    return ctx.redirect(f"/entities/{shown}", done="key")


async def undo(ctx: Ctx) -> Response:
    _editing(ctx)
    edit_id = _entity_id("edit", ctx.request.path_params["id"])
    edit = await (await ctx.service()).entities.undo(ctx.p, edit_id, reason=ctx.form.get("reason") or None)
    return ctx.redirect(f"/entities/{edit.entity}", done="entity-undone")


def routes(console: Console) -> list[Route]:
    return [Route("/entities", console.page(listing), methods=["GET"]),
            Route("/entities/merge", console.page(merge), methods=["POST"]),
            Route("/entities/key", console.page(fix_key), methods=["POST"]),
            Route("/entities/edits/{id}/undo", console.page(undo), methods=["POST"]),
            Route("/entities/{id}", console.page(show), methods=["GET"]),
            Route("/entities/{id}/split", console.page(split), methods=["POST"])]
