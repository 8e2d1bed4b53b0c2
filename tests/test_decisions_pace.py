"""Model settings that fit the model (decisions/pace.py): unless a timeout is set, a call may take
as long as the model's own calls have taken, within bounds; a call that ran out gives the next one
twice as long, through the real `openai` SDK against a local endpoint; a job's lease covers its
calls; `doctor` reports a slow model as slow, not failed."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import anyio
import pytest

from mcp_memory.config import LEASE_MARGIN_S, Settings
from mcp_memory.decisions.doctor import check
from mcp_memory.decisions.openai_compatible import OpenAICompatibleProvider
from mcp_memory.decisions.pace import START_HERE_S, START_REMOTE_S, Pace
from mcp_memory.decisions.protocol import Candidate, DecisionRequest, ProviderUnavailable

from .chat_api import ChatAPI

UPDATE = {"action": "UPDATE", "ids": ["1"], "reason": "newer", "text": None}


def here(**over: object) -> Settings:
    return Settings(**{"decisions_provider": "openai-compatible", "decisions_model": "m",
                       "decisions_base_url": "http://127.0.0.1:8080/v1", **over})


def test_an_unset_timeout_starts_by_where_the_model_runs_and_follows_its_calls() -> None:
    local = Pace(here())
    remote = Pace(here(decisions_base_url="https://api.example.com/v1"))
    assert (local.timeout("decision"), remote.timeout("decision")) == (START_HERE_S, START_REMOTE_S)
    remote.took("decision", 20.0)
    assert remote.timeout("decision") == 80.0 and remote.timeout("prompt") == START_REMOTE_S  # each kind its own
    remote.took("decision", 1.0)
    assert remote.timeout("decision") == 80.0  # the slowest of the recent calls
    local.took("prompt", 170.0)  # an extraction on a small CPU model
    assert local.timeout("prompt") == 600.0  # 4 x 170, at most decisions_timeout_max_s
    assert local.lease() == 2 * 600.0 + LEASE_MARGIN_S
    assert local.slow() and not Pace(here()).slow()


def test_a_set_timeout_is_kept_and_a_set_lease_bounds_the_calls() -> None:
    fixed = Pace(here(decisions_timeout_s=45, decisions_lease_s=200))
    fixed.took("decision", 100.0)
    assert fixed.timeout("decision") == 45 and fixed.lease() == 200
    leased = Pace(here(decisions_lease_s=100))
    leased.took("decision", 80.0)
    assert leased.timeout("decision") == (100 - LEASE_MARGIN_S) / 2  # both calls end within the lease


def request() -> DecisionRequest:
    return DecisionRequest(user_id="u", memory_id=uuid4(), content="Greta moved to Lisbon.", kind="fact",
                           occurred_at=datetime.now(UTC),
                           candidates=[Candidate(label="1", id=uuid4(), content="Greta lives in Oslo.", kind="fact",
                                                 age="1 year ago", similarity=0.7)])


async def test_a_call_that_ran_out_gives_the_next_twice_as_long(chat: ChatAPI) -> None:
    pace = Pace(here(decisions_base_url=chat.url))
    pace.start = 1.0  # a model slower than the first allowance
    provider = OpenAICompatibleProvider(base_url=chat.url, model="m", pace=pace)
    chat.script(("sleep", 1.6), ("json", UPDATE), ("sleep", 1.6), ("json", UPDATE))
    with pytest.raises(ProviderUnavailable, match="did not answer within 1 s"):
        await provider.decide(request())
    assert pace.timeout("decision") == 2.0
    await anyio.sleep(1.0)  # the endpoint finishes the call given up on (taking its answer)
    answer = await provider.decide(request())  # the retry waits long enough
    assert answer.decision.action == "UPDATE" and pace.timeout("decision") >= 4 * 1.6


async def test_doctor_says_a_slow_model_is_slow_not_failed(chat: ChatAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    chat.script(("sleep", 1.2), ("json", UPDATE))
    # What counts as slow, scaled down to this test's model.
    monkeypatch.setattr("mcp_memory.decisions.pace.START_REMOTE_S", 1.0)
    found = await check(here(decisions_base_url=chat.url))
    assert found.ok, found.detail
    assert "slowly (1 s for one decision; timeouts follow the model, up to 600 s)" in found.detail
