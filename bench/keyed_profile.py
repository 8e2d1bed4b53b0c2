"""One user's profile as an agent keys it: many attributes of one subject, each fact keyed in the
agent's words, a few of them changed later. Does a keyed fact replace only an earlier value of its
own attribute?

The knowledge-update sets hold a dozen memories a person over a few attributes each; a real user's
store holds one subject with dozens of attributes, many outside the lexicon ("internet provider",
"dentist", "mobile carrier"), several in sentences of one shape ("The user's X is Y."), some
qualifying one head word two ways ("laptop" / "gaming laptop"). A wrong replace there makes a true
value stale by construction, with no model in the loop to blame.

Each fact is (slot, who, key, text): one slot is one attribute of one subject, so two facts of a
slot are two versions (the later true since later) and facts of two slots are two attributes.
Facts are dated a day apart in the order listed and written through the service in that order and
in `--shuffles` seeded shuffles (each copy a user of its own; a write dated earlier than its
attribute's live value must not replace it). Counted per copy: right = earlier versions of a
one-at-a-time slot replaced by a later version of it (of those there are), wrong = facts replaced
by a fact of another slot or by an earlier version. `--unkeyed` passes neither `about` nor `key`
(the rules alone).

The set is a dev set: the twenty-fifth stop's probe of 53 facts, grown; its misses were read and
fixed in the lexicon ("pixel", "favourite drink", "gym"), so it is not held out.

Usage: python bench/keyed_profile.py [--shuffles 4] [--unkeyed] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from locomo import REPO, bench_database, bench_principal, machine, publish, table  # noqa: E402

from mcp_memory.service import MemoryService  # noqa: E402


@dataclass(frozen=True)
class Fact:
    slot: str
    who: str
    key: str
    text: str
    many: bool = False  # the slot holds many values at a time: none replaces another


ME, HERON = "me", "Heron"
FACTS = (
    Fact("city", ME, "home city", "The user lives in Leeds."),
    Fact("employer", ME, "employer", "The user works at Initech."),
    Fact("wife employer", ME, "wife's employer", "The user's wife works at Hooli."),
    Fact("title", ME, "job title", "The user is a senior engineer."),
    Fact("manager", ME, "manager", "The user's manager is Dana Reyes."),
    Fact("editor", ME, "editor", "The user codes in Neovim."),
    Fact("shell", ME, "login shell", "The user's login shell is zsh."),
    Fact("phone", ME, "phone", "The user's phone is a Pixel 7."),
    Fact("phone number", ME, "phone number", "The user's phone number is 555 0199."),
    Fact("food", ME, "favourite food", "The user's favourite food is ramen."),
    Fact("drink", ME, "favourite drink", "The user's favourite drink is a flat white."),
    Fact("gym", ME, "gym", "The user's gym is PureGym Leeds."),
    Fact("sport", ME, "sport", "The user plays squash."),
    Fact("isp", ME, "internet provider", "The user's internet provider is BT."),
    Fact("mobile carrier", ME, "mobile carrier", "The user's mobile carrier is Vodafone."),
    Fact("deploy", ME, "deploy target", "The user's app deploys to Fly.io."),
    Fact("pets", ME, "pets", "The user has a cat named Miso.", many=True),
    Fact("allergies", ME, "allergies", "The user is allergic to peanuts.", many=True),
    Fact("languages", ME, "languages", "The user speaks Portuguese.", many=True),
    Fact("car", ME, "car", "The user drives a Skoda Octavia."),
    Fact("laptop", ME, "laptop", "The user's work laptop is a ThinkPad X1."),
    Fact("kid school", ME, "kid's school", "The user's daughter goes to Park Lane Primary."),
    Fact("alma mater", ME, "alma mater", "The user studied at the University of Sheffield."),
    Fact("birthday", ME, "birthday", "The user's birthday is 14 March."),
    Fact("partner", ME, "partner", "The user's wife is called Ana."),
    Fact("standup", ME, "standup time", "The user's standup is at 9:30."),
    Fact("team", ME, "team", "The user is on the Payments team."),
    Fact("github", ME, "GitHub handle", "The user is @jdoe on GitHub."),
    Fact("email", ME, "email", "The user's email is j.doe@example.com."),
    Fact("hobbies", ME, "hobbies", "The user paints watercolours.", many=True),
    Fact("dentist", ME, "dentist", "The user's dentist is Dr. Patel."),
    Fact("gp", ME, "GP", "The user's GP is Dr. Osei."),
    Fact("bank", ME, "bank", "The user banks with Monzo."),
    Fact("landlord", ME, "landlord", "The user's landlord is Mr. Green."),
    Fact("streaming", ME, "streaming service", "The user watches shows on Netflix."),
    Fact("coffee shop", ME, "local coffee shop", "The user's local coffee shop is Grindsmith."),
    Fact("airline", ME, "airline", "The user usually flies with KLM."),
    Fact("commute", ME, "commute", "The user cycles to work."),
    Fact("time zone", ME, "time zone", "The user is on UK time."),
    Fact("package manager", ME, "package manager", "The user uses pnpm."),
    Fact("database", HERON, "primary database", "Heron's primary database is PostgreSQL."),
    Fact("analytics db", HERON, "analytics database", "Heron's analytics database is ClickHouse."),
    Fact("heron lead", HERON, "tech lead", "Heron's tech lead is Ana Souza."),
    Fact("heron language", HERON, "language", "Heron is written in Go."),
    Fact("heron region", HERON, "region", "Heron runs in eu-west-1."),
    # later: values that change, in other words than before; values that add to many
    Fact("gaming laptop", ME, "gaming laptop", "The user games on an ASUS ROG laptop."),
    Fact("city", ME, "where they live", "The user moved to York last month."),
    Fact("employer", ME, "company", "The user joined Globex as a staff engineer."),
    Fact("manager", ME, "boss", "The user now reports to Omar Haddad."),
    Fact("editor", ME, "editor of choice", "The user switched to Helix."),
    Fact("shell", ME, "default shell", "The user changed the default shell to fish."),
    Fact("drink", ME, "coffee order", "The user drinks oat lattes now."),
    Fact("sport", ME, "exercise", "The user took up bouldering instead of squash."),
    Fact("deploy", ME, "hosting", "The user moved the app from Fly.io to Render."),
    Fact("pets", ME, "pet", "The user adopted a dog called Biscuit.", many=True),
    Fact("allergies", ME, "allergy", "The user is also allergic to penicillin.", many=True),
    Fact("languages", ME, "speaks", "The user speaks German too.", many=True),
    Fact("car", ME, "vehicle", "The user sold the Skoda and bought a Kia Niro."),
    Fact("standup", ME, "daily standup", "Standup moved to 10:00."),
    Fact("team", ME, "squad", "The user moved to the Identity squad."),
    Fact("package manager", ME, "js package manager", "The user switched from pnpm to bun."),
    Fact("isp", ME, "broadband", "The user switched broadband to Zen."),
    Fact("hobbies", ME, "hobby", "The user also brews beer.", many=True),
    Fact("heron lead", HERON, "lead", "Ana Souza handed Heron's tech lead role to Bo Chen."),
    Fact("heron region", HERON, "hosting region", "Heron moved to us-east-1."),
)
START = datetime(2025, 1, 1, 9, tzinfo=UTC)


def expected(facts: tuple[Fact, ...]) -> tuple[int, dict[int, set[int]]]:
    """The stale versions there are, and for each fact the facts that may replace it: later
    versions of its own one-at-a-time slot."""
    may: dict[int, set[int]] = {i: set() for i in range(len(facts))}
    for i, f in enumerate(facts):
        if not f.many:
            may[i] = {j for j in range(i + 1, len(facts)) if facts[j].slot == f.slot}
    return sum(bool(m) for m in may.values()), may


async def one_copy(service: MemoryService, user: str, order: list[int], keyed: bool) -> dict[str, Any]:
    p = bench_principal(user)
    ids: dict[int, Any] = {}
    for i in order:
        f = FACTS[i]
        passed: dict[str, Any] = dict(about=[f.who], key=f.key) if keyed else {}
        result = await service.write(p, f.text, occurred_at=START + timedelta(days=i), **passed)
        ids[i] = result.memory.id
    by_id = {v: k for k, v in ids.items()}
    stored = {m.id: m for m in (await service.get(p, list(ids.values()))).memories}
    stale, may = expected(FACTS)
    right, wrong, left = 0, [], []
    for i, mid in ids.items():
        by = stored[mid].superseded_by
        if by is None:
            if may[i]:
                left.append({"fact": FACTS[i].key, "slot": FACTS[i].slot, "stored_key": stored[mid].key,
                             "later": [f"{FACTS[j].key} (filed {stored[ids[j]].key!r})" for j in sorted(may[i])]})
            continue
        j = by_id.get(by)
        if j in may[i]:
            right += 1
        else:
            later = FACTS[j] if j is not None else None
            wrong.append({"fact": FACTS[i].key, "slot": FACTS[i].slot, "replaced_by": later.key if later else str(by),
                          "by_slot": later.slot if later else None, "stored_key": stored[mid].key})
    return {"user": user, "right": right, "stale": stale, "wrong": wrong, "left": left,
            "keys": dict(Counter(stored[m].key for m in ids.values()))}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    orders = [list(range(len(FACTS)))]
    for seed in range(1, args.shuffles + 1):
        order = list(range(len(FACTS)))
        random.Random(seed).shuffle(order)
        orders.append(order)
    async with bench_database(args.database_url, "keyed-profile") as bench:
        service = bench.service()
        copies = [await one_copy(service, f"profile-{n}", order, not args.unkeyed) for n, order in enumerate(orders)]
    return {"benchmark": "keyed_profile", "facts": len(FACTS), "slots": len({f.slot for f in FACTS}),
            "keyed": not args.unkeyed, "copies": copies, "machine": machine(),
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}


def report(r: dict[str, Any]) -> str:
    rows = [[("in order" if n == 0 else f"shuffle {n}"), c["right"], c["stale"], len(c["wrong"]),
             round(len(c["wrong"]) / r["facts"], 3)] for n, c in enumerate(r["copies"])]
    lines = [f"{r['facts']} facts over {r['slots']} attributes of 2 subjects, "
             f"{'keyed as an agent keys them' if r['keyed'] else 'unkeyed (rules alone)'}",
             table(["write order", "right", "of stale", "wrong", "wrong %"], rows)]
    for n, c in enumerate(r["copies"]):
        lines += [f"  {n}: {w['fact']!r} ({w['slot']}, filed {w['stored_key']!r}) replaced by {w['replaced_by']!r}"
                  for w in c["wrong"]]
        lines += [f"  {n}: {x['fact']!r} ({x['slot']}, filed {x['stored_key']!r}) left current beside "
                  f"{', '.join(x['later'])}" for x in c["left"] if r["keyed"]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shuffles", type=int, default=4, help="seeded write orders beside the listed one")
    parser.add_argument("--unkeyed", action="store_true", help="pass neither about nor key: the rules alone")
    parser.add_argument("--database-url")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "keyed_profile.json")
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    publish(results, args.out, report(results))


if __name__ == "__main__":
    main()
