"""Rows copied into a temporary table in one round trip and read back typed: what a bulk insert of
thousands of rows (an import's memories, history and graph) goes through."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from ..encoding import to_json


async def staged(conn: asyncpg.Connection, name: str, like: str, columns: Sequence[str], json: set[str],
                 rows: Sequence[Sequence[Any]]) -> str:
    """`rows` (values of `columns` of table `like`) copied into a temporary table `name` dropped at
    commit, with their order as `n`; returns the select list that reads them back as `like`'s types.
    COPY is binary, and our jsonb codec is text: JSON columns go in as text and are cast back."""
    await conn.execute(f"CREATE TEMP TABLE {name} ON COMMIT DROP AS SELECT "
                       f"{', '.join(f'{c}::text' if c in json else c for c in columns)}, 0 AS n FROM {like} LIMIT 0")
    await conn.copy_records_to_table(name, columns=[*columns, "n"], records=[
        (*(None if v is None else to_json(v) if c in json else v for c, v in zip(columns, row, strict=True)), n)
        for n, row in enumerate(rows)])
    return ", ".join(f"{c}::jsonb" if c in json else c for c in columns)
