"""What `related` lists of a new memory (issue 30 item 2) and scores that follow the order (item 6)."""

from __future__ import annotations

import time

import pytest

from mcp_memory.limits import MAX_CONTENT_CHARS
from mcp_memory.models import Principal
from mcp_memory.retrieval import versions
from mcp_memory.service import MemoryService
from tests.conftest import principal


async def test_the_listed_score_is_the_one_the_list_is_ordered_by(service: MemoryService, alice: Principal) -> None:
    """A superseded memory the query's words match better scored above its successor, and
    showed it below the successor: 1.0 under -0.0."""
    old = (await service.write(alice, "The nightly build runs on Jenkins in the basement rack")).memory
    new = (await service.write(alice, "CI moved to GitHub Actions", supersedes=[old.id])).memory
    hits = (await service.search(alice, "nightly build Jenkins basement rack", explain=True)).hits
    order = [h.id for h in hits]
    assert order.index(new.id) < order.index(old.id)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True), [(h.snippet, h.score) for h in hits]
    # The case this is about: the SQL stage scored the superseded memory higher, and explain keeps it.
    moved = next(h for h in hits if h.id == old.id)
    assert moved.explain["sql_score"] > next(h for h in hits if h.id == new.id).explain["sql_score"]


async def test_versions_put_newest_first_carry_the_scores_of_their_places(service: MemoryService,
                                                                          alice: Principal) -> None:
    """Without explain too: every list a search returns is in the order of its scores."""
    for text in ("Orla Novak lives over in Antwerp.", "Orla Novak just moved to Ghent!",
                 "Orla Novak's place is in Dundee, near the river.", "Orla Novak drives a Peugeot 208."):
        await service.write(alice, text)
    for query in ("Where does Orla Novak live these days?", "Orla Novak", "Where did Orla Novak live before?"):
        scores = [h.score for h in (await service.search(alice, query)).hits]
        assert scores == sorted(scores, reverse=True), (query, scores)


async def test_related_says_which_entries_look_like_earlier_versions(service: MemoryService, alice: Principal) -> None:
    """Issue 30 item 2: on a person with many facts, `related` lists their other facts beside the
    earlier version; each entry now says whether it looks like an earlier version of the new
    memory (same subject, same kind of fact), so an agent supersedes only those."""
    car = (await service.write(alice, "Greta Ibarra drives a Hyundai Ioniq.")).memory
    book = (await service.write(alice, "Greta Ibarra is reading a thriller set in Iceland.")).memory
    bakery = (await service.write(alice, "Greta Ibarra said the new bakery on the corner is overrated.")).memory
    other = (await service.write(alice, "Katarina Mbeki drives a Kia Sportage these days.")).memory
    # Saying "me" does not make it a note about the user: it is about Katarina.
    lift = (await service.write(alice, "Katarina Mbeki gave me a lift in her Subaru Outback.")).memory
    result = await service.write(alice, "Greta Ibarra drives a Subaru Outback these days.")
    flags = {r.id: r.earlier_version for r in result.related}
    assert flags.get(car.id) is True, [(r.snippet, r.earlier_version) for r in result.related]
    for not_a_version in (book.id, bakery.id, other.id, lift.id):
        assert flags.get(not_a_version) in (False, None) and not_a_version not in {
            i for i, f in flags.items() if f}, [(r.snippet, r.earlier_version) for r in result.related]
    # The decisions' candidates are the same list, flags and all.
    again = await service.related(alice, result.memory.id, result.memory.content,
                                  await service.vectors.document(result.memory.content))
    assert {r.id: r.earlier_version for r in again} == flags


