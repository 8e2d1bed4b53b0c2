"""A project's store, as a coding agent keeps it: the team's hosts, tools and owners, changed over
time, written with the subject unsaid or as "we", nobody passing `about` or `key`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from mcp_memory.models import Principal
from mcp_memory.service import MemoryService

NOTES = [("The API is deployed on Heroku.", 700), ("We use Postgres 14 for the main database.", 698),
         ("Priya owns the billing service.", 680), ("Tests run with pytest; CI is on GitHub Actions.", 666),
         ("Ana prefers small PRs, under 300 lines.", 650), ("Migrated the API from Heroku to Fly.io.", 600),
         ("Upgraded Postgres to 16 over the weekend.", 585), ("Billing service ownership moved to Marco.", 560),
         ("Moved CI to Buildkite; GitHub Actions was too slow.", 520), ("Staging URL is staging.example.com.", 500)]


async def _written(service: MemoryService, p: Principal, notes: list[tuple[str, int]]) -> None:
    """`notes`, each written so many days ago."""
    now = datetime.now(UTC)
    for text, days in notes:
        await service.write(p, text, occurred_at=now - timedelta(days=days))


async def _store(service: MemoryService, p: Principal) -> None:
    await _written(service, p, NOTES)


async def test_who_owns_a_service_after_its_ownership_moved(service: MemoryService, alice: Principal) -> None:
    """"ownership" said nothing of an owner in the lexicon's words, so one note stated the asked
    attribute, nothing was compared, and "Priya owns the billing service." came first."""
    await _store(service, alice)
    found = await service.search(alice, "Who owns the billing service?")
    assert [h.snippet for h in found.hits[:2]] == ["Billing service ownership moved to Marco.",
                                                    "Priya owns the billing service."]


async def test_who_owned_a_thing_named_by_one_word_before_its_owner_now(service: MemoryService,
                                                                        alice: Principal) -> None:
    """"billing" alone is no run of two words, so the question was about no one, nothing was
    compared, and the note naming Marco came first for what held before him."""
    await _store(service, alice)
    found = await service.search(alice, "Who owned billing before Marco?", explain=True)
    assert found.hits[0].snippet == "Priya owns the billing service." and found.hits[0].explain["answers_then"]


async def test_the_ci_the_team_moved_to(service: MemoryService, alice: Principal) -> None:
    """A CI system is an attribute whose names say it, as an editor's do. "What CI do we use?" speaks
    of the user, so the user's "We use Postgres 14 ..." is no one else's note (it was taken down as
    if it were, and still came first by its words)."""
    await _store(service, alice)
    found = await service.search(alice, "What CI do we use?", explain=True)
    assert found.hits[0].snippet == "Moved CI to Buildkite; GitHub Actions was too slow."
    assert {h.snippet: h.explain["subject"] for h in found.hits}["We use Postgres 14 for the main database."] == 1


async def test_what_held_before_a_value_later_notes_name_again(service: MemoryService, alice: Principal) -> None:
    """Three notes name Fly.io, and the bound's value was read only where one did: the value held
    from the first of them, and what held before it is Heroku."""
    await _store(service, alice)
    await _written(service, alice, [("Fly.io had an outage; considering Render for the API.", 480),
                                    ("Decided to stay on Fly.io after all.", 450)])
    found = await service.search(alice, "Where was the API hosted before Fly.io?", explain=True)
    assert found.hits[0].snippet == "The API is deployed on Heroku." and found.hits[0].explain["answers_then"]


# A frontend's notes: tools named with a dot, a version written after the name, a thing named by one
# word in lower case.
FRONTEND = [("The frontend is built with Next.js 13 and deployed on Vercel.", 330),
            ("Node.js 18 on the build box.", 329), ("Socket.IO handles the live chat.", 302),
            ("Upgraded Next.js to 14; the app router is in.", 244), ("Bumped Node.js to 20 on the build box.", 206),
            ("Frontend moved from Vercel to Netlify to cut costs.", 170),
            ("Replaced Socket.IO with server-sent events for the chat.", 154), ("Node.js 22 is now the minimum.", 83)]


async def _frontend(service: MemoryService, p: Principal) -> None:
    await _written(service, p, FRONTEND)


async def test_a_name_with_a_dot_is_one_entity_found_by_its_head_too(service: MemoryService, alice: Principal) -> None:
    """"Socket.IO" was stored as an entity named "IO", "Node.js" as "Node" and "Bumped Node", "Next.js"
    as "Next": a name stopped at the dot, and a note opening on a verb in the past named the verb."""
    await _frontend(service, alice)
    names = {e.name for e in (await service.entities.list(alice)).entities}
    assert {"Next.js", "Node.js", "Socket.IO", "Vercel", "Netlify"} <= names
    assert not names & {"IO", "Next", "Node", "Bumped Node", "Replaced Socket"}
    node = await service.entities.profile(alice, "Node")  # "Which Node version ..." asks of it
    assert node.entity.name == "Node.js" and node.entity.memories == 2
    await service.write(alice, "Node 24 lands on the build box next month.")
    assert {e.name for e in (await service.entities.list(alice)).entities} == names  # no second entity


async def test_a_dotted_name_joins_the_entity_an_older_store_named_by_its_head(service: MemoryService,
                                                                                alice: Principal) -> None:
    """A store written before names went on past a dot holds "Node"; "Node.js" is a form of it, not
    a second thing."""
    await service.write(alice, "We run Node 18 on the build box.")
    await service.write(alice, "Bumped Node.js to 20 on the build box.")
    entities = {e.name: e.memories for e in (await service.entities.list(alice)).entities}
    assert entities.get("Node") == 2 and "Node.js" not in entities


async def test_a_version_written_right_after_the_name(service: MemoryService, alice: Principal) -> None:
    """"Node.js 22 is now the minimum." states Node.js's version in no word of the lexicon, and linked
    to the other two less than they to each other, so the chain left it out and 20 came first."""
    await _frontend(service, alice)
    found = await service.search(alice, "Which Node.js version does the build box run?", explain=True)
    assert found.hits[0].snippet == "Node.js 22 is now the minimum." and found.hits[0].explain["states_asked_attribute"]


async def test_a_question_naming_what_it_asks_of_is_not_the_users_alone(service: MemoryService,
                                                                         alice: Principal) -> None:
    """"What version of Next.js are we on?" speaks of "we", so the focus asked two notes to state the
    version in the lexicon's words, as of the user's own facts, and compared none: 13 came first."""
    await _frontend(service, alice)
    found = await service.search(alice, "What version of Next.js are we on?")
    assert found.hits[0].snippet == "Upgraded Next.js to 14; the app router is in."


async def test_a_thing_the_question_names_by_one_word_in_lower_case(service: MemoryService, alice: Principal) -> None:
    """No run of two words of "Where is the frontend deployed?" is in two notes, so nothing was
    compared and the older "... deployed on Vercel." came first by its words."""
    await _frontend(service, alice)
    found = await service.search(alice, "Where is the frontend deployed?", explain=True)
    assert found.hits[0].snippet == "Frontend moved from Vercel to Netlify to cut costs."
    assert found.hits[0].explain["answers_now"]


async def test_the_formatter_a_project_moved_to(service: MemoryService, alice: Principal) -> None:
    """A formatter and a linter are attributes whose tools' names say them: "formatting" was no
    attribute's word, nothing was compared, and "... done with black." came first by its words."""
    await _written(service, alice, [("Python formatting is done with black.", 300), ("Line length limit is 100.", 299),
                                    ("Decision: REST for the public API, gRPC internally.", 280),
                                    ("Python code now uses ruff instead of black and flake8.", 150)])
    found = await service.search(alice, "What do we use for Python formatting?", explain=True)
    assert found.hits[0].snippet == "Python code now uses ruff instead of black and flake8."
    assert found.hits[0].explain["states_asked_attribute"]


