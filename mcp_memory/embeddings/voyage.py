"""Voyage AI embeddings through the official ``voyageai`` SDK (``AsyncClient``).

Documents are sent with ``input_type="document"`` and queries with ``input_type="query"`` (Voyage
prepends its own retrieval prompts). A configured ``dimension`` is sent as ``output_dimension``
(the voyage-3.5 / voyage-3-large / voyage-code-3 / voyage-4 families accept 256, 512, 1024 and
2048). The key comes from ``api_key``, ``VOYAGE_API_KEY`` or ``VOYAGE_API_KEY_PATH``. The SDK
retries rate limits, 502-504 and time-outs with back-off; the SDK is imported on first use.
"""

from __future__ import annotations

import os
from typing import Any

from mcp_memory.embeddings.base import EmbeddingError, RemoteEmbedder

#: model -> (default dimension, accepted output_dimension values or None for fixed)
VOYAGE_MODELS: dict[str, tuple[int, tuple[int, ...] | None]] = {
    "voyage-4-large": (1024, (256, 512, 1024, 2048)),
    "voyage-4": (1024, (256, 512, 1024, 2048)),
    "voyage-4-lite": (1024, (256, 512, 1024, 2048)),
    "voyage-3.5": (1024, (256, 512, 1024, 2048)),
    "voyage-3.5-lite": (1024, (256, 512, 1024, 2048)),
    "voyage-3-large": (1024, (256, 512, 1024, 2048)),
    "voyage-code-3": (1024, (256, 512, 1024, 2048)),
    "voyage-3": (1024, None),
    "voyage-3-lite": (512, None),
    "voyage-multilingual-2": (1024, None),
    "voyage-finance-2": (1024, None),
    "voyage-law-2": (1024, None),
    "voyage-code-2": (1536, None),
}
DEFAULT_VOYAGE_MODEL = "voyage-3.5"
#: Models the SDK would run locally (sentence-transformers + torch + a hub download): not here.
_SDK_LOCAL_MODELS = ("voyage-4-nano",)


class VoyageEmbedder(RemoteEmbedder):
    """Embeddings over the Voyage AI API."""

    provider = "voyage"

    def __init__(
        self,
        model: str | None = None,
        *,
        dimension: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        batch_size: int = 128,
        timeout: float = 30.0,
        max_retries: int = 3,
    ) -> None:
        model = (model or DEFAULT_VOYAGE_MODEL).strip()
        if model in _SDK_LOCAL_MODELS:
            raise ValueError(f"{model} runs locally on torch in the voyageai SDK; use an API model")
        if dimension is not None and dimension < 1:
            raise ValueError("dimension must be a positive integer")
        if batch_size < 1 or batch_size > 1000:
            raise ValueError("batch_size must be between 1 and 1000 (the API's limit)")
        if not (api_key or os.environ.get("VOYAGE_API_KEY") or os.environ.get("VOYAGE_API_KEY_PATH")):
            raise EmbeddingError("the voyage embedding provider needs an API key: set VOYAGE_API_KEY")
        self._send_dimension = False
        known = VOYAGE_MODELS.get(model)
        if known is not None:
            native, flexible = known
            if dimension is None:
                dimension = native
            elif dimension != native:
                if flexible is None or dimension not in flexible:
                    allowed = flexible or (native,)
                    raise ValueError(
                        f"{model} returns {', '.join(map(str, allowed))} dimensions, not {dimension}"
                    )
                self._send_dimension = True
        elif dimension is not None:
            self._send_dimension = True
        self._configure(model, dimension, api_key=api_key, base_url=base_url, batch_size=batch_size,
                        timeout=timeout, max_retries=max_retries)

    def __repr__(self) -> str:
        return f"VoyageEmbedder(model={self.model!r}, dimension={self.dimension})"

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import voyageai
            except ImportError:
                raise EmbeddingError("the voyage provider needs the voyageai package: "
                                     "pip install 'mcp-memory[voyage]'") from None
            try:
                self._client = voyageai.AsyncClient(
                    api_key=self._api_key,
                    max_retries=self._max_retries,
                    timeout=self._timeout,
                    base_url=self._base_url,
                )
            except Exception as exc:  # noqa: BLE001
                raise EmbeddingError(f"voyage embeddings: cannot create the client: {exc}") from exc
        return self._client

    async def _embed(self, texts: list[str], input_type: str) -> list[list[float]]:
        from voyageai import error as voyage_error

        client = self._get_client()
        try:
            result = await client.embed(
                texts,
                model=self.model,
                input_type=input_type,
                truncation=True,
                output_dimension=self.dimension if self._send_dimension else None,
            )
        except voyage_error.VoyageError as exc:
            status = getattr(exc, "http_status", None)
            where = self._base_url or "the Voyage API"
            detail = f"HTTP {status} from {where}" if status else f"{type(exc).__name__} ({where})"
            raise EmbeddingError(f"voyage embeddings failed: {detail}: {getattr(exc, 'user_message', exc)}") from exc
        except Exception as exc:  # noqa: BLE001 - transport errors the SDK does not wrap
            raise EmbeddingError(f"voyage embeddings failed: {type(exc).__name__}: {exc}") from exc
        return self._accept([list(v) for v in result.embeddings], len(texts),
                            f"voyage embeddings from {self._base_url or 'the Voyage API'}")

