"""Which of a subject's memories answer a question about the present (retrieval/answering.py):
another attribute's history, passed on from value to value, is no answer."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from mcp_memory.models import Principal
from mcp_memory.retrieval.answering import Closeness, another_history, answering, sharing_values
from mcp_memory.service import MemoryService

PHONE = frozenset({"phone"})


def _phones_and_pets() -> tuple[dict[UUID, Closeness], list[UUID], list[UUID]]:
    """A chain that took in a phone's three versions, passed on from value to value, beside the
    pet the question asks about (cosines as the masked texts measure)."""
    pets, phones = [uuid4(), uuid4()], [uuid4(), uuid4(), uuid4()]
    closeness = {
        pets[1]: Closeness(0.52, 0, 1.0, frozenset({"beagle"})),
        pets[0]: Closeness(0.41, 3, 0.34, frozenset({"tabby"})),
        phones[0]: Closeness(0.38, 1, 0.35, frozenset({"pixel"}), states_other=PHONE),
        phones[1]: Closeness(0.30, 2, 0.71, frozenset({"pixel", "galaxy"}), states_other=PHONE),
        phones[2]: Closeness(0.28, 4, 0.87, frozenset({"galaxy", "iphone"}), states_other=PHONE),
    }
    return closeness, pets, phones


def test_another_attributes_history_answers_nothing() -> None:
    """The chain cut after the phone's first two versions, and the third came in by the value it
    passes on: the three are the phone's history, and the pet the chain started from answers."""
    closeness, pets, phones = _phones_and_pets()
    assert another_history(set(closeness), pets[1], closeness) == set(phones)
    assert answering(closeness, margin=0.15) == {pets[1]}
    unsaid = {k: replace(c, states_other=frozenset()) for k, c in closeness.items()}
    assert answering(unsaid, margin=0.15) == {pets[1], *phones}


def test_what_is_no_proof_of_another_attributes_history_stays() -> None:
    """One such memory alone, a history holding the chain's start or one as close to the question,
    one with a member stating nothing in the lexicon's words, or two stating different attributes:
    each stays an answer."""
    closeness, pets, phones = _phones_and_pets()
    found = set(closeness)
    alone = {k: c for k, c in closeness.items() if k not in phones[1:]}
    assert another_history(set(alone), pets[1], alone) == set()
    assert another_history(found, phones[0], closeness) == set()
    closer = {**closeness, phones[2]: Closeness(0.6, 4, 0.87, frozenset({"galaxy", "iphone"}), states_other=PHONE)}
    assert another_history(found, pets[1], closer) == set()
    unsaid = {**closeness, phones[1]: Closeness(0.30, 2, 0.71, frozenset({"pixel", "galaxy"}))}
    assert another_history(found, pets[1], unsaid) == set()
    apart = {**closeness, phones[2]: Closeness(0.28, 4, 0.87, frozenset({"galaxy", "iphone"}),
                                               states_other=frozenset({"car"}))}
    assert another_history(found, pets[1], apart) == set()


def test_with_nothing_else_answering_another_history_still_answers() -> None:
    closeness, pets, phones = _phones_and_pets()
    only = {k: closeness[k] for k in (pets[1], *phones)}
    assert answering(only, margin=0.15) == {pets[1]}
    assert another_history(set(phones), pets[1], only) == set(phones)


NOTES = [('Ilse Varga has a border collie that sleeps on the sofa.', 1038),
         ('Ilse Varga is allergic to peanuts.', 985),
         ('Ilse Varga goes to kayaking practice on Thursdays.', 961),
         ("Ilse Varga's first language is Finnish.", 877),
         ('Ilse Varga gave me a lift in their a VW Golf.', 875),
         ('Ilse Varga adopted a bearded dragon from the shelter.', 844),
         ('Ilse Varga laughed at my terrible pun during dinner.', 790),
         ('Remind Ilse Varga about the quiz night on Friday.', 746),
         ('Ilse Varga and Yuki are a couple.', 710),
         ('Ilse Varga uses a Galaxy S23.', 687),
         ('Ilse Varga traded in the a VW Golf for a Subaru Outback.', 651),
         ("Ilse Varga fixed my bike's gears.", 550),
         ('Ilse Varga finally replaced the a Galaxy S23 with a Fairphone 5.', 509),
         ("Ilse Varga's a Subaru Outback died, so they got a Citroen Berlingo.", 470),
         ('Ilse Varga signed up for a table tennis league.', 390),
         ('Ilse Varga is leasing a Mazda MX-5 now.', 365),
         ('Ilse Varga broke up with Yuki; now seeing Noor.', 306),
         ('Ilse Varga rehomed the a bearded dragon and got a pair of guinea pigs.', 244),
         ('Ilse Varga signed up for a trail running league.', 220),
         ('Ilse Varga brought home a Maine Coon last weekend.', 213),
         ('Ilse Varga finally replaced the a Fairphone 5 with an iPhone 15.', 170)]
