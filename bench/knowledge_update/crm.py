"""Generate `crm.jsonl`: a knowledge-update dev set of a user's work notebook about colleagues.

Like `circle.py` a store with many facts per person (46 colleagues, ~15 memories each), but built
differently: terse notes in a work register, often with a prefix a note-taking agent adds ("1:1:",
"FYI", "re-org:"), the person sometimes named by first name only after the first mention,
attributes from another set (title, team, manager, office, project, on-call rotation, laptop),
versions that may or may not name the value they replace, questions in a ticket's register with
time words ("as of today", "currently", "still") or without. Each person: four or five changing
attributes with 2-4 versions, two stable facts (start year, pronouns/language), three meeting
notes that name them.

Written after the ranking it measures; no template shared with the other generators.
Deterministic: `python bench/knowledge_update/crm.py [--seed 5150] [--people 46]`.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
AS_OF = datetime(2026, 2, 15, tzinfo=UTC)
START = datetime(2023, 9, 1, tzinfo=UTC)

FIRST = ["Adaeze", "Bjorn", "Chiara", "Desmond", "Eun-ji", "Florin", "Gwendolyn", "Hiroshi", "Isadora", "Jovan",
         "Kiran", "Leopold", "Maelle", "Nasrin", "Oisin", "Priya", "Quinn", "Radomir", "Svetlana", "Tariq",
         "Ulla", "Vikram", "Wanjiru", "Xavier", "Yevgenia", "Zoltan", "Anouk", "Benedikt", "Cosima", "Dagny",
         "Emeka", "Fenna", "Gideon", "Henrike", "Ignatius", "Jolien", "Kasimir", "Liesel", "Matteo", "Nilufar",
         "Ottilie", "Paulo", "Rasmus", "Saoirse", "Teodor", "Valeska"]
LAST = ["Abara", "Brennan", "Cavalcanti", "Dvorak", "Esposito", "Fitzgerald", "Gunawardena", "Halvorsen",
        "Ivanova", "Jablonski", "Kuznetsov", "Lindqvist", "Mwangi", "Nakagawa", "Ostrowski", "Pereira"]

PREFIXES = ("", "", "", "FYI: ", "1:1 notes: ", "Heard today: ", "Update - ", "From standup: ")

# name, timed questions, plain questions, first statements, change statements, values.
# {e} full name, {f} first name, {v} value, {o} previous value.
ATTRIBUTES = (
    ("title",
     ("What is {e}'s title as of today?", "What role does {e} currently hold?", "What's {e}'s job title now?"),
     ("What is {e}'s title?", "What role does {e} have?"),
     ("{e} - {v}.", "{e} is a {v} here.", "{e}, {v}, sits by the window."),
     ("{e} promoted to {v}.", "{f} is {v} now (was {o}).", "{e} stepped into the {v} role.",
      "Congrats to {e}: new title {v}.", "{e} moved from {o} to {v}."),
     ("Senior Engineer", "Staff Engineer", "Engineering Manager", "Product Designer", "Data Scientist",
      "Principal Engineer", "Tech Lead", "Director of Engineering", "SRE")),
    ("team",
     ("Which team is {e} on currently?", "What team is {e} in these days?", "Is {e} still on the same team?"),
     ("Which team is {e} on?", "What team does {e} belong to?"),
     ("{e} is on the {v} team.", "{e} works in {v}.", "{e} joined {v} squad."),
     ("{e} transferred to {v}.", "{f} left {o} for {v}.", "Re-org: {e} lands in {v}.",
      "{e} now sits with the {v} folks.", "{e} rotated out of {o} into {v}."),
     ("Payments", "Search Relevance", "Identity", "Mobile Platform", "Data Infra", "Growth", "Billing",
      "Developer Experience", "Trust & Safety")),
    ("manager",
     ("Who is {e}'s manager at the moment?", "Who does {e} report to currently?", "Who manages {e} now?"),
     ("Who is {e}'s manager?", "Who does {e} report to?"),
     ("{e} reports to {v}.", "{e}'s manager: {v}.", "{v} is {e}'s skip-level and direct manager."),
     ("{e} now reports to {v}.", "{f}'s new manager is {v} ({o} moved on).", "Re-org: {v} takes over {e}.",
      "{v} inherited {e} from {o}.", "Manager change for {e}: {v}."),
     ("Ngozi Adeyemi", "Lars Petersen", "Helena Sousa", "Rohan Mehta", "Clementine Roux", "Dieter Vogel",
      "Yasmin Haddad", "Gustavo Lima")),
    ("office",
     ("Which office is {e} in these days?", "Where is {e} based right now?", "Where does {e} work from currently?"),
     ("Which office is {e} in?", "Where is {e} based?"),
     ("{e} works out of the {v} office.", "{e} is based in {v}.", "{e} badges into {v} most days."),
     ("{e} relocated to the {v} office.", "{f} is remote from {v} now.", "{e} moved desks to {v}.",
      "{e} left the {o} office for {v}.", "{e} transferring to {v} next month - approved."),
     ("Dublin", "Toronto", "Singapore", "Amsterdam", "Austin", "Warsaw", "Nairobi", "Sao Paulo", "Zurich")),
    ("project",
     ("What is {e} working on currently?", "Which project is {e} on these days?", "What's {e}'s project right now?"),
     ("What project is {e} on?", "What does {e} work on?"),
     ("{e} is on project {v}.", "{e} owns the {v} roadmap.", "{e} writes most of the {v} code."),
     ("{e} moved off {o} onto {v}.", "{f} picked up {v}.", "{e} now staffed on {v}.",
      "{e} was pulled onto {v} after {o} shipped.", "{e} started on {v} this sprint."),
     ("Osprey", "Bluebird", "Kingfisher", "Heron", "Condor", "Magpie", "Puffin", "Albatross", "Wren")),
    ("oncall",
     ("Which rotation is {e} on call for currently?", "What does {e} carry the pager for these days?"),
     ("Which on-call rotation is {e} in?", "What is {e} on call for?"),
     ("{e} is in the {v} on-call rotation.", "{e} carries the {v} pager.", "{e} covers {v} pages."),
     ("{e} swapped onto the {v} rotation.", "{f} off {o} pager, now {v}.", "{e} added to {v} on-call.",
      "{e} handed {o} pager over and joined {v}."),
     ("database", "edge network", "checkout", "auth", "streaming", "batch jobs", "storage")),
    ("laptop",
     ("What laptop does {e} have now?", "Which machine is {e} using these days?"),
     ("What laptop does {e} use?", "What machine does {e} have?"),
     ("{e} has a {v}.", "{e} develops on a {v}.", "IT issued {e} a {v}."),
     ("{e} got a {v} from IT.", "{f} replaced the {o} with a {v}.", "{e} upgraded to a {v}.",
      "{e}'s {o} died; loaner {v} for now."),
     ("MacBook Pro 14", "ThinkPad X1 Carbon", "Dell XPS 13", "Framework 13", "MacBook Air 15",
      "ThinkPad T14", "HP EliteBook")),
)

STABLE = (
    ("start_year", "When did {e} join the company?", "{e} joined the company in {v}.",
     ("2014", "2016", "2017", "2019", "2020", "2021")),
    ("language", "What languages does {e} speak?", "{e} speaks {v} natively.",
     ("Greek", "Tagalog", "Hungarian", "Swahili", "Korean", "Romanian")),
    ("alma_mater", "Where did {e} study?", "{e} studied at {v}.",
     ("TU Delft", "the University of Waterloo", "ETH Zurich", "IIT Bombay", "Trinity College Dublin")),
)

NOTES = ("{e} presented the quarterly metrics; slides were dense.", "{e} asked for feedback on the RFC draft.",
         "Lunch with {e}: talked about climbing and sourdough.", "{e} flagged a flaky test in CI.",
         "{e} is out next Thursday for a dentist appointment.", "{e} shared a good article on incident reviews.",
         "{e} volunteered to run the next retro.", "{e} reviewed my PR within an hour.",
         "{e} suggested we cut scope on the migration.", "{e} brought cake for the team's anniversary.",
         "Pair-programmed with {e} on a gnarly race condition.", "{e} wants a demo of the new dashboard.")


def iso(t: datetime) -> str:
    return t.isoformat(timespec="seconds").replace("+00:00", "Z")


def generate(seed: int, people: int) -> list[dict]:
    rng = random.Random(seed)
    # First names differ: a note names a colleague by first name once they are known.
    names = [(f, rng.choice(LAST)) for f in rng.sample(FIRST, people)]
    seen: set[str] = set()
    span = (AS_OF - timedelta(days=7) - START).days

    def when(lo_days: int = 0) -> datetime:
        return START + timedelta(days=rng.randint(lo_days, span), minutes=rng.randint(0, 1439))

    def unique(text: str) -> str:
        while text in seen:
            text = text.rstrip(".") + " (noted twice)."
        seen.add(text)
        return text

    records = []
    for p, (first, last) in enumerate(names):
        e, tag = f"{first} {last}", f"crm{p:02d}"
        person = []
        for name, timed_q, plain_q, opening, change, values in rng.sample(ATTRIBUTES, rng.choice((4, 5))):
            n = rng.choices((2, 3, 4), weights=(4, 4, 2))[0]
            vals = rng.sample(values, n)
            days = sorted(rng.sample(range(span), n))
            versions = []
            for k, v in enumerate(vals):
                template = rng.choice(opening if k == 0 else change)
                text = rng.choice(PREFIXES) + template.format(e=e, f=first, v=v, o=vals[k - 1] if k else "")
                at = START + timedelta(days=days[k], minutes=rng.randint(0, 1439))
                versions.append({"key": f"{tag}.{name}.v{k + 1}", "content": unique(text[0].upper() + text[1:]),
                                 "occurred_at": iso(at)})
            timed = rng.random() < 0.5
            person.append({"id": f"{tag}.{name}", "entity": e, "type": "changing", "attribute": name,
                           "query": rng.choice(timed_q if timed else plain_q).format(e=e), "time_words": timed,
                           "answer": vals[-1], "as_of": iso(AS_OF), "versions": versions,
                           "newest": versions[-1]["key"], "distractors": []})
        for name, question, statement, values in rng.sample(STABLE, 2):
            v, key = rng.choice(values), f"{tag}.{name}.v1"
            person.append({"id": f"{tag}.{name}", "entity": e, "type": "stable", "attribute": name,
                           "query": question.format(e=e), "time_words": False, "answer": v, "as_of": iso(AS_OF),
                           "versions": [{"key": key, "content": unique(statement.format(e=e, v=v)),
                                         "occurred_at": iso(START + timedelta(days=rng.randint(0, 120)))}],
                           "newest": key, "distractors": []})
        person[0]["distractors"] = [{"key": f"{tag}.note{k + 1}", "content": unique(t.format(e=e)),
                                     "occurred_at": iso(when()), "why": "same person, unrelated note"}
                                    for k, t in enumerate(rng.sample(NOTES, 3))]
        records.extend(person)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=5150)
    parser.add_argument("--people", type=int, default=46)
    args = parser.parse_args()
    records = generate(args.seed, args.people)
    out = HERE / "crm.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    memories = sum(len(r["versions"]) + len(r["distractors"]) for r in records)
    print(f"wrote {out}: {args.people} people, {len(records)} records, {memories} memories")


if __name__ == "__main__":
    main()
