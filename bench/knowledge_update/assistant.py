"""Generate the `assistant` knowledge-update dev set: what an agent remembers about its one user.

`life` and `ops` name their subjects ("Odalys Pellegrini", "the coupons pipeline"); an agent's
memory mostly does not. Its subject is the person it works for, written "User …", "The user …",
"I …" or "My …" (notes an agent takes, lines captured from a transcript), so no name or run of
words singles out the subject: every memory in the store is about the same person. What tells a
version of the asked fact from the user's other facts is only what is said.

Each household is one user in its own scope: a few changing facts (2-4 versions each, every
version drawn from at least five templates with their own verbs and nouns, half of them
first-person), questions with words about time in the agent's own register ("Where does the user
live these days?", "Which editor am I on now?"), one stable fact written long ago with its
question, memories about people in the user's life that share the question's words ("User's
sister lives in Porto"), and fillers.

Output: one JSON object per line in bench/knowledge_update/assistant.jsonl, the schema of
varied.py's sets plus `scope` (the bench loads each household under its own user).

Deterministic: `python bench/knowledge_update/assistant.py [--seed 7171] [--households 40]`.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
AS_OF = datetime(2026, 3, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Fact:
    """`{v}` the value, `{o}` the previous value (only in `change`)."""

    name: str
    questions: tuple[str, ...]
    plain: tuple[str, ...]
    change: tuple[str, ...]
    values: tuple[str, ...]
    others: tuple[str, ...]  # the same kind of thing about someone in the user's life


FACTS = (
    Fact("city",
         ("Where does the user live these days?", "Which city am I based in now?",
          "What city is the user in at the moment?", "Where is home for me nowadays?"),
         ("User lives in {v}.", "I live in {v}.", "The user's flat is in {v}.", "My apartment is in {v}.",
          "User is based in {v}.", "Home for me is {v}."),
         ("User moved from {o} to {v}.", "I relocated to {v} last month.", "The user just settled in {v}.",
          "We finally moved to {v}; {o} is behind us.", "User's new address is in {v}.",
          "I packed up and left {o} for {v}."),
         ("Oslo", "Lisbon", "Berlin", "Porto", "Ghent", "Bologna", "Reykjavik", "Tbilisi", "Leipzig", "Marseille",
          "Bergen", "Cork", "Seville", "Trieste", "Hobart", "Halifax"),
         ("User's sister lives in {v}.", "My parents still live in {v}.", "User's best friend moved to {v}.")),
    Fact("employer",
         ("Who does the user work for now?", "Where am I working these days?",
          "Which company employs the user currently?", "What's my employer at present?"),
         ("User works at {v}.", "I work for {v}.", "The user is employed by {v}.", "My job is at {v}.",
          "User is on the payroll of {v}.", "I'm an engineer at {v}."),
         ("User left {o} and joined {v}.", "I started a new job at {v}.", "The user signed with {v} this week.",
          "My last day at {o} was Friday; {v} next.", "User accepted an offer from {v}.",
          "I quit {o} to go to {v}."),
         ("Fernwood Labs", "Quillstone", "Brightwater Health", "Korvex", "Lanternfish Games", "Tessellate",
          "Plumtree Media", "Corvid Security", "Juniper Freight", "Halcyon Air", "Mirabel Foods"),
         ("User's partner works at {v}.", "My brother got a job at {v}.", "User's old classmate runs {v}.")),
    Fact("editor",
         ("Which editor does the user use now?", "What editor am I on these days?",
          "Which code editor does the user prefer currently?", "What do I write code in nowadays?"),
         ("User codes in {v}.", "I write code in {v}.", "The user's editor is {v}.", "My editor of choice is {v}.",
          "User swears by {v}.", "I do all my programming in {v}."),
         ("User switched from {o} to {v}.", "I gave up on {o}; {v} from now on.",
          "The user moved every project to {v}.", "I'm trying {v} for good now.", "User dropped {o} for {v}.",
          "I migrated my setup to {v}."),
         ("Vim", "Emacs", "VS Code", "IntelliJ", "Sublime Text", "Helix", "Zed", "Kate", "Neovim"),
         ("User's team lead uses {v}.", "My colleague keeps recommending {v}.", "The user's mentor teaches {v}.")),
    Fact("car",
         ("What car does the user drive now?", "Which car do I have these days?",
          "What is the user driving at the moment?", "What's my car currently?"),
         ("User drives a {v}.", "I drive a {v}.", "The user owns a {v}.", "My car is a {v}.",
          "User commutes in a {v}.", "I park a {v} outside the office."),
         ("User sold the {o} and bought a {v}.", "I traded in my {o} for a {v}.", "The user picked up a {v} today.",
          "Got my new {v} from the dealer.", "User replaced the {o} with a {v}.", "I upgraded to a {v}."),
         ("Toyota Prius", "Volvo XC40", "Mini Cooper", "Nissan Leaf", "Renault Zoe", "Fiat Panda", "Skoda Octavia",
          "Kia Niro", "Tesla Model 3"),
         ("User's father drives a {v}.", "My neighbour just bought a {v}.", "User's wife wants a {v}.")),
    Fact("sport",
         ("What sport does the user do these days?", "How do I keep fit nowadays?",
          "Which sport is the user into currently?", "What's my workout at the moment?"),
         ("User plays {v} twice a week.", "I do {v} on weekends.", "The user's sport is {v}.",
          "My main exercise is {v}.", "User trains at a {v} club.", "I'm hooked on {v}."),
         ("User gave up {o} and took up {v}.", "I switched from {o} to {v}.", "The user joined a {v} group.",
          "I started {v} this month.", "User traded {o} for {v}.", "Signed up for {v} lessons; no more {o}."),
         ("squash", "judo", "rowing", "cycling", "bouldering", "swimming", "tennis", "yoga", "running"),
         ("User's son plays {v}.", "My friends invited me to watch {v}.", "The user's manager coaches {v}.")),
    Fact("manager",
         ("Who does the user report to now?", "Who is my manager these days?",
          "Who is the user's boss currently?", "Who do I answer to at the moment?"),
         ("User reports to {v}.", "I report to {v}.", "The user's manager is {v}.", "My boss is {v}.",
          "User's team lead is {v}.", "{v} manages me."),
         ("User's new manager is {v}.", "After the reorg I report to {v}.", "The user now answers to {v}.",
          "{v} took over from {o} as my lead.", "User moved to {v}'s team.", "My manager changed to {v}."),
         ("Marco Bellini", "Signe Dahl", "Kasper Holm", "Imogen Tate", "Leonie Marchetti", "Farid Hosseini",
          "Ruth Okonkwo", "Beatriz Nunes", "Tobias Wren", "Ahmed Saleh"),
         ("User's wife reports to {v}.", "My friend's manager is {v}.", "The user's intern works for {v}.")),
)

STABLE = (
    ("When is the user's birthday?", "User's birthday is {v}.",
     ("4 May", "12 June", "30 January", "17 September", "2 November", "21 March")),
    ("Where did I grow up?", "I grew up in {v}.", ("Silesia", "Galway", "Alentejo", "Tromso", "Umbria", "Provence")),
    ("Is the user allergic to anything?", "User is allergic to {v}.",
     ("peanuts", "penicillin", "shellfish", "cats", "pollen", "latex")),
)

FILLERS = ("User asked for shorter answers in code reviews.", "I had a long call about the roadmap.",
           "User wants release notes in bullet points.", "Lunch ran long today.",
           "I prefer meetings after 10.", "User is reading a book about bridges.",
           "Remind me to renew the passport.", "User likes dark mode.")


def _when(rng: random.Random, start: datetime, end: datetime) -> datetime:
    return start + timedelta(seconds=rng.randrange(int((end - start).total_seconds())))


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Tables:
    """What one set says: its changing facts, its stable facts (question, statement, values) and
    fillers."""

    facts: tuple[Fact, ...]
    stable: tuple[tuple[str, str, tuple[str, ...]], ...]
    fillers: tuple[str, ...]


ASSISTANT = Tables(FACTS, STABLE, FILLERS)


def household(rng: random.Random, index: int, tables: Tables = ASSISTANT) -> list[dict]:
    scope = f"h{index:02d}"
    facts = rng.sample(tables.facts, 3)
    records = []
    used: set[str] = set()
    for k, fact in enumerate(facts):
        n = rng.choice((2, 3, 3, 4))
        values = rng.sample(fact.values, n)
        times = sorted(_when(rng, AS_OF - timedelta(days=700), AS_OF - timedelta(days=20)) for _ in range(n))
        versions = []
        for i, (value, t) in enumerate(zip(values, times, strict=True)):
            pool = fact.plain if i == 0 else fact.plain + fact.change
            template = rng.choice([x for x in pool if x.format(v=value, o=values[i - 1]) not in used])
            content = template.format(v=value, o=values[i - 1] if i else value)
            used.add(content)
            versions.append({"key": f"{scope}.{k}.v{i + 1}", "content": content, "occurred_at": _stamp(t)})
        other = rng.choice([v for v in fact.values if v not in values])
        distractors = [{"key": f"{scope}.{k}.d1", "content": rng.choice(fact.others).format(v=other),
                        "occurred_at": _stamp(_when(rng, times[-1], AS_OF)), "why": "someone else, same words"}]
        records.append({"id": f"{scope}.{k}", "scope": scope, "entity": "the user", "type": "changing",
                        "attribute": fact.name, "query": rng.choice(fact.questions), "answer": values[-1],
                        "as_of": _stamp(AS_OF), "versions": versions, "newest": versions[-1]["key"],
                        "distractors": distractors})
    question, statement, values = rng.choice(tables.stable)
    stable = {"key": f"{scope}.s.v1", "content": statement.format(v=rng.choice(values)),
              "occurred_at": _stamp(_when(rng, AS_OF - timedelta(days=900), AS_OF - timedelta(days=600)))}
    fillers = [{"key": f"{scope}.s.f{i + 1}", "content": text, "why": "filler",
                "occurred_at": _stamp(_when(rng, AS_OF - timedelta(days=300), AS_OF))}
               for i, text in enumerate(rng.sample(tables.fillers, 2))]
    records.append({"id": f"{scope}.s", "scope": scope, "entity": "the user", "type": "stable",
                    "attribute": "stable", "query": question, "answer": stable["content"], "as_of": _stamp(AS_OF),
                    "versions": [stable], "newest": stable["key"], "distractors": fillers})
    return records


def main(doc: str | None = None, tables: Tables = ASSISTANT, seed: int = 7171,
         out: Path = HERE / "assistant.jsonl") -> None:
    """Write one set: `assistant` by default; workbench.py passes its own tables."""
    parser = argparse.ArgumentParser(description=doc or __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=seed)
    parser.add_argument("--households", type=int, default=40)
    parser.add_argument("--out", type=Path, default=out)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    records = [r for i in range(args.households) for r in household(rng, i, tables)]
    args.out.write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"wrote {len(records)} records to {args.out}")


if __name__ == "__main__":
    main()
