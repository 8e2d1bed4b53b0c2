"""What a provider of decisions is, what it is asked, what it answers, and how it fails.

A decision says what a new memory does to older ones close to it:
ADD (keep both), UPDATE (the new one supersedes these), DELETE (the new one says these are no
longer true: forget them softly), NONE (a duplicate: keep the old one, link the new one to it).
The model names candidates by the short labels it was shown ("1", "2", ...) or by their ids;
anything else is rejected, never guessed at."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Literal, Protocol
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Action = Literal["ADD", "UPDATE", "DELETE", "NONE"]
ACTIONS: tuple[Action, ...] = ("ADD", "UPDATE", "DELETE", "NONE")
REASON_CHARS = 300
MERGED_CHARS = 32_000  # the content limit's ceiling; the store's own (settings) applies when it is written


class DecisionError(Exception):
    """A provider could not give a usable decision. `final`: asking again will not help (a
    refusal, a user who declined); otherwise the job is retried with backoff."""

    final = False
    kind = "error"

    def __init__(self, message: str, *, tokens: int = 0) -> None:
        super().__init__(message)
        self.tokens = tokens


class ProviderUnavailable(DecisionError):
    """Nothing answered in time: unreachable, timed out, a server error, no client to ask."""

    kind = "unavailable"


class NotReachable(ProviderUnavailable):
    """The provider cannot be reached right now (no connected client that may see these memories
    offers sampling; the endpoint refuses connections or is overloaded). Not the job's fault: it
    waits, the attempt uncounted, and is taken again after `recheck_s` or as soon as the provider
    is back (a capable client connects, a call succeeds)."""

    kind = "waiting"

    def __init__(self, message: str, *, recheck_s: float = 60.0, tokens: int = 0) -> None:
        super().__init__(message, tokens=tokens)
        self.recheck_s = recheck_s


class InvalidAnswer(DecisionError):
    """The model answered, but not with a valid decision (not JSON, wrong shape, unknown id)."""

    kind = "invalid"


class Refused(DecisionError):
    """The model refused, or the client's user declined to let it answer."""

    final = True
    kind = "refused"


class Candidate(BaseModel):
    """An older memory the new one may touch, as the model sees it."""

    label: str
    id: UUID
    content: str
    kind: str
    age: str
    similarity: float
    pinned: bool = False
    agent_id: str | None = None
    project_id: str | None = None


class DecisionRequest(BaseModel):
    user_id: str
    memory_id: UUID
    content: str
    kind: str
    occurred_at: datetime
    candidates: list[Candidate]
    agent_id: str | None = None
    project_id: str | None = None

    def scopes(self) -> set[tuple[str | None, str | None]]:
        """(agent, project) of every memory the request shows: whoever answers must be allowed
        to read all of them."""
        return {(self.agent_id, self.project_id)} | {(c.agent_id, c.project_id) for c in self.candidates}


class PromptRequest(BaseModel):
    """A plain question to the model beside a decision (a session delta to extract facts from,
    extraction.py; a replace to look at again, second_look.py), as a provider is asked it.
    `scopes` are the (agent, project) of every memory or episode it shows: whoever answers must be
    allowed to read all of them, the same rule as a decision's memories."""

    user_id: str
    system: str
    prompt: str
    max_tokens: int
    scopes: set[tuple[str | None, str | None]]
    # Worked examples, asked and answered before the prompt as earlier turns of the conversation
    # (a small model follows them there, not written into the system text: second_look.py).
    examples: list[tuple[str, str]] = []

    def text_chars(self) -> int:
        """Characters of everything sent: what a call's token count is bounded by."""
        return sent_chars(self.system, self.prompt, self.examples)


