"""Generate the `mixed` knowledge-update dev set: one user's store holding the user's own facts
beside the facts of the people in their life and of the things they work on, each changing.

`assistant` and `workbench` hold the user's facts alone (someone else appears only as a decoy,
by role: "User's sister lives in Porto"), and `circle`, `life` and `crm` name one person per
question among people who are nobody's relatives. A personal assistant's store is both at once:
"My sister Clara lives in Porto.", later "Clara moved to Lisbon last week.", "I moved to Ghent.",
"Tom Hale manages me.", "The billing service now runs on Fly.io." So here a question about the
user ("Where do I live now?") meets the versions of a sister's city, which share its words and
name no one the question names; a question about the sister asks by her role or by her first name
("Where does my sister live now?", "Where does Clara live these days?"), while the notes call
her by role and name once and by her first name after; and a thing's facts ("Where does the
billing service run now?") sit among the people's.

Each household is one user in its own scope: two changing facts of the user (assistant.py's
tables), two people in the user's life with a changing fact each (introduced by role and name,
then named alone), one service with a changing fact, a stable fact of the user's and fillers.
Every changing fact has 2-3 versions, each drawn from several templates with their own verbs.

Output: bench/knowledge_update/mixed.jsonl, the schema of assistant.jsonl (`entity` names whom a
record is about: "the user", a person's full name, or the service). The writer's forms of each
(`--writer`) are writer_words.json's and writer_words_heldout.json's `entities.mixed`.

Deterministic: `python bench/knowledge_update/mixed.py [--seed 4242] [--households 40]`.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from assistant import AS_OF, FACTS, FILLERS, HERE, STABLE, _stamp, _when


@dataclass(frozen=True)
class TheirFact:
    """A changing fact of someone in the user's life. `{n}` their name (or "my <role> <name>" in the
    first version), `{v}` the value, `{o}` the previous value; `{r}` the role in questions."""

    name: str
    by_role: tuple[str, ...]
    by_name: tuple[str, ...]
    first: tuple[str, ...]
    later: tuple[str, ...]
    values: tuple[str, ...]


THEIRS = (
    TheirFact("city",
              ("Where does my {r} live now?", "Which city is my {r} in these days?"),
              ("Where does {n} live now?", "Which city is {n} based in at the moment?"),
              ("My {r} {n} lives in {v}.", "{n}, my {r}, lives in {v}."),
              ("{n} moved to {v} last week.", "{n} left {o} for {v}.", "{n} just settled in {v}.",
               "{n}'s new flat is in {v}.", "{n} relocated from {o} to {v}."),
              ("Porto", "Lisbon", "Utrecht", "Krakow", "Valencia", "Aarhus", "Graz", "Nantes", "Brno", "Turin")),
    TheirFact("employer",
              ("Where does my {r} work these days?", "Who does my {r} work for now?"),
              ("Where does {n} work these days?", "Who is {n} working for at the moment?"),
              ("My {r} {n} works at {v}.", "{n}, my {r}, is employed by {v}."),
              ("{n} got a new job at {v}.", "{n} quit {o} and joined {v}.", "{n} started at {v} on Monday.",
               "{n} left {o}; now at {v}.", "{n} accepted an offer from {v}."),
              ("Hospital Santa Maria", "Northwind Labs", "Oakridge Bank", "Tidewater Logistics", "Bluefin Games",
               "Cedar Health", "Ironwood Studio", "Larkspur Insurance")),
    TheirFact("car",
              ("What does my {r} drive now?", "What car does my {r} have these days?"),
              ("What does {n} drive now?", "What car is {n} driving at the moment?"),
              ("My {r} {n} drives a {v}.", "{n}, my {r}, has a {v}."),
              ("{n} sold the {o} and bought a {v}.", "{n} picked up a {v} from the dealer.",
               "{n} is driving a {v} now.", "{n} traded in the {o} for a {v}."),
              ("Renault Clio", "Skoda Octavia", "Volvo XC40", "Mazda 3", "Fiat 500", "Peugeot 208", "BMW i3")),
    TheirFact("sport",
              ("Which sport is my {r} into now?", "What does my {r} do for exercise these days?"),
              ("Which sport is {n} into now?", "What does {n} do for exercise these days?"),
              ("My {r} {n} plays {v} every week.", "{n}, my {r}, is into {v}."),
              ("{n} gave up {o} and took up {v}.", "{n} joined a {v} club.", "{n} is hooked on {v} lately.",
               "{n} switched from {o} to {v}."),
              ("tennis", "rowing", "climbing", "swimming", "handball", "volleyball", "judo", "badminton")),
)

# A role's people: a sister is a woman, a friend anyone.
WOMEN = ("Clara", "Ines", "Marta", "Joana", "Rita", "Sofia", "Lena", "Nora", "Greta", "Elsa")
MEN = ("Tomas", "Rui", "Pedro", "Hugo", "Jonas", "Felix", "Bruno", "Anton", "Mateo", "Oskar")
ROLES = {"sister": WOMEN, "brother": MEN, "friend": WOMEN + MEN, "neighbour": WOMEN + MEN,
         "cousin": WOMEN + MEN, "best friend": WOMEN + MEN}
LAST = ("Reis", "Moreau", "Lindgren", "Novak", "Ferreira", "Brandt", "Costa", "Vidal", "Haas", "Keller")

SERVICES = ("billing service", "search API", "payments worker", "notifications service", "reporting pipeline")
HOSTS = ("Heroku", "Fly.io", "AWS ECS", "Cloud Run", "Railway", "Render", "a Hetzner box", "Kubernetes on GKE")
SERVICE_QUESTIONS = ("Where does the {s} run now?", "What is the {s} deployed on these days?")
SERVICE_FIRST = ("The {s} runs on {v}.", "We host the {s} on {v}.")
SERVICE_LATER = ("Moved the {s} from {o} to {v}.", "The {s} now runs on {v}; {o} was too flaky.",
                 "Migrated the {s} to {v} this week.", "The {s} is on {v} now.")


def _versions(rng: random.Random, key: str, first: tuple[str, ...], later: tuple[str, ...], values: list[str],
              names: list[dict[str, str]]) -> list[dict]:
    """A fact's versions, one per value, dated in order: the first from `first`, the rest from
    `later`, each version's placeholders filled from `names[i]`."""
    times = sorted(_when(rng, AS_OF - timedelta(days=700), AS_OF - timedelta(days=20)) for _ in values)
    out = []
    for i, (value, t) in enumerate(zip(values, times, strict=True)):
        template = rng.choice(first if i == 0 else later)
        content = template.format(v=value, o=values[i - 1] if i else value, **names[i])
        out.append({"key": f"{key}.v{i + 1}", "content": content, "occurred_at": _stamp(t)})
    return out


