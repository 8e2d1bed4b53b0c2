"""Generate knowledge-update dev sets phrased unlike `generate.py`, to check that ranking holds on
wording it was not tuned on.

`generate.py` states every version of a fact from one pool of templates that all hold the
question's words, so only recency separates the versions. Real memories are not written that
way. Each set here differs from it, and from the other set, in vocabulary and sentence shape:

- `life`: people's lives in narrative sentences ("moved to Lisbon last month", "the new flat is
  in Berlin"), questions in conversational English with words about time ("these days", "at
  present"), answers that share no content word with the question ("Who does X report to?" /
  "X's new boss is R").
- `ops`: teams and services in terse engineering notes ("Kestrel standup -> 10:15"), questions
  in a ticket's register ("currently", "latest", "still").

Every attribute has at least five templates, each with its own verb and nouns; each version draws
its own. Besides the versions, each set holds other people's memories that share the question's
generic words ("Dana uses Vim every day now"), other attributes of the same subject (which must
not be taken for versions), stable facts written long ago with a question each (they must not
sink below newer memories), and fillers.

Output (same schema as dataset.jsonl, plus `stable` records whose single version is the answer,
and a decoy's `fact` when its subject holds one value of it at a time, "Team Upland moved lunch
to …": decoys of two records with the same `fact` are versions of one fact): one JSON object per
line in bench/knowledge_update/<set>.jsonl.

Deterministic: `python bench/knowledge_update/varied.py [--seed 4242]`.
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
    """A changing attribute: questions about its present value, and templates for a version.
    `{e}` subject, `{v}` value, `{o}` the previous value (only in `change` templates)."""

    name: str
    questions: tuple[str, ...]
    plain: tuple[str, ...]
    change: tuple[str, ...]
    values: tuple[str, ...]
    # Memories of other subjects that share the question's generic words, not its subject.
    decoys: tuple[str, ...]
    pool: str = "default"  # which of the style's subject pools it describes
    # Of the decoys, those that hold one value at a time for their subject ("{x} moved lunch to
    # {v}", "... our cheapest region"): two of them drawn for two records with the same subject
    # are versions of one fact, and the later one replacing the earlier is right (`fact`).
    single: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stable:
    name: str
    question: str
    statement: str
    values: tuple[str, ...]
    pool: str = "default"


@dataclass(frozen=True)
class Style:
    subjects: dict[str, tuple[str, ...]]
    facts: tuple[Fact, ...]
    stable: tuple[Stable, ...]
    fillers: tuple[str, ...]


LIFE_FIRST = ["Anneke", "Bastien", "Carmela", "Dmitri", "Esra", "Fintan", "Gaia", "Henrik", "Ilse", "Joaquin",
              "Katarina", "Lorcan", "Marisol", "Niklas", "Odalys", "Pavel", "Quentin", "Rania", "Stellan",
              "Thandiwe", "Ugo", "Valentina", "Wendell", "Ximena", "Yusuf", "Zofia"]
LIFE_LAST = ["Abernathy", "Bergstrom", "Castellanos", "Delacroix", "Eriksen", "Fontaine", "Gallagher",
             "Hoffmann", "Iwasaki", "Jankowski", "Kovacs", "Lindgren", "Mbeki", "Nascimento", "Oduya",
             "Pellegrini", "Quispe", "Rasmussen", "Szabo", "Thorsen", "Uchenna", "Villanueva"]
LIFE_CITIES = ["Oslo", "Lisbon", "Berlin", "Porto", "Ghent", "Bologna", "Quebec City", "Wellington", "Reykjavik",
               "Tbilisi", "Leipzig", "Marseille", "Bergen", "Cork", "Seville", "Trieste", "Hobart", "Halifax"]
COMPANIES = ["Fernwood Labs", "Quillstone", "Brightwater Health", "Korvex", "Lanternfish Games", "Tessellate",
             "Mirabel Foods", "Corvid Security", "Halcyon Air", "Juniper Freight", "Ostrava Steel", "Plumtree Media"]
BOSSES = ["Ruth Okonkwo", "Marco Bellini", "Signe Dahl", "Tobias Wren", "Leonie Marchetti", "Farid Hosseini",
          "Imogen Tate", "Kasper Holm", "Beatriz Nunes", "Ahmed Saleh"]
EDITORS = ["Vim", "Emacs", "VS Code", "Helix", "Zed", "Sublime Text", "IntelliJ", "Kate"]
SPORTS = ["bouldering", "open-water swimming", "fencing", "rowing", "ultimate frisbee", "squash", "judo", "cycling"]
CARS = ["a Skoda Octavia", "a Volvo XC40", "a Nissan Leaf", "a Fiat Panda", "a Toyota Prius", "a Renault Zoe",
        "a Mini Cooper", "a Kia Niro"]

LIFE = Style(
    subjects={"default": tuple(f"{f} {last}" for f in LIFE_FIRST for last in LIFE_LAST)},
    facts=(
        Fact("city",
             ("Which city is {e} based in these days?", "Where does {e} call home at present?",
              "Where is {e} living nowadays?", "What town is {e} in at the moment?"),
             ("{e} lives in {v}.", "{e}'s flat is in {v}.", "{e} has settled down in {v}.",
              "{e} rents a small place in {v}.", "Home for {e} is {v}.", "{e} bought a house in {v}."),
             ("{e} moved to {v} last month.", "{e}'s new apartment is in {v}.", "{e} packed up and relocated to {v}.",
              "{e} left {o} behind for {v}.", "After {o}, {e} ended up in {v}."),
             tuple(LIFE_CITIES),
             ("{x} is based in {v} these days.", "{x}'s sister lives in {v} at present.",
              "{x} visited {v} for a conference."),
             single=("{x} is based in {v} these days.", "{x}'s sister lives in {v} at present.")),
        Fact("employer",
             ("Which company is {e} with currently?", "Who employs {e} now?", "Where does {e} have a job these days?",
              "What firm is {e} at nowadays?"),
             ("{e} works at {v}.", "{e} is on the payroll of {v}.", "{e} took a position with {v}.",
              "{e} joined {v} as an analyst.", "{e} earns a living at {v}."),
             ("{e} started a new job at {v}.", "{e} quit {o} and signed with {v}.",
              "{e} has been hired by {v}.", "{e}'s contract with {o} ended; now at {v}."),
             tuple(COMPANIES),
             ("{x} currently works with {v} on a partnership.", "{x} interviewed at {v} but said no.",
              "{x} has a job these days that involves a lot of travel.")),
        Fact("manager",
             ("Who does {e} report to?", "Who is {e}'s manager currently?", "Who supervises {e} at the moment?",
              "Who is in charge of {e} these days?"),
             ("{e} reports to {v}.", "{v} manages {e}.", "{e}'s team lead is {v}.", "{v} supervises {e}'s work.",
              "{e} answers to {v} on everything."),
             ("{e}'s new boss is {v}.", "{v} took over as {e}'s line manager.", "After the reorg {e} sits under {v}.",
              "{e} now works for {v} instead of {o}."),
             tuple(BOSSES),
             ("{x}'s manager is currently on leave.", "{x} reports to {v} as well.",
              "{x} is in charge of the book club these days."),
             single=("{x} reports to {v} as well.",)),
        Fact("editor",
             ("What editor is {e} on at present?", "Which text editor does {e} use these days?",
              "What does {e} write code in nowadays?", "What's {e}'s editor of choice right now?"),
             ("{e} codes in {v}.", "{e} swears by {v}.", "{e}'s editor is {v}.", "{e} does all the programming in {v}.",
              "{e} configured {v} with a dark theme."),
             ("{e} switched over to {v}.", "{e} gave up on {o} and uses {v}.", "{e} is trying {v} for good now.",
              "{e} migrated every project to {v}."),
             tuple(EDITORS),
             ("{x} uses {v} every day now.", "{x} still writes notes in {v}.",
              "{x} thinks editors matter less than people say.")),
        Fact("sport",
             ("What sport does {e} do these days?", "What is {e} training for at the moment?",
              "Which sport is {e} into nowadays?", "How does {e} keep fit currently?"),
             ("{e} spends weekends {v}.", "{e} has taken up {v}.", "{e} trains at a {v} club.",
              "{e} is hooked on {v}.", "{e} joined a {v} group."),
             ("{e} traded {o} for {v}.", "{e} discovered {v} this year.", "{e} dropped {o}; it's {v} now.",
              "{e} competes in {v} now."),
             tuple(SPORTS),
             ("{x} keeps fit with {v} these days.", "{x} watched a {v} match on TV.",
              "{x} says sport is a good way to meet people.")),
        Fact("car",
             ("What car is {e} driving now?", "Which car does {e} have at present?",
              "What does {e} drive these days?", "What vehicle is {e} using currently?"),
             ("{e} drives {v}.", "{e} owns {v}.", "{e} commutes in {v}.", "{e} leased {v}.",
              "{e} parks {v} outside the office."),
             ("{e} sold {o} and bought {v}.", "{e} picked up {v} from the dealer.", "{e} upgraded to {v}.",
              "{e}'s latest car is {v}."),
             tuple(CARS),
             ("{x} is driving {v} now.", "{x} rented {v} for the holiday.", "{x} currently takes the train."),
             single=("{x} is driving {v} now.",)),
    ),
    stable=(
        Stable("birthday", "When is {e}'s birthday?", "{e} was born on {v}.",
               ("3 March", "17 July", "29 October", "8 January", "22 May", "11 December")),
        Stable("allergy", "Is {e} allergic to anything?", "{e} has a severe {v} allergy.",
               ("peanut", "shellfish", "penicillin", "pollen", "cat", "sesame")),
        Stable("hometown", "Where did {e} grow up?", "{e} spent childhood in {v}.",
               ("a village near Cork", "rural Tuscany", "the suburbs of Kyiv", "a farm in Saskatchewan",
                "coastal Brittany", "a mining town in Silesia")),
    ),
    fillers=("Had coffee with {x}; talked about holidays.", "{x} recommended a podcast about history.",
             "{x}'s cat knocked a plant over.", "The office kitchen got a new espresso machine.",
             "{x} is reading a novel about sailors.", "Lunch with {x} ran long.",
             "{x} shared photos from a hiking trip.", "Remember to water the plants on Friday."),
)

OPS_TEAMS = ["Kestrel", "Marlin", "Basalt", "Cinder", "Drift", "Ermine", "Foxglove", "Gannet", "Heron", "Ibis",
             "Jackdaw", "Kiln", "Larch", "Moraine", "Nettle", "Osprey", "Petrel", "Quarry", "Rook", "Sable",
             "Tern", "Umbra", "Vole", "Wharf", "Alder", "Bittern", "Corrie", "Dunlin", "Egret", "Fulmar", "Grebe",
             "Hazel", "Inlet", "Jetty", "Knot", "Lapwing", "Merlin", "Nightjar", "Oriel", "Plover", "Quoll",
             "Redshank", "Skua", "Thrush", "Upland", "Veery", "Whimbrel", "Yellowhammer", "Avocet", "Brambling",
             "Chough", "Dotterel"]
OPS_DOMAINS = ["ledger", "catalog", "payouts", "search", "tokens", "invoices", "carts", "quotes", "alerts", "maps",
               "rosters", "uploads", "refunds", "coupons", "sessions", "thumbnails", "webhooks", "exports", "audit",
               "pricing", "geo", "consent", "billing", "reviews", "badges", "feeds", "tickets", "wallets"]
OPS_PEOPLE = ["Ines Varga", "Oskar Lund", "Priti Shah", "Rowan Pike", "Selma Aydin", "Teodor Kral",
              "Una Brady", "Viggo Strand", "Wiebke Janssen", "Yaw Boateng", "Zuzana Hruba", "Aurelio Conti"]
TIMES = ["9:15", "9:30", "9:45", "10:00", "10:15", "10:30", "11:00", "13:45", "14:00", "15:30"]
REGIONS = ["eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-south-1", "ca-central-1", "eu-north-1"]
STORES = ["Postgres 16", "MySQL 8", "CockroachDB", "DynamoDB", "Cassandra", "MongoDB", "SQLite", "ClickHouse"]
CHANNELS = ["#kestrel-ops", "#eng-core", "#platform-help", "#incidents-live", "#deploys", "#triage", "#oncall"]

OPS = Style(
    subjects={"default": tuple(f"{d} {kind}" for d in OPS_DOMAINS for kind in ("service", "API", "worker", "pipeline")),
              "team": tuple(f"team {t}" for t in OPS_TEAMS)},
    facts=(
        Fact("region",
             ("Which region does the {e} run in currently?", "Where is the {e} hosted at the moment?",
              "What's the latest region for the {e}?", "Is the {e} still in the old region, and which is it now?"),
             ("{e}: deployed to {v}.", "{e} lives in {v}.", "Prod for the {e} sits in {v}.",
              "{e} traffic is served out of {v}.", "Infra note - {e} hosted in {v}."),
             ("{e} migrated {o} -> {v}.", "Cut-over done: {e} now in {v}.", "{e} failed over to {v} for good.",
              "Moved the {e} off {o}; it runs in {v}."),
             tuple(REGIONS),
             ("Cost report: {v} is currently our cheapest region.", "{x} still runs a test box in {v}.",
              "The latest outage in {v} hit other customers."),
             single=("Cost report: {v} is currently our cheapest region.",
                     "The latest outage in {v} hit other customers.")),
        Fact("store",
             ("What database backs the {e} now?", "Which datastore does the {e} use at present?",
              "What is the {e} persisting to these days?", "Which DB is the {e} currently on?"),
             ("{e} persists to {v}.", "{e} keeps its state in {v}.", "Storage for the {e}: {v}.",
              "{e} reads and writes {v}.", "{e} schema lives in {v}."),
             ("{e} swapped {o} for {v}.", "Finished porting the {e} to {v}.", "{e} storage migration to {v} landed.",
              "Data of the {e} copied over to {v}; {o} retired."),
             tuple(STORES),
             ("{x} is evaluating {v} at the moment.", "We currently pay for {v} support.",
              "{x} wrote a postmortem about {v} these days.")),
        Fact("owner",
             ("Who is on point for the {e} currently?", "Who owns the {e} now?", "Who should I page about the {e}?",
              "Who is responsible for the {e} these days?"),
             ("{v} owns the {e}.", "{e} maintainer: {v}.", "Ping {v} for anything {e}.",
              "{v} holds the pager for the {e}.", "Escalations for the {e} go to {v}."),
             ("{e} ownership handed from {o} to {v}.", "{v} inherited the {e}.", "New maintainer of the {e} is {v}.",
              "{o} rotated off the {e}; {v} took it."),
             tuple(OPS_PEOPLE),
             ("{v} is currently on holiday.", "{v} owns the coffee rota now.",
              "{x} is responsible for hiring these days."),
             single=("{v} owns the coffee rota now.",)),
        Fact("standup",
             ("When does {e} meet these days?", "What time is {e}'s daily sync now?",
              "When is the morning meeting for {e} at present?", "What's the latest daily slot for {e}?"),
             ("{e} standup @ {v}.", "{e} syncs daily at {v}.", "{e} huddles every morning at {v}.",
              "{e} daily call: {v} sharp.", "Calendar: {e} check-in, {v}."),
             ("{e} standup moved {o} -> {v}.", "{e} now huddles at {v}.", "{e} shifted the daily to {v}.",
              "Rescheduled: {e} sync is {v} from Monday."),
             tuple(TIMES),
             ("{x} currently meets its vendor at {v}.", "The all-hands is at {v} these days.",
              "{x} moved lunch to {v}."), "team",
             single=("{x} currently meets its vendor at {v}.", "The all-hands is at {v} these days.",
                     "{x} moved lunch to {v}.")),
        Fact("channel",
             ("Where does {e} chat at the moment?", "Which Slack room is {e} using now?",
              "Where should I post questions for {e} these days?", "What's {e}'s current channel?"),
             ("{e} talks in {v}.", "{e} hangs out in {v}.", "Questions for {e} -> {v}.", "{e} coordinates via {v}.",
              "{e} chatter happens in {v}."),
             ("{e} moved chat from {o} to {v}.", "{e} archived {o}; use {v}.", "{e} relocated its channel to {v}.",
              "{e} opened {v} as the new home."),
             tuple(CHANNELS),
             ("{v} is currently muted by most people.", "{x} posts release notes in {v} these days.",
              "{v} is busy at the moment because of an incident."), "team",
             single=("{x} posts release notes in {v} these days.",)),
    ),
    stable=(
        Stable("language", "What language is the {e} written in?", "{e} codebase: {v}.",
               ("Go", "Rust", "Kotlin", "Elixir", "OCaml", "TypeScript")),
        Stable("founded", "When was the {e} created?", "{e} first shipped in {v}.",
               ("spring 2019", "autumn 2020", "January 2018", "mid-2021", "late 2017", "summer 2022")),
        Stable("license", "Which licence covers the {e}?", "{e} is released under {v}.",
               ("Apache-2.0", "MIT", "MPL-2.0", "BSD-3-Clause", "a proprietary licence", "GPL-3.0")),
    ),
    fillers=("{x} flaky test quarantined.", "Rotated TLS certs for {x}.", "{x} dashboard got a dark mode.",
             "Bumped dependencies across {x}.", "{x} retro notes uploaded.", "Laptop refresh due next quarter.",
             "{x} load test passed at 2x traffic.", "Cleaned up stale feature flags in {x}."),
)

STYLES = {"life": LIFE, "ops": OPS}


def moments(rng: random.Random, n: int) -> list[datetime]:
    """n dates, oldest first, all within two years before AS_OF, at least a week apart."""
    days = sorted(rng.sample(range(7, 730, 7), n), reverse=True)
    return [AS_OF - timedelta(days=d, minutes=rng.randint(0, 1440)) for d in days]


def iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def generate(style_name: str, seed: int, n_facts: int = 100, n_stable: int = 24) -> list[dict]:
    style = STYLES[style_name]
    rng = random.Random(f"{style_name}:{seed}")
    unused = {pool: rng.sample(list(names), len(names)) for pool, names in style.subjects.items()}
    # Decoys and fillers name subjects that have no record of their own.
    bystanders = {pool: [unused[pool].pop() for _ in range(len(names) // 5)] for pool, names in unused.items()}
    records: list[dict] = []
    seen: set[str] = set()

    def subject(pool: str) -> str:
        return unused[pool].pop()

    def someone(pool: str) -> str:
        return rng.choice(bystanders[pool])

    def unique(text: str) -> str:
        # The benchmark writes every memory once; a repeat would be deduplicated away.
        text = text[0].upper() + text[1:]
        while text in seen:
            text = text.rstrip(".") + " (noted again)."
        seen.add(text)
        return text

    for i in range(n_facts):
        fact = style.facts[i % len(style.facts)]
        e = subject(fact.pool)
        n = rng.choice((2, 3, 3, 4))
        values = rng.sample(list(fact.values), n)
        when = moments(rng, n + 3)
        versions = []
        for k, value in enumerate(values):
            templates = fact.plain if k == 0 or rng.random() < 0.3 else fact.change
            text = rng.choice(templates).format(e=e, v=value, o=values[k - 1] if k else "")
            versions.append({"key": f"{style_name}{i:03d}.v{k + 1}", "content": unique(text),
                             "occurred_at": iso(when[k])})
        # Another attribute of the same subject, newer than every version: never a version.
        siblings = [f for f in style.facts if f.pool == fact.pool and f is not fact]
        other = rng.choice(siblings)
        distractors = [{"key": f"{style_name}{i:03d}.d1",
                        "content": unique(rng.choice(other.plain).format(e=e, v=rng.choice(other.values), o="")),
                        "occurred_at": iso(when[-1]), "why": "same subject, other attribute"}]
        # Someone else, sharing the question's generic and time words, written recently.
        for k, decoy in enumerate(rng.sample(list(fact.decoys), 2)):
            x, v = someone(fact.pool), rng.choice(fact.values)
            distractors.append({"key": f"{style_name}{i:03d}.d{k + 2}", "content": unique(decoy.format(x=x, v=v)),
                                "occurred_at": iso(when[-2 - k]), "why": "other subject, shared words"})
            if decoy in fact.single:
                distractors[-1]["fact"] = decoy.format(x=x, v="…")
        distractors.append({"key": f"{style_name}{i:03d}.f1",
                            "content": unique(rng.choice(style.fillers).format(x=someone(fact.pool))),
                            "occurred_at": iso(when[-3]), "why": "filler"})
        records.append({"id": f"{style_name}{i:03d}", "entity": e, "type": "changing", "attribute": fact.name,
                        "query": rng.choice(fact.questions).format(e=e), "answer": values[-1], "as_of": iso(AS_OF),
                        "versions": versions, "newest": versions[-1]["key"], "distractors": distractors})

    for j in range(n_stable):
        i = n_facts + j
        stable = style.stable[j % len(style.stable)]
        e = subject(stable.pool)
        value = rng.choice(stable.values)
        when = moments(rng, 4)
        versions = [{"key": f"{style_name}{i:03d}.v1", "content": unique(stable.statement.format(e=e, v=value)),
                     "occurred_at": iso(when[0])}]
        # Newer memories about the same subject: recency alone would rank them above the answer.
        newer = [f for f in style.facts if f.pool == stable.pool]
        distractors = [{"key": f"{style_name}{i:03d}.d{k + 1}",
                        "content": unique(rng.choice(f.plain).format(e=e, v=rng.choice(f.values), o="")),
                        "occurred_at": iso(when[k + 2]), "why": "same subject, newer, other attribute"}
                       for k, f in enumerate(rng.sample(newer, 2))]
        records.append({"id": f"{style_name}{i:03d}", "entity": e, "type": "stable", "attribute": stable.name,
                        "query": stable.question.format(e=e), "answer": value, "as_of": iso(AS_OF),
                        "versions": versions, "newest": versions[0]["key"], "distractors": distractors})
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=4242)
    parser.add_argument("--sets", nargs="+", default=sorted(STYLES), choices=sorted(STYLES))
    args = parser.parse_args()
    for name in args.sets:
        records = generate(name, args.seed)
        out = HERE / f"{name}.jsonl"
        out.write_text("".join(json.dumps(r) + "\n" for r in records))
        print(f"wrote {out} ({len(records)} records)")


if __name__ == "__main__":
    main()
