"""A second look by the model at each replace our own check lets through only by closeness
(issue 27 item 11).

The guard (guard.py) applies a replace when the old memory is about the same subject and either
the new one names the old value beside a new one ("left the Singapore office for Nairobi"), or
the two say the same kind of thing by their masked cosine. The second kind is where a small model's
wrong replaces still pass: "Team Grebe currently meets its vendor at 9:30." replaced by "Team
Grebe moved lunch to 9:45.", "Priti Shah owns the rosters service." by "... owns the billing
service.". Asked once more, alone with the two notes and one narrow question after a few worked
examples, the same 1.5B model that replaced both tells most of them apart, where asked bare it
hardly could (docs/benchmarks.md, "Decisions guard: a second look").

So with a second look on, each replace allowed by closeness alone is applied only if the model
answers Yes; any other answer keeps it as a suggestion the user may accept. A replace naming the
old value is not asked again. The question shows the two memories the decision already showed the
same model, as JSON strings (data, never markup), to the same provider under the same scopes."""

from __future__ import annotations

import re
from uuid import UUID

from ..config import DecisionSettings
from .guard import Verdict
from .pace import served_here
from .prompting import quoted
from .protocol import Candidate, DecisionError, DecisionRequest, PromptRequest, ProviderUnavailable

SYSTEM = """You check notes an assistant keeps about people, teams and systems. A newer note makes \
an older one out of date only when both record the same property of the same subject and the newer \
value takes the place of the older one. Notes about different properties, different subjects, or \
facts that can both be true at the same time do not. Answer Yes or No."""

# (older, newer, answer): asked and answered before the real question, as earlier turns. Written
# into the system text instead, the same examples left the 1.5B model where it was asked bare (it
# ordered right replaces above wrong ones no better: AUC .65 on ops against .87 as turns).
WORKED = (("Mara lives in Porto.", "Mara moved to Lyon.", "Yes"),
          ("Mara lives in Porto.", "Mara works in Lyon.", "No"),
          ("The bakery opens at 7:00.", "The bakery closes at 19:00.", "No"),
          ("The printer is on the 2nd floor.", "The printer moved to the 3rd floor.", "Yes"),
          ("Sam owns the red bike.", "Sam owns the blue kayak.", "No"),
          ("The choir rehearses on Tuesdays.", "Choir practice is on Thursdays now.", "Yes"),
          ("Our cat eats dry food.", "Our cat sleeps on the sofa.", "No"),
          ("Leo's dentist is Dr. Ruiz.", "Ana's dentist is Dr. Ruiz.", "No"))

MAX_TOKENS = 3  # "Yes" or "No", and room for a stray full stop
_ANSWER = re.compile(r"\W*(yes|no)\b", re.IGNORECASE)


def enabled(settings: DecisionSettings) -> bool:
    """Whether replaces allowed by closeness alone are asked again: the setting, or by where the
    model runs (on for a model served on this machine, as the guard's stricter floor is)."""
    if settings.decisions_second_look is not None:
        return settings.decisions_second_look
    return served_here(settings)


def question(new: str, old: str) -> str:
    return (f"Older note: {quoted(old)}\nNewer note: {quoted(new)}\n"
            "Does the newer note make the older note out of date?")


def examples() -> list[tuple[str, str]]:
    """The worked examples as (question, answer) turns."""
    return [(question(new, old), said) for old, new, said in WORKED]


def answer(text: str | None) -> bool | None:
    """Yes (True), No (False), or None for anything else."""
    found = _ANSWER.match(text or "")
    return None if found is None else found.group(1).lower() == "yes"


async def review(provider: object, request: DecisionRequest, verdict: Verdict) -> int:
    """Ask again about each replace `verdict` allows by closeness alone; one not confirmed moves to
    its suggestions. Returns the tokens spent. A provider that cannot be reached raises (the job
    waits or is retried, as for its decision); one that takes no plain prompt is not asked."""
    complete_for = getattr(provider, "complete_for", None)
    if complete_for is None:
        return 0
    by_id: dict[UUID, Candidate] = {c.id: c for c in request.candidates}
    spent = 0
    worked = examples()
    for memory_id in [m for m in verdict.allowed if m in verdict.by_closeness]:
        old = by_id[memory_id]
        prompt = PromptRequest(user_id=request.user_id, system=SYSTEM, prompt=question(request.content, old.content),
                               max_tokens=MAX_TOKENS, examples=worked,
                               scopes={(request.agent_id, request.project_id), (old.agent_id, old.project_id)})
        try:
            text, tokens = await complete_for(prompt)
        except ProviderUnavailable:
            raise
        except DecisionError as exc:  # an answer that is no answer: not confirmed
            text, tokens = None, exc.tokens
        spent += tokens
        said = answer(text)
        if said:
            continue
        verdict.allowed.remove(memory_id)
        verdict.suggested[memory_id] = ("guard: the model did not confirm it on a second look"
                                        + (" (it answered No)" if said is False else " (no Yes or No)"))
    return spent
