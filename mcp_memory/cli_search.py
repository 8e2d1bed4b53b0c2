"""`mcp-memory search|stats`: the local user's memories read from the shell."""

from __future__ import annotations

import argparse
from typing import Any

from .cli_common import opened
from .config import Settings


def add_search(sub: Any, common: argparse.ArgumentParser) -> None:
    search = sub.add_parser("search", parents=[common], help="search memories from the shell")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10, choices=range(1, 51), metavar="1-50")
    search.add_argument("--json", action="store_true")
    search.set_defaults(run=cmd_search)


def add_stats(sub: Any, common: argparse.ArgumentParser) -> None:
    stats = sub.add_parser("stats", parents=[common], help="counts by kind and scope")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(run=cmd_stats)


def _print_json(model: Any) -> None:
    print(model.model_dump_json(indent=2))


async def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    async with opened(settings) as (_, service, p):
        result = await service.search(p, args.query, limit=args.limit)
    if args.json:
        _print_json(result)
        return 0
    if not result.hits:
        print("no memories match")
    for i, hit in enumerate(result.hits, 1):
        title = f"{hit.title}: " if hit.title else ""
        print(f"{i:>2}. [{hit.kind}, {hit.scope.level}, {hit.age}] {title}{hit.snippet}")
        print(f"    {hit.uri}  score {hit.score:.4f}")
    return 0


async def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    async with opened(settings) as (_, service, p):
        stats = await service.overview.stats(p)
    if args.json:
        _print_json(stats)
        return 0
    print(f"identity   user={p.user_id} agent={p.agent_id or '-'} project={p.project_id or '-'}")
    print(f"memories   {stats.active} live, {stats.forgotten} forgotten (restorable), {stats.pinned} pinned")
    print(f"by kind    {', '.join(f'{k} {n}' for k, n in sorted(stats.by_kind.items())) or '-'}")
    print(f"by scope   {', '.join(f'{k} {n}' for k, n in sorted(stats.by_scope.items())) or '-'}")
    print(f"top tags   {', '.join(f'{k} {n}' for k, n in stats.top_tags.items()) or '-'}")
    print(f"vectors    {stats.embedding_model or 'none'}; {stats.without_vector} not embedded yet")
    if any(stats.jobs.values()):
        print(f"decisions  {', '.join(f'{k} {n}' for k, n in stats.jobs.items())} (`mcp-memory jobs list`)")
    if stats.oldest:
        print(f"time span  {stats.oldest:%Y-%m-%d} … {stats.newest:%Y-%m-%d}")
    return 0
