"""The MCP surface: the only package that knows about MCP. Everything it does goes through
MemoryService."""

from .app import INSTRUCTIONS, build_server

__all__ = ["INSTRUCTIONS", "build_server"]