async def test_a_secrets_managers_history_is_no_answer_about_the_package_manager(service: MemoryService,
                                                                               alice: Principal) -> None:
    """Every note of a project's store is the user's, so the focus compares them all: "secrets live in
    Doppler" was taken in by its shape, "Moved secrets from Doppler to 1Password." with it by the
    value they share, and the newest of them came first for the package manager. Known as a
    secrets manager's history, they are no answer."""
    await _written(service, alice, [
        ("Decided: use pnpm for all new packages.", 330), ("Prefer functional components over class components.", 328),
        ("Ana's review rule: always add tests for bug fixes.", 320),
        ("Decision: REST for the public API, gRPC internally.", 306),
        ("Don't commit .env files; secrets live in Doppler.", 294), ("Python formatting is done with black.", 280),
        ("Line length limit is 100.", 279), ("Switched from pnpm to bun for the monorepo.", 200),
        ("Moved secrets from Doppler to 1Password.", 180),
        ("Python code now uses ruff instead of black and flake8.", 150), ("Raised the line length limit to 120.", 100)])
    found = await service.search(alice, "Which package manager do we use?")
    assert found.hits[0].snippet == "Switched from pnpm to bun for the monorepo."
    found = await service.search(alice, "Where do we keep secrets?")
    assert found.hits[0].snippet == "Moved secrets from Doppler to 1Password."