async def test_an_update_naming_the_value_it_replaces_is_flagged_whatever_its_wording(
        service: MemoryService, alice: Principal) -> None:
    """"left Plumtree Media" names the employer it replaces: an earlier version, however far the
    rest of its wording is; a name in the text is data, matched literally (no regex from it)."""
    job = (await service.write(alice, "Odalys Pellegrini works at Plumtree Media (PLM*).")).memory
    pet = (await service.write(alice, "Odalys Pellegrini adopted a greyhound called Biscuit.")).memory
    result = await service.write(alice, "Odalys Pellegrini left Plumtree Media (PLM*) and signed with Saltmarsh Bank.")
    flags = {r.id: r.earlier_version for r in result.related}
    assert flags.get(job.id) is True, [(r.snippet, r.earlier_version) for r in result.related]
    assert not flags.get(pet.id), [(r.snippet, r.earlier_version) for r in result.related]


async def test_the_earlier_version_is_judged_among_the_entries_shown(service: MemoryService, alice: Principal) -> None:
    """Only the closest is flagged, and the flags are judged beside the insert, on the nearest
    entries: an entry left out (one the write supersedes) must not take the flag with it, the
    next earlier version gets it."""
    hyundai = (await service.write(alice, "Greta Ibarra drives a Hyundai Ioniq.")).memory
    kia = (await service.write(alice, "Greta Ibarra drives a Kia Niro now.")).memory
    await service.write(alice, "Greta Ibarra is reading a thriller set in Iceland.")
    result = await service.write(alice, "Greta Ibarra drives a Subaru Outback these days.")
    flagged = [r.id for r in result.related if r.earlier_version]
    assert len(flagged) == 1 and flagged[0] in (hyundai.id, kia.id), [(r.snippet, r.earlier_version)
                                                                      for r in result.related]
    vector = await service.vectors.document(result.memory.content)
    shown = await service.related(alice, result.memory.id, result.memory.content, vector, skip={flagged[0]})
    flags = {r.id: r.earlier_version for r in shown}
    assert flagged[0] not in flags
    assert flags.get(kia.id if flagged[0] == hyundai.id else hyundai.id) is True, [
        (r.snippet, r.earlier_version) for r in shown]


async def test_the_new_memory_found_beside_its_insert_is_not_judged(service: MemoryService, alice: Principal) -> None:
    """The neighbours are looked up while the insert runs, and find the new memory when its
    transaction commits first: it is no earlier version of itself, and the list is the same."""
    car = (await service.write(alice, "Greta Ibarra drives a Hyundai Ioniq.")).memory
    result = await service.write(alice, "Greta Ibarra drives a Subaru Outback these days.")
    new = result.memory
    near = await service.versions.neighbours(alice, await service.vectors.document(new.content), new.content, 1)
    assert new.id in {r["id"] for r, _ in near.rows}  # found, as when the insert commits first
    assert near.earlier is not None and new.id not in near.earlier[0]
    listed = await service.versions.listed(new.content, near, {new.id})
    assert [(r.id, r.earlier_version) for r in listed] == [(r.id, r.earlier_version) for r in result.related]
    assert {r.id: r.earlier_version for r in listed}.get(car.id) is True


async def test_an_episode_lists_its_nearest_and_replaces_none(service: MemoryService, alice: Principal) -> None:
    """A turn is what was said at its moment (search leaves episodes where they are): its
    `related` lists the nearest memories, none flagged an earlier version, and no masked text is
    embedded for it, where a note about the user is compared masked. The decisions' candidates agree."""
    berlin = (await service.write(alice, "I live in Berlin, in Kreuzberg.", kind="episode")).memory
    turn = await service.write(alice, "I moved to Lisbon last month, so I no longer live in Berlin.", kind="episode")
    assert [(r.id, r.earlier_version) for r in turn.related] == [(berlin.id, False)]
    again = await service.related(alice, turn.memory.id, turn.memory.content,
                                  await service.vectors.document(turn.memory.content), kind="episode")
    assert [(r.id, r.earlier_version) for r in again] == [(berlin.id, False)]
    asked: list[str] = []
    cached = service.vectors._cached

    async def recorded(texts: list[str], embed: object) -> object:
        asked.extend(texts)
        return await cached(texts, embed)  # type: ignore[arg-type]

    service.vectors._cached = recorded  # type: ignore[method-assign]
    note = "I moved to Porto last month, so I no longer live in Lisbon."
    await service.write(alice, note, kind="note")
    assert set(asked) - {note}, "a note about the user is compared masked"
    asked.clear()
    episode = "I moved to Faro last month, so I no longer live in Porto."
    await service.write(alice, episode, kind="episode")
    assert asked == [episode]


