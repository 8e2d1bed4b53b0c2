"""What a question about someone's present compares their notes by (retrieval/focus.py
`similarities`) is embedded when a note is written, in the write's batch (`forms_of`): a new
question about them finds it in the embedding cache instead of embedding a window of their notes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.graph.name_forms import Name
from mcp_memory.graph.names import read_names
from mcp_memory.lexicon.english import ENGLISH
from mcp_memory.models import Principal, WriteItem
from mcp_memory.retrieval.focus import forms_of
from mcp_memory.retrieval.whose import MASK
from mcp_memory.service import MemoryService

from .counting_embedder import counting_service

ODALYS = [("Odalys Pellegrini lives in Leipzig.", 300), ("Odalys Pellegrini drives a Nissan Leaf.", 200),
          ("Odalys Pellegrini moved to Berlin.", 20)]


async def _write(service: MemoryService, p: Principal, texts: list[tuple[str, int]], kind: str = "note") -> list:
    now = datetime.now(UTC)
    return [(await service.write(p, text, kind=kind, occurred_at=now - timedelta(days=days))).memory
            for text, days in texts]


def test_the_forms_a_question_compares_are_those_of_the_subjects_a_memory_is_about() -> None:
    def forms(text: str, kind: str = "note") -> list[str]:
        return forms_of(text, kind, [n for n in read_names(text, kind) if n.role == "about"], ENGLISH)
    assert forms("Benedikt Pereira owns the Puffin roadmap.") == [f"{MASK} {MASK} owns the Puffin roadmap."]
    assert forms("From standup: Benedikt picked up Osprey.") == [f"{MASK} picked up Osprey."]  # the label out
    assert forms("I drive a Kia Niro now.") == [f"{MASK} drive a Kia Niro now."]
    assert forms("Caroline: I moved to Leipzig last spring!", "episode") == []  # a moment is never compared
    assert forms("the weather was fine") == []
    two = [Name("Greta Ibarra", "greta ibarra", "about"), Name("Tomás Lind", "tomás lind", "about"),
           Name("Odalys", "odalys", "about"), Name("coupons pipeline", "coupons pipeline", "about")]
    text = "Greta Ibarra and Tomás Lind met Odalys about the coupons pipeline."
    assert forms_of(text, "note", two, ENGLISH) == [
        f"{MASK} {MASK} and Tomás Lind met Odalys about the coupons pipeline.",
        f"Greta Ibarra and {MASK} {MASK} met Odalys about the coupons pipeline."]  # FORMS_WRITTEN, in order
    assert forms_of(text, "note", two[3:], ENGLISH) == []  # named in lower case: questions take runs of words


async def test_a_new_question_about_someone_finds_their_notes_compared_forms_cached(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    """A note's forms are embedded in its write's batch: a question about its subject that no search
    asked before embeds only itself with the subject masked, none of the subject's notes."""
    counted, embedder = counting_service(database, service, settings)
    *_, newest = await _write(counted, alice, [*ODALYS[:2], ("Update: Odalys Pellegrini moved to Berlin.", 20)])
    assert f"{MASK} {MASK} moved to Berlin." in embedder.embedded  # the label out, as the focus reads it
    written = len(embedder.embedded)
    found = await counted.search(alice, "Where does Odalys Pellegrini live now?", explain=True)
    assert found.hits[0].id == newest.id and "on_topic" in found.hits[0].explain
    assert embedder.embedded[written:] == []


async def test_a_batch_is_written_with_its_forms_and_an_import_without(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    counted, embedder = counting_service(database, service, settings)
    await counted.write_many(alice, [WriteItem(content="Odalys Pellegrini drives a Nissan Leaf."),
                                     WriteItem(content="Caroline: I moved to Leipzig!", kind="episode")])
    assert f"{MASK} {MASK} drives a Nissan Leaf." in embedder.embedded
    assert not [text for text in embedder.embedded if "Leipzig" in text and MASK in text]
    await counted.write_many(alice, [WriteItem(content="Odalys Pellegrini owns a green bicycle.")],
                             compared_forms=False)
    assert "Odalys Pellegrini owns a green bicycle." in embedder.embedded
    assert f"{MASK} {MASK} owns a green bicycle." not in embedder.embedded
