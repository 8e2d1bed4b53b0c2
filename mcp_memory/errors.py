"""Failures the caller can act on. The server turns each into a tool error with its message."""


class MemoryServiceError(Exception):
    """Base: the message is written for the agent or user that made the call."""


class InvalidInput(MemoryServiceError):
    pass


class NotFound(MemoryServiceError):
    """Also what a caller gets for something outside its scope, so ids never leak."""


class Conflict(MemoryServiceError):
    pass


class PermissionDenied(MemoryServiceError):
    pass


class Unavailable(MemoryServiceError):
    """The database is not reachable (yet); the call changed nothing."""


class ModelMismatch(Unavailable):
    """The database was built with another embedding model: the server cannot start until it is
    re-embedded or the model is set back."""


class RateLimited(MemoryServiceError):
    """Too many calls of one kind in the current window; the call changed nothing."""
