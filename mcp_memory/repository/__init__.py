"""The only package that writes SQL for tenant data (with search.py). Every query is filtered by
the caller's scope; every mutation writes its history in the same transaction."""

from . import rate_limits
from .memories import TRACKED, MemoryRepository, to_memory
from .sql import Sql, filtered, live, visible

__all__ = ["rate_limits", "TRACKED", "MemoryRepository", "Sql", "filtered", "live", "to_memory", "visible"]
