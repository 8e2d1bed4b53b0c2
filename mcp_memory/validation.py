"""What every value a caller sends must be before it is stored or searched: normalized, within
its limits, or refused with a message that names the argument."""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from .config import ServerSettings
from .encoding import sha256_hex
from .errors import InvalidInput
from .models import MemoryFilter, NewMemory

_SPACE = re.compile(r"\s+")
MAX_METADATA_BYTES = 16_384


def content_hash(content: str, kind: str | None = None, metadata: dict[str, Any] | None = None) -> str:
    """Same text up to case, Unicode form and whitespace is the same memory; only one live copy of
    it is kept per scope. A captured turn is what was said at its place in its session: the same
    words in another session, or said again later in one ("Understood, noted.": its `repeat`, how
    many times the session said it before), are other turns, and a session's history stays whole;
    the same turn captured again, even from a transcript the harness rewrote, is the same memory.
    A session's summary is its session's too: two sessions summed up in the same words keep one each."""
    normalized = _SPACE.sub(" ", unicodedata.normalize("NFKC", content)).strip().casefold()
    session, repeat = (metadata or {}).get("session_id"), (metadata or {}).get("repeat", 0)
    if kind in ("episode", "session_summary") and isinstance(session, str) and session:
        normalized = f"{normalized}\x00{session}\x00{repeat if isinstance(repeat, int) else 0}"
    return sha256_hex(normalized)


def request_fingerprint(new: NewMemory, supersedes: list[UUID] | None, about: list[str] | None = None,
                        key: str | None = None) -> str:
    """What makes two writes the same request for an idempotency key: everything the caller
    chose (the derived vector and the recording client aside). `about` and `key` count only when
    given, so a request made before they existed keeps its fingerprint."""
    chosen = new.model_dump(mode="json", exclude={"embedding", "embedding_model", "source", "content"})
    chosen["supersedes"] = sorted(str(i) for i in supersedes or ())
    if about is not None:
        chosen["about"] = about
    if key is not None:
        chosen["key"] = key
    return sha256_hex(json.dumps(chosen, sort_keys=True))


def token_hash(token: str) -> str:
    return sha256_hex(token)


def as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


# Every date a caller gives must lie in this range (UTC). The drivers store the very first and
# last representable instants as -infinity / infinity, which no ranking can age, so the range
# stops a day short of both ends; within it every date stays searchable.
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, tzinfo=UTC)


def moment(name: str, value: datetime | None) -> datetime | None:
    """A caller's date in UTC, or a clear refusal naming the argument."""
    value = as_utc(value)
    if value is None:
        return None
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not EARLIEST <= utc <= LATEST:
        raise InvalidInput(f"{name} {value.isoformat()} is outside the supported range: in UTC it must lie between "
                           f"{EARLIEST.date()} and {LATEST.date()}")
    return utc


def text(name: str, value: str) -> str:
    """Text PostgreSQL can store: no NUL character, valid Unicode."""
    if "\x00" in value:
        raise InvalidInput(f"{name} contains a NUL character (\\u0000), which cannot be stored or searched; remove it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{name} is not valid Unicode (it holds a lone surrogate such as \\ud800); "
                           "send UTF-8 text") from None
    return value


def json_text(name: str, value: Any) -> None:
    """Every key and string inside a JSON value passes `text`."""
    if isinstance(value, str):
        text(name, value)
    elif isinstance(value, dict):
        for key, item in value.items():
            text(f"{name} key", str(key))
            json_text(name, item)
    elif isinstance(value, list | tuple):
        for item in value:
            json_text(name, item)


class Validator:
    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings

    def content(self, content: str) -> str:
        content = text("content", content).strip()
        if not content:
            raise InvalidInput("content is empty: write the fact, preference or event to remember")
        if len(content) > self.settings.max_content_chars:
            raise InvalidInput(f"content has {len(content)} characters, more than the limit of "
                               f"{self.settings.max_content_chars}; split it into smaller memories")
        return content

    def title(self, title: str | None) -> str | None:
        if title is None or not title.strip():
            return None
        title = _SPACE.sub(" ", text("title", title)).strip()
        if len(title) > self.settings.max_title_chars:
            raise InvalidInput(f"title has {len(title)} characters, more than {self.settings.max_title_chars}")
        return title

    def tags(self, tags: list[str] | None) -> list[str]:
        out: list[str] = []
        for tag in tags or []:
            tag = _SPACE.sub("-", text("tags", tag).strip().lower())
            if not tag:
                raise InvalidInput("tags must not be empty strings")
            if len(tag) > self.settings.max_tag_chars:
                raise InvalidInput(f"tag {tag[:20]!r}… is longer than {self.settings.max_tag_chars} characters")
            if tag not in out:
                out.append(tag)
        if len(out) > self.settings.max_tags:
            raise InvalidInput(f"{len(out)} tags given; at most {self.settings.max_tags} are allowed")
        return out

    @staticmethod
    def metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
        metadata = metadata or {}
        json_text("metadata", metadata)
        size = len(json.dumps(metadata, default=str))
        if size > MAX_METADATA_BYTES:
            raise InvalidInput(f"metadata is {size} bytes of JSON; the limit is {MAX_METADATA_BYTES}")
        return metadata

    def filter(self, f: MemoryFilter | None) -> MemoryFilter | None:
        if f is None:
            return None
        since, until = moment("since", f.since), moment("until", f.until)
        if since and until and since >= until:
            raise InvalidInput("since must be earlier than until")
        return f.model_copy(update={"since": since, "until": until, "as_of": moment("as_of", f.as_of),
                                    "tags": self.tags(f.tags) or None})
