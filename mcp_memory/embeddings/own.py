"""Bring your own model: an ONNX file of all-MiniLM-L6-v2's shape and the tokenizer.json beside
it, from a local path, each checked against the SHA-256 the user gave
(``MCP_MEMORY_EMBEDDING_MODEL_PATH``, ``..._MODEL_SHA256``, ``..._TOKENIZER_SHA256``).

"Of MiniLM's shape": a BERT-style encoder taking ``input_ids`` and ``attention_mask`` (and
``token_type_ids`` if it asks), whose first output is the token embeddings
``[batch, tokens, dimension]``; they are mean-pooled over the mask and L2-normalised, as for the
packaged model. The dimension is 384 unless ``MCP_MEMORY_EMBEDDING_DIMENSION`` says otherwise.
Loading checks the digests, then runs the model once to check its inputs and output; what does
not fit stops with :class:`~.model_files.ModelFileError` (so `mcp-memory serve` refuses to start
and `mcp-memory doctor` says why).

The database records vectors by model name: a copy identical to the packaged files (both
digests) keeps ``all-MiniLM-L6-v2-int8``; any other file is ``onnx-<digests>``, a model of its
own, so vectors of two different files are never mixed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_memory.embeddings import model_files
from mcp_memory.embeddings.local import MiniLMEmbedder
from mcp_memory.embeddings.local_base import LocalModelSpec
from mcp_memory.embeddings.model_files import ModelFile, ModelFileError

#: The tokenizer file looked for beside the model (the name Hugging Face exports use).
TOKENIZER_NAME = "tokenizer.json"
_SHAPE = ("an ONNX export of a BERT-style sentence encoder of all-MiniLM-L6-v2's shape: inputs input_ids and "
          "attention_mask (token_type_ids optional), first output the token embeddings [batch, tokens, dimension]")


def own_model_name(model_sha256: str, tokenizer_sha256: str) -> str:
    """What the database records for vectors of this model file and tokenizer."""
    if (model_sha256, tokenizer_sha256) == (model_files.MINILM_MODEL.sha256, model_files.MINILM_TOKENIZER.sha256):
        return MiniLMEmbedder.spec.name
    return f"onnx-{model_sha256[:12]}-{tokenizer_sha256[:8]}"


class OwnOnnxEmbedder(MiniLMEmbedder):
    """A local ONNX model the user brought, verified by the digests they gave; run like MiniLM."""

    alternative_fix = None

    def __init__(self, model_path: Path | str, model_sha256: str | None, tokenizer_sha256: str | None, *,
                 dimension: int | None = None, batch_size: int | None = None) -> None:
        path = Path(model_path).expanduser()
        tokenizer_path = path.parent / TOKENIZER_NAME
        # Without a digest nothing is loaded: the refusal prints the file's own, to be checked.
        model_digest = model_files.require_digest(path, model_sha256, model_files.MODEL_SHA256_SETTING)
        tokenizer_digest = model_files.require_digest(tokenizer_path, tokenizer_sha256,
                                                      model_files.TOKENIZER_SHA256_SETTING)
        name = own_model_name(model_digest, tokenizer_digest)
        packaged = MiniLMEmbedder.spec
        if name == packaged.name and dimension not in (None, packaged.dimension):
            raise ValueError(f"{path} is the packaged {packaged.name}, which has dimension {packaged.dimension}, "
                             f"not {dimension}")
        self.spec = LocalModelSpec(
            name=name,
            dimension=dimension or packaged.dimension,
            packages=(("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers")),
            summary=f"your ONNX model {path}",
            # Only the packaged file's threshold was measured; any other model is uncalibrated
            # (mcp_memory.embeddings.UNCALIBRATED_CONFLICT_SIMILARITY).
            conflict_similarity=packaged.conflict_similarity if name == packaged.name else 0.8,
            files=(ModelFile("", "", str(path), model_digest, model_files.MODEL_SHA256_SETTING),
                   ModelFile("", "", str(tokenizer_path), tokenizer_digest, model_files.TOKENIZER_SHA256_SETTING)),
        )
        super().__init__(batch_size=batch_size)

    def verify(self) -> str:
        """Digests, then the model loaded and run once: its inputs and output dimension."""
        self._ensure_loaded()
        return f"{self.model}: {model_files.describe(self.spec.files)}; {self.dimension} dimensions"

    def _load(self) -> Any:
        model_file, tokenizer_file = self._model_paths()
        try:
            state = self._open(model_file, tokenizer_file)
        except Exception as exc:  # noqa: BLE001 - whatever onnxruntime or tokenizers say, it is this file
            raise ModelFileError(f"your model {model_file} or its {tokenizer_file.name} cannot be opened: {exc}",
                                 f"bring {_SHAPE}, with its tokenizer.json beside it") from exc
        self._check_shape(state, model_file)
        return state

    def _check_shape(self, state: Any, model_file: Path) -> None:
        import numpy as np

        tokenizer, session, inputs = state
        needed, optional = {"input_ids", "attention_mask"}, {"token_type_ids"}
        if not needed <= inputs or inputs - needed - optional:
            raise ModelFileError(
                f"your model {model_file} takes the inputs {', '.join(sorted(inputs))}; the embedder feeds "
                "input_ids and attention_mask (and token_type_ids when asked)", f"bring {_SHAPE}")
        output = session.get_outputs()[0]
        encoding = tokenizer.encode("shape probe")
        ids = np.array([encoding.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.array([encoding.attention_mask], dtype=np.int64)}
        if "token_type_ids" in inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        try:
            hidden = session.run([output.name], feeds)[0]
        except Exception as exc:  # noqa: BLE001
            raise ModelFileError(f"your model {model_file} does not run on tokenized text: {exc}",
                                 f"bring {_SHAPE}") from exc
        if hidden.ndim != 3 or hidden.shape[:2] != ids.shape:
            raise ModelFileError(
                f"your model {model_file}'s first output {output.name} has shape {list(output.shape)} "
                f"({list(hidden.shape)} for one text of {ids.shape[1]} tokens); the embedder mean-pools token "
                "embeddings [batch, tokens, dimension]", f"bring {_SHAPE}")
        width = int(hidden.shape[-1])
        if width != self.dimension:
            raise ModelFileError(
                f"your model {model_file} gives vectors of {width} dimensions (output {output.name} "
                f"{list(output.shape)}); the embedder expects {self.dimension}",
                f"bring a model of all-MiniLM-L6-v2's shape ({MiniLMEmbedder.spec.dimension} dimensions), or set "
                f"MCP_MEMORY_EMBEDDING_DIMENSION={width} to run this one (a model of its own: the database must "
                "be re-embedded with `mcp-memory backfill --reembed`)")
