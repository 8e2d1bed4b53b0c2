"""Decisions from any chat-completions endpoint (OpenAI, OpenRouter, Ollama, vLLM, LM Studio,
llama.cpp server) through the official `openai` SDK.

Structured output first (`response_format` json_schema, strict); an endpoint that rejects it
(a 400 naming response_format, or a 422) is asked again in plain JSON mode, and from then on
always so, and its answer is validated strictly (protocol.parse_decision). The SDK's own retries
are off: the job queue retries with backoff, so one decision is one request per attempt."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from .pace import Call, Pace
from .prompting import SYSTEM, user_message
from .protocol import (
    DECISION_SCHEMA,
    Answer,
    DecisionRequest,
    InvalidAnswer,
    NotReachable,
    PromptRequest,
    ProviderUnavailable,
    Refused,
    parse_decision,
    sent_chars,
    turns,
)

MAX_TOKENS = 300  # a decision is a few dozen tokens; the cap bounds the cost of a rambling model
PROMPT_OVERHEAD = 50  # the chat template's own tokens around the two messages
OVERLOADED = (429, 502, 503, 504)  # the endpoint is there but cannot take the call now: wait, uncounted


class OpenAICompatibleProvider:
    name = "openai-compatible"

    def __init__(self, *, base_url: str | None, model: str, api_key: str | None = None, timeout_s: float = 30.0,
                 structured: bool = True, recheck_s: float = 30.0, pace: Pace | None = None) -> None:
        if not model or not model.strip():
            raise ValueError("decisions_model: the openai-compatible provider needs a model name "
                             "(MCP_MEMORY_DECISIONS_MODEL)")
        self.base_url = base_url
        self.model = model.strip()
        # Another server never gets the user's OpenAI key unless it was passed for it; local
        # servers ignore the key but the SDK wants one.
        self.api_key = api_key or (os.environ.get("OPENAI_API_KEY") if not base_url else None) or "none"
        # How long each call may take (pace.py); fixed at `timeout_s` when none is given.
        self.pace = pace or Pace.fixed_at(timeout_s)
        self.structured = structured
        self.recheck_s = recheck_s  # how soon a job that found the endpoint down looks again
        self._client: Any = None

    def _sdk(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI

            self._client = AsyncOpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.pace.most,
                                       max_retries=0)
        return self._client

    async def complete(self, system: str, user: str, *, structured: bool, max_tokens: int = MAX_TOKENS,
                       examples: Sequence[tuple[str, str]] = (), call: Call = "decision") -> tuple[str | None, int]:
        """One chat completion, after `examples` as earlier turns: (text, tokens used). Raises
        DecisionError subclasses."""
        import openai

        allowed = self.pace.timeout(call)
        kwargs: dict[str, Any] = {"timeout": allowed}
        if structured:
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "memory_decision", "schema": DECISION_SCHEMA, "strict": True}}
        started = time.monotonic()
        try:
            reply = await self._sdk().chat.completions.create(
                model=self.model, temperature=0, max_tokens=max_tokens,
                messages=[{"role": "system", "content": system},
                          *({"role": role, "content": text} for role, text in turns(user, examples))], **kwargs)
        except openai.APITimeoutError:
            self.pace.ran_out(call, allowed)
            raise ProviderUnavailable(f"{self.where} did not answer within {allowed:g} s") from None
        except openai.APIConnectionError as exc:
            # Down (refused, no route, DNS): not this job's fault, so it waits instead of dying.
            raise NotReachable(f"{self.where} is unreachable: {exc.__cause__ or exc}",
                               recheck_s=self.recheck_s) from None
        except openai.APIStatusError as exc:
            if structured and exc.status_code in (400, 422) and _about_format(exc):
                raise _NoStructuredOutput from None
            if exc.status_code in (401, 403):
                raise ProviderUnavailable(f"{self.where} refused the credentials (HTTP {exc.status_code}); "
                                          "check MCP_MEMORY_DECISIONS_API_KEY") from None
            if exc.status_code in OVERLOADED:
                raise NotReachable(f"{self.where} is overloaded or down (HTTP {exc.status_code}): {_message(exc)}",
                                   recheck_s=self.recheck_s) from None
            raise ProviderUnavailable(f"{self.where} answered HTTP {exc.status_code}: {_message(exc)}") from None
        except openai.APIError as exc:  # a body that is not a completion (HTML, not JSON): one line, no trace
            raise InvalidAnswer(f"{self.where} answered with something that is not a chat completion: "
                                f"{type(exc).__name__}: {str(exc)[:200]}") from None
        except ValueError as exc:
            raise InvalidAnswer(f"{self.where} answered with a body that is not JSON: {str(exc)[:200]}") from None
        self.pace.took(call, time.monotonic() - started)
        # Counted at most at what was asked for (the prompt, one token per character at worst, and
        # max_tokens): an endpoint reporting absurd usage cannot spend a user's day in one answer.
        bound = sent_chars(system, user, examples) + PROMPT_OVERHEAD + max_tokens
        reported = getattr(reply, "usage", None)
        tokens = min(bound, max(0, int(getattr(reported, "total_tokens", 0) or 0))) if reported is not None else 0
        if not isinstance(getattr(reply, "choices", None), list):
            raise InvalidAnswer(f"{self.where} answered with something that is not a chat completion: "
                                f"{str(reply)[:120]!r}", tokens=tokens)
        if not reply.choices:
            raise InvalidAnswer(f"{self.where} answered with no choices", tokens=tokens)
        choice = reply.choices[0]
        refusal = getattr(choice.message, "refusal", None)
        if refusal:
            raise Refused(f"the model refused: {refusal[:200]}", tokens=tokens)
        if choice.finish_reason == "content_filter":
            raise Refused("the endpoint's content filter stopped the answer", tokens=tokens)
        return choice.message.content, tokens

    @property
    def where(self) -> str:
        return f"the decisions endpoint {self.base_url or 'api.openai.com'} (model {self.model})"

    async def decide(self, request: DecisionRequest) -> Answer:
        text, tokens = await self.ask(user_message(request))
        decision = parse_decision(text, tokens=tokens)
        try:
            decision.targets(request.candidates)  # an unknown id is the model's error: retried
        except InvalidAnswer as exc:
            exc.tokens = tokens
            raise
        return Answer(decision=decision, provider=self.name, model=self.model, tokens=tokens)

    async def ask(self, user: str) -> tuple[str | None, int]:
        if self.structured:
            try:
                return await self.complete(SYSTEM, user, structured=True)
            except _NoStructuredOutput:
                self.structured = False  # this endpoint does not do it; stop asking
        return await self.complete(SYSTEM, user, structured=False)


    async def complete_for(self, request: PromptRequest) -> tuple[str | None, int]:
        """A plain prompt (an extraction, a second look): its own system text and bound, no schema.
        The endpoint is the user's own configuration, so the request's scopes ask nothing of it."""
        return await self.complete(request.system, request.prompt, structured=False, max_tokens=request.max_tokens,
                                   examples=request.examples, call="prompt")


class _NoStructuredOutput(Exception):
    pass


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        body = body.get("error", body)
        if isinstance(body, dict):
            body = body.get("message", body)
    return str(body or exc)[:200]


def _about_format(exc: Any) -> bool:
    text = _message(exc).lower()
    return exc.status_code == 422 or "response_format" in text or "json_schema" in text or "schema" in text
