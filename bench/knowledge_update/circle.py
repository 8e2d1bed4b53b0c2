"""Generate `circle.jsonl`: a knowledge-update dev set shaped like one real user's store.

The other sets give each changing fact its own subject; a real store holds many facts about each
person, so a person's other facts crowd whatever is near a new memory (`related`) and whatever a
question about them finds. Here 44 friends and relatives of the user each have ~16 memories, all
in one store: five attributes that change (of home town, employer, partner, car, pet, sport,
phone), 2-4 versions each in chatty, varied phrasing (a later version may name the value it
replaces, or not), two stable facts, and three unrelated notes that name the person. Each
changing attribute has a question, with a time word ("these days", "right now") or without
("Where does X live?"); each stable fact has one.

Written after the ranking it measures, and unlike `crm.py` (terse colleague notes, other
attributes) in vocabulary and sentence shape. Schema as dataset.jsonl; a person's unrelated notes
are the distractors of their first record.

Deterministic: `python bench/knowledge_update/circle.py [--seed 3030] [--people 44]`.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
AS_OF = datetime(2026, 4, 1, tzinfo=UTC)
START = datetime(2023, 5, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Attribute:
    """`{e}` the person, `{v}` the value, `{o}` the value before (only in `change`)."""

    name: str
    timed: tuple[str, ...]  # questions with a word about time
    plain_q: tuple[str, ...]  # questions without one
    first: tuple[str, ...]
    change: tuple[str, ...]
    values: tuple[str, ...]


FIRST = ["Abeni", "Bruno", "Cressida", "Dario", "Eilidh", "Faisal", "Greta", "Hamish", "Ines", "Jarek", "Kalani",
         "Lucian", "Mireille", "Nnamdi", "Orla", "Piotr", "Rosalind", "Soren", "Tamsin", "Umberto", "Vesna",
         "Wilhelmina", "Yannick", "Zainab"]
LAST = ["Achterberg", "Baptiste", "Cormac", "Dunleavy", "Ekwueme", "Ferreira", "Grimaldi", "Haverkamp", "Ibarra",
        "Juarez", "Kowalczyk", "Lachance", "Moreau", "Novak", "Olawale", "Prendergast", "Rautio", "Sandoval"]

ATTRIBUTES = (
    Attribute("home",
              ("Where does {e} live these days?", "Which city is {e} in right now?", "Where is {e} currently living?"),
              ("Where does {e} live?", "What city does {e} live in?"),
              ("{e} has a flat in {v}.", "{e} lives over in {v}.", "{e} grew roots in {v} after university.",
               "{e}'s place is in {v}, near the river."),
              ("{e} just moved to {v}!", "{e} packed everything into a van and drove to {v}.",
               "{e} swapped {o} for {v}.", "Big news: {e} relocated from {o} to {v}.",
               "{e}'s new address is in {v}.", "{e} found an apartment in {v} and left {o}."),
              ("Antwerp", "Valencia", "Gdansk", "Aarhus", "Ljubljana", "Galway", "Tampere", "Montpellier",
               "Braga", "Utrecht", "Innsbruck", "Plovdiv", "Dundee", "Kaunas")),
    Attribute("employer",
              ("Where does {e} work now?", "Who is {e} working for at the moment?",
               "What company is {e} at currently?"),
              ("Where does {e} work?", "Who does {e} work for?"),
              ("{e} has a job at {v}.", "{e} works for {v} in their finance team.", "{e} got hired at {v}.",
               "{e} does contract work for {v}."),
              ("{e} left {o} and joined {v}.", "{e} accepted an offer from {v}.", "{e} is at {v} now, not {o}.",
               "{e}'s first week at {v} went well.", "{e} handed in notice at {o}; starts at {v} Monday."),
              ("Bramblecote", "Northwind Optics", "Saltmarsh Bank", "Ironbark Studios", "Velvet Rope Events",
               "Copperleaf Pharma", "Driftwood Logistics", "Skylark Robotics", "Thistle & Co", "Orchid Telecom")),
    Attribute("partner",
              ("Who is {e} dating these days?", "Who is {e} seeing at the moment?", "Who is {e}'s partner now?"),
              ("Who is {e}'s partner?", "Who is {e} with?"),
              ("{e} is going out with {v}.", "{e} and {v} are a couple.",
               "{e} brought {v} to the barbecue; they're together."),
              ("{e} broke up with {o}; now seeing {v}.", "{e} has a new girlfriend, {v}.",
               "{e} got engaged to {v}.", "{e} met {v} at a wedding and they're dating.",
               "{e} and {o} split up, and {e} is with {v} now."),
              ("Noor", "Callum", "Agnieszka", "Theo", "Marisol", "Kwame", "Linnea", "Rafferty", "Yuki", "Delphine")),
    Attribute("car",
              ("What does {e} drive these days?", "What car does {e} have now?", "What is {e} driving at the moment?"),
              ("What car does {e} drive?", "What does {e} drive?"),
              ("{e} drives {v}.", "{e} gets around in {v}.", "{e} gave me a lift in their {v}."),
              ("{e} traded in the {o} for {v}.", "{e} bought {v}.", "{e} picked up {v} second-hand.",
               "{e}'s {o} died, so they got {v}.", "{e} is leasing {v} now."),
              ("a Subaru Outback", "a Peugeot 208", "a Hyundai Ioniq", "a Dacia Duster", "a VW Golf", "a Mazda MX-5",
               "a Tesla Model 3", "a Citroen Berlingo", "a Honda Jazz")),
    Attribute("pet",
              ("What pet does {e} have these days?", "What animal does {e} keep now?"),
              ("What pet does {e} have?", "Does {e} have a pet?"),
              ("{e} has {v} that sleeps on the sofa.", "{e} keeps {v} at home.", "{e} shares the flat with {v}."),
              ("{e} adopted {v} from the shelter.", "{e} rehomed the {o} and got {v}.", "{e} now has {v}.",
               "{e} brought home {v} last weekend."),
              ("a grey tabby", "two budgies", "a border collie", "a bearded dragon", "a rescue greyhound",
               "a pair of guinea pigs", "a corn snake", "a Maine Coon")),
    Attribute("sport",
              ("What does {e} do for exercise these days?", "Which sport is {e} playing right now?"),
              ("What sport does {e} play?", "How does {e} exercise?"),
              ("{e} plays {v} twice a week.", "{e} is big into {v}.", "{e} goes to {v} practice on Thursdays."),
              ("{e} gave up {o} and took up {v}.", "{e} started {v} in the spring.", "{e} is all about {v} now.",
               "{e} signed up for a {v} league."),
              ("netball", "padel", "water polo", "kayaking", "archery", "table tennis", "trail running", "curling")),
    Attribute("phone",
              ("What phone does {e} use now?", "Which phone is {e} on these days?"),
              ("What phone does {e} have?", "What's {e}'s phone?"),
              ("{e} uses {v}.", "{e} texts from {v}.", "{e} takes all the photos on {v}."),
              ("{e} upgraded to {v}.", "{e} dropped the {o} in a lake and bought {v}.", "{e} switched to {v}.",
               "{e} finally replaced the {o} with {v}."),
              ("a Pixel 8", "an iPhone 15", "a Fairphone 5", "a Galaxy S23", "a Nokia G42", "a OnePlus 12",
               "a Sony Xperia 10")),
)

STABLE = (
    ("birthday", "When is {e}'s birthday?", "{e}'s birthday is on {v}.",
     ("2 February", "19 June", "30 September", "11 December", "7 April", "23 August")),
    ("hometown", "Where did {e} grow up?", "{e} grew up on a farm outside {v}.",
     ("Limerick", "Toulouse", "Bergamo", "Szeged", "Oulu", "Aberdeen")),
    ("allergy", "What is {e} allergic to?", "{e} is allergic to {v}.",
     ("peanuts", "cats", "penicillin", "shellfish", "pollen", "wasp stings")),
    ("language", "What is {e}'s first language?", "{e}'s first language is {v}.",
     ("Portuguese", "Finnish", "Yoruba", "Catalan", "Polish", "Dutch")),
)

NOTES = ("{e} recommended a podcast about medieval history.", "Owe {e} twenty euros for the concert tickets.",
         "{e} lent me a tent for the camping trip.", "Send {e} the photos from the hike.",
         "{e} laughed at my terrible pun during dinner.", "{e} is reading a thriller set in Iceland.",
         "Remind {e} about the quiz night on Friday.", "{e} helped me move the sofa.",
         "{e} said the new bakery on the corner is overrated.", "{e} wants the recipe for the lentil soup.",
         "{e} is organising a surprise party for a colleague.", "{e} fixed my bike's gears.")


def iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def moment(rng: random.Random, lo: datetime, hi: datetime) -> datetime:
    span = (hi - lo).total_seconds()
    return lo + timedelta(seconds=rng.uniform(0.02, 0.98) * span)


def generate(seed: int, people: int) -> list[dict]:
    rng = random.Random(seed)
    names = rng.sample([f"{f} {last}" for f in FIRST for last in LAST], people)
    seen_text: set[str] = set()

    def unique(text: str) -> str:
        text = text[0].upper() + text[1:]
        while text in seen_text:
            text = text.rstrip(".!") + " (again)."
        seen_text.add(text)
        return text

    records = []
    for p, e in enumerate(names):
        attrs = rng.sample(ATTRIBUTES, 5)
        person = []
        for a in attrs:
            n = rng.choices((2, 3, 4), weights=(5, 3, 2))[0]
            values = rng.sample(a.values, n)
            cuts = sorted(moment(rng, START, AS_OF - timedelta(days=10)) for _ in range(n))
            versions = []
            for k, v in enumerate(values):
                pool = a.first if k == 0 else a.change
                template = rng.choice([t for t in pool if "{o}" not in t or k > 0])
                text = template.format(e=e, v=v, o=values[k - 1] if k else "")
                versions.append({"key": f"circle{p:02d}.{a.name}.v{k + 1}", "content": unique(text),
                                 "occurred_at": iso(cuts[k])})
            timed = rng.random() < 0.6
            query = rng.choice(a.timed if timed else a.plain_q).format(e=e)
            person.append({"id": f"circle{p:02d}.{a.name}", "entity": e, "type": "changing", "attribute": a.name,
                           "query": query, "time_words": timed, "answer": values[-1], "as_of": iso(AS_OF),
                           "versions": versions, "newest": versions[-1]["key"], "distractors": []})
        for name, question, statement, values in rng.sample(STABLE, 2):
            v = rng.choice(values)
            key = f"circle{p:02d}.{name}.v1"
            person.append({"id": f"circle{p:02d}.{name}", "entity": e, "type": "stable", "attribute": name,
                           "query": question.format(e=e), "time_words": False, "answer": v, "as_of": iso(AS_OF),
                           "versions": [{"key": key, "content": unique(statement.format(e=e, v=v)),
                                         "occurred_at": iso(moment(rng, START, START + timedelta(days=200)))}],
                           "newest": key, "distractors": []})
        person[0]["distractors"] = [
            {"key": f"circle{p:02d}.note{k + 1}", "content": unique(t.format(e=e)),
             "occurred_at": iso(moment(rng, START, AS_OF)), "why": "same person, unrelated note"}
            for k, t in enumerate(rng.sample(NOTES, 3))]
        records.extend(person)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=3030)
    parser.add_argument("--people", type=int, default=44)
    args = parser.parse_args()
    records = generate(args.seed, args.people)
    out = HERE / "circle.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    memories = sum(len(r["versions"]) + len(r["distractors"]) for r in records)
    print(f"wrote {out}: {args.people} people, {len(records)} records, {memories} memories")


if __name__ == "__main__":
    main()