def _record(scope: str, key: str, entity: str, attribute: str, query: str, versions: list[dict],
            answer: str, distractors: list[dict] | None = None) -> dict:
    return {"id": key, "scope": scope, "entity": entity, "type": "changing", "attribute": attribute,
            "query": query, "answer": answer, "as_of": _stamp(AS_OF), "versions": versions,
            "newest": versions[-1]["key"], "distractors": distractors or []}


def household(rng: random.Random, index: int) -> list[dict]:
    scope = f"m{index:02d}"
    records = []
    for k, fact in enumerate(rng.sample(FACTS, 2)):
        values = rng.sample(fact.values, rng.choice((2, 3)))
        versions = _versions(rng, f"{scope}.u{k}", fact.plain, fact.change, values, [{}] * len(values))
        records.append(_record(scope, f"{scope}.u{k}", "the user", fact.name, rng.choice(fact.questions),
                               versions, values[-1]))
    taken: set[str] = set()
    for k, (role, fact) in enumerate(zip(rng.sample(sorted(ROLES), 2), rng.sample(THEIRS, 2), strict=True)):
        first = rng.choice([n for n in ROLES[role] if n not in taken])
        taken.add(first)
        full = f"{first} {rng.choice(LAST)}"
        values = rng.sample(fact.values, rng.choice((2, 3)))
        # Introduced by role and name (in full or not), named alone after.
        names = [{"n": rng.choice((first, full)), "r": role}] + [{"n": first}] * (len(values) - 1)
        versions = _versions(rng, f"{scope}.p{k}", fact.first, fact.later, values, names)
        question = rng.choice(fact.by_role).format(r=role) if rng.random() < 0.5 else \
            rng.choice(fact.by_name).format(n=first)
        records.append(_record(scope, f"{scope}.p{k}", full, fact.name, question, versions, values[-1]))
    service = rng.choice(SERVICES)
    hosts = rng.sample(HOSTS, rng.choice((2, 3)))
    versions = _versions(rng, f"{scope}.s0", SERVICE_FIRST, SERVICE_LATER, hosts, [{"s": service}] * len(hosts))
    records.append(_record(scope, f"{scope}.s0", service, "deploy target",
                           rng.choice(SERVICE_QUESTIONS).format(s=service), versions, hosts[-1]))
    question, statement, values = rng.choice(STABLE)
    stable = {"key": f"{scope}.st.v1", "content": statement.format(v=rng.choice(values)),
              "occurred_at": _stamp(_when(rng, AS_OF - timedelta(days=900), AS_OF - timedelta(days=600)))}
    fillers = [{"key": f"{scope}.st.f{i + 1}", "content": text, "why": "filler",
                "occurred_at": _stamp(_when(rng, AS_OF - timedelta(days=300), AS_OF))}
               for i, text in enumerate(rng.sample(FILLERS, 2))]
    records.append({"id": f"{scope}.st", "scope": scope, "entity": "the user", "type": "stable",
                    "attribute": "stable", "query": question, "answer": stable["content"], "as_of": _stamp(AS_OF),
                    "versions": [stable], "newest": stable["key"], "distractors": fillers})
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=4242)
    parser.add_argument("--households", type=int, default=40)
    parser.add_argument("--out", type=Path, default=HERE / "mixed.jsonl")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    records = [r for i in range(args.households) for r in household(rng, i)]
    args.out.write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"wrote {len(records)} records to {args.out}")


if __name__ == "__main__":
    main()
