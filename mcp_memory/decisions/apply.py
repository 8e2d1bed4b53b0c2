"""Applying a decision, and undoing one: the rules of what a model may change.

A decision is applied in one transaction together with the job's completion, so it happens once
or not at all. It never changes a pinned memory, never touches what the agent superseded
explicitly nor re-links a memory something else already superseded (the agent's choice, or an
earlier decision, stands), and never forgets on behalf of a writer that may not forget. Those
targets are skipped and the job says why. Every change writes a history row naming the pipeline,
the provider and model, and the reason; `undo` reverses exactly those rows. What the guard kept as
a suggestion is applied by `accept`, on the user's word, under the same rules and the same job."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg
from pydantic import BaseModel

from ..errors import Conflict, InvalidInput, NotFound
from ..models import Principal
from ..permissions import require
from ..repository import edges
from ..repository import jobs as queue
from ..repository.decisions import PIPELINE_ACTOR, DecisionRepository, request_id
from ..repository.jobs import Job, JobRepository
from ..repository.suggestions import record_accepted
from ..turn_vectors import embed_again
from ..validation import content_hash
from .guard import Verdict
from .protocol import Answer


def _why_not(row: asyncpg.Record | None, job: Job, p: Principal, action: str) -> str | None:
    """Why a decision may not change this memory, or None if it may."""
    if row is None:
        return "not visible to the writer"
    if row["deleted_at"] is not None:
        return "already forgotten"
    if row["pinned"]:
        return "pinned"
    if row["id"] in job.explicit:
        return "superseded explicitly by the agent"
    if row["superseded_by"] is not None:
        return f"already superseded by {row['superseded_by']}"
    if (p.agent_confined and row["agent_id"] is None) or (p.project_confined and row["project_id"] is None):
        return "shared beyond the writer's credential"
    if action == "DELETE" and not p.can("forget"):
        return "the writer may not forget"
    return None


class Merged(BaseModel):
    """The text an UPDATE rewrote the new memory to, ready to store (checked, redacted, embedded)."""

    content: str
    content_hash: str
    embedding: list[float] | None = None
    embedding_model: str | None = None


def _label(answer: Answer) -> str:
    return f"{answer.provider}/{answer.model}"


async def apply(repo: DecisionRepository, job: Job, worker: str, answer: Answer, targets: list[UUID],
                candidates: list[UUID], *, merged: Merged | None = None,
                merge_refused: str | None = None, verdict: Verdict | None = None) -> dict[str, Any] | None:
    """Apply `answer` for `job` and mark the job done, in one transaction. None: the job is no
    longer this worker's (taken again after its lease ran out, finished, or cancelled), and
    nothing was changed. `merged`: an UPDATE's text for the new memory; its old text goes to
    history, and undo puts it back exactly."""
    p = job.acting_as()
    d = answer.decision
    result: dict[str, Any] = {"action": d.action, "reason": d.reason, "provider": answer.provider,
                              "model": answer.model, "targets": [str(t) for t in targets],
                              "candidates": [str(c) for c in candidates], "applied": [], "skipped": {}}
    if verdict is not None:  # what our own check kept from the model (guard.py)
        result["proposed"] = [str(t) for t in (*verdict.allowed, *verdict.refused, *verdict.suggested)]
        result["skipped"].update({str(t): why for t, why in (*verdict.refused.items(), *verdict.suggested.items())})
        if verdict.suggested:
            result["suggested"] = {str(t): why for t, why in verdict.suggested.items()}
    if merge_refused:  # the model's merged text could not be stored as a write; the link still is
        result["skipped"][f"text of {job.memory_id}"] = merge_refused
    why = f"decision {d.action} by {_label(answer)}: {d.reason}"
    history: list[tuple[UUID, str, Any, Any]] = []
    async with repo.transaction(p) as conn:
        if not await queue.lock_own(conn, job, worker):
            return None
        rows = await repo.lock(conn, p, [job.memory_id, *targets])
        new = rows.get(job.memory_id)
        if new is None or new["deleted_at"] is not None:
            result["skipped"][str(job.memory_id)] = "the new memory was forgotten before the decision"
        else:
            ok, history = await _change(repo, conn, job, p, d.action, rows, targets, why, result)
            if ok and d.action == "UPDATE" and merged is not None:
                why_not = "pinned" if new["pinned"] else None
                if why_not is None and not await repo.rewrite(conn, p.user_id, job.memory_id, merged.content,
                                                              merged.content_hash, merged.embedding,
                                                              merged.embedding_model):
                    why_not = "an identical memory already exists in its scope"
                if why_not:
                    result["skipped"][f"text of {job.memory_id}"] = f"merged text not stored: {why_not}"
                else:
                    history.append((job.memory_id, "UPDATE", {"content": new["content"]},
                                    {"content": merged.content}))
                    result["merged"] = True
                    # The new text holds what the old ones said and more: an edge undo takes back.
                    await edges.link(conn, p, job.memory_id, [edges.Edge("extends", t, "model") for t in ok])
        if history:
            await repo.history(conn, p.user_id, history, actor=PIPELINE_ACTOR, client=_label(answer),
                               reason=why, request=request_id(job.id))
        await queue.finish(conn, job, result, answer.tokens)
    return result


async def _change(repo: DecisionRepository, conn: asyncpg.Connection, job: Job, p: Principal, action: str,
                  rows: dict[UUID, asyncpg.Record], targets: list[UUID], why: str, result: dict[str, Any]
                  ) -> tuple[list[UUID], list[tuple[UUID, str, Any, Any]]]:
    """Link or softly forget what `action` names, each target only if the rules allow it (the
    rest go to result["skipped"] with the reason); the targets changed, and their history rows."""
    new = rows[job.memory_id]
    history: list[tuple[UUID, str, Any, Any]] = []
    ok: list[UUID] = []
    if action in ("UPDATE", "DELETE"):
        for t in targets:
            reason = _why_not(rows.get(t), job, p, action)
            if reason:
                result["skipped"][str(t)] = reason
            else:
                ok.append(t)
        if ok and action == "UPDATE":
            await repo.supersede(conn, ok, p.user_id, job.memory_id)
            history += [(t, "UPDATE", {"superseded_by": None}, {"superseded_by": job.memory_id}) for t in ok]
        elif ok:
            await repo.forget(conn, ok, p.user_id, why[:500])
            history += [(t, "DELETE", {"deleted_at": None}, {"deleted_reason": why[:500]}) for t in ok]
            # What the new memory says is no longer true: an edge memory_get shows, taken back by undo.
            await edges.link(conn, p, job.memory_id, [edges.Edge("contradicts", t, "model") for t in ok])
    elif action == "NONE" and targets:
        (old,) = targets
        reason = _why_not(new, job, p, "NONE")
        old_row = rows.get(old)
        if reason is None and (old_row is None or old_row["deleted_at"] is not None):
            reason = f"the memory it duplicates ({old}) is gone"
        if reason:
            result["skipped"][str(job.memory_id)] = reason
        else:
            await repo.supersede(conn, [job.memory_id], p.user_id, old)
            history.append((job.memory_id, "UPDATE", {"superseded_by": None}, {"superseded_by": old}))
            ok = [job.memory_id]
    result["applied"] = [*result.get("applied", []), *(str(t) for t in ok)]
    return ok, history


async def accept(repo: DecisionRepository, jobs: JobRepository, p: Principal, job_id: int,
                 memory: UUID | None = None) -> dict[str, Any]:
    """Apply what the guard kept from a model's decision as a suggestion (all of it, or only
    `memory`), on the user's word: the same rules as the decision itself (nothing pinned, nothing
    the agent superseded, ...), in one transaction with its history rows, which belong to the
    decision's job so that undoing the decision undoes them too."""
    require(p, "write")
    job = await jobs.get(p, job_id)
    if job is None:
        raise NotFound(f"job: no decision job {job_id} about memories in this session's scope")
    async with repo.transaction(p) as conn:
        result = await jobs.result_in(conn, p, job_id) or {}  # locks the job: two accepts apply once
        suggested: dict[str, str] = result.get("suggested") or {}
        if result.get("undone_at"):
            raise Conflict(f"decision job {job_id} was undone; accept nothing of it")
        if not suggested:
            raise InvalidInput(f"job: decision job {job_id} keeps no suggestion to accept (`mcp-memory jobs list` "
                               "shows the ones that do)")
        if memory is not None and str(memory) not in suggested:
            raise InvalidInput(f"memory: {memory} is not among the suggestions of job {job_id} "
                               f"({', '.join(suggested)})")
        targets = [memory] if memory is not None else [UUID(t) for t in suggested]
        rows = await repo.lock(conn, p, [job.memory_id, *targets])
        new = rows.get(job.memory_id)
        if new is None or new["deleted_at"] is not None:
            raise Conflict(f"the memory decision job {job_id} was about ({job.memory_id}) is forgotten")
        label = f"{result.get('provider')}/{result.get('model')}"
        why = f"decision {result['action']} by {label}: {result.get('reason', '')} (suggestion accepted by {p.actor})"
        outcome: dict[str, Any] = {"skipped": {}}
        _, history = await _change(repo, conn, job, p, result["action"], rows, targets, why, outcome)
        accepted = [str(t) for t in targets if not {str(t), str(job.memory_id)} & outcome["skipped"].keys()]
        if history:
            await repo.history(conn, p.user_id, history, actor=PIPELINE_ACTOR, client=label, reason=why,
                               request=request_id(job_id))
            skipped = {k: v for k, v in result.get("skipped", {}).items() if k not in accepted}
            await record_accepted(conn, p, job_id, {
                **result, "applied": [*result.get("applied", []), *outcome["applied"]], "skipped": skipped,
                "suggested": {k: v for k, v in suggested.items() if k not in accepted},
                "accepted": [*result.get("accepted", []), *accepted], "accepted_by": p.actor})
    return {"job": job_id, "action": result["action"], "accepted": accepted, "kept": outcome["skipped"]}


