"""Knowledge-update benchmark: does search put the newest version of a changed fact first?

Loads bench/knowledge_update/dataset.jsonl (see generate.py there) through `MemoryService.write`
into one scope (records with a `scope`, assistant.jsonl's and workbench.jsonl's households, into
one each): every version and distractor is a memory with its `occurred_at`. For each entity's
question it runs `MemoryService.search` and reports, per variant (the table in bench/locomo.py):
  newest-first  the newest version ranks above every stale version of that entity (a stale version
                missing from the hits counts as below); the chance level of a ranking blind to
                time is the mean of 1 / number of versions;
  newest@1      the newest version is the top hit;
  MRR           reciprocal rank of the newest version (0 if not within the limit);
  found@10      the newest version is in the top 10;
and search latency. It also checks lexical parity: the share of entities whose every version
contains every word of the question (full text), so the ranking cannot be decided by wording.

Dates are shifted so that the dataset's `as_of` is now (`--dates rebased`, the default): a
recency factor relative to now then sees the ages the set was built with.

Each copy of the set is loaded for its own user (own ids, own insertion order) and the results of
`--repeat` copies are pooled, because stale and newest versions tie lexically by design and ties
fall to random ids.

`--writer about-key` has the writer say, in its own words and varying per write, who each memory
is about and which attribute it states (`about`, `key`; bench/knowledge_update/writer_words.json,
picked by a seeded random choice per write); `--writer about-key-half` does so on a seeded half of
the writes and passes nothing on the rest, as an agent that forgets now and then; `--writer about`
passes `about` alone; `none` (the default) passes neither. After loading, every run reports the
supersedes the server made, judged by the set's records: right (a stale version replaced by a later
version of its record), wrong (a
distractor, a newest version, or a version replaced by a memory of another entity or attribute,
or by an older version of its own), and apart from both the decoy updates (two decoys stating one
fact, the later replacing the earlier) and the restated ("(noted again)" repeats).

Usage: python bench/knowledge_update.py [DATASET] [--variants a,b] [--set key=value ...] [--limit 50] [--repeat 3]
                                        [--writer none|about-key|about-key-half|about] [--questions no-time-words]

`--questions no-time-words` asks each question without its words for the present ("What's my car
currently?" as "What's my car?"), as users often ask them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import statistics
import sys
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from decisions_mode import add_arguments as add_decision_arguments
from decisions_mode import drain as drain_decisions
from decisions_mode import settings_for as decision_settings
from locomo import (
    REPO,
    Bench,
    add_variant_arguments,
    bench_database,
    bench_principal,
    choose_variants,
    latency,
    machine,
    parse_sets,
    resolve_variants,
    table,
)

from mcp_memory.retrieval.query import parse_query

DEFAULT_DATASET = REPO / "bench" / "knowledge_update" / "dataset.jsonl"
WRITER_WORDS = REPO / "bench" / "knowledge_update" / "writer_words.json"
WRITERS = ("none", "about-key", "about", "about-key-half")
EXAMPLES = 20  # wrong supersedes of each kind kept in the JSON


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def shift_of(records: list[dict[str, Any]], dates: str = "rebased") -> timedelta:
    """How far every date moves: whole days to bring the set's `as_of` to today (`rebased`), or none."""
    return timedelta(days=(datetime.now(UTC) - parse_time(records[0]["as_of"])).days) if dates == "rebased" \
        else timedelta(0)


def user_of(user: str, record: dict[str, Any]) -> str:
    """Records with a `scope` (assistant.py's and workbench.py's households: one user each) load
    under their own user."""
    return f"{user}-{record['scope']}" if "scope" in record else user


# --- the writer's own words (--writer) -------------------------------------------------------------

# A person named in a memory's text: two capitalised words, not a sentence's opening verb or article.
_PERSON = re.compile(r"\b(?!(?:Team|The|Had|Remind|Owe|Send|Cost|After)\b)([A-Z][a-z]+(?:-[a-z]+)? [A-Z][a-z]+)\b")
# A team or a service named in a memory's text (ops, dataset).
_THING = re.compile(r"\b([Tt]eam [A-Z][a-z]+|[A-Za-z][a-z]+ (?:service|API|worker|pipeline|gateway))\b")
_FULL_NAME = re.compile(r"[A-Z][a-z'-]+(?: [A-Z][a-z'-]+)+")
_SERVICE = re.compile(r"^[a-z]+ (?:service|API|worker|pipeline|gateway)$")
# A household filler about the user ("I prefer squash merges.", "User likes dark mode.").
_ABOUT_ME = re.compile(r"^(?:I|I'm|User|The user)\b|\bme\b")


