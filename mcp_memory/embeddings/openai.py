"""OpenAI embeddings, and any server that speaks the same API (Ollama, vLLM, LM Studio, ...).

Both go through the official SDK's ``AsyncOpenAI`` (its retries with back-off on 408/409/429/5xx
and connection errors, and its timeouts). The SDK is imported and the client created on first
use, so constructing an embedder costs nothing and binds no event loop.

- ``openai``: ``text-embedding-3-small`` (1536), ``text-embedding-3-large`` (3072) or
  ``text-embedding-ada-002`` (1536). A configured ``dimension`` is sent as ``dimensions``
  (text-embedding-3-* shorten their vectors; ada-002 cannot). The key comes from ``api_key``
  or ``OPENAI_API_KEY``.
- ``openai-compatible``: ``base_url`` (e.g. ``http://localhost:11434/v1``) and any model name.
  ``dimensions`` is never sent (many servers reject it) and vectors are asked for as floats
  (not every server does base64). The dimension is the configured one, checked on every answer,
  or taken from the first answer. ``OPENAI_API_KEY`` is deliberately not read: an OpenAI key
  is not sent to another server unless passed as ``api_key``.
"""

from __future__ import annotations

import os
from typing import Any

from mcp_memory.embeddings.base import EmbeddingError, RemoteEmbedder

#: model -> (native dimension, accepts ``dimensions``)
OPENAI_MODELS: dict[str, tuple[int, bool]] = {
    "text-embedding-3-small": (1536, True),
    "text-embedding-3-large": (3072, True),
    "text-embedding-ada-002": (1536, False),
}
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"


class OpenAIEmbedder(RemoteEmbedder):
    """Embeddings over the OpenAI API or an OpenAI-compatible server."""

    def __init__(
        self,
        model: str | None = None,
        *,
        dimension: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        compatible: bool = False,
        batch_size: int = 256,
        timeout: float = 30.0,
        max_retries: int = 3,
    ) -> None:
        if dimension is not None and dimension < 1:
            raise ValueError("dimension must be a positive integer")
        if batch_size < 1 or batch_size > 2048:
            raise ValueError("batch_size must be between 1 and 2048 (the API's limit)")
        self.provider = "openai-compatible" if compatible else "openai"
        self._send_dimensions = False
        if compatible:
            if not base_url:
                raise ValueError("the openai-compatible provider needs base_url, e.g. http://localhost:11434/v1")
            if not model or not model.strip():
                raise ValueError("the openai-compatible provider needs a model name")
            model = model.strip()
            api_key = api_key or "not-needed"  # the SDK insists on one; local servers ignore it
        else:
            model = (model or DEFAULT_OPENAI_MODEL).strip()
            api_key = api_key or os.environ.get("OPENAI_API_KEY")
            if not api_key:
                raise EmbeddingError("the openai embedding provider needs an API key: set OPENAI_API_KEY")
            native, shortens = OPENAI_MODELS.get(model, (None, True))
            if dimension is None:
                dimension = native
            elif native is not None and not shortens and dimension != native:
                raise ValueError(f"{model} always returns {native} dimensions, not {dimension}")
            elif native is None or dimension != native:
                self._send_dimensions = True
        self._configure(model, dimension, api_key=api_key, base_url=base_url, batch_size=batch_size,
                        timeout=timeout, max_retries=max_retries)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(provider={self.provider!r}, model={self.model!r}, dimension={self.dimension})"

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                from openai import AsyncOpenAI

                self._client = AsyncOpenAI(
                    api_key=self._api_key,
                    base_url=self._base_url,
                    timeout=self._timeout,
                    max_retries=self._max_retries,
                )
            except Exception as exc:  # noqa: BLE001
                raise EmbeddingError(f"{self.provider} embeddings: cannot create the client: {exc}") from exc
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _embed(self, texts: list[str], input_type: str) -> list[list[float]]:
        import openai  # the API embeds documents and queries alike: input_type is not sent

        client = self._get_client()
        params: dict[str, Any] = {"model": self.model, "input": texts}
        if self._send_dimensions:
            params["dimensions"] = self.dimension
        if self.provider == "openai-compatible":
            params["encoding_format"] = "float"
        try:
            response = await client.embeddings.create(**params)
        except openai.APIStatusError as exc:
            raise EmbeddingError(
                f"{self.provider} embeddings failed: HTTP {exc.status_code} from {self._where()}: {_api_message(exc)}"
            ) from exc
        except openai.APITimeoutError as exc:
            raise EmbeddingError(f"{self.provider} embeddings timed out ({self._where()})") from exc
        except openai.APIConnectionError as exc:
            raise EmbeddingError(f"{self.provider} embeddings: cannot reach {self._where()}: {exc}") from exc
        except openai.OpenAIError as exc:
            raise EmbeddingError(f"{self.provider} embeddings failed: {exc}") from exc
        data = sorted(response.data, key=lambda item: item.index)
        return self._accept([list(item.embedding) for item in data], len(texts),
                            f"{self.provider} embeddings from {self._where()}")

    def _where(self) -> str:
        return self._base_url or "api.openai.com"


def _api_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", exc))
