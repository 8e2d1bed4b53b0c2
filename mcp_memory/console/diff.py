"""A history entry as a reader wants it: for each field that changed, the old and new value, and
for text a word-level diff (runs of kept, removed and added words)."""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from pydantic import BaseModel

from ..models import HistoryEntry

TEXT_FIELDS = ("content", "title")
_WORDS = re.compile(r"\s+|[^\s]+")


class Change(BaseModel):
    field: str
    old: str | None
    new: str | None
    runs: list[tuple[str, str]] | None = None  # ('same' | 'del' | 'ins', text) for text fields


class Step(BaseModel):
    entry: HistoryEntry
    changes: list[Change]


def _show(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:.4g}"  # a float4 read back (importance 0.800000011920929) as it was meant: 0.8
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def words(old: str, new: str) -> list[tuple[str, str]]:
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    runs: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            runs.append(("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            runs.append(("del", "".join(a[i1:i2])))
        if j2 > j1:
            runs.append(("ins", "".join(b[j1:j2])))
    return runs


def step(entry: HistoryEntry) -> Step:
    old, new = entry.old or {}, entry.new or {}
    changes = []
    for name in list(dict.fromkeys([*old, *new])):
        before, after = _show(old.get(name)), _show(new.get(name))
        if entry.event != "ADD" and before == after:
            continue
        if entry.event == "ADD" and after in (None, "", "[]", "{}"):
            continue  # a new memory's empty fields say nothing
        runs = words(before or "", after or "") if name in TEXT_FIELDS and entry.event != "ADD" else None
        changes.append(Change(field=name, old=before, new=after, runs=runs))
    return Step(entry=entry, changes=changes)


def timeline(entries: list[HistoryEntry]) -> list[Step]:
    """Newest first: what a reviewer looks at first is the latest change."""
    return [step(e) for e in reversed(entries)]
