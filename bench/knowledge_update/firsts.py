"""Generate the `firsts` knowledge-update dev set: a new user's first facts, one version each.

A store that has just begun holds a few facts about its user, each of another attribute and none
changed yet. A question about the present then has one answer and nothing to put newest first: the
fact that states what is asked must come first, whichever is newer. The present-tense chain
(retrieval/focus.py) reads the subject's memories as versions of one fact joined by closeness, and
with three memories took the closest and the next for two versions, so "Where does the user live
now?" was answered with a newer employer.

Each household is one user in its own scope, alternately from assistant.py's tables (a person's
life: city, employer, car, ...) and workbench.py's (a developer's tools: shell, laptop, deploy
target, ...): three facts of three attributes, each one version in one of the tables' plain
templates (some say what they state in no cue word: "Home for me is Porto", "I'm hooked on
judo"), a question for each, and one filler. `newest` is the one version, so newest first is
always met; newest@1 is the figure.

`--plain` writes the shape the problem was first seen in instead: each fact a plain statement of
its attribute ("The user lives in Bristol.", "I work for Plumtree Media.", "My editor of choice is
Helix."), no filler.

Output: bench/knowledge_update/firsts.jsonl (firsts_plain.jsonl with `--plain`), the schema of
assistant.jsonl.

Deterministic: `python bench/knowledge_update/firsts.py [--seed 4242] [--households 40] [--plain]`.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import timedelta
from pathlib import Path

from assistant import AS_OF, ASSISTANT, HERE, Fact, Tables, _stamp, _when
from workbench import WORKBENCH

# Facts as a new user states them plainly (`--plain`); no `change` or `others`: one version each.
PLAIN = Tables((
    Fact("home city", ("Where does the user live now?", "Where do I live these days?", "Which city am I in now?"),
         ("The user lives in {v}.", "I live in {v}.", "Home for me is {v}."), (),
         ("Bristol", "Leeds", "Porto", "Lyon", "Austin", "Oslo"), ()),
    Fact("employer", ("Who does the user work for now?", "Where do I work these days?", "Which company am I at now?"),
         ("The user works at {v}.", "I work for {v}.", "My employer is {v}."), (),
         ("Brightwater Analytics", "Plumtree Media", "Saltmarsh Bank", "Acme Robotics"), ()),
    Fact("editor", ("Which editor does the user use now?", "What editor am I using these days?"),
         ("The user's editor is {v}.", "I write code in {v}.", "My editor of choice is {v}."), (),
         ("Zed", "Helix", "Neovim", "VS Code"), ()),
    Fact("car", ("What car do I drive now?", "What does the user drive these days?"),
         ("The user drives a {v}.", "I drive a {v}.", "My car is a {v}."), (),
         ("Kia Niro", "Mini Cooper", "Tesla Model 3", "Honda Civic"), ()),
    Fact("phone", ("What phone do I have now?", "Which phone does the user use now?"),
         ("The user's phone is a {v}.", "I use a {v} as my phone.", "My phone is a {v}."), (),
         ("Pixel 8", "iPhone 15", "Fairphone 5"), ()),
    Fact("sport", ("What sport do I do these days?", "What's the user's workout now?"),
         ("The user plays {v} on weekends.", "I do {v} twice a week.", "My sport is {v}."), (),
         ("squash", "rowing", "climbing", "tennis"), ()),
    Fact("shell", ("Which shell do I use now?", "What shell does the user use these days?"),
         ("The user's shell is {v}.", "I use {v} as my shell."), (), ("fish", "zsh", "bash"), ()),
    Fact("manager", ("Who is my manager now?", "Who does the user report to these days?"),
         ("The user's manager is {v}.", "I report to {v}."), (), ("Hana Dubois", "Diego Yilmaz", "Kwame Larsen"), ()),
), (), ())


def household(rng: random.Random, index: int, tables: Tables) -> list[dict]:
    scope = f"f{index:02d}"
    records = []
    for k, fact in enumerate(rng.sample(tables.facts, 3)):
        value = rng.choice(fact.values)
        version = {"key": f"{scope}.{k}.v1", "content": rng.choice(fact.plain).format(v=value),
                   "occurred_at": _stamp(_when(rng, AS_OF - timedelta(days=400), AS_OF - timedelta(days=20)))}
        records.append({"id": f"{scope}.{k}", "scope": scope, "entity": "the user", "type": "changing",
                        "attribute": fact.name, "query": rng.choice(fact.questions), "answer": value,
                        "as_of": _stamp(AS_OF), "versions": [version], "newest": version["key"],
                        "distractors": []})
    if tables.fillers:
        records[0]["distractors"].append({"key": f"{scope}.0.f1", "content": rng.choice(tables.fillers),
                                          "why": "filler",
                                          "occurred_at": _stamp(_when(rng, AS_OF - timedelta(days=300), AS_OF))})
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=4242)
    parser.add_argument("--households", type=int, default=40)
    parser.add_argument("--plain", action="store_true", help="plain statements of each attribute, no filler")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = args.out or HERE / ("firsts_plain.jsonl" if args.plain else "firsts.jsonl")
    rng = random.Random(args.seed)
    records = [r for i in range(args.households)
               for r in household(rng, i, PLAIN if args.plain else ASSISTANT if i % 2 == 0 else WORKBENCH)]
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"wrote {len(records)} records to {out}")


if __name__ == "__main__":
    main()
