"""Opaque keyset cursors for listings: the sort key of the last row shown, bound to the listing's
order and filters so a cursor cannot be replayed against another listing, and signed (HMAC with
a secret every replica shares, kept in the database) so a client cannot rewrite the key inside."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
from datetime import datetime
from typing import Any
from uuid import UUID

from .errors import InvalidInput
from .models import ListOrder, Memory, MemoryFilter
from .validation import moment

_FORGED = "cursor is not one this server issued; start again without a cursor"


def sort_key(order: ListOrder, m: Memory) -> list[Any]:
    """The keyset the repository pages by, read off a memory already shown."""
    head: list[Any] = [m.importance] if order == "importance" else []
    return [*head, m.occurred_at, m.id]


def _fingerprint(order: ListOrder, f: MemoryFilter | None) -> str:
    return hashlib.sha256(f"{order}|{f.model_dump_json() if f else ''}".encode()).hexdigest()[:12]


class Cursors:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _sign(self, body: bytes) -> str:
        return hmac.new(self._secret, body, hashlib.sha256).hexdigest()[:24]

    def encode(self, order: ListOrder, f: MemoryFilter | None, key: list[Any]) -> str:
        plain = [v.isoformat() if isinstance(v, datetime) else str(v) if isinstance(v, UUID) else v for v in key]
        body = json.dumps({"f": _fingerprint(order, f), "k": plain}, separators=(",", ":"))
        raw = json.dumps({"b": body, "s": self._sign(body.encode())}, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def decode(self, cursor: str, order: ListOrder, f: MemoryFilter | None) -> list[Any]:
        try:
            outer = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
            body = str(outer["b"])
            if not hmac.compare_digest(str(outer["s"]), self._sign(body.encode())):
                raise InvalidInput(_FORGED)
            raw = json.loads(body)
            key = list(raw["k"])
            if raw["f"] != _fingerprint(order, f):
                raise InvalidInput("this cursor belongs to a listing with other filters or order; "
                                   "start again without a cursor")
            parsed: list[Any] = [float(key[0])] if order == "importance" else []
            parsed += [moment("cursor", datetime.fromisoformat(key[-2])), UUID(key[-1])]
            if len(parsed) != len(key) or (order == "importance" and not math.isfinite(parsed[0])):
                raise ValueError("cursor shape")
            return parsed
        except InvalidInput:
            raise
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, json.JSONDecodeError):
            raise InvalidInput(_FORGED) from None
