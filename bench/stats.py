"""Latency summaries shared by the benchmarks."""

from __future__ import annotations

import statistics


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank); NaN for no values."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def summary(values: list[float]) -> dict[str, float]:
    """n, p50, p95 and max of durations in seconds, reported in milliseconds."""
    return {"n": len(values), "p50_ms": statistics.median(values) * 1000, "p95_ms": percentile(values, 95) * 1000,
            "max_ms": max(values) * 1000}
