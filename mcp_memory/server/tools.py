"""The memory tools: typed functions whose signatures are the MCP input schemas and whose
return types are the output schemas."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit, ElicitationResult, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from .. import limits
from ..decisions.overview import AcceptResult, UndoResult
from ..models import (
    ABOUT_HINT,
    KEY_HINT,
    WRITTEN_AT_HINT,
    ForgetResult,
    GetResult,
    HistoryResult,
    Kind,
    ListOrder,
    MemoryFilter,
    MemoryPage,
    Principal,
    RestoreResult,
    ScopeLevel,
    SearchResult,
    UpdateResult,
    WriteItem,
    WriteManyResult,
    WriteResult,
)
from ..service import MemoryService
from .errors import tool_errors
from .state import AppState


async def bind(ctx: Context) -> tuple[MemoryService, Principal]:
    state: AppState = ctx.request_context.lifespan_context
    return await state.bind_request(ctx.request_context)


# --- parameter types shared by several tools (they become the JSON schema) -------------------

Ids = Annotated[list[UUID], Field(min_length=1, max_length=100, description="Memory ids (UUIDs).")]
Kinds = Annotated[list[Kind] | None, Field(description="Only these kinds.")]
Tags = Annotated[list[str] | None, Field(max_length=limits.MAX_TAGS, description=(
    "Only memories carrying all of these tags."))]
Since = Annotated[datetime | None, Field(description="Only memories that occurred at or after this time (ISO 8601).")]
Until = Annotated[datetime | None, Field(description="Only memories that occurred before this time (ISO 8601).")]
ScopeFilter = Annotated[ScopeLevel | None, Field(
    description="Only one level of this session's namespace: user, project, agent or agent_project.")]
Reason = Annotated[str | None, Field(max_length=limits.MAX_REASON_CHARS, description=(
    "Why; recorded in the memory's history."))]
Force = Annotated[bool, Field(description="Override pin protection (admin only).")]
Content = Annotated[str, Field(min_length=1, max_length=limits.MAX_CONTENT_CHARS, description=(
    "The memory: one self-contained statement."))]
Title = Annotated[str | None, Field(max_length=limits.MAX_TITLE_CHARS, description="Short label.")]
Importance = Annotated[float, Field(ge=0, le=1, description="0–1, how much this matters.")]
Priority = Annotated[int, Field(ge=0, le=limits.MAX_PRIORITY, description=(
    "Order among pinned core memories; higher first."))]
Metadata = Annotated[dict[str, Any] | None, Field(description="Free-form JSON object.")]
OccurredAt = Annotated[datetime | None, Field(description="When it became true (ISO 8601); default now.")]
WrittenAt = Annotated[datetime | None, Field(description=WRITTEN_AT_HINT)]

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def _filter(kinds: list[Kind] | None, tags: list[str] | None, since: datetime | None,
            until: datetime | None, scope: ScopeLevel | None) -> MemoryFilter:
    return MemoryFilter(kinds=kinds, tags=tags, since=since, until=until, scope=scope)


# --- tools --------------------------------------------------------------------------------------

@tool_errors
async def memory_search(
    query: Annotated[str, Field(min_length=1, max_length=limits.MAX_QUERY_CHARS, description=(
        "What to look for, in words."))],
    ctx: Context,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
    kinds: Kinds = None, tags: Tags = None, since: Since = None, until: Until = None,
    scope: ScopeFilter = None,
    as_of: Annotated[datetime | None, Field(description=(
        "Search the store as it stood then (ISO 8601): later memories left out, recency measured from it."))] = None,
    explain: Annotated[bool, Field(description=(
        "Include each candidate list's rank, the share taken from the question a hit replied to, "
        "the recency factor, the factor for naming whom the question names (subject), the factor for "
        "being written in the period the query names (period), and, for a "
        "question about now, how close each memory about its subject (someone named, the user, "
        "someone in the user's life) is to it (on_topic) and to the others (linked)."))] = False,
) -> SearchResult:
    """Find memories relevant to a query, best first, in every scope this session can see:
    meaning (vectors), words (full text) and spelling (trigram, short queries) fused, newer first
    among equals; an episode that answered a matching question ranks with it. A date in the query
    ("in October 2023", "on 3 June, 2023", "during June") lifts what was written then."""
    service, p = await bind(ctx)
    f = _filter(kinds, tags, since, until, scope).model_copy(update={"as_of": as_of})
    return await service.search(p, query, f, limit=limit, explain=explain)


@tool_errors
async def memory_get(
    ids: Annotated[list[UUID], Field(min_length=1, max_length=50, description="Memory ids (UUIDs).")],
    ctx: Context,
) -> GetResult:
    """Full records by id. When some are found, ids that are unknown, forgotten or out of scope
    come back in not_found; when none is, the call is an error naming them (a memory forgotten by
    a decision comes back with memory_undo_decision or memory_restore)."""
    service, p = await bind(ctx)
    return await service.get(p, ids)


@tool_errors
async def memory_list(
    ctx: Context,
    kinds: Kinds = None, tags: Tags = None, since: Since = None, until: Until = None,
    scope: ScopeFilter = None,
    order: Annotated[ListOrder, Field(description="recent, oldest or importance.")] = "recent",
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Field(max_length=500, description="next_cursor of the previous page.")] = None,
) -> MemoryPage:
    """Browse memories page by page, with filters."""
    service, p = await bind(ctx)
    return await service.list(p, _filter(kinds, tags, since, until, scope), order=order, limit=limit,
                              cursor=cursor)


@tool_errors
async def memory_write(
    content: Content,
    ctx: Context,
    title: Title = None,
    kind: Annotated[Kind, Field(description=(
        "episode: something said or done, in order (a conversation turn: a search that matches a question "
        "also lifts the episode written next, its reply, and the one before, which it follows up on); the "
        "other kinds stand alone."))] = "note",
    tags: Annotated[list[str] | None, Field(max_length=limits.MAX_TAGS)] = None,
    metadata: Metadata = None,
    importance: Importance = 0.5,
    pinned: Annotated[bool, Field(description="A core memory, protected from edits and forgetting.")] = False,
    priority: Priority = 0,
    scope: Annotated[ScopeLevel | None, Field(
        description="Where to store it in this session's namespace; default project, else user.")] = None,
    occurred_at: WrittenAt = None,
    idempotency_key: Annotated[str | None, Field(min_length=1, max_length=limits.MAX_KEY_CHARS, description=(
        "Retrying with the same key returns the first result instead of writing again."))] = None,
    supersedes: Annotated[list[UUID] | None, Field(max_length=50, description=(
        "Older memories this one replaces: they stay retrievable but rank below it."))] = None,
    about: Annotated[list[str] | None, Field(max_length=limits.MAX_ABOUT, description=ABOUT_HINT)] = None,
    key: Annotated[str | None, Field(max_length=limits.MAX_KEY_WORDS_CHARS, description=KEY_HINT)] = None,
) -> WriteResult:
    """Remember something. Pass `about` (whom it is about) and `key` (the attribute it states) for
    a fact about someone or something: a newer value of a one-at-a-time attribute then replaces the
    older by itself. Identical text already stored in the same scope returns the existing
    memory with status 'duplicate' instead of a second copy. `related` lists memories close to the
    new one: when one is an earlier version of the same fact (an old address, a former manager),
    write again with its id in `supersedes`, or call memory_update on it, so the newer one ranks
    first. Each entry's `earlier_version` says whether it looks like one (same subject, same kind of
    fact, by a check of wording): a hint, not a verdict. It is often wrong where many things share one
    wording (notes about several services) and misses versions phrased far apart, so read each text
    and supersede only what says the same fact had another value. When the server
    has decisions on (a model configured), that model may also mark an older version replaced,
    merge it into the new one, or forget what the new one says is no longer true, never a pinned
    memory nor one you superseded; each change is in memory_history and memory_undo_decision
    reverses it."""
    service, p = await bind(ctx)
    return await service.write(p, content, title=title, kind=kind, tags=tags, metadata=metadata,
                               importance=importance, pinned=pinned, priority=priority, scope=scope,
                               occurred_at=occurred_at, idempotency_key=idempotency_key,
                               supersedes=supersedes, about=about, key=key, request_id=ctx.request_id)


@tool_errors
async def memory_write_many(
    items: Annotated[list[WriteItem], Field(min_length=1, max_length=limits.MAX_BATCH, description=(
        "The memories, each with the fields of memory_write that suit a batch."))],
    ctx: Context,
) -> WriteManyResult:
    """Remember many things in one call (a transcript, an import): all are checked first, and a
    bad item names its index and writes nothing; then they are embedded in batches and stored in
    one transaction, each deduplicated in its scope (status 'duplicate') and audited."""
    service, p = await bind(ctx)
    return await service.write_many(p, items, request_id=ctx.request_id)


@tool_errors
async def memory_update(
    id: Annotated[UUID, Field(description="The memory to change.")],
    ctx: Context,
    content: Annotated[str | None, Field(min_length=1, max_length=limits.MAX_CONTENT_CHARS)] = None,
    title: Title = None,
    kind: Kind | None = None,
    tags: Annotated[list[str] | None, Field(max_length=limits.MAX_TAGS, description="Replaces all tags.")] = None,
    metadata: Annotated[dict[str, Any] | None, Field(description="Replaces the metadata object.")] = None,
    importance: Annotated[float | None, Field(ge=0, le=1)] = None,
    pinned: bool | None = None,
    priority: Annotated[int | None, Field(ge=0, le=limits.MAX_PRIORITY)] = None,
    occurred_at: OccurredAt = None,
    reason: Reason = None,
    if_version: Annotated[int | None, Field(ge=1, description=(
        "Only update if the memory is still at this version; protects against lost updates."))] = None,
    force: Force = False,
    key: Annotated[str | None, Field(max_length=limits.MAX_KEY_WORDS_CHARS, description=(
        "Files its keyed fact under this attribute instead ('job title'); recorded, undoable."))] = None,
    about: Annotated[list[str] | None, Field(max_length=limits.MAX_ABOUT, description=(
        "Whom it is about instead (names, 'me' for the user); its keyed fact moves too; recorded, undoable."))] = None,
) -> UpdateResult:
    """Change some fields of a memory; the old values stay in its history."""
    service, p = await bind(ctx)
    return await service.update(p, id, content=content, title=title, kind=kind, tags=tags, metadata=metadata,
                                importance=importance, pinned=pinned, priority=priority,
                                occurred_at=occurred_at, reason=reason, if_version=if_version, force=force,
                                request_id=ctx.request_id, key=key, about=about)


class ForgetConfirmation(BaseModel):
    confirm: bool = Field(description="Forget these memories?")


@tool_errors
async def _confirm_forget(ctx: Context, token: str | None) -> ForgetConfirmation | Elicit[ForgetConfirmation]:
    """Executing a forget token asks the human too, when the client can ask (form elicitation);
    otherwise the token from the preview is the confirmation."""
    caps = ctx.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    if token is None or elicitation is None or (elicitation.form is None and elicitation.url is not None):
        return ForgetConfirmation(confirm=True)
    service, p = await bind(ctx)
    summary = await service.describe_forget(p, token)
    if summary is None:  # unknown, used or expired: execute explains which
        return ForgetConfirmation(confirm=True)
    return Elicit(summary, ForgetConfirmation)


@tool_errors
async def memory_forget(
    ctx: Context,
    confirmation: Annotated[ElicitationResult[ForgetConfirmation], Resolve(_confirm_forget)],
    ids: Annotated[list[UUID] | None, Field(max_length=200, description=(
        "Without a token: forget these now (or preview them with mode='preview'). "
        "With a token: the subset of its preview to forget."))] = None,
    query: Annotated[str | None, Field(max_length=limits.MAX_QUERY_CHARS, description=(
        "Preview the memories matching this."))] = None,
    kinds: Kinds = None, tags: Tags = None, since: Since = None, until: Until = None,
    scope: ScopeFilter = None,
    mode: Annotated[Literal["preview", "execute"] | None, Field(description=(
        "preview (the default for a query or filters) lists candidates and returns a token; "
        "execute with that token forgets exactly them."))] = None,
    token: Annotated[str | None, Field(max_length=limits.MAX_KEY_CHARS,
                                       description="The token from a preview.")] = None,
    limit: Annotated[int, Field(ge=1, le=200, description="Most candidates a preview returns.")] = 10,
    reason: Reason = None,
    force: Force = False,
) -> ForgetResult:
    """Forget memories, softly: memory_restore undoes it until restorable_until.
    By ids: forgotten at once, all or none. By query or filters: first a preview (candidates and a
    single-use token), then mode='execute' with the token forgets exactly those. Pinned memories
    need force from an admin."""
    service, p = await bind(ctx)
    if token is not None:
        if mode == "preview":
            raise ToolError("a token is for mode='execute'; to preview again, leave the token out")
        if not isinstance(confirmation, AcceptedElicitation) or not confirmation.data.confirm:
            raise ToolError("the user did not confirm; nothing was forgotten")
        return await service.forget_execute(p, token, ids=ids, reason=reason, request_id=ctx.request_id)
    filters = _filter(kinds, tags, since, until, scope)
    narrowed = query is not None or bool(filters.model_dump(exclude_none=True))
    if mode == "execute" and narrowed:
        raise ToolError("forgetting by query or filters needs the token from a preview: "
                        "call memory_forget with mode='preview' first")
    if mode == "preview" or (narrowed and mode is None):
        return await service.forget_preview(p, query=query, f=filters, ids=ids, limit=limit, force=force)
    if not ids:
        raise ToolError("say what to forget: ids, or a query / filters to preview")
    return await service.forget(p, ids, reason=reason, force=force, request_id=ctx.request_id)


@tool_errors
async def memory_restore(ids: Ids, ctx: Context, reason: Reason = None) -> RestoreResult:
    """Bring back forgotten memories: all of them or none."""
    service, p = await bind(ctx)
    return await service.restore(p, ids, reason=reason, request_id=ctx.request_id)


@tool_errors
async def memory_undo_decision(
    target: Annotated[str, Field(min_length=1, max_length=100, description=(
        "A memory the decision changed or was made about (its latest decision is undone), or the "
        "seq of one of the decision's rows in memory_history."))],
    ctx: Context,
) -> UndoResult:
    """Reverse what the decisions model did (UPDATE, merged text, DELETE, NONE): links removed,
    text and forgotten memories restored exactly, and the undo recorded in history. What changed
    since the decision is left as it is and listed in kept. Needs the write permission, as in
    `mcp-memory decisions undo` and the console."""
    service, p = await bind(ctx)
    return UndoResult.model_validate(await service.undo_decision(p, target))


@tool_errors
async def memory_accept_suggestion(
    job: Annotated[int, Field(ge=1, description=(
        "The decision job whose suggestions to apply (memory://jobs lists them under decision.suggested)."))],
    ctx: Context,
    memory: Annotated[UUID | None, Field(description=(
        "Only this suggested memory (default: every suggestion of the job)."))] = None,
) -> AcceptResult:
    """Apply a replace the decisions guard kept as a suggestion instead of applying it (it was not
    sure the two memories say the same thing): under the decision's own rules, recorded in history,
    reversed by memory_undo_decision. Needs the write permission, as `mcp-memory jobs accept`."""
    service, p = await bind(ctx)
    return AcceptResult.model_validate(await service.accept_suggestion(p, job, memory))


@tool_errors
async def memory_history(
    id: Annotated[UUID, Field(description="The memory whose audit trail to show.")],
    ctx: Context,
    limit: Annotated[int, Field(ge=1, le=500)] = 100,
) -> HistoryResult:
    """The ordered audit trail of one memory (also of a forgotten one): who changed what, when, why."""
    service, p = await bind(ctx)
    return await service.history(p, id, limit=limit)


TOOLS: list[tuple[Callable[..., Any], ToolAnnotations]] = [
    (memory_search, READ_ONLY),
    (memory_get, READ_ONLY),
    (memory_list, READ_ONLY),
    (memory_write, ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                   open_world_hint=False)),
    (memory_write_many, ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                        open_world_hint=False)),
    (memory_update, ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                    open_world_hint=False)),
    (memory_forget, ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                    open_world_hint=False)),
    (memory_restore, ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                     open_world_hint=False)),
    (memory_undo_decision, ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                           open_world_hint=False)),
    (memory_accept_suggestion, ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                               open_world_hint=False)),
    (memory_history, READ_ONLY),
]