def set_name(dataset: Path) -> str:
    return dataset.stem


def name_forms(name: str, first_name_unique: bool, user: list[str]) -> list[str]:
    """The ways an agent refers to a subject: the user as 'me' / 'the user' / 'user'; a person by
    the full name and, where nobody else in the set shares it, the first name alone; a team by its
    name with and without 'team'; a service with and without 'the', and as a slug."""
    if name == "the user":
        return list(user)
    if name.startswith("team "):
        bare = name.removeprefix("team ")
        return [name, bare, f"the {bare} team", f"{bare} team"]
    if _SERVICE.match(name):
        return [name, f"the {name}", name.replace(" ", "-").lower()]
    if re.fullmatch(r"[A-Z][a-z]+", name):  # dataset.jsonl's teams: "Wren"
        return [name, f"the {name} team", f"{name} team", f"team {name}"]
    if _FULL_NAME.fullmatch(name):
        return [name, name.split()[0]] if first_name_unique else [name]
    return [name]


def _thing(text: str) -> str:
    """'Maps pipeline' -> 'maps pipeline', 'Team Basalt' -> 'team Basalt'."""
    return text[0].lower() + text[1:]


def _first_subject(text: str, anywhere: bool = True) -> str | None:
    """The first person, team or service the text names (at its start only, unless `anywhere`)."""
    found = [(m.start(), m.group(1)) for m in _PERSON.finditer(text)]
    found += [(m.start(), _thing(m.group(1))) for m in _THING.finditer(text)]
    found = [f for f in found if anywhere or f[0] == 0]
    return min(found)[1] if found else None


