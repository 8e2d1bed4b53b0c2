"""What every value a caller sends must be before it is stored or searched: normalized, within
its limits, or refused with a message that names the argument."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from datetime import UTC, datetime
from typing import Any

from .config import Settings
from .errors import InvalidInput
from .models import MemoryFilter

_SPACE = re.compile(r"\s+")
MAX_METADATA_BYTES = 16_384


def content_hash(content: str) -> str:
    """Same text up to case, Unicode form and whitespace is the same memory."""
    normalized = _SPACE.sub(" ", unicodedata.normalize("NFKC", content)).strip().casefold()
    return hashlib.sha256(normalized.encode()).hexdigest()


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


class Validator:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def content(self, content: str) -> str:
        content = content.strip()
        if not content:
            raise InvalidInput("content is empty: write the fact, preference or event to remember")
        if len(content) > self.settings.max_content_chars:
            raise InvalidInput(f"content has {len(content)} characters, more than the limit of "
                               f"{self.settings.max_content_chars}; split it into smaller memories")
        return content

    def title(self, title: str | None) -> str | None:
        if title is None or not title.strip():
            return None
        title = _SPACE.sub(" ", title).strip()
        if len(title) > self.settings.max_title_chars:
            raise InvalidInput(f"title has {len(title)} characters, more than {self.settings.max_title_chars}")
        return title

    def tags(self, tags: list[str] | None) -> list[str]:
        out: list[str] = []
        for tag in tags or []:
            tag = _SPACE.sub("-", tag.strip().lower())
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
        size = len(json.dumps(metadata, default=str))
        if size > MAX_METADATA_BYTES:
            raise InvalidInput(f"metadata is {size} bytes of JSON; the limit is {MAX_METADATA_BYTES}")
        return metadata

    def filter(self, f: MemoryFilter | None) -> MemoryFilter | None:
        if f is None:
            return None
        since, until = as_utc(f.since), as_utc(f.until)
        if since and until and since >= until:
            raise InvalidInput("since must be earlier than until")
        return f.model_copy(update={"since": since, "until": until, "as_of": as_utc(f.as_of),
                                    "tags": self.tags(f.tags) or None})
