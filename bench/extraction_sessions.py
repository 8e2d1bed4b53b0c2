"""Extraction over many sessions with a real model (issue 49, "What must work"): a scripted set of
sessions, captured in order as the capture path stores turns, each extracted by a chat-completions
endpoint (the local Qwen2.5-Coder-1.5B of ../shared/models/ by default) and its facts' decisions
drained before the next session is captured. The script states facts about the user, people around
them (home city, employer, manager, editor, pets, allergies, languages, car) and two projects, and
later sessions change 31 of them, restate some unchanged and add values to many-valued ones (pets,
allergies, languages); three sessions are small talk.

The sessions are ordered so that a change soon follows what it changes: --sessions N (or --until,
on a slow machine) still measures changes. An extracted memory is matched to the facts its session
states by the value's words (each value is unique across the script, so "Priya moved from Lisbon to
Porto" of the session that moves her is the Porto fact). Then:
  changed facts   per change (a one-at-a-time attribute whose value changes in a later session):
                  right applied when every memory of the old value is superseded (by a memory of
                  that session or before) and one of them by a memory of the new value; how: by
                  construction (keyed: "a newer value of the same key"), by a decision, or
                  suggested only (the guard kept the model's replace as a suggestion); missed when
                  the old or the new value was not extracted
  wrong           extracted memories superseded whose value was still true when they were
                  (another subject or attribute, a many-valued value that did not end, a value
                  restated unchanged replaced by something else); wrong % of the extracted facts
                  (and of the supersedes applied). Superseded memories that match no expected fact
                  are listed as "unmatched" to read; superseded turns are counted apart
  typed right     the memory's kind is one the script expects for the fact ("preference" for
                  the user's editor, "fact" for a home city; a project's switch may be a fact or
                  a decision)
  about / key     the memory has an `about` mention and a keyed fact from the model (source
                  'model'); about right: the about names the expected subject
  edges           derived_from edges from each extracted fact to turns of its own session
  model s         seconds of the extraction calls and of the decisions (called_at to finished_at)

    ../shared/models/setup_local_llm.sh
    /tmp/local-llm/venv/bin/python ../shared/models/serve_local_llm.py --port 8181 &
    python bench/extraction_sessions.py [--url http://127.0.0.1:8181/v1] [--cache FILE] [--sessions N]

--cache FILE replays the model's answers to the very same prompts (temperature 0) from a JSON-lines
file and records the others, so a rerun that changes nothing the model sees costs no model time
(the turns are dated from the day of the run: decisions replay within a day). --decisions off|after
cancels or defers the decisions, --prompt bare leaves out extraction's worked examples (the prompt
before them), --until HH:MM stops starting sessions on a slow machine and measures those run.
Prints a table and writes bench/results/extraction_sessions.json (docs/benchmarks.md, "Extraction
over many sessions with the real model")."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

sys.path.insert(0, str(Path(__file__).parent))
from locomo import REPO, bench_database, bench_principal, machine, table  # noqa: E402
from scripted_models import Recorded, serving  # noqa: E402

from mcp_memory.capture.capture import Capturer  # noqa: E402
from mcp_memory.capture.transcripts import parse_text  # noqa: E402
from mcp_memory.decisions import extraction, provider_from  # noqa: E402
from mcp_memory.decisions.jobs import DecisionWorker  # noqa: E402
from mcp_memory.graph.keys import key_of  # noqa: E402
from mcp_memory.lexicon.english import ENGLISH  # noqa: E402

FACT, PREF, DECISION = frozenset({"fact"}), frozenset({"preference"}), frozenset({"fact", "decision"})
USES = frozenset({"fact", "preference"})


@dataclass(frozen=True)
class Expected:
    """One fact a session states: `subject`'s `attribute` is `value` (found in a memory's text by
    `words`, all of them, whole words, any case). `single`: one value at a time (a new one
    replaces it); else values accumulate."""

    subject: str
    attribute: str
    value: str
    kinds: frozenset[str]
    single: bool = True
    words: tuple[str, ...] = ()

    @property
    def slot(self) -> tuple[str, str]:
        return self.subject, self.attribute

    def found_in(self, text: str) -> bool:
        return all(re.search(rf"(?<![\w-]){re.escape(w)}s?(?![\w-])", text, re.IGNORECASE)  # "Tuesdays"
                   for w in self.words or (self.value,))


def F(subject: str, attribute: str, value: str, kinds: frozenset[str] = FACT, *words: str,
      single: bool = True) -> Expected:
    return Expected(subject, attribute, value, kinds, single, tuple(words))


@dataclass(frozen=True)
class Session:
    name: str
    text: str
    facts: tuple[Expected, ...] = ()


S = Session
SESSIONS: list[Session] = [
    S("intro", "User: Quick background before we start: I live in Leeds and I'm a data engineer at Northwind Labs, "
      "on the Payments team.\nAssistant: Thanks, noted: Leeds, data engineer at Northwind Labs, Payments team.\n"
      "User: My manager there is Dana Whitfield.\nAssistant: Got it.\n",
      (F("user", "home city", "Leeds"), F("user", "employer", "Northwind Labs", FACT, "Northwind"),
       F("user", "team", "Payments"), F("user", "manager", "Dana Whitfield", FACT, "Dana"))),
    S("tools", "User: For editing I use VS Code, and my shell is plain bash. I code on a ThinkPad X1.\n"
      "Assistant: OK. Want me to tailor commands for bash?\nUser: Yes please. Also, I like my coffee as a flat "
      "white, if you ever order for the team.\nAssistant: Ha, noted.\n",
      (F("user", "editor", "VS Code", PREF), F("user", "shell", "bash", PREF),
       F("user", "laptop", "ThinkPad", USES), F("user", "coffee", "flat white", PREF))),
    S("move", "User: Big news: we moved! I live in Bristol now, not Leeds anymore.\nAssistant: Congratulations on "
      "the move to Bristol!\nUser: Thanks. Also I finally switched editors: Helix instead of VS Code.\n"
      "Assistant: Helix, noted.\n",
      (F("user", "home city", "Bristol"), F("user", "editor", "Helix", PREF))),
    S("new-job", "User: I accepted an offer from Brightwater Analytics, I start there Monday, on their Platform "
      "team. My new manager will be Oscar Lindqvist.\nAssistant: Congratulations! Anything to update in your "
      "setup?\nUser: Not yet.\n",
      (F("user", "employer", "Brightwater Analytics", FACT, "Brightwater"), F("user", "team", "Platform"),
       F("user", "manager", "Oscar Lindqvist", FACT, "Oscar"))),
    S("shell", "User: I've been using fish as my shell for a week now, bash feels clunky.\nAssistant: Fish it is. "
      "I'll write fish syntax from now on.\nUser: And I drink oat lattes now, no more flat whites.\n"
      "Assistant: Noted.\n",
      (F("user", "shell", "fish", PREF), F("user", "coffee", "oat latte", PREF, "oat"))),
    S("priya", "User: My friend Priya Raman lives in Lisbon and works at Globex as a product designer.\n"
      "Assistant: Nice. Should I remember anything else about Priya?\nUser: She has a cat called Miso, and she "
      "drives an old VW Golf.\nAssistant: Noted.\n",
      (F("Priya", "home city", "Lisbon"), F("Priya", "employer", "Globex"),
       F("Priya", "pets", "Miso", FACT, single=False), F("Priya", "car", "Golf", USES))),
    S("priya-moves", "User: Priya relocated to Porto last month.\nAssistant: Oh nice, from Lisbon to Porto. Is she "
      "still at Globex?\nUser: No, she left Globex and joined Initech.\nAssistant: Noted.\n",
      (F("Priya", "home city", "Porto"), F("Priya", "employer", "Initech"))),
    S("weather", "User: Morning! Rainy again here.\nAssistant: Good morning! Sorry about the rain. Anything I can "
      "help with?\nUser: Not yet, just getting my tea.\nAssistant: Enjoy it!\n"),
    S("falcon", "User: Project Falcon's backend stores everything in MySQL, and we host it on Heroku.\n"
      "Assistant: Understood. Do deploys go through Heroku pipelines?\nUser: Yes, CI runs on Jenkins, and we "
      "release Falcon every Thursday.\nAssistant: OK.\n",
      (F("Falcon", "database", "MySQL", DECISION), F("Falcon", "hosting", "Heroku", DECISION),
       F("Falcon", "ci", "Jenkins", DECISION), F("Falcon", "release day", "Thursday", DECISION, "Thursday"))),
    S("falcon-db", "User: We finished migrating Falcon from MySQL to PostgreSQL yesterday.\nAssistant: Great. "
      "Should I update the connection strings in the docs?\nUser: Yes. And we dropped Jenkins; Falcon's CI is "
      "GitHub Actions now.\nAssistant: Done.\n",
      (F("Falcon", "database", "PostgreSQL", DECISION), F("Falcon", "ci", "GitHub Actions", DECISION))),
    S("falcon-hosting", "User: Falcon is off Heroku: we're running it on Fly.io since this morning.\nAssistant: "
      "Nice. Anything else changing?\nUser: Releases for Falcon move from Thursdays to Tuesdays.\n"
      "Assistant: Noted.\n",
      (F("Falcon", "hosting", "Fly.io", DECISION, "Fly"),
       F("Falcon", "release day", "Tuesday", DECISION, "Tuesday"))),
    S("tomas", "User: Tomás Herrera, the contractor helping us, is based in Madrid. He works for Acme Robotics.\n"
      "Assistant: Noted about Tomás.\nUser: His manager at Acme is Greta Ibarra.\nAssistant: Got it.\n",
      (F("Tomás", "home city", "Madrid"), F("Tomás", "employer", "Acme Robotics", FACT, "Acme"),
       F("Tomás", "manager", "Greta Ibarra", FACT, "Greta"))),
    S("tomas-moves", "User: Tomás moved to Valencia, and he now works for Umbrella Foods instead of Acme Robotics.\n"
      "Assistant: Noted. Who does he report to there?\nUser: Sven Olsen is his manager now.\nAssistant: Got it.\n",
      (F("Tomás", "home city", "Valencia"), F("Tomás", "employer", "Umbrella Foods", FACT, "Umbrella"),
       F("Tomás", "manager", "Sven Olsen", FACT, "Sven"))),
    S("keiko", "User: Keiko Tanaka joined the Falcon team, which Marcus Bell leads. She lives in Osaka and swears "
      "by Vim.\nAssistant: Welcome Keiko! Anything to set up for her?\nUser: She speaks Japanese and English, "
      "so docs in English are fine.\nAssistant: Great.\n",
      (F("Falcon", "lead", "Marcus Bell", FACT, "Marcus"), F("Keiko", "home city", "Osaka"),
       F("Keiko", "editor", "Vim", PREF), F("Keiko", "languages", "Japanese", FACT, single=False))),
    S("keiko-moves", "User: Keiko gave up Vim, she's on Emacs now. She also moved from Osaka to Kyoto.\n"
      "Assistant: Noted both.\nUser: She's learning Spanish too.\nAssistant: Nice.\n",
      (F("Keiko", "editor", "Emacs", PREF), F("Keiko", "home city", "Kyoto"),
       F("Keiko", "languages", "Spanish", FACT, single=False))),
    S("heron", "User: For Project Heron we write the services in Java, deploy them to eu-west-1, and the tests "
      "use unittest.\nAssistant: OK: Java on eu-west-1, tests with unittest.\n",
      (F("Heron", "language", "Java", DECISION), F("Heron", "region", "eu-west-1", DECISION),
       F("Heron", "test framework", "unittest", DECISION))),
    S("heron-rewrite", "User: Heron update: we're rewriting the services in Kotlin instead of Java, moving the "
      "deployment to eu-central-1, and switching the tests to pytest.\nAssistant: That's a lot of change! I'll "
      "note all three.\n",
      (F("Heron", "language", "Kotlin", DECISION), F("Heron", "region", "eu-central-1", DECISION),
       F("Heron", "test framework", "pytest", DECISION))),
    S("match", "User: Did you see the match last night?\nAssistant: I don't follow live sports, but happy to "
      "chat! How was it?\nUser: Great game. Anyway, back to work later.\n"),
    S("lena", "User: My sister Lena lives in Berlin and works at Siemens.\nAssistant: Noted about Lena.\n"
      "User: She's allergic to cats, by the way, so no cat photos in the family chat, haha.\nAssistant: Ha, got "
      "it.\n",
      (F("Lena", "home city", "Berlin"), F("Lena", "employer", "Siemens"),
       F("Lena", "allergies", "cats", FACT, "allergic", "cats", single=False))),
    S("lena-moves", "User: Lena moved to Hamburg for a new job at SAP.\nAssistant: Good for her! Still allergic to "
      "cats, I guess?\nUser: Yes, still allergic to cats.\nAssistant: Noted.\n",
      (F("Lena", "home city", "Hamburg"), F("Lena", "employer", "SAP"),
       F("Lena", "allergies", "cats", FACT, "allergic", "cats", single=False))),
    S("phone", "User: My Pixel 7 keeps dropping wifi, any idea?\nAssistant: Try forgetting the network and "
      "joining again, or reset the network settings.\nUser: I'll try that, thanks.\n",
      (F("user", "phone", "Pixel 7", USES, "Pixel"),)),
    S("routine", "User: Daily standup is at 9:30 and I take notes in Notion. I browse with Firefox.\n"
      "Assistant: Got it.\nUser: I'm allergic to peanuts, so keep that in mind for the team lunch order.\n"
      "Assistant: Will do: no peanuts.\n",
      (F("user", "standup", "9:30"), F("user", "notes app", "Notion", PREF), F("user", "browser", "Firefox", PREF),
       F("user", "allergies", "peanuts", FACT, single=False))),
    S("routine-2", "User: Standup moved to 10:00 starting this week. Also, I'm using Obsidian instead of Notion for "
      "notes now.\nAssistant: Updated: standup at 10:00 and notes in Obsidian.\nUser: Oh, and I'm also allergic "
      "to penicillin, the doctor found out last week.\nAssistant: Noted, that's important.\n",
      (F("user", "standup", "10:00"), F("user", "notes app", "Obsidian", PREF),
       F("user", "allergies", "penicillin", FACT, single=False))),
    S("still", "User: Still in Bristol and still happy at Brightwater. But I've moved on from Helix: Zed is my "
      "editor now.\nAssistant: Zed, noted.\nUser: Priya adopted a dog named Biscuit, so Miso has company.\n"
      "Assistant: Cute!\n",
      (F("user", "home city", "Bristol"), F("user", "employer", "Brightwater Analytics", FACT, "Brightwater"),
       F("user", "editor", "Zed", PREF), F("Priya", "pets", "Biscuit", FACT, single=False))),
    S("gear", "User: New laptop day: I replaced the ThinkPad with a MacBook Air. And I switched my browser from "
      "Firefox to Brave.\nAssistant: Nice upgrades!\nUser: My phone is an iPhone 15 now too; the Pixel died.\n"
      "Assistant: Noted all three.\n",
      (F("user", "laptop", "MacBook Air", USES, "MacBook"), F("user", "browser", "Brave", PREF),
       F("user", "phone", "iPhone 15", USES, "iPhone"))),
    S("lead", "User: Keiko took over as Falcon's tech lead; Marcus Bell moved to another team.\nAssistant: Noted.\n"
      "User: Unrelated: Priya sold her Golf and drives a Tesla Model 3 now.\nAssistant: Nice car.\n",
      (F("Falcon", "lead", "Keiko", FACT, "Keiko", "lead"), F("Priya", "car", "Tesla Model 3", USES, "Tesla"))),
    S("thanks", "User: Thanks for all the help this week!\nAssistant: You're welcome! Have a good weekend.\n"
      "User: You too.\n"),
]


@dataclass(frozen=True)
class Change:
    old: Expected
    new: Expected
    at: int  # the index of the session that states the new value


def changes(sessions: list[Session]) -> list[Change]:
    """Each value of a one-at-a-time attribute that a later session replaces with another."""
    last: dict[tuple[str, str], Expected] = {}
    out: list[Change] = []
    for i, s in enumerate(sessions):
        for f in s.facts:
            if f.single and f.slot in last and last[f.slot].value != f.value:
                out.append(Change(last[f.slot], f, i))
            last[f.slot] = f
    return out


@dataclass
class Memory:
    id: UUID
    content: str
    kind: str
    session: int
    superseded_by: UUID | None
    facts: list[Expected] = field(default_factory=list)


def transcript(text: str, session: str, day: datetime) -> Any:
    """The session's turns, a minute apart from `day`: dated, so the decision prompts (the new
    memory's date, its candidates' ages) are the same in every run of the same day and --cache
    replays them too."""
    t = parse_text(text)
    t.session_id = session
    for i, turn in enumerate(t.turns):
        turn.at = day + timedelta(minutes=i)
    return t


async def drain(worker: DecisionWorker, admin: Any, decisions: str = "on", until: datetime | None = None) -> None:
    """Every job due: the session's extraction, then its facts' decisions. `decisions` off: those
    are cancelled (what is measured is extraction and the keyed supersedes alone); after: they wait
    (until `decided`). A decision is taken against the memories older than its own, so one taken
    later sees what it would have seen then, less what was superseded since. `until`: take no
    job after it."""
    while until is None or datetime.now(UTC) < until:
        if decisions != "on":
            await admin.execute(f"UPDATE memory_jobs SET {'status = $1' if decisions == 'off' else 'run_after = $1'} "
                                "WHERE kind = 'decide' AND status = 'queued'",
                                "cancelled" if decisions == "off" else datetime.max.replace(tzinfo=UTC))
        if not await worker.run_once():
            if not await admin.fetchval("SELECT count(*) FROM memory_jobs WHERE status = 'queued' "
                                        "AND run_after < now() + interval '1 day'"):
                return
            await asyncio.sleep(1)  # a retry's backoff


def value_holds(f: Expected, upto: int, sessions: list[Session]) -> bool:
    """Whether `f` (a value of a one-at-a-time attribute, or one of many) is still true after
    session `upto`: no later session up to it states another value of a one-at-a-time attribute."""
    if not f.single:
        return True
    value = f.value
    for s in sessions[: upto + 1]:
        for g in s.facts:
            if g.slot == f.slot:
                value = g.value
    return value == f.value


def attribute_of(f: Expected) -> str:
    said = key_of(f.attribute, ENGLISH)
    return said.attribute if said is not None else f.attribute


async def measure(admin: Any, sessions: list[Session], sids: list[str]) -> dict[str, Any]:
    index = {sid: i for i, sid in enumerate(sids)}
    rows = await admin.fetch(
        "SELECT id, content, kind, superseded_by, metadata->>'session_id' AS sid FROM memories "
        "WHERE deleted_at IS NULL AND metadata ? 'extraction_job' AND kind <> 'session_summary'")
    memories: dict[UUID, Memory] = {}
    for r in rows:
        i = index.get(r["sid"])
        if i is None:
            continue
        m = Memory(r["id"], r["content"], r["kind"], i, r["superseded_by"])
        m.facts = [f for f in sessions[i].facts if f.found_in(m.content)]
        memories[m.id] = m
    key_rows = await admin.fetch("SELECT memory_id, attribute, source FROM memory_facts WHERE memory_id = ANY($1)",
                                 list(memories))
    keys: dict[UUID, list[Any]] = defaultdict(list)
    for r in key_rows:
        keys[r["memory_id"]].append(r)
    for m in memories.values():  # "Greta is Tomás's manager at Acme": the manager fact, keyed so, not the employer
        if len(m.facts) > 1:
            keyed_as = {r["attribute"] for r in keys[m.id]}
            m.facts = [f for f in m.facts if attribute_of(f) in keyed_as] or m.facts
    of_fact: dict[tuple[int, Expected], list[Memory]] = defaultdict(list)
    for m in memories.values():
        for f in m.facts:
            of_fact[(m.session, f)].append(m)
    ids = list(memories)
    about_rows = await admin.fetch(
        "SELECT me.memory_id, me.source, e.kind, e.canonical, e.aliases FROM memory_entities me JOIN entities e "
        "ON e.user_id = me.user_id AND e.id = me.entity_id WHERE me.role = 'about' AND me.memory_id = ANY($1)", ids)
    abouts: dict[UUID, list[Any]] = defaultdict(list)
    for r in about_rows:
        abouts[r["memory_id"]].append(r)
    edge_rows = await admin.fetch(
        "SELECT e.from_id, t.metadata->>'session_id' AS sid FROM memory_edges e JOIN memories t "
        "ON t.user_id = e.user_id AND t.id = e.to_id WHERE e.kind = 'derived_from' AND e.from_id = ANY($1) "
        "AND t.kind = 'episode'", ids)
    edges: dict[UUID, list[str]] = defaultdict(list)
    for r in edge_rows:
        edges[r["from_id"]].append(r["sid"])
    how_rows = await admin.fetch(
        "SELECT memory_id, reason FROM memory_history WHERE memory_id = ANY($1) AND reason LIKE 'superseded by %'", ids)
    keyed = {r["memory_id"]: ("keyed, ended" if "said to have ended" in r["reason"] else "keyed")
             for r in how_rows if "same key" in r["reason"] or "said to have ended" in r["reason"]}
    jobs = await admin.fetch("SELECT memory_id, result FROM memory_jobs WHERE kind = 'decide' AND result IS NOT NULL")
    decided: set[UUID] = set()
    suggested: dict[UUID, str] = {}
    for j in jobs:
        res = j["result"] if isinstance(j["result"], dict) else json.loads(j["result"])
        decided.update(UUID(x) for x in res.get("applied", []))
        for x, why in (res.get("suggested") or {}).items():
            suggested[UUID(x)] = why

    def how(m: Memory) -> str:
        if m.superseded_by is None:
            return "suggested only" if m.id in suggested else "live"
        return keyed.get(m.id) or ("decision" if m.id in decided else "other")

    def about_right(m: Memory, subject: str) -> bool:
        want = subject.lower()
        return any((r["kind"] == "user") if want == "user" else
                   any(want in n for n in (r["canonical"], *r["aliases"])) for r in abouts[m.id])

    # Per change: right applied, and how.
    per_change: list[dict[str, Any]] = []
    for c in changes(sessions):
        old = [m for (i, f), ms in of_fact.items() if f.slot == c.old.slot and f.value == c.old.value and i < c.at
               for m in ms]
        new = of_fact.get((c.at, c.new), [])
        new_ids = {m.id for m in new}
        entry: dict[str, Any] = {"slot": f"{c.old.subject} / {c.old.attribute}", "old": c.old.value,
                                 "new": c.new.value, "session": sessions[c.at].name,
                                 "old_memories": [m.content for m in old], "new_memories": [m.content for m in new]}
        if not old or not new:
            entry["outcome"] = "old not extracted" if not old else "new not extracted"
        else:
            by_new = [m for m in old if m.superseded_by in new_ids]
            done = all(m.superseded_by is not None and m.superseded_by in memories
                       and memories[m.superseded_by].session <= c.at for m in old)
            if by_new and done:
                entry["outcome"] = "right"
                entry["how"] = sorted({how(m) for m in by_new})
            else:
                entry["outcome"] = "partial" if by_new else "missed"
                entry["how"] = sorted({how(m) for m in old})
                entry["why"] = sorted({suggested[m.id] for m in old if m.id in suggested})
        per_change.append(entry)

    # Every superseded extracted memory: right (an earlier value), stale (already false), wrong, unmatched.
    wrong: list[str] = []
    unmatched: list[str] = []
    superseded = [m for m in memories.values() if m.superseded_by is not None]
    for m in superseded:
        by = memories.get(m.superseded_by)
        if by is None:
            unmatched.append(f"{m.content!r} by a memory not extracted ({m.superseded_by})")
            continue
        if not m.facts:
            unmatched.append(f"{m.content!r} by {by.content!r} ({how(m)})")
            continue
        for f in m.facts:
            same = any(g.slot == f.slot for g in by.facts)
            if (same and f.single) or not value_holds(f, by.session, sessions) or \
                    any(g == f for g in by.facts):  # an earlier value, a value already replaced, or a restatement
                continue
            wrong.append(f"{m.content!r} [{f.subject} / {f.attribute}] by {by.content!r} ({how(m)})")
            break
    turns_superseded = [f"{r['content']!r} by {r['by']!r}" for r in await admin.fetch(
        "SELECT t.content, n.content AS by FROM memories t JOIN memories n ON n.user_id = t.user_id "
        "AND n.id = t.superseded_by WHERE t.kind = 'episode' AND t.deleted_at IS NULL")]

    # Per expected fact: extracted, typed right, about / key filled, edges.
    per_fact: list[dict[str, Any]] = []
    for i, s in enumerate(sessions):
        for f in s.facts:
            ms = of_fact.get((i, f), [])
            per_fact.append({
                "session": s.name, "subject": f.subject, "attribute": f.attribute, "value": f.value,
                "expected_kinds": sorted(f.kinds), "extracted": bool(ms),
                "typed_right": bool(ms) and all(m.kind in f.kinds for m in ms),
                "kinds": [m.kind for m in ms], "texts": [m.content for m in ms],
                "about_model": bool(ms) and all(any(r["source"] == "model" for r in abouts[m.id]) for m in ms),
                "about_right": bool(ms) and all(about_right(m, f.subject) for m in ms),
                "key_model": bool(ms) and all(any(r["source"] == "model" for r in keys[m.id]) for m in ms),
                "keys": [[r["attribute"] for r in keys[m.id]] for m in ms]})
    extracted = list(memories.values())
    with_edges = sum(bool(edges[m.id]) and all(sid == sids[m.session] for sid in edges[m.id]) for m in extracted)
    small_talk = [i for i, s in enumerate(sessions) if not s.facts]
    n_changes = len(per_change)
    right = [c for c in per_change if c["outcome"] == "right"]
    how_right = Counter(h for c in right for h in c["how"])
    how_missed = Counter(h for c in per_change if c["outcome"] in ("missed", "partial") for h in c["how"])
    found = [f for f in per_fact if f["extracted"]]

    def share(n: int, d: int) -> float | None:
        return round(100 * n / d, 1) if d else None

    return {
        "sessions": len(sessions), "expected_facts": len(per_fact), "changed_facts": n_changes,
        "extracted_memories": len(extracted),
        "unmatched_memories": [m.content for m in extracted if not m.facts],
        "facts_extracted": len(found), "facts_extracted_pct": share(len(found), len(per_fact)),
        "right_applied": len(right), "right_applied_pct": share(len(right), n_changes),
        "both_extracted": sum(c["outcome"] in ("right", "partial", "missed") for c in per_change),
        "right_of_both_extracted_pct": share(len(right), sum(c["outcome"] in ("right", "partial", "missed")
                                                             for c in per_change)),
        "right_how": dict(how_right), "missed_how": dict(how_missed),
        "outcomes": dict(Counter(c["outcome"] for c in per_change)),
        "superseded": len(superseded), "wrong": len(wrong), "wrong_pct": share(len(wrong), len(extracted)),
        "wrong_of_superseded_pct": share(len(wrong), len(superseded)), "wrong_examples": wrong,
        "unmatched_superseded": unmatched, "turns_superseded": turns_superseded,
        "typed_right": sum(f["typed_right"] for f in found), "typed_right_pct":
            share(sum(f["typed_right"] for f in found), len(found)),
        "kinds_by_expected": {k: dict(Counter(kd for f in found if f["expected_kinds"] == k.split("|")
                                              for kd in f["kinds"]))
                              for k in sorted({"|".join(f["expected_kinds"]) for f in found})},
        "about_model_pct": share(sum(f["about_model"] for f in found), len(found)),
        "about_right_pct": share(sum(f["about_right"] for f in found), len(found)),
        "key_model_pct": share(sum(f["key_model"] for f in found), len(found)),
        "edges_pct": share(with_edges, len(extracted)),
        "small_talk_facts": sum(m.session in small_talk for m in extracted),
        "changes": per_change, "facts": per_fact}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    sessions = SESSIONS[: args.sessions or None]
    if args.prompt == "bare":  # the prompt before the worked examples: the system text and the delta
        extraction.examples = list  # type: ignore[assignment]  # examples() -> []
    started = time.perf_counter()
    load_before = os.getloadavg()
    recorded = Recorded(args.url, args.cache) if args.cache else None
    async with bench_database(args.database_url, "extraction") as bench:
        with serving(recorded) if recorded else nullcontext(args.url) as url:
            # no --timeout: the product's own timeouts and leases, which follow the model's measured speed
            fixed = {} if args.timeout is None else dict(
                decisions_timeout_s=args.timeout, decisions_lease_s=args.timeout + 100, decisions_max_attempts=2)
            s = bench.settings.model_copy(update=dict(
                decisions_provider="openai-compatible", decisions_base_url=url, decisions_model=args.model,
                decisions_mode="async", decisions_per_minute=0, decisions_tokens_per_day=0,
                decisions_retry_base_s=1, extraction_per_session=0, extraction_per_day=0, **fixed))
            service = bench.service(s)
            await service.vectors.query("warm up")
            worker = DecisionWorker(bench.admin, service, provider_from(s), s)
            p = bench_principal("extraction")
            capturer = Capturer(service, s, "bench")
            sids = [f"bench-{x.name}" for x in sessions]
            for n, (session, sid) in enumerate(zip(sessions, sids, strict=True)):
                if args.until and datetime.now(UTC) >= args.until:  # what is done is measured
                    print(f"--until reached: {n} of {len(sessions)} sessions run", file=sys.stderr)
                    sessions, sids = sessions[:n], sids[:n]
                    break
                t = time.perf_counter()
                day = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0) \
                    - timedelta(days=2 * (len(SESSIONS) - n))  # a session every other day, the last two days ago
                await capturer.capture(p, transcript(session.text, sid, day), key=f"bench:{session.name}")
                await drain(worker, bench.admin, args.decisions)
                print(f"{session.name}: {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
            if args.decisions == "after":
                await bench.admin.execute("UPDATE memory_jobs SET run_after = now() WHERE kind = 'decide' "
                                          "AND status = 'queued'")
                t = time.perf_counter()
                await drain(worker, bench.admin, "on", args.decide_until)
                print(f"decisions: {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
            report = await measure(bench.admin, sessions, sids)
            jobs = await bench.admin.fetch(
                "SELECT kind, status, tokens, result, extract(epoch FROM finished_at - called_at) AS took "
                "FROM memory_jobs ORDER BY id")
    called = [r for r in jobs if r["took"] is not None]
    report.update({
        "model": args.model, "url": args.url, "decisions": args.decisions, "prompt": args.prompt,
        "jobs": dict(Counter(f"{r['kind']} {r['status']}" for r in jobs)),
        "decisions_left_queued": sum(r["kind"] == "decide" and r["status"] == "queued" for r in jobs),
        "decisions_asked_model": sum(r["kind"] == "decide" and r["took"] is not None for r in jobs),
        "extract_s": round(sum(float(r["took"]) for r in called if r["kind"] == "extract"), 1),
        "decide_s": round(sum(float(r["took"]) for r in called if r["kind"] == "decide"), 1),
        "tokens": sum(r["tokens"] or 0 for r in jobs),
        "replayed": recorded.hits if recorded else 0, "asked": recorded.misses if recorded else None,
        "elapsed_s": round(time.perf_counter() - started, 1),
        "load_avg_before": [round(x, 2) for x in load_before],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "command": " ".join(sys.argv), "machine": machine(), "at": datetime.now(UTC).isoformat(timespec="seconds")})
    return report


def print_report(r: dict[str, Any]) -> None:
    for c in r["changes"]:
        if c["outcome"] != "right":
            print(f"  {c['outcome']:18} {c['slot']}: {c['old']} -> {c['new']} ({', '.join(c.get('how', []))})"
                  f"  old={c['old_memories']} new={c['new_memories']} {'; '.join(c.get('why', []))}")
    for w in r["wrong_examples"]:
        print(f"  WRONG {w}")
    for u in r["unmatched_superseded"]:
        print(f"  unmatched superseded {u}")
    for t in r["turns_superseded"]:
        print(f"  turn superseded {t}")
    for f in r["facts"]:
        if f["extracted"] and not f["typed_right"]:
            print(f"  typed {f['kinds']} (expected {f['expected_kinds']}): {f['texts']}")
    for f in r["facts"]:
        if not f["extracted"]:
            print(f"  not extracted: {f['session']} {f['subject']} / {f['attribute']} = {f['value']}")
    rows = [
        ["prompt / decisions", f"{r['prompt']} / {r['decisions']} ({r['decisions_left_queued']} left queued)"],
        ["sessions (small talk)", f"{r['sessions']} ({sum(1 for s in SESSIONS[:r['sessions']] if not s.facts)})"
                                  f" of {len(SESSIONS)}"],
        ["expected facts / changed", f"{r['expected_facts']} / {r['changed_facts']}"],
        ["extracted memories", r["extracted_memories"]],
        ["expected facts extracted", f"{r['facts_extracted']} ({r['facts_extracted_pct']}%)"],
        ["right supersedes applied", f"{r['right_applied']}/{r['changed_facts']} ({r['right_applied_pct']}%)"],
        ["  of changes with both extracted", f"{r['right_applied']}/{r['both_extracted']} "
                                             f"({r['right_of_both_extracted_pct']}%)"],
        ["  how (right)", ", ".join(f"{k} {v}" for k, v in sorted(r["right_how"].items())) or "-"],
        ["  outcomes", ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items()))],
        ["  missed: how", ", ".join(f"{k} {v}" for k, v in sorted(r["missed_how"].items())) or "-"],
        ["wrong supersedes", f"{r['wrong']} ({r['wrong_pct']}% of facts, {r['wrong_of_superseded_pct']}% of "
                             f"{r['superseded']} superseded)"],
        ["unmatched superseded / turns superseded", f"{len(r['unmatched_superseded'])} / "
                                                    f"{len(r['turns_superseded'])}"],
        ["typed right", f"{r['typed_right']}/{r['facts_extracted']} ({r['typed_right_pct']}%)"],
        ["about from the model / about right", f"{r['about_model_pct']}% / {r['about_right_pct']}%"],
        ["key from the model", f"{r['key_model_pct']}%"],
        ["derived_from edges to own turns", f"{r['edges_pct']}%"],
        ["facts from small talk", r["small_talk_facts"]],
        ["model s: extract / decide (decisions)", f"{r['extract_s']} / {r['decide_s']} ({r['decisions_asked_model']})"],
        ["answers asked / replayed", f"{r['asked']} / {r['replayed']}"],
        ["elapsed s, load before → after", f"{r['elapsed_s']}, {r['load_avg_before'][0]} → {r['load_avg_after'][0]}"],
    ]
    print(table(["measure", "value"], rows, first_width=38))


def today_at(hh_mm: str) -> datetime:
    now = datetime.now(UTC)
    t = datetime.strptime(hh_mm, "%H:%M")
    return now.replace(hour=t.hour, minute=t.minute, second=0, microsecond=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8181/v1")
    ap.add_argument("--model", default="local-qwen2.5-coder-1.5b-instruct-q4")
    ap.add_argument("--timeout", type=float, help="a fixed timeout for each model call, its lease 100 s more and "
                    "two attempts (default: the product's defaults, which follow the model's measured speed)")
    ap.add_argument("--cache", type=Path, help="replay the answers recorded in this JSON-lines file for the very "
                    "same prompts, and record the others")
    ap.add_argument("--decisions", choices=("on", "off", "after"), default="on",
                    help="on: each session's decisions drained before the next session; off: cancelled "
                    "(extraction and keyed supersedes only; on a loaded machine each decision costs the local model "
                    "minutes); after: drained in order once every session is extracted (until --decide-until)")
    ap.add_argument("--prompt", choices=("examples", "bare"), default="examples",
                    help="bare: the extraction prompt without its worked examples (as before they were added)")
    ap.add_argument("--sessions", type=int, default=0, help="only the first N sessions (0: all)")
    ap.add_argument("--until", type=today_at,
                    help="HH:MM (UTC): start no session after it, and measure the sessions run (a slow machine)")
    ap.add_argument("--decide-until", type=today_at,
                    help="HH:MM (UTC): with --decisions after, take no decision after it (the rest stay queued)")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "extraction_sessions.json")
    ap.add_argument("--database-url")
    args = ap.parse_args()
    report = asyncio.run(main_async(args))
    print_report(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