async def test_a_persons_earlier_version_worded_unlike_is_listed_among_their_many_facts(
        service: MemoryService, alice: Principal) -> None:
    """Issue 30 item 2: a person's other facts, and other people's notes naming the same phone,
    are nearer the new memory whole than its earlier version ("texts from a Pixel 8" /
    "upgraded to a Sony Xperia 10"); with the person masked it is the closest of their memories,
    and listed first, with at most three others."""
    phone = (await service.write(alice, "Jarek Lachance texts from a Pixel 8.")).memory
    for text in ("Jarek Lachance and Marisol are a couple.",
                 "Jarek Lachance laughed at my terrible pun during dinner.",
                 "Owe Jarek Lachance twenty euros for the concert tickets.",
                 "Jarek Lachance is organising a surprise party for a colleague.",
                 "Jarek Lachance keeps a Maine Coon at home.",
                 "Jarek Lachance goes to water polo practice on Thursdays.",
                 "Jarek Lachance's place is in Innsbruck, near the river.",
                 "Jarek Lachance's birthday is on 11 December.",
                 "Jarek Lachance's first language is Yoruba.",
                 "Wilhelmina Ibarra switched to a Sony Xperia 10.",
                 "Cressida Grimaldi uses a Sony Xperia 10.",
                 "Zainab Baptiste upgraded to a Sony Xperia 10.",
                 "Ines Novak finally replaced the a Nokia G42 with a Sony Xperia 10."):
        await service.write(alice, text)
    result = await service.write(alice, "Jarek Lachance upgraded to a Sony Xperia 10.")
    listed = [(r.snippet, r.earlier_version) for r in result.related]
    assert result.related and result.related[0].id == phone.id, listed
    assert result.related[0].earlier_version is True, listed
    assert len(result.related) <= 4, listed
    # The decisions' candidates are the same list.
    again = await service.related(alice, result.memory.id, result.memory.content,
                                  await service.vectors.document(result.memory.content))
    assert [r.id for r in again] == [r.id for r in result.related]


def embedder_down(service: MemoryService) -> None:
    """The service's embedder answering nothing from now on, as when its provider is down."""
    async def not_answering(texts: object, batch: int = 32) -> None:
        return None

    service.vectors.documents_or_none = not_answering  # type: ignore[method-assign,assignment]


async def test_with_the_embedder_not_answering_a_named_subject_still_lists_its_nearest(
        service: MemoryService, alice: Principal) -> None:
    """The masked comparison needs the embedder; without it the nearest are listed as before,
    none judged (earlier_version unknown), and nothing fails."""
    phone = (await service.write(alice, "Jarek Lachance texts from a Pixel 8.")).memory
    new = (await service.write(alice, "Jarek Lachance upgraded to a Sony Xperia 10.")).memory
    vector = await service.vectors.document(new.content)
    embedder_down(service)
    listed = await service.related(alice, new.id, new.content, vector)
    assert [(r.id, r.earlier_version) for r in listed] == [(phone.id, None)]


@pytest.mark.parametrize(("text", "subject"), [
    ("Greta Ibarra drives a Kia.", {"greta", "ibarra"}),
    ("Greta's birthday is on 5 May.", {"greta"}),
    ("FYI: Kasimir Ivanova now staffed on Albatross.", {"kasimir", "ivanova"}),
    ("Update - Maelle Ivanova started on Magpie.", {"maelle", "ivanova"}),
    ("1:1 notes: Re-org: Lars Petersen takes over Kiran Dvorak.", {"lars", "petersen"}),
    ("For code, Tariq Andersen prefers the IntelliJ IDEA editor.", {"tariq", "andersen"}),
    # Sentence case, not a name, and what follows may be what is said of the subject.
    ("Escalations for the webhooks pipeline go to Zuzana Hruba.", None),
    ("Heard today: Congrats to Anouk Mwangi: new title SRE.", None),
    ("Audit worker persists to MongoDB.", None),
    # Someone in a life: the subject is the relation.
    ("User's father drives a Tesla Model 3.", None),
])
def test_the_subject_a_memory_surely_names(text: str, subject: set[str] | None) -> None:
    assert versions.named_subject(text) == (frozenset(subject) if subject else None)


