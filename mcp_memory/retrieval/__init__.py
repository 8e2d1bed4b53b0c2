"""Hybrid retrieval: parse the query (query.py), rank in one SQL statement (search.py), then
re-order versions of a fact and superseded memories (versions.py)."""

from .query import ParsedQuery, intent_of, parse_query, split_query
from .search import search

__all__ = ["ParsedQuery", "intent_of", "parse_query", "search", "split_query"]
