"""Opaque keyset cursors for listings: the sort key of the last row shown, bound to the listing's
order and filters so a cursor cannot be replayed against another listing."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime
from typing import Any
from uuid import UUID

from .errors import InvalidInput
from .models import ListOrder, Memory, MemoryFilter


def sort_key(order: ListOrder, m: Memory) -> list[Any]:
    """The keyset the repository pages by, read off a memory already shown."""
    head: list[Any] = [m.importance] if order == "importance" else []
    return [*head, m.occurred_at, m.id]


def _fingerprint(order: ListOrder, f: MemoryFilter | None) -> str:
    return hashlib.sha256(f"{order}|{f.model_dump_json() if f else ''}".encode()).hexdigest()[:12]


def encode(order: ListOrder, f: MemoryFilter | None, key: list[Any]) -> str:
    plain = [v.isoformat() if isinstance(v, datetime) else str(v) if isinstance(v, UUID) else v for v in key]
    raw = json.dumps({"f": _fingerprint(order, f), "k": plain}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str, order: ListOrder, f: MemoryFilter | None) -> list[Any]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        key = list(raw["k"])
        if raw["f"] != _fingerprint(order, f):
            raise InvalidInput("this cursor belongs to a listing with other filters or order; "
                               "start again without a cursor")
        parsed: list[Any] = [float(key[0])] if order == "importance" else []
        parsed += [datetime.fromisoformat(key[-2]), UUID(key[-1])]
        if len(parsed) != len(key):
            raise ValueError("cursor length")
        return parsed
    except InvalidInput:
        raise
    except (ValueError, KeyError, TypeError, IndexError, json.JSONDecodeError):
        raise InvalidInput("cursor is not one this server issued; start again without a cursor") from None
