"""Each scope's vectors together: the index a user's sort by distance reads in a store many share.

Where a scope is a small part of a big vector index its memories are sorted by distance instead of
walked to (retrieval/narrowing.py), and in a store many users write to over time a user's rows lie
scattered over the table, about one to a page: a user's 10,419 of a million over 100 users were
10,139 pages read by every search. This btree holds, in each scope's key order, what that sort and
the speaker windows' walk read (the scope, the kind, the time, the vector), so the sort reads the
index alone (an index-only scan, once autovacuum has marked the pages visible), four entries to a
page (docs/benchmarks.md, "A user's vectors together"). It is made for the model the store is built
with, beside its HNSW index (embeddings.py `ensure_index`), and costs about the vectors' size again.

A btree entry holds at most 2,704 bytes. A row whose identifiers are longer than IDS_BYTES together
stays out of the index (its write never fails on it), and so does every vector of a model too big
for an entry (above `fits`'s dimensions: Voyage's and OpenAI's go without; their sorts read the
table as before). A search may read the index only where the planner can prove its rows are in it:
the statement repeats the index's condition on the identifiers (`ids_within`), which holds for
every row a principal whose identifiers fit may see, and is left out for one whose do not (`read_by`)."""

from __future__ import annotations

from ..encoding import sha256_hex
from ..models import Principal
from . import sql

# The identifiers of a row held in the index, in bytes together: 128 characters each are allowed
# (auth.check_identifier), up to four bytes a character.
IDS_BYTES = 512
# An entry's bytes besides its vector and identifiers: the tuple's header, the id, the kind, the
# time and each column's length word, padded.
OTHER_BYTES = 160
BTREE_ENTRY_BYTES = 2704


def fits(dimension: int) -> bool:
    """Whether a model's vector (four bytes a dimension) and the rest fit one btree entry."""
    return 4 * int(dimension) + 8 + IDS_BYTES + OTHER_BYTES <= BTREE_ENTRY_BYTES


def ids_within(alias: str = "m.") -> str:
    """The condition on a row's identifiers the index holds rows by; a statement's copy of it word
    for word is what lets the planner read the index."""
    a = alias
    return (f"(octet_length({a}user_id) + coalesce(octet_length({a}project_id), 0)"
            f" + coalesce(octet_length({a}agent_id), 0) <= {IDS_BYTES})")


def read_by(p: Principal) -> str:
    """The statement's copy of the index's condition (`ids_within`, alias m) where it holds for every
    row `p` may see (each of their identifiers is `p`'s own or NULL), so that a sort of `p`'s scope
    may read the index; "" where `p`'s are longer, and where the scope rule is left to row-level
    security alone (sql.SCOPE_FILTER off: `p` then sees the user's rows of every agent and project)."""
    own = sum(len(x.encode()) for x in (p.user_id, p.project_id or "", p.agent_id or ""))
    return f"AND {ids_within()}" if sql.SCOPE_FILTER and own <= IDS_BYTES else ""


def name(model: str, dimension: int) -> str:
    return f"memories_scope_vectors_{int(dimension)}_{sha256_hex(model)[:10]}"


def definition(model: str, dimension: int, model_literal: str) -> str:
    """CREATE INDEX of the model's scope index (`model_literal`: the model as an SQL literal)."""
    return (f"CREATE INDEX IF NOT EXISTS {name(model, dimension)} ON memories (user_id, project_id, agent_id) "
            f"INCLUDE (id, kind, occurred_at, embedding) "
            f"WHERE deleted_at IS NULL AND embedding_model = {model_literal} AND {ids_within('')}")
