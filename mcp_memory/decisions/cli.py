"""`mcp-memory jobs list|retry|cancel|accept` and `mcp-memory decisions undo`: the queue and the
decisions of the local user, from the shell."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ..cli_common import opened
from ..config import Settings

if TYPE_CHECKING:
    from ..models import Principal
    from ..service import MemoryService


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    jobs = sub.add_parser("jobs", parents=[common], help="the decision job queue: list, retry, cancel")
    jobs_sub = jobs.add_subparsers(dest="jobs_command", required=True)
    listing = jobs_sub.add_parser("list", parents=[common], help="recent jobs, newest first, with queue counts")
    listing.add_argument("--status", action="append",
                         choices=["queued", "waiting", "running", "done", "dead", "cancelled"],
                         help="only these (repeatable); waiting: queued jobs that wait for a client, the "
                              "endpoint or a budget")
    listing.add_argument("--limit", type=int, default=20, choices=range(1, 1001), metavar="1-1000")
    listing.add_argument("--json", action="store_true")
    retry = jobs_sub.add_parser("retry", parents=[common], help=(
        "put dead or cancelled jobs back in the queue; a waiting job is taken now, free of the budgets"))
    retry.add_argument("ids", nargs="*", type=int, help="job ids (see `jobs list`)")
    retry.add_argument("--dead", action="store_true", help="every dead job")
    retry.add_argument("--waiting", action="store_true", help=(
        "every waiting job, now: lifts the per-minute and per-day budgets for them"))
    cancel = jobs_sub.add_parser("cancel", parents=[common], help="stop queued, running or dead jobs")
    cancel.add_argument("ids", nargs="+", type=int, help="job ids")
    accept = jobs_sub.add_parser("accept", parents=[common], help=(
        "apply what the guard kept from a model's decision as a suggestion (undo it with `decisions undo`)"))
    accept.add_argument("job", type=int, help="the job id (`jobs list` marks its suggestions)")
    accept.add_argument("--memory", help="only this suggested memory id (default: every suggestion of the job)")
    accept.add_argument("--json", action="store_true")
    jobs.set_defaults(run=cmd_jobs)

    decisions = sub.add_parser("decisions", parents=[common], help="decisions a model made: undo")
    decisions_sub = decisions.add_subparsers(dest="decisions_command", required=True)
    undo = decisions_sub.add_parser("undo", parents=[common],
                                    help="reverse a decision, by a history row number or a memory id")
    undo.add_argument("target", help="a memory_history row number (seq) or a memory id")
    undo.add_argument("--json", action="store_true")
    decisions.set_defaults(run=cmd_decisions)


async def cmd_jobs(args: argparse.Namespace, settings: Settings) -> int:
    async with opened(settings, check_model=False) as (_, service, p):
        jobs = service.queue
        if args.jobs_command == "list":
            listed = await jobs.list(p, args.status or (), args.limit)
            counts = await jobs.counts(p)
            if args.json:
                print(json.dumps({"counts": counts, "jobs": [j.model_dump(mode="json", exclude={"principal"})
                                                             for j in listed]}, indent=2))
                return 0
            print("queue  " + ", ".join(f"{k} {v}" for k, v in counts.items()))
            for j in listed:
                outcome = ""
                status = "waiting" if j.status == "queued" and j.waiting else j.status
                if j.waiting and j.status == "queued":
                    outcome = f"{j.waiting} (again at {j.run_after:%H:%M:%S})"
                elif j.result:
                    outcome = f"{j.result.get('action')}: {j.result.get('reason', '')}"[:80]
                    if j.result.get("suggested"):  # what the guard kept from the model for the user
                        outcome += f" (suggested, not applied: {', '.join(j.result['suggested'])})"
                    if j.result.get("accepted"):  # suggestions the user applied (`jobs accept`)
                        outcome += f" (accepted by {j.result.get('accepted_by')}: {', '.join(j.result['accepted'])})"
                    if j.result.get("undone_at"):
                        outcome += " (undone)"
                elif j.last_error:
                    outcome = j.last_error[:80]
                print(f"{j.id:>6}  {status:<9} {j.attempts}/{j.max_attempts}  {j.memory_id}  {outcome[:160]}")
            return 0
        if args.jobs_command == "accept":
            return await _accept(args, service, p)
        if args.jobs_command == "retry":
            ids = list(args.ids)
            if not ids and not args.dead and not args.waiting:
                print("error: ids: name the jobs to retry, or pass --dead or --waiting", file=sys.stderr)
                return 2
            if args.dead:
                ids += [j.id for j in await jobs.list(p, ["dead"], 10_000)]
            if args.waiting:
                ids += [j.id for j in await jobs.list(p, ["waiting"], 10_000) if j.status == "queued"]
            if not ids:  # asked for every dead / waiting job, and there is none: nothing to do is no error
                kinds = " or ".join(w for w, on in (("dead", args.dead), ("waiting", args.waiting)) if on)
                print(f"nothing to retry: no {kinds} jobs")
                return 0
            done = await jobs.retry(p, ids)
            print(f"queued again: {', '.join(map(str, done)) or 'none'}")
            missing = sorted(set(ids) - set(done))
            if missing:
                print(f"not retried (no such job, or not dead/cancelled): {', '.join(map(str, missing))}",
                      file=sys.stderr)
            return 0 if done else 1
        done = await jobs.cancel(p, args.ids)
        print(f"cancelled: {', '.join(map(str, done)) or 'none'}")
        missing = sorted(set(args.ids) - set(done))
        if missing:
            print(f"not cancelled (no such job, or already done/cancelled): {', '.join(map(str, missing))}",
                  file=sys.stderr)
        return 0 if done else 1


async def _accept(args: argparse.Namespace, service: MemoryService, p: Principal) -> int:
    from ..errors import InvalidInput

    try:
        memory = UUID(args.memory) if args.memory is not None else None
    except ValueError:
        raise InvalidInput(f"memory: {args.memory!r} is not a memory id") from None
    result = await service.accept_suggestion(p, args.job, memory)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        accepted = result["accepted"]
        print(f"job {result['job']}: {result['action']} applied to {', '.join(accepted) or 'nothing'}"
              + (f" (reverse it with `mcp-memory decisions undo {accepted[0]}`)" if accepted else ""))
        for memory_id, why in result["kept"].items():
            print(f"  not applied: {memory_id}: {why}", file=sys.stderr)
    return 0 if result["accepted"] else 1


async def cmd_decisions(args: argparse.Namespace, settings: Settings) -> int:

    async with opened(settings, check_model=False) as (_, service, p):
        result = await service.undo_decision(p, args.target)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"undid decision job {result['job']}: {len(result['reverted'])} memories reverted"
          + (f" ({', '.join(result['reverted'])})" if result["reverted"] else ""))
    for memory_id, why in result["kept"].items():
        print(f"  left as is: {memory_id}: {why}")
    return 0
