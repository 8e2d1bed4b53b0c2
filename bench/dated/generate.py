"""Generate the dated-questions dev set: a team's work log, asked about by the period things
happened in ("What happened with the ledger service in March 2025?").

LoCoMo is the other set a period's ranking is judged on, and this one differs from it in
register and shape: terse engineering notes, not chat turns; each subject (a system the team
runs) has three or four events at different times, told in the same words about the subject, so
that only the period a question names tells them apart; other systems' events in the same
months; some events written down days after they happened ("Looking back at last week: …");
questions naming a day, a month and year, a month alone, a year, or a bound ("before 2025"),
each only where it picks out one event.

Output: bench/dated/worklog.jsonl, one object per line: {"type": "memory", "key", "content",
"occurred_at"} or {"type": "question", "query", "answer" (a memory key), "form"}.

Deterministic: `python bench/dated/generate.py [--seed 2411]`.
"""

from __future__ import annotations

import argparse
import calendar
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent

SYSTEMS = [
    "ledger service", "search index", "mobile app", "data warehouse", "auth gateway", "design system",
    "payments API", "onboarding flow", "metrics pipeline", "CI runners", "staging cluster", "docs site",
    "email sender", "feature flag service", "image resizer", "rate limiter", "recommendation model",
    "support bot", "admin console", "export job", "billing dashboard", "SSO integration",
    "push notification service", "audit log", "backup job", "CDN setup", "queue workers",
    "GraphQL gateway", "reporting cron", "sandbox environment", "partner API", "pricing page",
    "chat widget", "invoice renderer", "geo lookup", "cache layer",
]
PEOPLE = ["Amara", "Bastien", "Chiara", "Dmitri", "Esme", "Farrukh", "Greta", "Hiroshi", "Ines", "Jonas"]
TECH = ["Rust", "Go", "Kotlin", "Postgres 17", "ClickHouse", "Kafka", "Redis", "gRPC", "Temporal", "SQLite"]
LESSONS = ["alerts fired too late", "the rollback plan was missing", "load tests came too late",
           "nobody owned the runbook", "the schema change was not backwards compatible"]
ISSUES = ["slow responses at peak hours", "wrong totals on exports", "timeouts from Asia",
          "duplicate notifications", "broken links in the footer"]

EVENTS = [
    "Decided to move the {s} to {tech}.",
    "Outage: the {s} was down for {n} hours after a bad deploy.",
    "{p} took over ownership of the {s}.",
    "Shipped version {n} of the {s}.",
    "Retro on the {s}: {lesson}.",
    "Budget for the {s} approved at ${n}0k.",
    "Paused all work on the {s} until the security audit is done.",
    "The {s} now handles {n}k requests a minute after the rewrite.",
    "Customer complaint about the {s}: {issue}.",
    "Migrated the data behind the {s} to {tech}.",
]
# Told days after it happened: the memory's date is later than the event's.
LATE = "Looking back at last week: {event}"

QUESTIONS = {
    "day": ["What was noted about the {s} on {month} {day}, {year}?",
            "What happened to the {s} on {day} {month} {year}?"],
    "month": ["What happened with the {s} in {month} {year}?", "What did we do about the {s} during {mon} {year}?",
              "Any news on the {s} from {month} {year}?"],
    "month_only": ["What happened to the {s} in {month}?", "What was going on with the {s} during {month}?"],
    "year": ["What changed for the {s} in {year}?", "What did the {s} go through in {year}?"],
    "before": ["What happened to the {s} before {year}?"],
}
FILLERS = ["Lunch and learn on Friday.", "Office closed for the public holiday.", "New coffee machine on floor 3.",
           "Quarterly planning moved to Thursday.", "Welcome drinks for the new hires.", "Fire drill at 11.",
           "Parking garage closed for repairs.", "Hackathon sign-ups are open."]

START, END = datetime(2024, 1, 1, tzinfo=UTC), datetime(2026, 10, 1, tzinfo=UTC)


def months_between() -> list[tuple[int, int]]:
    out, y, m = [], START.year, START.month
    while (y, m) < (END.year, END.month):
        out.append((y, m))
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


def generate(seed: int) -> list[dict]:
    rng = random.Random(seed)
    lines: list[dict] = []
    for i, system in enumerate(SYSTEMS):
        # Three or four events in distinct calendar months (no month of the year twice), so a
        # month named without its year still picks out one.
        months: list[tuple[int, int]] = []
        wanted = rng.choice((3, 4))
        for y, m in rng.sample(months_between(), 30):
            if len(months) < wanted and all(m != m2 for _, m2 in months):
                months.append((y, m))
        months.sort()
        templates = rng.sample(EVENTS, len(months))
        events = []
        for j, ((y, m), template) in enumerate(zip(months, templates, strict=True)):
            day = rng.randint(1, calendar.monthrange(y, m)[1])
            happened = datetime(y, m, day, rng.randint(8, 18), rng.randint(0, 59), tzinfo=UTC)
            text = template.format(s=system, tech=rng.choice(TECH), n=rng.randint(2, 9), p=rng.choice(PEOPLE),
                                   lesson=rng.choice(LESSONS), issue=rng.choice(ISSUES))
            written = happened
            if rng.random() < 0.25:
                written = happened + timedelta(days=rng.randint(3, 12))
                text = LATE.format(event=text[0].lower() + text[1:])
            key = f"s{i:02d}.e{j}"
            lines.append({"type": "memory", "key": key, "content": text,
                          "occurred_at": written.isoformat().replace("+00:00", "Z")})
            events.append((key, happened))
        years = [h.year for _, h in events]
        for key, happened in rng.sample(events, min(3, len(events))):
            forms = ["day", "month", "month_only"]
            if years.count(happened.year) == 1:
                forms.append("year")
            # "before <the next year>" picks out the first event when no other shares its year.
            if happened == min(h for _, h in events) and years.count(happened.year) == 1:
                forms.append("before")
            form = rng.choice(forms)
            year = happened.year + 1 if form == "before" else happened.year
            query = rng.choice(QUESTIONS[form]).format(
                s=system, month=calendar.month_name[happened.month], mon=calendar.month_abbr[happened.month],
                day=happened.day, year=year)
            lines.append({"type": "question", "query": query, "answer": key, "form": form})
    for k in range(40):
        when = START + timedelta(days=rng.randint(0, (END - START).days), hours=rng.randint(8, 18))
        lines.append({"type": "memory", "key": f"f{k:02d}", "content": f"{rng.choice(FILLERS)} ({k})",
                      "occurred_at": when.isoformat().replace("+00:00", "Z")})
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=2411)
    parser.add_argument("--out", type=Path, default=HERE / "worklog.jsonl")
    args = parser.parse_args()
    lines = generate(args.seed)
    args.out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    questions = [x for x in lines if x["type"] == "question"]
    print(f"wrote {args.out}: {len(lines) - len(questions)} memories, {len(questions)} questions")


if __name__ == "__main__":
    main()
