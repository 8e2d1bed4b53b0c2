"""One memory: its fields, the entities it names (links to their pages), its history as a timeline
with a diff per change (who, with which client, why), and the curation forms: edit with if_version,
pin / unpin, priority, tags, mark as superseding others, forget (preview first), undo a model's
decision."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from starlette.responses import Response
from starlette.routing import Route

from ...errors import InvalidInput, NotFound
from ...models import KINDS, Memory
from ...repository.console_sessions import ConsoleSessionRepository
from .. import diff, forms
from ..web import Console, Ctx


def _id(ctx: Ctx) -> UUID:
    return forms.uuid("id", ctx.request.path_params["id"])


async def show(ctx: Ctx) -> Response:
    service = await ctx.service()
    memory_id = _id(ctx)
    read_only = False
    if ctx.session.all_namespaces:
        # The all-namespaces view opens a memory under its own namespace, within the key's grants.
        assert ctx.st.db is not None
        found = await ConsoleSessionRepository(ctx.st.db.pool, ctx.st.db.admin).namespace_of(ctx.p.user_id, memory_id)
        if found is not None and found != (None, None):
            ctx.principal = ctx.console.sessions.principal(ctx.session, *found, explicit=True)
            read_only = True
    memory: Memory | None
    try:
        memory = await service.get_one(ctx.p, memory_id)
    except NotFound:
        memory = None  # forgotten (history still says what it was), or not this session's at all
    history = await service.history(ctx.p, memory_id)  # NotFound for ids outside the scope
    forgotten = None
    if memory is None:
        forgotten = next((f for f in await service.review.forgotten(ctx.p, 200) if f.memory.id == memory_id), None)
    named = await service.entities.of_memory(ctx.p, memory_id) if memory is not None else []
    return ctx.render("memory.html", memory=memory, memory_id=memory_id, forgotten=forgotten,
                      steps=diff.timeline(history.entries), read_only=read_only, named=named)


def _changes(ctx: Ctx, current: Memory) -> dict[str, Any]:
    """The edit form's fields that differ from what is stored."""
    form = ctx.form
    changes: dict[str, Any] = {}
    content = form.values.get("content", [None])[0]
    if content is not None and content.replace("\r\n", "\n") != current.content:
        changes["content"] = content.replace("\r\n", "\n")
    title = form.get("title")
    if title != (current.title or "") and title:
        changes["title"] = title
    kind = form.get("kind") or current.kind
    if kind not in KINDS:
        raise InvalidInput(f"kind: {forms.clip(kind)!r} is not one of {', '.join(KINDS)}")
    if kind != current.kind:
        changes["kind"] = kind
    if "tags" in form.values and forms.tags(form.get("tags")) != current.tags:
        changes["tags"] = forms.tags(form.get("tags"))
    importance = form.float("importance", 0, 1)
    if importance is not None and abs(importance - current.importance) > 1e-6:
        changes["importance"] = importance
    if form.get("priority"):
        priority = form.int("priority", current.priority, -1000, 1000)
        if priority != current.priority:
            changes["priority"] = priority
    return changes


async def edit(ctx: Ctx) -> Response:
    service = await ctx.service()
    service.require(ctx.p, "write")  # before reading anything for a session that may not edit
    memory_id = _id(ctx)
    if_version = ctx.form.int("if_version", 0, 1, 2**31 - 1) or None
    if if_version is None:
        raise InvalidInput("if_version: missing; reload the memory's page and edit again")
    current = await service.get_one(ctx.p, memory_id)
    changes = _changes(ctx, current)
    if not changes:
        return ctx.redirect(f"/memories/{memory_id}", done="unchanged")
    result = await service.update(ctx.p, memory_id, **changes, reason=ctx.form.get("reason") or None,
                                  if_version=if_version, force=ctx.form.flag("force"))
    return ctx.redirect(f"/memories/{memory_id}", done=result.status)


async def pin(ctx: Ctx) -> Response:
    memory_id = _id(ctx)
    pinned = ctx.form.flag("pinned")
    await (await ctx.service()).update(ctx.p, memory_id, pinned=pinned, reason=ctx.form.get("reason") or None,
                                       if_version=ctx.form.int("if_version", 0, 0, 2**31 - 1) or None,
                                       force=ctx.form.flag("force"))
    return ctx.redirect(f"/memories/{memory_id}", done="pinned" if pinned else "unpinned")


async def supersede(ctx: Ctx) -> Response:
    memory_id = _id(ctx)
    older = [forms.uuid("older", raw) for raw in ctx.form.get("older").replace(",", " ").split()]
    await (await ctx.service()).review.supersede(ctx.p, memory_id, older)
    return ctx.redirect(f"/memories/{memory_id}", done="superseded")


async def undo_decision(ctx: Ctx) -> Response:
    """A model's decision reversed, named by its history row: the same undo as the CLI's."""
    memory_id = _id(ctx)
    seq = ctx.form.int("seq", 0, 1, 2**63 - 1)
    if not seq:
        raise InvalidInput("seq: missing; use the button beside the decision in the history")
    await (await ctx.service()).undo_decision(ctx.p, str(seq))
    return ctx.redirect(f"/memories/{memory_id}", done="undone")


def routes(console: Console) -> list[Route]:
    return [Route("/memories/{id}", console.page(show), methods=["GET"]),
            Route("/memories/{id}/edit", console.page(edit), methods=["POST"]),
            Route("/memories/{id}/pin", console.page(pin), methods=["POST"]),
            Route("/memories/{id}/supersede", console.page(supersede), methods=["POST"]),
            Route("/memories/{id}/undo-decision", console.page(undo_decision), methods=["POST"])]
