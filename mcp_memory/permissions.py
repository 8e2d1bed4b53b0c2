"""The one check of what a session's credential allows."""

from __future__ import annotations

from .errors import PermissionDenied
from .models import Principal


def require(p: Principal, permission: str) -> None:
    if not p.can(permission):
        raise PermissionDenied(f"this session's credential lacks the '{permission}' permission")
