"""The knowledge-update bench's writer (`--writer`): every attribute of the seven sets has at least
four phrasings of its own, every subject its forms (a first name alone only where no one else in
the set shares it), and what a write passes follows the records: a version names its entity and
attribute, a decoy about someone else names that someone, a note with no attribute passes no key."""

from __future__ import annotations

import collections
import json
import random
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import knowledge_update as ku  # noqa: E402

SETS = sorted((BENCH / "knowledge_update").glob("*.jsonl"))
WORDS = json.loads(ku.WRITER_WORDS.read_text())


def test_seven_sets() -> None:
    assert {p.stem for p in SETS} >= {"assistant", "circle", "crm", "dataset", "life", "ops", "workbench"}


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.stem)
def test_every_attribute_has_four_phrasings(path: Path) -> None:
    records = ku.load(path)
    writer = ku.load_writer(path, records)
    named = {writer.attribute(r, v) for r in records for v in r["versions"]}
    assert None not in named, "a household's stable fact says no attribute writer_words.json knows"
    named |= {writer.plan(r, d)[2] for r in records for d in r["distractors"]} - {None}
    for attribute in named:
        phrasings = writer.keys[attribute]
        assert len(set(phrasings)) == len(phrasings) >= 4, attribute


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.stem)
def test_every_subject_has_its_forms(path: Path) -> None:
    records = ku.load(path)
    entities = WORDS["entities"][path.stem]
    for r in records:
        forms = entities[r["entity"]]
        assert forms[0] == r["entity"] or (r["entity"] == "the user" and forms == WORDS["user"])
    people = [name for name in entities if ku._FULL_NAME.fullmatch(name)]
    firsts = collections.Counter(name.split()[0] for name in people)
    for name in people:
        alone = [f for f in entities[name] if " " not in f]
        assert alone == ([name.split()[0]] if firsts[name.split()[0]] == 1 else []), name


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.stem)
def test_what_a_write_passes(path: Path) -> None:
    records = ku.load(path)
    writer = ku.load_writer(path, records)
    rng = random.Random(0)
    for r in records:
        entity_forms = writer.forms(r["entity"])
        for v in r["versions"]:
            passed = writer.pick(r, v, rng, "about-key")
            assert passed["about"][0] in entity_forms and passed["key"] in writer.keys[writer.attribute(r, v)]
            assert "key" not in writer.pick(r, v, rng, "about")
            assert writer.pick(r, v, rng, "none") == {}
        for d in r["distractors"]:
            passed = writer.pick(r, d, rng, "about-key")
            assert "key" not in passed or "about" in passed
            if "unrelated" in d["why"] or d["why"] == "filler":
                assert "key" not in passed
            if d["why"].startswith(("other subject", "someone else", "names the entity")) and "about" in passed:
                assert passed["about"][0] not in entity_forms, d["content"]


def test_a_writer_keying_half_its_writes_passes_all_or_nothing_on_about_half() -> None:
    path = BENCH / "knowledge_update" / "crm.jsonl"
    records = ku.load(path)
    writer = ku.load_writer(path, records)
    rng = random.Random(0)
    passed = [writer.pick(r, v, rng, "about-key-half") for r in records for v in r["versions"]]
    nothing = sum(1 for x in passed if not x)
    assert 0.4 < nothing / len(passed) < 0.6
    assert all(x.keys() == {"about", "key"} for x in passed if x)


def test_examples() -> None:
    path = BENCH / "knowledge_update" / "life.jsonl"
    records = ku.load(path)
    writer = ku.load_writer(path, records)
    by_key = {m["key"]: (r, m) for r in records for m in (*r["versions"], *r["distractors"])}
    # "Katarina Mbeki is based in Tbilisi these days." (a decoy of Odalys Pellegrini's city)
    assert writer.plan(*by_key["life000.d3"]) == ("Katarina Mbeki", None, "city")
    # "Odalys Pellegrini owns a Nissan Leaf." (her car, not her city)
    assert writer.plan(*by_key["life000.d1"]) == ("Odalys Pellegrini", None, "car")
    # "Katarina Nascimento visited Berlin for a conference." (someone else, no attribute)
    assert writer.plan(*by_key["life000.d2"]) == ("Katarina Nascimento", None, None)
    assert writer.plan(*by_key["life000.v2"]) == ("Odalys Pellegrini", None, "city")
    path = BENCH / "knowledge_update" / "assistant.jsonl"
    records = ku.load(path)
    writer = ku.load_writer(path, records)
    by_key = {m["key"]: (r, m) for r in records for m in (*r["versions"], *r["distractors"])}
    assert writer.plan(*by_key["h00.1.d1"]) == ("My neighbour", None, None)  # "My neighbour just bought a Renault Zoe."
    assert writer.plan(*by_key["h00.s.v1"]) == ("the user", None, "allergy")  # "User is allergic to shellfish."