async def test_a_hostile_memory_naming_a_subject_is_written_without_a_stall(service: MemoryService,
                                                                            alice: Principal) -> None:
    """Labels, runs and masks are read from a memory's start, and each pass is linear: a memory at
    the content limit made of labels and one name, beside others naming the same subject, is
    written in well under the time a stall would take."""
    hostile = ("Greta Ibarra: " * (MAX_CONTENT_CHARS // 14))[:MAX_CONTENT_CHARS]
    for text in ("Greta Ibarra drives a Hyundai Ioniq.", "Greta Ibarra's birthday is on 30 September.",
                 hostile[:-14]):
        await service.write(alice, text)
    started = time.monotonic()
    result = await service.write(alice, hostile)
    assert time.monotonic() - started < 20  # a bound for a stall, not a speed target
    assert result.status == "created" and len(result.related) <= 4
    # Said about her, read by the graph: its masks and the subject put before a text are linear too.
    started = time.monotonic()
    unnamed = ("Lives in Berlin: " * (MAX_CONTENT_CHARS // 17))[:MAX_CONTENT_CHARS]
    said = await service.write(alice, unnamed, about=["Greta Ibarra"])
    assert time.monotonic() - started < 20
    assert said.status == "created" and len(said.related) <= 4


async def test_a_subjects_memories_in_other_scopes_are_not_listed(service: MemoryService, alice: Principal) -> None:
    """The subject's own memories come from the same visible nearest as before: another user's, or
    another project's project-scoped memory about the same person, is never listed."""
    other_project = principal(project="proj-y")
    bob = principal(user="bob")
    hidden = [(await service.write(other_project, "Jarek Lachance texts from a Pixel 8.", scope="project")).memory.id,
              (await service.write(bob, "Jarek Lachance uses a Fairphone 5.")).memory.id]
    mine = (await service.write(alice, "Jarek Lachance's birthday is on 11 December.", scope="project")).memory
    result = await service.write(alice, "Jarek Lachance upgraded to a Sony Xperia 10.", scope="project")
    assert [r.id for r in result.related] == [mine.id], [(r.snippet, r.id in hidden) for r in result.related]


async def test_whom_a_writer_said_a_memory_is_about_decides_its_earlier_versions(
        service: MemoryService, alice: Principal) -> None:
    """Issue 48 item 1: `related` reads the subject off the graph's stored mentions where a writer
    said it. "Moved to Berlin." names no one; said about Greta Ibarra, her home is its earlier
    version, though the text alone reads it as about Berlin; the same words said about someone
    else flag nothing of hers."""
    home = (await service.write(alice, "Greta Ibarra lives in Lisbon.")).memory
    for text in ("Greta Ibarra drives a Hyundai Ioniq.", "Greta Ibarra's birthday is on 30 September.",
                 "Katarina Mbeki lives in Tbilisi."):
        await service.write(alice, text)
    other = await service.write(alice, "Lives in Berlin now.", about=["Katarina Mbeki"])
    assert home.id not in {r.id for r in other.related if r.earlier_version}, \
        [(r.snippet, r.earlier_version) for r in other.related]
    result = await service.write(alice, "Lives in Berlin these days.", about=["Greta"])
    listed = [(r.snippet, r.earlier_version) for r in result.related]
    assert result.related and result.related[0].id == home.id, listed
    assert result.related[0].earlier_version is True, listed
    assert [r.snippet for r in result.related if r.earlier_version] == ["Greta Ibarra lives in Lisbon."], listed
    # The decisions' candidates are the same list, read by the graph too.
    again = await service.related(alice, result.memory.id, result.memory.content,
                                  await service.vectors.document(result.memory.content))
    assert [(r.id, r.earlier_version) for r in again] == [(r.id, r.earlier_version) for r in result.related]


async def test_two_memories_said_about_different_people_are_no_versions_whatever_their_words(
        service: MemoryService, alice: Principal) -> None:
    """The same words said about two people: the text reads one subject ("Drives"), the graph two,
    and the graph decides; said about the same person, the same words are a version."""
    hers = (await service.write(alice, "Drives a red hatchback.", about=["Greta Ibarra"])).memory
    his = await service.write(alice, "Drives a blue estate car now.", about=["Tomás Rivera"])
    assert hers.id not in {r.id for r in his.related if r.earlier_version}, \
        [(r.snippet, r.earlier_version) for r in his.related]
    again = await service.write(alice, "Drives a green van these days.", about=["Greta Ibarra"])
    flagged = [r.id for r in again.related if r.earlier_version]
    assert flagged == [hers.id], [(r.snippet, r.earlier_version) for r in again.related]


async def test_a_memory_said_about_someone_is_found_by_a_later_write_that_names_them(
        service: MemoryService, alice: Principal) -> None:
    """The other way round: the earlier memory was said about Greta Ibarra and names no one; the
    new one names her and passes nothing. The graph has both about her (the rules read the new
    one's name), so the earlier one is its version; a write naming no one said-about reads as before."""
    home = (await service.write(alice, "Lives in Lisbon.", about=["Greta Ibarra"])).memory
    await service.write(alice, "Greta Ibarra drives a Hyundai Ioniq.")
    result = await service.write(alice, "Greta Ibarra lives in Berlin these days.")
    assert [r.id for r in result.related if r.earlier_version] == [home.id], \
        [(r.snippet, r.earlier_version) for r in result.related]


async def test_with_the_embedder_not_answering_the_graphs_subject_still_lists_its_nearest(
        service: MemoryService, alice: Principal) -> None:
    """Read by the graph too, the masked comparison needs the embedder; without it the text's list
    stands, judged by the graph's subjects as far as they go, and nothing fails: a memory the graph
    has about the same person is not known to be an earlier version or not (the text alone read
    "Lives in Berlin" as about Berlin, and said no), one about another person is none."""
    home = (await service.write(alice, "Greta Ibarra lives in Lisbon.")).memory
    new = (await service.write(alice, "Lives in Berlin these days.", about=["Greta"])).memory
    vector = await service.vectors.document(new.content)
    red = (await service.write(alice, "Drives a red hatchback.", about=["Greta Ibarra"])).memory
    blue = (await service.write(alice, "Drives a blue estate car now.", about=["Tomás Quispe"])).memory
    blue_vector = await service.vectors.document(blue.content)
    embedder_down(service)
    listed = await service.related(alice, new.id, new.content, vector)
    assert [(r.id, r.earlier_version) for r in listed if r.id == home.id] == [(home.id, None)]
    listed = await service.related(alice, blue.id, blue.content, blue_vector)
    assert [(r.id, r.earlier_version) for r in listed if r.id == red.id] == [(red.id, False)]


async def test_the_graphs_subject_lists_nothing_of_another_user_or_project(service: MemoryService,
                                                                         alice: Principal) -> None:
    """The graph's reading chooses among the same visible nearest: another user's or another
    project's project-scoped memory said about the same person is never listed."""
    hidden = [(await service.write(principal(project="proj-y"), "Lives in Lisbon.", about=["Greta Ibarra"],
                                   scope="project")).memory.id,
              (await service.write(principal(user="bob"), "Lives in Lisbon.", about=["Greta Ibarra"])).memory.id]
    mine = (await service.write(alice, "Greta Ibarra lives in Lisbon.", scope="project")).memory
    result = await service.write(alice, "Lives in Berlin these days.", about=["Greta"], scope="project")
    assert [r.id for r in result.related] == [mine.id], [(r.snippet, r.id in hidden) for r in result.related]
    assert result.related[0].earlier_version is True