def _value_pattern(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w#-]){re.escape(value)}(?![\w-])")


_GLUE = frozenset("the and for with has had was are now its his her their our who team".split())


def _tokens(text: str, subject: str) -> list[str]:
    """Words and punctuation of a text, its subject replaced by '{e}'."""
    text = re.sub(re.escape(subject), "{e}", text, flags=re.IGNORECASE)
    return re.findall(r"\{e\}|\w[\w'-]*|[^\w\s]", text.lower())


def _shared(mine: list[str], theirs: list[str]) -> int | None:
    """How many tokens two texts share at their start and end, if they differ only in a short
    stretch between (a value: at most four tokens of `mine`, six of `theirs`), else None."""
    n = min(len(mine), len(theirs))
    start = next((i for i in range(n) if mine[i] != theirs[i]), n)
    end = next((i for i in range(n - start) if mine[-1 - i] != theirs[-1 - i]), n - start)
    if len(mine) - start - end > 4 or len(theirs) - start - end > 6 or start + end < 3:
        return None
    shared = mine[:start] + mine[len(mine) - end:]
    if not any(len(w) >= 3 and w.isalpha() and w not in _GLUE for w in shared):
        return None  # "{e} is allergic to peanuts." and "{e} is working at Globex." share no word of substance
    return start + end


class Writer:
    """What a writing agent passes with each memory of one set: `about` (who it is about, in one of
    the forms an agent uses) and `key` (the attribute it states, in one of several phrasings), from
    bench/knowledge_update/writer_words.json. `plan` says what the memory is about by the set's
    records; `pick` words it for one write."""

    def __init__(self, words: dict[str, Any], name: str, records: list[dict[str, Any]]) -> None:
        self.keys: dict[str, list[str]] = {**words["keys"], **words.get("keys_by_set", {}).get(name, {})}
        self.entities: dict[str, list[str]] = words.get("entities", {}).get(name, {})
        self.user: list[str] = words["user"]
        self.others: dict[str, list[str]] = words["others"]
        self.prefixes = sorted(self.others, key=len, reverse=True)
        self.relations: list[str] = words["relations"]
        self.stable: list[dict[str, str]] = words["stable"]
        self.decoys = [(re.compile("^" + re.escape(d["fact"]).replace(re.escape("{x}"), "(?P<x>.+?)") + "$"), d)
                       for d in words["decoys"]]
        # Values the set's records give each attribute (a stated value tells which attribute another
        # memory of the same subject states): answers of four characters or more with a letter or a
        # colon in them (no bare numbers).
        values: dict[str, set[str]] = {}
        for r in records:
            if r["attribute"] != "stable" and len(r["answer"]) >= 4 and re.search(r"[A-Za-z:]", r["answer"]):
                values.setdefault(r["attribute"], set()).add(r["answer"])
        self.values = {a: [_value_pattern(v) for v in sorted(vs)] for a, vs in values.items()}
        # The versions' wording with their subject taken out, per attribute: a memory worded like
        # the versions of one attribute states that attribute ("{e} parks a Kia Niro outside the office.").
        self.shapes: list[tuple[str, list[str]]] = [
            (a, _tokens(v["content"], r["entity"])) for r in records
            if (a := self.attribute(r, r["versions"][0])) is not None for v in r["versions"]]

    # -- what a memory is about, by the records -----------------------------------------------

    def attribute(self, r: dict[str, Any], m: dict[str, Any]) -> str | None:
        """The attribute a version states: its record's, or for a household's stable fact
        (attribute 'stable') the one its text says."""
        if r["attribute"] != "stable":
            return str(r["attribute"])
        return next((s["attribute"] for s in self.stable if s["says"] in m["content"]), None)

    def _with_relation(self, text: str, subject: str) -> tuple[str, str | None]:
        """'<subject>'s sister ...' -> (subject, 'sister')."""
        rest = text.split(subject, 1)[1] if subject in text else ""
        for rel in self.relations:
            if rest.startswith(f"'s {rel} ") or rest.startswith(f"'s {rel},"):
                return subject, rel
        return subject, None

    def _other_attribute(self, r: dict[str, Any], text: str) -> str | None:
        """The other attribute of the set that a memory about the record's subject states: the one
        whose known value it names, else the one whose versions it is worded like; None if neither
        tells one attribute."""
        bare = text
        for form in sorted(self.forms(r["entity"]), key=len, reverse=True):
            bare = bare.replace(form, " ")
        stated = {a for a, patterns in self.values.items()
                  if a != r["attribute"] and any(p.search(bare) for p in patterns)}
        if len(stated) == 1:
            return stated.pop()
        mine = _tokens(text, r["entity"])
        best: dict[str, int] = {}
        for a, shape in self.shapes:
            if a != r["attribute"] and (score := _shared(mine, shape)) is not None:
                best[a] = max(best.get(a, 0), score)
        if not best:
            return None
        top = max(best.values())
        winners = [a for a, score in best.items() if score == top]
        return winners[0] if len(winners) == 1 else None

    def plan(self, r: dict[str, Any], m: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
        """(subject, relation, attribute) of one memory: the subject a name of the set (an entity,
        a person, team or service its texts name), a household's other person (a prefix of
        `others`) or a named thing; the relation a word of `relations` ('<subject>'s sister') or
        None; the attribute one of `keys` or None (no attribute the records tell)."""
        text = m["content"]
        if m in r["versions"]:
            return r["entity"], None, self.attribute(r, m)
        why = m.get("why", "")
        if why == "filler":
            if r["entity"] == "the user":
                return ("the user" if _ABOUT_ME.search(text) else None), None, None
            subject = _first_subject(text)
            return (subject, None, None) if subject else (None, None, None)
        if why.startswith(("same person", "same subject", "same entity")):
            other = None if "unrelated" in why else self._other_attribute(r, text)
            return r["entity"], None, other
        if why == "someone else, same words":
            # The longest prefix followed by a space: "The client's repo ..." before "The client ...";
            # "My friends invited me" is no one's ("My friend's manager" does not match).
            prefix = next((p for p in self.prefixes if text.startswith(p + " ")), None)
            return prefix, None, None
        if why == "other subject, shared words":
            if "fact" in m:
                for pattern, d in self.decoys:
                    if (hit := pattern.match(m["fact"])) is None:
                        continue
                    if d["about"] is None:
                        return None, None, None
                    if "{x}" not in d["about"]:
                        return d["about"], None, d["attribute"]
                    x = _thing(hit["x"]) if _THING.fullmatch(hit["x"]) else hit["x"]
                    rel = d["about"].replace("{x}", "").removeprefix("'s ").strip() or None
                    return x, rel, d["attribute"]
                return None, None, None
            subject = _first_subject(text, anywhere=False)
            return (*self._with_relation(text, subject), None) if subject else (None, None, None)
        if why == "names the entity and the attribute, about something else":
            subject, rel = self._with_relation(text, r["entity"])
            if rel is not None and text.startswith(subject):
                return subject, rel, self.attribute(r, m)
            return None, None, None
        return None, None, None

    # -- in the writer's words ------------------------------------------------------------------

    def forms(self, subject: str) -> list[str]:
        if subject in self.entities:
            return self.entities[subject]
        if subject in self.others:
            return self.others[subject]
        return name_forms(subject, False, self.user)

    def pick(self, r: dict[str, Any], m: dict[str, Any], rng: random.Random, mode: str) -> dict[str, Any]:
        """The `about` and `key` one write passes (nothing for mode 'none', nor on a half of the writes
        for 'about-key-half', by `rng`; no key without about)."""
        if mode == "none" or (mode == "about-key-half" and rng.random() < 0.5):
            return {}
        subject, rel, attribute = self.plan(r, m)
        if subject is None:
            return {}
        forms = self.forms(subject)
        if rel is not None:
            forms = [f"{f}'s {rel}" for f in forms]
        out: dict[str, Any] = {"about": [rng.choice(forms)]}
        if mode in ("about-key", "about-key-half") and attribute is not None:
            out["key"] = rng.choice(self.keys[attribute])
        return out


def load_writer(dataset: Path, records: list[dict[str, Any]], path: Path = WRITER_WORDS) -> Writer:
    return Writer(json.loads(path.read_text()), set_name(dataset), records)


async def lexical_parity(bench: Bench, user: str, records: list[dict[str, Any]],
                         ids: dict[str, Any]) -> dict[str, float]:
    """Share of records whose versions all contain every query word (websearch AND), and whose
    versions all match at least one query word."""
    all_words = any_word = 0
    async with bench.admin.acquire() as conn:
        for r in records:
            keys = [ids[v["key"]] for v in r["versions"]]
            row = await conn.fetchrow(
                """SELECT bool_and(m.fts @@ websearch_to_tsquery('english', $2)) AS all_words,
                          bool_and(m.fts @@ regexp_replace(websearch_to_tsquery('english', $2)::text,
                                                           ' & ', ' | ', 'g')::tsquery) AS any_word
                   FROM memories m WHERE m.user_id = $1 AND m.id = ANY($3::uuid[])""",
                user_of(user, r), r["query"], keys)
            all_words += bool(row["all_words"])
            any_word += bool(row["any_word"])
    return {"all_query_words_in_every_version": round(all_words / len(records), 4),
            "some_query_word_in_every_version": round(any_word / len(records), 4)}


def judge(r: dict[str, Any], ranked: list[Any], ids: dict[str, Any]) -> dict[str, Any]:
    position = {mid: i + 1 for i, mid in reversed(list(enumerate(ranked)))}
    newest = position.get(ids[r["newest"]])
    stale = [position.get(ids[v["key"]]) for v in r["versions"] if v["key"] != r["newest"]]
    best_stale = min((s for s in stale if s is not None), default=None)
    return {
        "id": r["id"], "type": r["type"], "versions": len(r["versions"]), "newest_rank": newest,
        "best_stale_rank": best_stale,
        "newest_first": newest is not None and (best_stale is None or newest < best_stale),
        "newest_at_1": newest == 1,
        "rr": 0.0 if newest is None else 1 / newest,
        "found_at_10": newest is not None and newest <= 10,
        "top_3": newest is not None and newest <= 3,
        # What ranked first, by its record key (a version, a distractor "…d1", a filler "…f1"), to read the misses.
        "first": next((k for k, mid in ids.items() if ranked and mid == ranked[0]), None),
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if not rows:
        return {"n": 0}
    ranks = [r["newest_rank"] for r in rows if r["newest_rank"] is not None]
    return {
        "n": len(rows),
        "newest_first": round(statistics.fmean(r["newest_first"] for r in rows), 4),
        "newest_at_1": round(statistics.fmean(r["newest_at_1"] for r in rows), 4),
        "mrr": round(statistics.fmean(r["rr"] for r in rows), 4),
        "found_at_10": round(statistics.fmean(r["found_at_10"] for r in rows), 4),
        "top_3": round(statistics.fmean(r["top_3"] for r in rows), 4),
        "median_rank": statistics.median(ranks) if ranks else None,
        "not_found": len(rows) - len(ranks),
        "chance_newest_first": round(statistics.fmean(1 / r["versions"] for r in rows), 4),
    }


async def load_copy(bench: Bench, user: str, records: list[dict[str, Any]], shift: timedelta, seed: int,
                    write_times: list[float], in_order: bool = False, writer: Writer | None = None,
                    mode: str = "none", passed: Counter[str] | None = None,
                    said: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Write every version and distractor for one user, in a shuffled order (insertion order
    says nothing about age); returns key -> memory id. With a `writer` and a `mode` other than
    'none', each write also passes what the writer says it is about and states (`passed` counts
    the writes with `about`, with `key`, and the statuses other than 'created'; `said` gets what
    each memory's write passed, by key)."""
    memories = [(r, m) for r in records for m in (*r["versions"], *r["distractors"])]
    random.Random(seed).shuffle(memories)
    if in_order:  # decisions judge each memory against those that came before it, as they arrive
        memories.sort(key=lambda rm: rm[1]["occurred_at"])
    words = random.Random(f"writer:{seed}")  # the writer's choice of words, per write in this order
    loader, ids = bench.service(), {}
    for r, m in memories:
        extra = writer.pick(r, m, words, mode) if writer is not None else {}
        if said is not None:
            said[m["key"]] = extra
        t = time.perf_counter()
        result = await loader.write(bench_principal(user_of(user, r)), m["content"], kind="fact",
                                    occurred_at=parse_time(m["occurred_at"]) + shift,
                                    metadata={"key": m["key"], "record": r["id"]}, source="knowledge-update",
                                    **extra)
        write_times.append(time.perf_counter() - t)
        if passed is not None:
            passed.update(k for k in ("about", "key") if k in extra)
            if result.status != "created":
                passed[f"status {result.status}"] += 1
        if result.status == "duplicate" or (result.status != "created" and not extra):
            raise SystemExit(f"{m['key']} duplicates another memory's text; regenerate the dataset")
        ids[m["key"]] = result.memory.id
    return ids


async def supersedes(bench: Bench, records: list[dict[str, Any]], copies: list[tuple[str, dict[str, Any]]],
                     said: list[dict[str, dict[str, Any]]] | None = None) -> dict[str, Any]:
    """What the server marked superseded after loading, judged by the set's records (pooled over
    the copies): right, a stale version replaced by a later version of its own record; wrong, a
    distractor replaced, a newest version replaced, a stale version replaced by an older version
    of its own record ('backwards') or by a memory of another entity or attribute ('other'), or
    anything replaced by a memory outside the set; apart from both, two decoys stating one fact
    (the later replacing the earlier: 'decoy updates') and a text replaced by one that says all
    its words again ('restated', the sets' "(noted again)" repeats). Also, per attribute, the stale
    versions left current, with what the writer passed for them and for the version after them
    (`said`, per copy)."""
    from decisions_tally import Truth  # it imports this module

    n_versions = sum(len(r["versions"]) for r in records) * len(copies)
    n_stale = sum(len(r["versions"]) - 1 for r in records) * len(copies)
    n_distractors = sum(len(r["distractors"]) for r in records) * len(copies)
    t: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    missed: dict[str, list[int]] = {}  # attribute -> [stale versions left current, stale versions]
    missed_examples: list[str] = []
    differs: Counter[str] = Counter()  # what a stale version left current was told unlike the version after it
    why: Counter[str] = Counter()  # what the server stored for a stale version left current and the next
    pairs: Counter[str] = Counter()  # their attributes, where the server filed them under others
    entity_examples: list[str] = []  # what the writer called them, where the server took two entities
    for i, (_, ids) in enumerate(copies):
        truth = Truth(records, ids)
        key_of = {v: k for k, v in ids.items()}
        newest = {r["newest"] for r in records}
        rows = await bench.admin.fetch(
            "SELECT id, superseded_by FROM memories WHERE id = ANY($1::uuid[]) AND superseded_by IS NOT NULL",
            list(ids.values()))
        for row in rows:
            old, new = key_of[row["id"]], key_of.get(row["superseded_by"])
            t["total"] += 1
            if new is None:
                kind = "outside"
            else:
                kind = truth.kind(new, old)
                if kind == "superseded":  # Truth's word for two decoys stating one fact
                    kind = "decoy_update"
                elif kind == "wrong":
                    kind = ("distractor" if old not in truth.order else "newest" if old in newest
                            else "backwards" if truth.record_of[old] is truth.record_of[new] else "other")
            t[kind] += 1
            if kind not in ("right", "decoy_update", "restated") and len(examples.setdefault(kind, [])) < EXAMPLES:
                by = f"{new} {truth.text_of[new]!r}" if new else str(row["superseded_by"])
                examples[kind].append(f"{old} {truth.text_of[old]!r} by {by}")
        current = {key_of[row["id"]] for row in await bench.admin.fetch(
            "SELECT id FROM memories WHERE id = ANY($1::uuid[]) AND superseded_by IS NULL", list(ids.values()))}
        words = said[i] if said else {}
        facts: dict[Any, list[tuple[Any, str]]] = {}
        for row in await bench.admin.fetch("SELECT memory_id, entity_id, attribute FROM memory_facts "
                                           "WHERE memory_id = ANY($1::uuid[])", list(ids.values())):
            facts.setdefault(row["memory_id"], []).append((row["entity_id"], row["attribute"]))
        for r in records:
            counts = missed.setdefault(r["attribute"], [0, 0])
            for v, after in zip(r["versions"], r["versions"][1:], strict=False):
                counts[1] += 1
                if v["key"] in current:
                    counts[0] += 1
                    mine, theirs = words.get(v["key"], {}), words.get(after["key"], {})
                    differs[("about " if mine.get("about") != theirs.get("about") else "")
                            + ("key" if mine.get("key") != theirs.get("key") else "") or "same words"] += 1
                    mine_f, theirs_f = facts.get(ids[v["key"]], []), facts.get(ids[after["key"]], [])
                    why[_why_left(mine_f, theirs_f)] += 1
                    if _why_left(mine_f, theirs_f) == "other entities" and len(entity_examples) < EXAMPLES:
                        entity_examples.append(f"{words.get(v['key'], {}).get('about')} / "
                                               f"{words.get(after['key'], {}).get('about')}")
                    if _why_left(mine_f, theirs_f) != "other entities" and mine_f and theirs_f:
                        pairs[f"{sorted({a for _, a in mine_f})} -> {sorted({a for _, a in theirs_f})}"] += 1
                    if counts[0] <= 2 and len(missed_examples) < 2 * EXAMPLES:  # two of each attribute
                        missed_examples.append(f"{v['key']} {words.get(v['key'], {})} then {after['key']} "
                                               f"{words.get(after['key'], {})}")
    wrong = sum(t[k] for k in ("distractor", "newest", "backwards", "other", "outside"))
    return {"versions": n_versions, "stale": n_stale, "distractors": n_distractors,
            "superseded": t["total"], "right": t["right"],
            "right_pct_of_stale": round(100 * t["right"] / max(n_stale, 1), 1),
            "wrong": wrong, "wrong_pct_of_versions": round(100 * wrong / max(n_versions, 1), 1),
            "wrong_distractor": t["distractor"], "wrong_newest": t["newest"], "wrong_backwards": t["backwards"],
            "wrong_other": t["other"], "wrong_outside": t["outside"],
            "decoy_updates": t["decoy_update"],
            "restated": t["restated"], "examples": examples,
            "stale_left_current": {a: {"left": n, "stale": of} for a, (n, of) in sorted(missed.items()) if of},
            "stale_left_current_examples": missed_examples,
            "stale_left_current_words": {k.strip(): n for k, n in sorted(differs.items())},
            "stale_left_current_stored": dict(sorted(why.items())),
            "stale_left_current_attributes": dict(pairs.most_common(40)),
            "stale_left_current_entities": entity_examples}


def _why_left(old: list[tuple[Any, str]], new: list[tuple[Any, str]]) -> str:
    """What the server stored for a stale version left current and the version after it: no keyed
    fact on either, facts of other entities, or of one entity under other attributes."""
    if not old or not new:
        return "no fact" if not old and not new else "no fact on the " + ("stale" if not old else "next")
    shared = {e for e, _ in old} & {e for e, _ in new}
    if not shared:
        return "other entities"
    if {a for e, a in old if e in shared} & {a for e, a in new if e in shared}:
        return "same entity and attribute"
    return "other attributes"


async def related_quality(bench: Bench, user: str, records: list[dict[str, Any]], shift: timedelta) -> dict[str, Any]:
    """Write every memory in the order it happened and judge `related` on each later version: does
    it list an earlier version of the same fact, and how many others does it list?"""
    memories = sorted(((r, m) for r in records for m in (*r["versions"], *r["distractors"])),
                      key=lambda rm: rm[1]["occurred_at"])
    service, ids = bench.service(), {}
    found = judged = unrelated = 0
    for r, m in memories:
        result = await service.write(bench_principal(user_of(user, r)), m["content"], kind="fact",
                                     occurred_at=parse_time(m["occurred_at"]) + shift)
        ids[result.memory.id] = m["key"]
        earlier = {v["key"] for v in r["versions"] if v["occurred_at"] < m["occurred_at"]}
        if m in r["versions"] and earlier:
            listed = {ids.get(x.id) for x in result.related}
            judged += 1
            found += bool(listed & earlier)
            unrelated += len(listed - {v["key"] for v in r["versions"]})
    return {"updates": judged, "earlier_version_listed": round(found / max(judged, 1), 4),
            "unrelated_per_update": round(unrelated / max(judged, 1), 3)}


def without_time_words(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each record's question as a user often asks it, with no word for the present ("What's my car
    currently?" -> "What's my car?"): what the server reads as the question without its time words."""
    return [{**r, "query": parsed.text} if (parsed := parse_query(r["query"])).tense == "present" else r
            for r in records]


async def main_async(args: argparse.Namespace) -> None:
    records = load(args.dataset)
    if args.questions == "no-time-words":
        records = without_time_words(records)
    # A record of type "stable" has one version, written long ago: it must stay near the top.
    types = sorted({r["type"] for r in records})
    changing = [r for r in records if r["type"] != "stable"]
    chosen = choose_variants(args.variants, args.set)
    shift = shift_of(records, args.dates)
    n_memories = sum(len(r["versions"]) + len(r["distractors"]) for r in records)
    run = "" if not args.database_url else f"-{uuid.uuid4().hex[:8]}"
    users = [f"knowledge-update{run}-{i}" for i in range(args.repeat)]

    async with bench_database(args.database_url, "ku") as bench:
        bench.settings = decision_settings(args, bench.settings)  # --decisions: a model decides on each write
        if args.write_set:  # what the writes are stored with (the searches' variants start from it too)
            bench.settings = bench.settings.model_copy(update=parse_sets(args.write_set))
        base = bench.settings
        variants, skipped = resolve_variants(chosen, base)
        # Stale and newest versions often tie lexically, and ties fall to random ids: each copy
        # is loaded separately (own ids, own insertion order) and the copies' results pooled.
        write_times: list[float] = []
        writer = load_writer(args.dataset, records, args.writer_words) if args.writer != "none" else None
        passed: Counter[str] = Counter()
        said: list[dict[str, dict[str, Any]]] = [{} for _ in users]
        copies = [(u, await load_copy(bench, u, records, shift, args.seed + i, write_times,
                                      in_order=args.decisions != "none", writer=writer, mode=args.writer,
                                      passed=passed, said=said[i]))
                  for i, u in enumerate(users)]
        decisions = await drain_decisions(bench, base) if args.decisions != "none" else None
        superseded = await supersedes(bench, records, copies, said)
        await bench.analyze()
        parity = await lexical_parity(bench, users[0], records, copies[0][1])
        print(f"loaded {args.repeat} x {n_memories} memories ({len(records)} entities); lexical parity {parity}",
              file=sys.stderr)
        loader = bench.service()
        for r in records[:20]:  # warm-up, untimed
            await loader.search(bench_principal(user_of(users[0], r)), r["query"], limit=args.limit)

        results: dict[str, Any] = {}
        details: dict[str, list[dict[str, Any]]] = {}
        for v, s in variants:
            service = bench.service(s)
            rows, times = [], []
            for u, ids in copies:
                for r in records:
                    t = time.perf_counter()
                    found = await service.search(bench_principal(user_of(u, r)), r["query"], limit=args.limit)
                    times.append(time.perf_counter() - t)
                    rows.append(judge(r, [h.id for h in found.hits], ids))
            details[v.name] = rows
            by_versions = {str(n): summarize([x for x in rows if x["versions"] == n]) for n in (2, 3, 4)}
            by_type = {k: summarize([x for x in rows if x["type"] == k]) for k in types}
            results[v.name] = {"about": v.about, "settings": v.effective(base),
                               "overall": summarize([x for x in rows if x["type"] != "stable"]),
                               "by_versions": by_versions, "by_type": by_type, "latency": latency(times)}
        related = await related_quality(bench, users[0] + "-related", records, shift)
        if args.database_url:
            await bench.drop_users(sorted({user_of(u, r) for u in [*users, users[0] + "-related"] for r in records}))

    report = {
        "benchmark": "knowledge-update", "dataset": str(args.dataset), "entities": len(records),
        "memories": n_memories, "copies": args.repeat, "limit": args.limit, "dates": args.dates,
        "shift_days": shift.days,
        "lexical_parity": parity, "write_latency": latency(write_times), "variants": results, "related": related,
        "skipped_variants": skipped, "decisions": decisions,
        "writer": args.writer, "writer_passed": dict(passed), "supersedes": superseded, "machine": machine(),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if args.details:
        report["per_entity"] = details
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str))

    chance = next(iter(results.values()))["overall"]["chance_newest_first"] if results else None
    print(f"\nKnowledge update ({args.dataset.stem}: {len(changing)} changing facts, "
          f"{len(records) - len(changing)} stable), {len(records)} entities x {args.repeat} copies, "
          f"{n_memories} memories per copy, "
          f"limit {args.limit}, dates {args.dates} (chance newest-first {chance})")
    cols = ["newest_first", "newest_at_1", "mrr", "found_at_10", "median_rank", "not_found"]
    rows = [[name, *(r["overall"][c] for c in cols), r["latency"]["p50_ms"], r["latency"]["p95_ms"]]
            for name, r in results.items()]
    print(table(["variant", "newest-first", "newest@1", "MRR", "found@10", "median rank", "not found",
                 "p50 ms", "p95 ms"], rows))
    print("\nnewest-first by number of versions (chance) and by entity type; stable facts: share in the top 3")
    header = ["variant", *(f"{n} versions" for n in (2, 3, 4)), *types]

    def by_type(r: dict[str, Any], k: str, metric: str = "newest_first") -> Any:
        return r["by_type"][k]["top_3" if k == "stable" and metric == "newest_first" else metric]

    rows = [[name, *(r["by_versions"][str(n)].get("newest_first", "") for n in (2, 3, 4)),
             *(by_type(r, k) for k in types)]
            for name, r in results.items()]
    if results:
        first = next(iter(results.values()))
        rows.append(["(chance)", *(first["by_versions"][str(n)].get("chance_newest_first", "") for n in (2, 3, 4)),
                     *("" if k == "stable" else by_type(first, k, "chance_newest_first") for k in types)])
    print(table(header, rows))
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}")
    print(f"\nsupersedes after loading (writer {args.writer}; passed {dict(passed) or 'nothing'}), "
          f"pooled over {args.repeat} copies: right = stale versions replaced by a later version of their record "
          f"(% of stale versions), wrong = % of versions")
    sup = superseded
    print(table(["set", "versions", "stale", "right", "right %", "wrong", "wrong %", "distractor", "newest",
                 "backwards", "other", "outside", "decoy upd", "restated"],
                [[args.dataset.stem, sup["versions"], sup["stale"], sup["right"], sup["right_pct_of_stale"],
                  sup["wrong"], sup["wrong_pct_of_versions"], sup["wrong_distractor"], sup["wrong_newest"],
                  sup["wrong_backwards"], sup["wrong_other"], sup["wrong_outside"], sup["decoy_updates"],
                  sup["restated"]]], first_width=10))
    for kind, lines in sup["examples"].items():
        print(f"  wrong ({kind}), e.g. {lines[0]}")
    left = {a: f"{x['left']}/{x['stale']}" for a, x in sup["stale_left_current"].items() if x["left"]}
    print(f"  stale versions left current, by attribute: {left or 'none'}; what the writer passed for them "
          f"against the version after them, differing in: {sup['stale_left_current_words'] or 'nothing'}; "
          f"stored: {sup['stale_left_current_stored'] or 'nothing'}")
    for line in sup["stale_left_current_examples"][:3]:
        print(f"    e.g. {line}")
    print(f"\n{args.dataset.stem}, writer {args.writer}: search and supersedes in one row per variant")
    has_stable = "stable" in types
    print(table(["variant", "newest-first", "newest@1", "MRR", "found@10", "stable@3", "right sup", "wrong sup"],
                [[name, r["overall"]["newest_first"], r["overall"]["newest_at_1"], r["overall"]["mrr"],
                  r["overall"]["found_at_10"], r["by_type"]["stable"]["top_3"] if has_stable else "",
                  f"{sup['right']} ({sup['right_pct_of_stale']}%)", f"{sup['wrong']} ({sup['wrong_pct_of_versions']}%)"]
                 for name, r in results.items()]))
    print(f"\nrelated on write (default settings): {related}")
    if decisions:
        print(f"decisions: {decisions}")
    print(f"lexical parity: {parity}; wrote {args.out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_variant_arguments(parser, DEFAULT_DATASET)
    parser.add_argument("--limit", type=int, default=50, help="search limit; ranks beyond it count as not found")
    parser.add_argument("--dates", choices=("original", "rebased"), default="rebased",
                        help="rebased (default) shifts every date so the dataset's as_of is today")
    parser.add_argument("--repeat", type=int, default=3, help="independently loaded copies whose results are pooled")
    parser.add_argument("--seed", type=int, default=7, help="insertion order shuffle (copy i uses seed + i)")
    parser.add_argument("--database-url", help="use this PostgreSQL instead of a temporary embedded one")
    parser.add_argument("--details", action="store_true", help="keep per-entity ranks in the JSON")
    add_decision_arguments(parser)
    parser.add_argument("--writer-words", type=Path, default=WRITER_WORDS,
                        help="the writer's words (writer_words_heldout.json: phrasings written without sight of the "
                        "server's lexicon)")
    parser.add_argument("--write-set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for loading (writes), e.g. graph_rules_keys=facts; --set is the searches'")
    parser.add_argument("--writer", choices=WRITERS, default="none",
                        help="what each write passes besides its text, in the writer's own words varying per write "
                        "(bench/knowledge_update/writer_words.json): about-key, who it is about and the attribute it "
                        "states; about-key-half, both on a seeded half of the writes and nothing on the rest; about, "
                        "who alone; none (default), neither")
    parser.add_argument("--questions", choices=("as-written", "no-time-words"), default="as-written",
                        help="no-time-words: each question asked without its words for the present ('now', 'at "
                        "the moment'), as users often ask")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "knowledge_update.json")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
