"""Reading what a page was sent: url-encoded forms (no multipart parser needed) and the filter
fields every listing shares. Bad input names its field."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypeVar
from urllib.parse import parse_qs
from uuid import UUID

from starlette.requests import Request

from ..errors import InvalidInput
from ..models import KINDS, MemoryFilter

MAX_FORM_BYTES = 256 * 1024
SCOPES = ("user", "project", "agent", "agent_project")
ORDERS = ("recent", "oldest", "importance")
N = TypeVar("N", int, float)


class Fields:
    """Query or form fields: the first value of a name, or all of them."""

    def __init__(self, values: dict[str, list[str]]) -> None:
        self.values = values

    def get(self, name: str, default: str = "") -> str:
        return (self.values.get(name) or [default])[0].strip()

    def getlist(self, name: str) -> list[str]:
        return [v.strip() for v in self.values.get(name, []) if v.strip()]

    def flag(self, name: str) -> bool:
        return self.get(name) in ("1", "on", "true", "yes")

    def _number(self, name: str, parse: type[N], what: str, lo: N, hi: N) -> N | None:
        """The field as a number in lo..hi, None when empty; anything else names the field."""
        raw = self.get(name)
        if not raw:
            return None
        try:
            value = parse(raw)
        except ValueError:
            raise InvalidInput(f"{name}: expected {what}, got {raw!r}") from None
        if not lo <= value <= hi:
            raise InvalidInput(f"{name}: must be between {lo} and {hi}, got {value}")
        return value

    def int(self, name: str, default: int, lo: int, hi: int) -> int:
        value = self._number(name, int, "a whole number", lo, hi)
        return default if value is None else value

    def float(self, name: str, lo: float, hi: float) -> float | None:
        return self._number(name, float, "a number", lo, hi)

    def ids(self, name: str) -> list[UUID]:
        return [uuid(name, v) for v in self.getlist(name)]


def query(request: Request) -> Fields:
    return Fields(parse_qs(request.url.query, keep_blank_values=True))


async def form(request: Request) -> Fields:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise InvalidInput(f"the form is larger than {MAX_FORM_BYTES // 1024} KiB")
    try:
        return Fields(parse_qs(body.decode(), keep_blank_values=True))
    except UnicodeDecodeError:
        raise InvalidInput("the form is not UTF-8") from None


def uuid(name: str, raw: str) -> UUID:
    try:
        return UUID(raw.strip())
    except ValueError:
        raise InvalidInput(f"{name}: {raw!r} is not a memory id") from None


def moment(name: str, raw: str) -> datetime | None:
    """A date (midnight UTC) or an ISO date-time; naive times are UTC."""
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidInput(f"{name}: expected a date like 2025-01-31 or 2025-01-31T14:00, got {raw!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def tags(raw: str) -> list[str]:
    return [t.strip() for t in raw.split(",") if t.strip()]


def memory_filter(fields: Fields, *, as_of: bool = False) -> MemoryFilter | None:
    """kind (repeatable), tag (comma-separated, all required), scope, since, until, as_of."""
    kinds = fields.getlist("kind")
    for k in kinds:
        if k not in KINDS:
            raise InvalidInput(f"kind: {k!r} is not one of {', '.join(KINDS)}")
    scope = fields.get("scope") or None
    if scope is not None and scope not in SCOPES:
        raise InvalidInput(f"scope: {scope!r} is not one of {', '.join(SCOPES)}")
    f = MemoryFilter(kinds=kinds or None, tags=tags(fields.get("tag")) or None, scope=scope,  # type: ignore[arg-type]
                     since=moment("since", fields.get("since")), until=moment("until", fields.get("until")),
                     as_of=moment("as_of", fields.get("as_of")) if as_of else None)
    return f if f.model_dump(exclude_none=True) else None


def order(fields: Fields) -> str:
    value = fields.get("order") or "recent"
    if value not in ORDERS:
        raise InvalidInput(f"order: {value!r} is not one of {', '.join(ORDERS)}")
    return value
