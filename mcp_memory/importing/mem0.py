"""mem0 and OpenMemory exports.

- mem0 (the `mem0ai` package, and its hosted platform's client): what `Memory.get_all()` returns,
  saved as JSON: `{"results": [{"id", "memory", "hash", "metadata", "created_at", "updated_at",
  "user_id", "agent_id", "run_id", "actor_id", "role"}, ...]}` (a bare list of those too; the
  platform adds `categories` and `app_id`).
- OpenMemory's backup (`POST /api/v1/backup/export`): a zip holding `memories.json`, an object
  with `user`, `apps`, `categories`, `memories` (`id`, `content`, `metadata`, `state`,
  `created_at`, `app_id`, `category_ids`, ...) and `export_meta`; the zip or the file itself.

mem0's ids name its namespaces, never ours: a memory goes to the importing identity, at the level
mem0 gave it (a user's memory to the user's namespace, an agent's to the importing agent's), and
the ids stay in metadata (`original_user_id`, `original_agent_id`, `original_run_id`), a run's as
a tag too. Deleted and archived OpenMemory memories stay out."""

from __future__ import annotations

import io
import json
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from . import Draft

ZIP_MAGIC = b"PK\x03\x04"
LIVE_STATES = {"active", "paused"}


def is_zip(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(4) == ZIP_MAGIC


def load(path: Path) -> Any:
    """The export's JSON: the file's, or the `memories.json` inside OpenMemory's zip."""
    if is_zip(path):
        try:
            with zipfile.ZipFile(path) as zf:
                member = next((n for n in zf.namelist() if n.rsplit("/", 1)[-1] == "memories.json"), None)
                if member is None:
                    raise InvalidInput("a zip without memories.json, so not an OpenMemory backup")
                raw = zf.read(member)
        except (zipfile.BadZipFile, OSError) as exc:
            raise InvalidInput(f"not a readable zip ({exc})") from None
    else:
        raw = path.read_bytes()
    try:
        return json.load(io.BytesIO(raw))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"not JSON ({exc})") from None


def _items(data: Any) -> list[Any] | None:
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        return data["results"]
    return data if isinstance(data, list) else None


def flavour(data: Any) -> str | None:
    """'mem0', 'openmemory' or None (not an export of either)."""
    items = _items(data)
    if items and all(isinstance(i, dict) and "memory" in i and "id" in i for i in items[:20]):
        return "mem0"
    if isinstance(data, dict) and isinstance(data.get("memories"), list) and (
            "export_meta" in data or "user" in data) and all(
            isinstance(m, dict) and "content" in m for m in data["memories"][:20]):
        return "openmemory"
    return None


def _when(value: Any, record: str) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{record}: created_at {value!r} is not an ISO 8601 time") from None


def _text(item: dict[str, Any], key: str, record: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{record}: no text in {key!r}")
    return value


def _meta(item: dict[str, Any], record: str) -> dict[str, Any]:
    given = item.get("metadata") or {}
    if not isinstance(given, dict):
        raise InvalidInput(f"{record}: metadata is not a JSON object")
    return {("original_" + k if k in ("source", "original_id") else k): v for k, v in given.items()}


def read(data: Any) -> list[Draft]:
    """Each memory, at the scope level mem0 gave it."""
    kind = flavour(data)
    if kind is None:
        raise InvalidInput("neither a mem0 get_all() export nor an OpenMemory backup")
    return _mem0(_items(data) or []) if kind == "mem0" else _openmemory(data)


def _mem0(items: list[dict[str, Any]]) -> list[Draft]:
    out: list[Draft] = []
    for index, item in enumerate(items):
        record = f"results[{index}] (id {item.get('id')})"
        metadata = _meta(item, record)
        tags = [str(c) for c in item.get("categories") or [] if str(c).strip()]
        for key in ("user_id", "agent_id", "run_id", "app_id", "actor_id"):
            if item.get(key):
                metadata[f"original_{key}"] = item[key]
        if item.get("role"):
            metadata["role"] = item["role"]
        if item.get("run_id"):
            tags.append(f"run:{item['run_id']}")
        metadata.update({"source": "mem0", "original_id": str(item["id"])})
        draft = Draft(content=_text(item, "memory", record), tags=tags, metadata=metadata,
                      occurred_at=_when(item.get("created_at"), record), record=record,
                      scope="agent" if item.get("agent_id") else "user")
        out.append(draft)
    return out


def _openmemory(data: dict[str, Any]) -> list[Draft]:
    apps = {a.get("id"): a.get("name") for a in data.get("apps") or [] if isinstance(a, dict)}
    categories = {c.get("id"): c.get("name") for c in data.get("categories") or [] if isinstance(c, dict)}
    user = (data.get("user") or {}).get("user_id") if isinstance(data.get("user"), dict) else None
    out: list[Draft] = []
    for index, item in enumerate(data["memories"]):
        record = f"memories[{index}] (id {item.get('id')})"
        if (item.get("state") or "active") not in LIVE_STATES or item.get("deleted_at"):
            continue
        metadata = _meta(item, record)
        tags = [str(categories[c]) for c in item.get("category_ids") or [] if categories.get(c)]
        if user:
            metadata["original_user_id"] = user
        if apps.get(item.get("app_id")):
            metadata["original_app"] = apps[item.get("app_id")]
        metadata.update({"source": "openmemory", "original_id": str(item.get("id"))})
        draft = Draft(content=_text(item, "content", record), tags=tags, metadata=metadata,
                      occurred_at=_when(item.get("created_at"), record), record=record, scope="user")
        out.append(draft)
    return out
