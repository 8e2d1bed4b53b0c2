"""Generate the knowledge-update set: facts that change over time, and a question per entity
whose answer is the newest version.

Each of ~200 entities (people, teams, services) has one tracked attribute with 2-4 dated
versions ("Maya Okafor lives in Lisbon" ... "Maya Okafor moved from Lisbon to Oslo and lives
there now"), background facts about its other attributes, and sometimes a hard distractor that
names the entity and the attribute but is about someone or something else ("Maya Okafor's
brother lives in Porto"). Every version of an attribute is phrased from one pool of templates
that all contain the query's content words, and templates are drawn independently per version,
so stale and newest versions match the question equally well lexically: only recency can put
the newest first.

Output: one JSON object per line (bench/knowledge_update/dataset.jsonl):
  id, entity, type (person|team|service), attribute, query, answer, as_of,
  versions: [{key, content, occurred_at}] oldest first, newest: key of the correct version,
  distractors: [{key, content, occurred_at, why}]
Dates are absolute, all before `as_of`; the benchmark shifts them so that `as_of` is "now".

Deterministic: `python bench/knowledge_update/generate.py [--seed 20250701]`.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
AS_OF = datetime(2025, 7, 1, tzinfo=UTC)

FIRST = ["Maya", "Tom", "Priya", "Lukas", "Amara", "Diego", "Yuki", "Omar", "Sofia", "Chen", "Ingrid", "Kwame",
         "Elena", "Ravi", "Hana", "Mateo", "Zara", "Felix", "Aisha", "Noah", "Leila", "Jonas", "Mei", "Tariq",
         "Clara", "Arjun", "Freya", "Emeka", "Rosa", "Sven", "Nadia", "Hugo", "Ayumi", "Bruno", "Lina", "Ivan",
         "Grace", "Kenji", "Olga", "Samir"]
LAST = ["Okafor", "Lindqvist", "Ramirez", "Nakamura", "Haddad", "Kowalski", "Mensah", "Rossi", "Fischer",
        "Patel", "Dubois", "Silva", "Novak", "Andersen", "Kim", "Moreau", "Costa", "Yilmaz", "Schmidt", "Ortiz",
        "Brennan", "Varga", "Takahashi", "Oyelaran", "Petrov", "Larsen", "Chaudhry", "Byrne", "Esposito", "Weber"]
CITIES = ["Lisbon", "Oslo", "Berlin", "Toronto", "Nairobi", "Melbourne", "Kyoto", "Valencia", "Dublin", "Montreal",
          "Seoul", "Austin", "Porto", "Helsinki", "Cape Town", "Vienna", "Denver", "Rotterdam", "Krakow", "Lyon",
          "Edinburgh", "Bangalore", "Santiago", "Copenhagen", "Tallinn", "Boston", "Zurich", "Singapore"]
EMPLOYERS = ["Northwind", "Globex", "Initech", "Umbrella Labs", "Hooli", "Stark Analytics", "Acme Robotics",
             "Wayne Logistics", "Cyberdyne", "Tyrell Bio", "Soylent Foods", "Vandelay Imports", "Pied Piper",
             "Massive Dynamic", "Aperture Systems", "Oscorp", "Gringotts Bank", "Monarch Health", "Blue Sun",
             "Wonka Confections", "Dunder Paper", "Prestige Worldwide", "Nakatomi Trading", "Zorg Industries"]
EDITORS = ["Vim", "Neovim", "Emacs", "VS Code", "IntelliJ IDEA", "Sublime Text", "Helix", "Zed", "PyCharm",
           "Nano", "Kakoune", "Xcode"]
TITLES = ["Software Engineer", "Senior Software Engineer", "Staff Engineer", "Principal Engineer",
          "Engineering Manager", "Director of Engineering", "Product Manager", "Data Scientist",
          "Site Reliability Engineer", "Tech Lead"]
TEAMS = ["Atlas", "Phoenix", "Orion", "Nebula", "Falcon", "Granite", "Harbor", "Juniper", "Kestrel", "Lumen",
         "Meridian", "Nimbus", "Onyx", "Polaris", "Quartz", "Raven", "Sierra", "Tundra", "Umber", "Vortex",
         "Willow", "Xenon", "Yarrow", "Zephyr", "Aurora", "Beacon", "Cobalt", "Delta", "Ember", "Fjord",
         "Glacier", "Helix", "Indigo", "Jasper", "Kelvin", "Lotus", "Mosaic", "Nova", "Opal", "Pulsar",
         "Quill", "Redwood", "Summit", "Tidal", "Unity", "Vega", "Wren", "Yonder", "Zenith", "Argon"]
DOMAINS = ["billing", "search", "auth", "payments", "inventory", "notifications", "reporting", "checkout",
           "recommendations", "shipping", "ledger", "catalog", "identity", "analytics", "email", "media",
           "pricing", "orders", "profile", "invoicing", "fraud", "geocoding", "scheduling", "export", "webhooks"]
KINDS = ["API", "service", "gateway", "worker", "pipeline"]
REGIONS = ["eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-southeast-2", "ap-northeast-1",
           "ca-central-1", "sa-east-1", "eu-north-1", "us-east-2"]
LANGUAGES = ["Go", "Rust", "Python", "Java", "Kotlin", "TypeScript", "Elixir", "C#", "Scala", "Ruby"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
RELATIONS = ["brother", "sister", "cousin", "partner", "flatmate", "mentor", "former colleague", "best friend"]
HOBBIES = ["climbing", "sourdough baking", "chess", "trail running", "watercolour painting", "birdwatching",
           "playing the cello", "woodworking", "sailing", "salsa dancing"]
PETS = ["a dog named Pixel", "two cats", "a parrot called Mango", "a rescue greyhound", "a tortoise named Sheldon"]


@dataclass(frozen=True)
class Attribute:
    """One changing attribute: how to ask about it and how to state a version.

    `plain` templates state a value ({e} entity, {v} value); `change` templates also name the
    previous value ({o}) and are only used for later versions. Every template contains every
    word of every query once (after stemming and stop words), so all versions match equally."""

    name: str
    queries: tuple[str, ...]
    plain: tuple[str, ...]
    change: tuple[str, ...]
    values: Callable[[random.Random, int], list[str]]
    distractor: str | None = None  # names the entity and the attribute words, but is not about the entity


def pick(pool: list[str]) -> Callable[[random.Random, int], list[str]]:
    return lambda rng, n: rng.sample(pool, n)


def increasing(pool: list[str]) -> Callable[[random.Random, int], list[str]]:
    """Values that only move forward (versions, seniority)."""
    return lambda rng, n: [pool[i] for i in sorted(rng.sample(range(len(pool)), n))]


def phones(rng: random.Random, n: int) -> list[str]:
    return [f"+{rng.choice([44, 47, 49, 351, 1])} {rng.randint(200, 999)} {rng.randint(100, 999)} "
            f"{rng.randint(1000, 9999)}" for _ in range(n)]


def times(rng: random.Random, n: int) -> list[str]:
    slots = [f"{h}:{m:02d}" for h in (8, 9, 10, 11, 13, 14, 15, 16) for m in (0, 15, 30, 45)]
    return [f"{h if h <= 12 else h - 12}:{m} {'am' if h < 12 else 'pm'}"
            for h, m in (s.split(":") for s in rng.sample(slots, n)) for h in [int(h)]]


def slack(rng: random.Random, n: int) -> list[str]:
    words = ["eng", "dev", "core", "ops", "platform", "squad", "crew", "hq", "chat", "room", "team", "general"]
    return [f"#{w}" for w in rng.sample(words, n)]


def limits(rng: random.Random, n: int) -> list[str]:
    return [str(v) for v in sorted(rng.sample([50, 100, 200, 250, 500, 750, 1000, 2000, 5000], n))]


PEOPLE = [
    Attribute(
        "home city",
        ("Where does {e} live?", "Where is {e} living?", "Where is {e} living now?"),
        ("{e} lives in {v}.", "{e} is living in {v}.", "These days {e} lives in {v}.",
         "{e} lives in {v} and likes the neighbourhood.", "Home for {e}: lives in {v}."),
        ("{e} moved from {o} to {v} and lives there now.", "{e} now lives in {v}, having left {o}.",
         "{e} relocated from {o} and lives in {v}."),
        pick(CITIES),
        "{e}'s {rel} lives in {x}.",
    ),
    Attribute(
        "employer",
        ("Where does {e} work?", "Where is {e} working now?", "Who does {e} work for?"),
        ("{e} works at {v}.", "{e} is working for {v} as an engineer.", "{e} works for {v}.",
         "At the moment {e} works at {v}."),
        ("{e} left {o} and now works at {v}.", "{e} switched jobs from {o}; works for {v} now.",
         "{e} is working at {v} after quitting {o}."),
        pick(EMPLOYERS),
        "{e}'s {rel} works at {x}.",
    ),
    Attribute(
        "phone number",
        ("What is {e}'s phone number?", "What phone number does {e} have?"),
        ("{e}'s phone number is {v}.", "Phone number for {e}: {v}.", "You can reach {e} on phone number {v}."),
        ("{e} changed phone number from {o} to {v}.", "{e}'s new phone number is {v} (the old {o} is gone)."),
        phones,
        "{e}'s {rel} has the phone number {x}.",
    ),
    Attribute(
        "manager",
        ("Who is {e}'s manager?", "Who manages {e}?"),
        ("{e}'s manager is {v}.", "{v} has been {e}'s manager since the reorg.",
         "{e} reports to {v}, the manager of the group."),
        ("{e}'s manager changed from {o} to {v}.", "{v} took over from {o} as {e}'s manager."),
        lambda rng, n: [f"{f} {last}" for f, last in zip(rng.sample(FIRST, n), rng.sample(LAST, n), strict=True)],
        "{e}'s {rel} has a manager called {x}.",
    ),
    Attribute(
        "editor",
        ("Which editor does {e} prefer?", "What is {e}'s preferred editor?"),
        ("{e} prefers {v} as an editor.", "{e}'s preferred editor is {v}.",
         "For code, {e} prefers the {v} editor."),
        ("{e} switched editors from {o} to {v} and prefers it now.",
         "{e} dropped {o}; the preferred editor is {v} now."),
        pick(EDITORS),
        "{e}'s {rel} prefers the {x} editor.",
    ),
    Attribute(
        "job title",
        ("What is {e}'s job title?", "What job title does {e} have?"),
        ("{e}'s job title is {v}.", "{e} has the job title {v}.", "Job title of {e}: {v}."),
        ("{e} was promoted from {o}; the job title is now {v}.", "{e}'s job title changed from {o} to {v}."),
        increasing(TITLES),
        None,
    ),
]

TEAM_ATTRS = [
    Attribute(
        "lead",
        ("Who leads the {e} team?", "Who is leading the {e} team?"),
        ("{v} leads the {e} team.", "The {e} team is led by {v}, who leads planning too.",
         "{v} is leading the {e} team."),
        ("{v} took over from {o} and now leads the {e} team.", "The {e} team changed lead: {v} leads it, not {o}."),
        lambda rng, n: [f"{f} {last}" for f, last in zip(rng.sample(FIRST, n), rng.sample(LAST, n), strict=True)],
        "{x} leads the {e} team's book club.",
    ),
    Attribute(
        "standup time",
        ("When is the {e} team's standup?", "When does the {e} team have standup?"),
        ("The {e} team's standup is at {v}.", "The {e} team holds standup at {v} every day.",
         "Standup time for the {e} team: {v}."),
        ("The {e} team moved its standup from {o} to {v}.", "The {e} team standup is now at {v} instead of {o}."),
        times,
        "The {e} team's retro, unlike standup, is at {x} on Fridays.",
    ),
    Attribute(
        "slack channel",
        ("What is the {e} team's Slack channel?", "Which Slack channel is the {e} team in?"),
        ("The {e} team's Slack channel is {v}.", "The {e} team uses the Slack channel {v}.",
         "Slack channel of the {e} team: {v}."),
        ("The {e} team renamed its Slack channel from {o} to {v}.",
         "The {e} team moved from Slack channel {o} to {v}."),
        slack,
        "The {e} team's alerts go to a separate Slack channel, {x}-alerts.",
    ),
    Attribute(
        "office",
        ("Which office is the {e} team based in?", "Where is the {e} team based?"),
        ("The {e} team is based in the {v} office.", "The {e} team is based at the {v} office.",
         "Office for the {e} team: based in {v}."),
        ("The {e} team moved from the {o} office and is now based in {v}.",
         "The {e} team is based in {v} now, no longer in the {o} office."),
        pick(CITIES),
        "The {e} team's designer is based in the {x} office.",
    ),
    Attribute(
        "sprint length",
        ("Which sprint length does the {e} team have?", "What is the {e} team's sprint length?"),
        ("The {e} team uses a sprint length of {v}.",
         "Sprint length for the {e} team: {v}, which they use for planning.",
         "The {e} team's sprint length is {v}."),
        ("The {e} team changed its sprint length from {o} to {v}.",
         "The {e} team now uses a sprint length of {v} instead of {o}."),
        pick(["one week", "two weeks", "three weeks", "four weeks", "ten days"]),
        None,
    ),
]

SERVICE_ATTRS = [
    Attribute(
        "Postgres version",
        ("Which Postgres version does the {e} use?", "What version of Postgres does the {e} use?"),
        ("The {e} uses Postgres version {v}.", "Postgres version used by the {e}: {v}.",
         "The {e} uses Postgres {v} (version {v})."),
        ("The {e} was upgraded from Postgres {o} to version {v}, which it uses now.",
         "The {e} uses Postgres version {v} after the upgrade from {o}."),
        increasing(["11", "12", "13", "14", "15", "16", "17"]),
        "The {e}'s analytics replica uses Postgres version {x}.",
    ),
    Attribute(
        "region",
        ("Which region is the {e} deployed in?", "Where is the {e} deployed?"),
        ("The {e} is deployed in the {v} region.", "The {e} is deployed to region {v}.",
         "Region: the {e} is deployed in {v}."),
        ("The {e} was moved from {o} and is deployed in region {v} now.",
         "The {e} is now deployed in the {v} region instead of {o}."),
        pick(REGIONS),
        "The {e}'s disaster-recovery copy is deployed in the {x} region.",
    ),
    Attribute(
        "owner",
        ("Which team owns the {e}?", "Who owns the {e}?"),
        ("The {e} is owned by the {v} team.", "The {v} team owns the {e}.", "Owner of the {e}: the {v} team owns it."),
        ("The {v} team took over the {e} from {o} and owns it now.",
         "The {e} is owned by the {v} team, no longer by {o}."),
        pick(TEAMS),
        "The {x} team owns the {e}'s client library.",
    ),
    Attribute(
        "language",
        ("What language is the {e} written in?", "Which language is the {e} written in?"),
        ("The {e} is written in the {v} language.", "The {e} is written in {v}, a language the team likes.",
         "Language: the {e} is written in {v}."),
        ("The {e} was ported from {o}; it is written in the {v} language now.",
         "The {e} is now written in {v} instead of {o} (language change)."),
        pick(LANGUAGES),
        "The {e}'s deploy scripts are written in the {x} language.",
    ),
    Attribute(
        "rate limit",
        ("What is the {e}'s rate limit?", "What rate limit does the {e} have?"),
        ("The {e} has a rate limit of {v} requests per second.", "Rate limit of the {e}: {v} requests per second.",
         "The {e}'s rate limit is {v} per second."),
        ("The {e}'s rate limit was raised from {o} to {v} requests per second.",
         "The {e} has a new rate limit of {v} per second (was {o})."),
        limits,
        "The {e}'s admin endpoints have a rate limit of {x} per minute.",
    ),
]

BACKGROUND = {
    "person": ["{e} enjoys {hobby} at weekends.", "{e} has {pet}.", "{e} is allergic to peanuts.",
               "{e} speaks three languages.", "{e}'s birthday is on {day} {month}.",
               "{e} gave a talk on observability last year.", "{e} takes the train to work on {weekday}s."],
    "team": ["The {e} team ships releases on {weekday}s.", "The {e} team has {n} engineers.",
             "The {e} team keeps its runbooks in the wiki.", "The {e} team celebrated its {n}th release.",
             "The {e} team prefers async design reviews."],
    "service": ["The {e} exposes a GraphQL endpoint.", "The {e} has {n} replicas in production.",
                "The {e} emits metrics to Prometheus.", "The {e} caches responses in Redis.",
                "The {e} had an outage on a {weekday} in spring."],
}
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]


def gap_days(rng: random.Random) -> int:
    """Time between versions: some close together, most months apart, some years."""
    r = rng.random()
    if r < 0.2:
        return rng.randint(2, 14)
    if r < 0.7:
        return rng.randint(15, 180)
    return rng.randint(181, 720)


def at(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


def entities(rng: random.Random, people: int, teams: int, services: int) -> list[tuple[str, str, Attribute]]:
    names = rng.sample([f"{f} {last}" for f in FIRST for last in LAST], people)
    out = [(n, "person", PEOPLE[i % len(PEOPLE)]) for i, n in enumerate(names)]
    out += [(t, "team", TEAM_ATTRS[i % len(TEAM_ATTRS)]) for i, t in enumerate(rng.sample(TEAMS, teams))]
    svc = rng.sample([f"{d} {k}" for d in DOMAINS for k in KINDS], services)
    out += [(s, "service", SERVICE_ATTRS[i % len(SERVICE_ATTRS)]) for i, s in enumerate(svc)]
    return out


def record(rng: random.Random, index: int, entity: str, kind: str, attr: Attribute) -> dict:
    rid = f"{kind[0]}{index:03d}"
    n = rng.choice([2, 3, 4])
    values = attr.values(rng, n + 1)  # one spare for the distractor
    values, spare = values[:n], values[n]
    newest_at = AS_OF - timedelta(days=rng.randint(1, 240), hours=rng.randint(0, 23), minutes=rng.randint(0, 59))
    dates = [newest_at]
    for _ in range(n - 1):
        dates.append(dates[-1] - timedelta(days=gap_days(rng), hours=rng.randint(0, 23)))
    dates.reverse()

    versions, seen = [], set()
    for i, (value, when) in enumerate(zip(values, dates, strict=True)):
        pool = list(attr.plain) + (list(attr.change) if i else [])
        while True:
            text = rng.choice(pool).format(e=entity, v=value, o=values[i - 1] if i else "")
            if text not in seen:
                break
        seen.add(text)
        versions.append({"key": f"{rid}.v{i + 1}", "content": text[0].upper() + text[1:], "occurred_at": at(when)})

    fill = {"hobby": rng.choice(HOBBIES), "pet": rng.choice(PETS), "day": rng.randint(1, 28),
            "month": rng.choice(MONTHS), "weekday": rng.choice(WEEKDAYS), "n": rng.randint(3, 40)}
    distractors = []
    for j, template in enumerate(rng.sample(BACKGROUND[kind], rng.choice([1, 2]))):
        text = template.format(e=entity, **fill)
        when = AS_OF - timedelta(days=rng.randint(1, 900))
        distractors.append({"key": f"{rid}.d{j + 1}", "content": text[0].upper() + text[1:], "occurred_at": at(when),
                            "why": "same entity, other attribute"})
    if attr.distractor and rng.random() < 0.5:
        text = attr.distractor.format(e=entity, x=spare, rel=rng.choice(RELATIONS))
        when = AS_OF - timedelta(days=rng.randint(1, 900))
        distractors.append({"key": f"{rid}.d{len(distractors) + 1}", "content": text[0].upper() + text[1:],
                            "occurred_at": at(when), "why": "names the entity and the attribute, about something else"})

    query = rng.choice(attr.queries).format(e=entity)
    return {"id": rid, "entity": entity, "type": kind, "attribute": attr.name, "query": query[0].upper() + query[1:],
            "answer": values[-1], "as_of": at(AS_OF), "versions": versions, "newest": versions[-1]["key"],
            "distractors": distractors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20250701)
    parser.add_argument("--people", type=int, default=100)
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--services", type=int, default=50)
    parser.add_argument("--out", type=Path, default=HERE / "dataset.jsonl")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    records = [record(rng, i + 1, e, kind, attr)
               for i, (e, kind, attr) in enumerate(entities(rng, args.people, args.teams, args.services))]
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    n_versions = sum(len(r["versions"]) for r in records)
    n_distractors = sum(len(r["distractors"]) for r in records)
    print(f"{len(records)} entities, {n_versions} versions, {n_distractors} distractors -> {args.out}")


if __name__ == "__main__":
    main()
