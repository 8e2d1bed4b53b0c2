"""`mcp-memory migrate|purge|backfill|doctor`: the store's upkeep: its schema, the retention
sweep, vectors and names a memory still lacks, and what to fix."""

from __future__ import annotations

import argparse
from typing import Any

from .cli_common import opened
from .cli_server import resident_line
from .config import OperationsSettings, Settings


def add_migrate(sub: Any, common: argparse.ArgumentParser) -> None:
    sub.add_parser("migrate", parents=[common], help="create or upgrade the schema").set_defaults(run=cmd_migrate)


def add_purge(sub: Any, common: argparse.ArgumentParser) -> None:
    purge = sub.add_parser("purge", parents=[common], help="run the retention sweep now")
    purge.add_argument("--dry-run", action="store_true", help="count what would go, delete nothing")
    purge.set_defaults(run=cmd_purge)


def add_backfill(sub: Any, common: argparse.ArgumentParser) -> None:
    backfill = sub.add_parser("backfill", parents=[common],
                              help="embed memories stored without a vector (--reembed: switch models), and read "
                                   "the names of those the graph has not read (stored before it, or imported)")
    backfill.add_argument("--reembed", action="store_true",
                          help="re-embed every memory with the configured model (after changing models)")
    backfill.add_argument("--episodes", action="store_true",
                          help="embed every episode again with the turn rule now configured (after changing "
                               "MCP_MEMORY_EMBEDDING_TURN_WEIGHT or MCP_MEMORY_EMBEDDING_TURN_MINUTES)")
    backfill.add_argument("--batch-size", type=int, default=64)
    backfill.add_argument("--quiet", action="store_true", help="no progress bar")
    backfill.set_defaults(run=cmd_backfill)


def add_doctor(sub: Any, common: argparse.ArgumentParser) -> None:
    doctor = sub.add_parser("doctor", parents=[common], help="check the database and say what to fix")
    doctor.set_defaults(run=cmd_doctor)


async def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    async with opened(settings) as (db, _, _):
        print(f"applied: {', '.join(db.applied)}" if db.applied else "schema is up to date")
    return 0


async def cmd_purge(args: argparse.Namespace, settings: Settings) -> int:
    from .retention import sweep

    async with opened(settings) as (db, _, _):
        report = await sweep(db.admin, settings.part(OperationsSettings), dry_run=args.dry_run)
    verb = "would remove" if report.dry_run else "removed"
    print(f"{verb}: {report.tombstones} forgotten memories past {settings.purge_after_days} days, "
          f"{report.history} history rows past {settings.history_days} days, {report.forget_tokens} forget tokens, "
          f"{report.idempotency_keys} idempotency keys, {report.decision_jobs} finished decision jobs; "
          f"{report.stale_forgotten} stale memories "
          f"{'would be ' if report.dry_run else ''}forgotten ({report.seconds:.2f}s)")
    return 0


async def cmd_backfill(args: argparse.Namespace, settings: Settings) -> int:
    from .backlog import Backlog

    async with opened(settings, check_model=not args.reembed) as (db, service, _):
        assert service.vectors is not None
        done = await service.vectors.backfill(reembed=args.reembed, batch_size=args.batch_size,
                                              progress=not args.quiet, episodes=args.episodes)
        read = await Backlog(db.admin, service.structure).read_all(progress=not args.quiet)
    print(f"embedded {done} memories with {service.vectors.model}; read the names of {read} memories")
    return 0


async def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from .db.doctor import diagnose

    checks = await diagnose(settings)
    for check in checks:
        mark = "ok  " if check.ok else "FAIL"
        print(f"[{mark}] {check.name}: {check.detail}")
        if not check.ok and check.fix:
            print(f"       fix: {check.fix}")
    from .resident_client import request

    reply = request("status", settings.database_url, str(settings.data_dir))
    print(f"[info] {resident_line(reply) if reply else 'resident server: none runs for this store'}")
    return 0 if all(c.ok for c in checks) else 1