# The histories the chain took in: the phone's last two versions (its first is not judged), the car
# passed on from the VW Golf to the Citroen Berlingo, and the partner from Yuki to Noor.
OTHER_HISTORIES = {"Ilse Varga finally replaced the a Galaxy S23 with a Fairphone 5.",
                   "Ilse Varga finally replaced the a Fairphone 5 with an iPhone 15.",
                   "Ilse Varga gave me a lift in their a VW Golf.",
                   "Ilse Varga traded in the a VW Golf for a Subaru Outback.",
                   "Ilse Varga's a Subaru Outback died, so they got a Citroen Berlingo.",
                   "Ilse Varga and Yuki are a couple.", "Ilse Varga broke up with Yuki; now seeing Noor."}


async def test_a_phones_newest_version_does_not_answer_what_pet_someone_has(
        service: MemoryService, alice: Principal) -> None:
    """The chain took in a friend's phone, replaced twice, by the notes' shape, and the newest phone
    came first for "What pet does Ilse Varga have these days?". Asked for 30 hits, the memories
    judged hold the phone's last two versions, and neither answers; nor do her car's and her
    partner's histories. Her newest car ("leasing a Mazda MX-5 now.") passes no value on: alone, it
    stays an answer."""
    now = datetime.now(UTC)
    for text, days in NOTES:
        await service.write(alice, text, occurred_at=now - timedelta(days=days))
    found = await service.search(alice, "What pet does Ilse Varga have these days?", explain=True, limit=30)
    assert found.hits[0].snippet == "Ilse Varga brought home a Maine Coon last weekend."
    assert {h.snippet for h in found.hits if h.explain.get("another_history")} == OTHER_HISTORIES


def test_where_an_answer_names_a_channel_every_memory_naming_one_is_a_version() -> None:
    """"Team someone opened #oncall as the new home." shares no value and few words with the
    channels before it, and the chain's cut left it out; a channel is said of where the team
    talks. A memory stating another attribute (`off`) stays out, and without a channel among the
    answers nothing comes in."""
    triage, kestrel, oncall, standup, off = uuid4(), uuid4(), uuid4(), uuid4(), uuid4()
    closeness = {triage: Closeness(0.26, 0, 1.0, frozenset({"triage"}), channel=True),
                 kestrel: Closeness(0.10, 1, 0.27, frozenset({"kestrel-ops"}), channel=True),
                 oncall: Closeness(0.04, 3, 0.27, frozenset({"oncall"}), channel=True),
                 standup: Closeness(0.18, 2, 0.24, frozenset({"9:30"})),
                 off: Closeness(0.05, 4, -1.0, frozenset({"eng-core"}), off=True, channel=True)}
    assert sharing_values({triage}, closeness) == {triage, kestrel, oncall}
    assert sharing_values({standup}, closeness) == {standup}


async def test_a_teams_newest_channel_answers_where_it_talks_however_it_is_worded(
        service: MemoryService, alice: Principal) -> None:
    """The newest channel note ("opened #triage as the new home.") linked to the older ones no
    closer than the team's standup note, the chain's cut left it out, and the older channels came
    first for "Where should I post questions for team Ibis these days?"."""
    now = datetime.now(UTC)
    notes = [("Questions for team Ibis -> #kestrel-ops.", 720), ("Team Ibis relocated its channel to #oncall.", 530),
             ("Team Ibis opened #triage as the new home.", 180), ("Team Ibis standup @ 9:30.", 20),
             ("#eng-core is busy at the moment because of an incident.", 60)]
    written = [(await service.write(alice, text, occurred_at=now - timedelta(days=days))).memory
               for text, days in notes]
    found = await service.search(alice, "Where should I post questions for team Ibis these days?", explain=True)
    assert found.hits[0].id == written[2].id
    assert [h.id for h in found.hits[:3]] == [written[2].id, written[1].id, written[0].id]