def turns(prompt: str, examples: Sequence[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """The (role, text) messages after the system text: each worked example asked and answered,
    then the prompt."""
    return [*((role, text) for q, a in examples for role, text in (("user", q), ("assistant", a))),
            ("user", prompt)]


def sent_chars(system: str, prompt: str, examples: Sequence[tuple[str, str]] = ()) -> int:
    """Characters of a call's system text, examples and prompt."""
    return len(system) + sum(len(text) for _, text in turns(prompt, examples))


class Decision(BaseModel):
    """The model's answer, exactly this shape (unknown keys are an invalid answer)."""

    model_config = ConfigDict(extra="forbid")

    action: Action
    ids: list[str] = Field(default_factory=list, max_length=20,
                           description="The candidates it acts on (their labels); empty for ADD.")
    reason: str = Field(min_length=1, max_length=1000)
    text: str | None = Field(default=None, max_length=MERGED_CHARS, description=(
        "UPDATE only: the new memory rewritten to keep what is still true of the ones it replaces."))

    def targets(self, candidates: list[Candidate]) -> list[UUID]:
        """The candidate ids this decision names, checked: every one must be a candidate; NONE
        names exactly one, UPDATE and DELETE at least one; only UPDATE carries text. ADD acts on
        none: whatever it names or carries is left out (small models name the candidate they
        compared against), since a job retried to its death over an answer that changes nothing
        would be a dead letter for no failure."""
        if self.action == "ADD":
            return []
        by_key = {c.label.lower(): c.id for c in candidates} | {str(c.id): c.id for c in candidates}
        unknown = [i for i in self.ids if i.strip().lower() not in by_key]
        if unknown:
            raise InvalidAnswer(f"the decision names {', '.join(map(repr, unknown))}, which "
                                f"{'is' if len(unknown) == 1 else 'are'} not among the candidates "
                                f"({', '.join(c.label for c in candidates) or 'none'})")
        ids = list(dict.fromkeys(by_key[i.strip().lower()] for i in self.ids))
        if self.action == "NONE" and len(ids) != 1:
            raise InvalidAnswer("NONE links the new memory to the one it duplicates: name exactly one candidate")
        if self.action in ("UPDATE", "DELETE") and not ids:
            raise InvalidAnswer(f"{self.action} must name the candidates it acts on")
        if self.text is not None and self.text.strip() and self.action != "UPDATE":
            raise InvalidAnswer(f"only UPDATE may carry merged text, not {self.action}")
        return ids


class Answer(BaseModel):
    """A provider's answer: the decision and what produced it."""

    decision: Decision
    provider: str
    model: str
    tokens: int = 0


class DecisionProvider(Protocol):
    name: str
    model: str

    async def decide(self, request: DecisionRequest) -> Answer: ...


# JSON Schema of a decision, for endpoints that enforce structured output.
DECISION_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(ACTIONS)},
        "ids": {"type": "array", "items": {"type": "string"}},
        "reason": {"type": "string"},
        "text": {"type": ["string", "null"]},
    },
    "required": ["action", "ids", "reason", "text"],
    "additionalProperties": False,
}

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def parse_decision(text: str | None, *, tokens: int = 0) -> Decision:
    """A decision from the model's text, strictly: one JSON object of the schema (a Markdown code
    fence around it is tolerated, nothing else)."""
    if text is None or not text.strip():
        raise InvalidAnswer("the model answered with no text", tokens=tokens)
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        data = json.loads(body)
    except ValueError:
        raise InvalidAnswer(f"the model's answer is not JSON: {text[:120]!r}", tokens=tokens) from None
    if not isinstance(data, dict):
        raise InvalidAnswer(f"the model's answer is JSON but not an object: {text[:120]!r}", tokens=tokens)
    if isinstance(data.get("action"), str):
        data["action"] = data["action"].strip().upper()
    try:
        decision = Decision.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors())
        raise InvalidAnswer(f"the model's answer is not a decision ({problems})", tokens=tokens) from None
    if len(decision.reason) > REASON_CHARS:
        decision = decision.model_copy(update={"reason": decision.reason[: REASON_CHARS - 1] + "…"})
    return decision