async def undo(repo: DecisionRepository, jobs: JobRepository, p: Principal, target: str) -> dict[str, Any]:
    """Reverse a decision, named by one of its history rows (`seq`) or a memory it changed or
    was made about (the latest such decision). One transaction; what changed since the decision
    (relinked, restored, forgotten by someone) is left as it is and reported."""
    require(p, "write")
    target = target.strip()
    async with repo.transaction(p) as conn:
        if target.isdigit():
            job_id = await repo.job_of_history(conn, p, int(target))
            if job_id is None:
                raise NotFound(f"history row {target} is not a decision's (see `mcp-memory jobs list`, "
                               "or memory_history of the memory)")
        else:
            try:
                memory_id = UUID(target)
            except ValueError:
                raise InvalidInput(f"target: {target!r} is neither a history row number nor a memory id") from None
            job_id = (await repo.last_job_touching(conn, p, memory_id)
                      or await jobs.decided_about(conn, p, memory_id))
            if job_id is None:
                raise NotFound(f"no decision changed or was made about memory {memory_id}")
        done = await jobs.result_in(conn, p, job_id)
        if done and done.get("undone_at"):
            raise Conflict(f"decision job {job_id} was already undone")
        rows = await repo.job_rows(conn, p, job_id)
        memories = await repo.lock(conn, p, [r["memory_id"] for r in rows])
        if any(r["memory_id"] not in memories for r in rows) or not await jobs.visible(conn, p, job_id):
            # The same answer as for a decision that does not exist: a credential confined to
            # some agents or projects learns nothing of, and changes nothing in, the others.
            raise NotFound(f"no decision {job_id} about memories in this session's scope")
        reverted, kept = [], {}
        history: list[tuple[UUID, str, Any, Any]] = []
        rewritten: list[UUID] = []
        for r in rows:
            m = memories.get(r["memory_id"])
            if r["event"] == "UPDATE" and "content" in (r["new"] or {}):  # merged text: the old text back
                if m is None or m["content"] != r["new"]["content"]:
                    kept[str(r["memory_id"])] = "its text changed since the decision"
                    continue
                old_text = r["old"]["content"]
                restored = content_hash(old_text, m["kind"], m["metadata"])
                if not await repo.rewrite(conn, p.user_id, m["id"], old_text, restored, None, None):
                    kept[str(r["memory_id"])] = "an identical memory was written since"
                    continue
                history.append((m["id"], "UPDATE", {"content": m["content"]}, {"content": old_text}))
                rewritten.append(m["id"])
                if str(m["id"]) not in reverted:
                    reverted.append(str(m["id"]))
                continue
            if r["event"] == "UPDATE":
                successor = UUID(str(r["new"]["superseded_by"]))
                if m is None or m["superseded_by"] != successor:
                    kept[str(r["memory_id"])] = "its link changed since the decision"
                    continue
                await repo.supersede(conn, [m["id"]], p.user_id, None)
                await edges.unlink_to(conn, p, m["id"], "extends", "model")
                history.append((m["id"], "UPDATE", {"superseded_by": successor}, {"superseded_by": None}))
            elif r["event"] == "DELETE":
                if m is None or m["deleted_at"] is None:
                    kept[str(r["memory_id"])] = "restored since the decision"
                    continue
                if not await repo.restore(conn, m["id"], p.user_id):
                    kept[str(r["memory_id"])] = "an identical memory was written since"
                    continue
                await edges.unlink_to(conn, p, m["id"], "contradicts", "model")
                history.append((m["id"], "RESTORE", {"deleted_at": m["deleted_at"]}, {"deleted_at": None}))
                rewritten.append(m["id"])  # an episode's vector, and the one after it, hold their turns again
            if str(r["memory_id"]) not in reverted:
                reverted.append(str(r["memory_id"]))
        await repo.history(conn, p.user_id, history, actor=p.actor, client=p.client,
                           reason=f"undo decision job {job_id}", request="undo:" + request_id(job_id))
        # A decision that changed nothing (ADD) is still marked undone, so it is not asked twice.
        await jobs.undone(conn, p, job_id, p.actor)
    return {"job": job_id, "reverted": reverted, "kept": kept, "rewritten": rewritten}


async def embed_turns_after(repo: DecisionRepository, vectors: Any, p: Principal, action: str,
                            applied: Sequence[str], rewritten: Sequence[UUID] = ()) -> None:
    """After a decision or an accepted suggestion applied `action` to the memories `applied` (ids as
    its result lists them; a DELETE forgot them) or rewrote one (`rewritten`, a merged UPDATE's): the
    episodes after them, whose vectors hold them, embedded again (nothing with the turn weight at 0),
    outside its transaction."""
    forgotten = [UUID(t) for t in applied] if action == "DELETE" else []
    await embed_again(repo.memories, vectors, p, [*forgotten, *rewritten], itself=False)


async def reembed(repo: DecisionRepository, vectors: Any, p: Principal, ids: list[UUID]) -> None:
    """After an undo put old texts or forgotten memories back: their vectors, and those of the
    episodes after them (which hold them), outside its transaction (best effort: a memory left
    without one is embedded by the backfill)."""
    await embed_again(repo.memories, vectors, p, ids)
