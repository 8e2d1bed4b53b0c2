"""Reading what a page was sent: url-encoded forms (no multipart parser needed) and the filter
fields every listing shares. Bad input names its field; text is capped as the MCP tools cap it
(limits.py), and an error quotes at most a short clip of what was sent."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypeVar
from urllib.parse import parse_qs
from uuid import UUID

from starlette.requests import Request

from ..errors import InvalidInput
from ..limits import MAX_CONTENT_CHARS, MAX_QUERY_CHARS, MAX_REASON_CHARS, MAX_TAG_CHARS, MAX_TAGS, MAX_TITLE_CHARS
from ..models import KINDS, MemoryFilter

MAX_FORM_BYTES = 256 * 1024
MAX_ECHO_FIELD = MAX_CONTENT_CHARS  # the longest value a page gives back (an outage keeps a form's text)
MAX_FIELD_CHARS = 200  # names, dates, numbers, ids: anything without a cap of its own
CLIP = 60  # how much of a bad value an error quotes
CAPS = {"q": MAX_QUERY_CHARS, "content": MAX_CONTENT_CHARS, "title": MAX_TITLE_CHARS, "reason": MAX_REASON_CHARS,
        "tags": MAX_TAGS * (MAX_TAG_CHARS + 2), "tag": MAX_TAGS * (MAX_TAG_CHARS + 2), "older": 40 * 100,
        "key": 4096, "token": 200, "next": 500, "filter": MAX_QUERY_CHARS, "cursor": 1000, "back": 1000}


def clip(raw: str) -> str:
    """A value as an error may quote it: short, so nothing sent is echoed unbounded."""
    return raw if len(raw) <= CLIP else raw[:CLIP] + f"… ({len(raw)} characters)"


def check_lengths(values: dict[str, list[str]]) -> None:
    """Every field within its cap (the tools' limits where they have one), else a 400 naming it."""
    for name, items in values.items():
        cap = CAPS.get(name, MAX_FIELD_CHARS)
        for value in items:
            if len(value) > cap:
                raise InvalidInput(f"{clip(name)}: at most {cap:,} characters, got {len(value):,}; nothing was done")
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
            raise InvalidInput(f"{name}: expected {what}, got {clip(raw)!r}") from None
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
    """The URL's fields, unchecked: pages call `check_lengths` inside their error handling."""
    return Fields(parse_qs(request.url.query[:MAX_FORM_BYTES], keep_blank_values=True))


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
        raise InvalidInput(f"{name}: {clip(raw)!r} is not a memory id") from None


def moment(name: str, raw: str) -> datetime | None:
    """A date (midnight UTC) or an ISO date-time; naive times are UTC."""
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidInput(f"{name}: expected a date like 2025-01-31 or 2025-01-31T14:00, got {clip(raw)!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def tags(raw: str, name: str = "tags") -> list[str]:
    found = [t.strip() for t in raw.split(",") if t.strip()]
    if len(found) > MAX_TAGS:
        raise InvalidInput(f"{name}: at most {MAX_TAGS} tags, got {len(found)}")
    for t in found:
        if len(t) > MAX_TAG_CHARS:
            raise InvalidInput(f"{name}: a tag has at most {MAX_TAG_CHARS} characters, got {clip(t)!r}")
    return found


def memory_filter(fields: Fields, *, as_of: bool = False) -> MemoryFilter | None:
    """kind (repeatable), tag (comma-separated, all required), scope, since, until, as_of."""
    kinds = fields.getlist("kind")
    for k in kinds:
        if k not in KINDS:
            raise InvalidInput(f"kind: {clip(k)!r} is not one of {', '.join(KINDS)}")
    scope = fields.get("scope") or None
    if scope is not None and scope not in SCOPES:
        raise InvalidInput(f"scope: {clip(scope)!r} is not one of {', '.join(SCOPES)}")
    f = MemoryFilter(kinds=kinds or None, tags=tags(fields.get("tag"), "tag") or None, scope=scope,  # type: ignore[arg-type]
                     since=moment("since", fields.get("since")), until=moment("until", fields.get("until")),
                     as_of=moment("as_of", fields.get("as_of")) if as_of else None)
    return f if f.model_dump(exclude_none=True) else None


def order(fields: Fields) -> str:
    value = fields.get("order") or "recent"
    if value not in ORDERS:
        raise InvalidInput(f"order: {clip(value)!r} is not one of {', '.join(ORDERS)}")
    return value
