"""Who a session is. stdio is local and trusted: identity comes from flags / env, with
defaults from the OS user, the MCP client's name and the workspace's git repository."""

from __future__ import annotations

import getpass
import re
from pathlib import Path

from .config import Settings
from .errors import InvalidInput
from .models import ALL_PERMISSIONS, Principal

_ID = re.compile(r"^[^\x00-\x1f\x7f]{1,128}$")
NO_PROJECT = "none"


def check_identifier(kind: str, value: str) -> str:
    value = value.strip()
    if not _ID.match(value):
        raise InvalidInput(f"{kind} must be 1–128 printable characters, got {value!r}")
    return value


def os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local"


def git_project(start: Path) -> str | None:
    """The name of the git repository containing `start` (its top-level folder's name), so the
    same repository cloned on two machines shares one project namespace."""
    try:
        start = start.resolve()
    except OSError:
        return None
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder.name
    return None


def project_from_roots(roots: list[Path]) -> str | None:
    for root in roots:
        name = git_project(root)
        if name:
            return name
    for root in roots:
        if root.name:
            return root.name
    return None


def local_principal(settings: Settings, *, client_name: str | None = None,
                    roots: list[Path] | None = None, cwd: Path | None = None) -> Principal:
    """stdio identity. Explicit settings win; then the client's workspace roots; then the
    working directory's git repository. `MCP_MEMORY_PROJECT=none` turns projects off."""
    user = check_identifier("user", settings.user or os_user())
    agent = settings.agent or client_name
    if settings.project is not None:
        project = None if settings.project.strip().lower() == NO_PROJECT else settings.project
    else:
        project = project_from_roots(roots or []) or git_project(cwd or Path.cwd())
    return Principal(
        user_id=user,
        agent_id=check_identifier("agent", agent) if agent else None,
        project_id=check_identifier("project", project) if project else None,
        permissions=ALL_PERMISSIONS,  # the local owner of the data may do everything
        actor=f"local:{user}",
        client=client_name,
    )
