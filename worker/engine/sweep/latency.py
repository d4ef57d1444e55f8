"""On-device latency of ONNX files in onnxruntime: p50 / p90 per batch size, threads pinned.

`measure_latency(path, ...)` times one model; `compare_latency({name: path}, baseline=...)` times several
*interleaved* — round r runs every model once, in turn, before round r + 1 — so that load changes on a
busy machine fall on all of them alike, and reports each model's p50 relative to the baseline's: a ratio
above 1 + `SLOWER_MARGIN` marks the compressed model as slower (the latency regression that, e.g., a QDQ
int8 model on a CPU provider shows for a tiny network, where quantize / dequantize work outweighs the
saved arithmetic).

Method: one InferenceSession per model (CPUExecutionProvider, graph optimisations at their default
ORT_ENABLE_ALL, intra-op threads pinned to `threads`, inter-op threads 1, sequential execution); inputs
of the requested batch size are built once (from `sample` feeds, repeated cyclically, or seeded random
data of the declared dtype); `warmup` untimed runs; then `repeats` timed runs of `session.run` measured
with time.perf_counter_ns. Reported per batch size: p50, p90, mean, min, max (ms), and per-sample p50.
"""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from worker.engine.errors import EngineError
from worker.engine.sweep.export_common import file_bytes

SLOWER_MARGIN = 0.05
"""A model is reported slower than the baseline when its p50 exceeds the baseline's by more than 5%."""


def _session(path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's pybind errors share no public base class
        raise EngineError(f"onnxruntime could not load {Path(path).name}: {exc}") from exc


_NUMPY_OF = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def make_inputs(
    session: Any,
    batch_size: int,
    sample: Mapping[str, np.ndarray] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Inputs of `batch_size` rows for the session: `sample` rows repeated cyclically (by input name, or
    the only array for a one-input model), else seeded random data of the declared dtype and shape
    (`shapes` gives per-sample shapes for dimensions the model leaves symbolic)."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    args = session.get_inputs()
    for arg in args:
        given = None
        if sample is not None:
            given = sample.get(arg.name)
            if given is None and len(args) == 1 and len(sample) == 1:
                given = next(iter(sample.values()))
        dtype = _NUMPY_OF.get(arg.type)
        if given is not None:
            array = np.asarray(given)
            rows = np.arange(batch_size) % len(array)
            feeds[arg.name] = array[rows].astype(dtype or array.dtype, copy=False)
            continue
        if dtype is None:
            raise EngineError(f"input {arg.name!r} has type {arg.type}; pass sample feeds for it")
        dims = list(arg.shape)[1:]
        if shapes is not None and arg.name in shapes:
            per_sample = [int(d) for d in shapes[arg.name]]
        elif all(isinstance(d, int) for d in dims):
            per_sample = [int(d) for d in dims]
        else:
            raise EngineError(
                f"input {arg.name!r} has symbolic dimensions {dims}; pass shapes or sample feeds"
            )
        shape = [batch_size, *per_sample]
        if np.issubdtype(dtype, np.floating):
            feeds[arg.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype is np.bool_:
            feeds[arg.name] = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            feeds[arg.name] = rng.integers(0, 2, shape).astype(dtype)
    return feeds


def _stats(ns: list[int]) -> dict[str, float]:
    ms = np.asarray(ns, dtype=np.float64) / 1e6
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p90_ms": float(np.percentile(ms, 90)),
        "mean_ms": float(ms.mean()),
        "min_ms": float(ms.min()),
        "max_ms": float(ms.max()),
    }


def _environment(threads: int) -> dict[str, Any]:
    import onnxruntime as ort

    return {
        "runtime": "onnxruntime",
        "onnxruntime_version": ort.__version__,
        "provider": "CPUExecutionProvider",
        "intra_op_threads": threads,
        "inter_op_threads": 1,
        "graph_optimization": "ORT_ENABLE_ALL",
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def compare_latency(
    models: Mapping[str, Path],
    *,
    baseline: str | None = None,
    batch_sizes: Sequence[int] = (1, 32),
    warmup: int = 10,
    repeats: int = 50,
    threads: int = 1,
    sample: Mapping[str, np.ndarray] | None = None,
    shapes: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, Any]:
    """Time several ONNX files interleaved (see the module docstring).

    Returns {"environment", "settings", "models": {name: {"file", "file_size_bytes", "session_load_ms",
    "batches": [{"batch_size", "p50_ms", "p90_ms", "mean_ms", "min_ms", "max_ms", "per_sample_p50_ms",
    "warmup", "repeats"}]}}, "baseline", "relative": {name: [{"batch_size", "p50_ratio", "p90_ratio",
    "slower"}]}} — "relative" is present when a baseline is named (its own entry has ratio 1).
    """
    if not models:
        raise EngineError("no models to time")
    if baseline is not None and baseline not in models:
        raise EngineError(f"baseline {baseline!r} is not one of the models {sorted(models)}")
    if threads < 1 or warmup < 0 or repeats < 1 or not batch_sizes or min(batch_sizes) < 1:
        raise EngineError("threads and repeats must be at least 1, warmup at least 0, batch sizes positive")
    sessions: dict[str, Any] = {}
    results: dict[str, dict[str, Any]] = {}
    for name, path in models.items():
        started = time.perf_counter_ns()
        sessions[name] = _session(Path(path), threads)
        results[name] = {
            "file": Path(path).name,
            "file_size_bytes": file_bytes(Path(path)),
            "session_load_ms": (time.perf_counter_ns() - started) / 1e6,
            "batches": [],
        }
    for batch_size in batch_sizes:
        feeds = {name: make_inputs(s, batch_size, sample, shapes) for name, s in sessions.items()}
        outputs = {name: [o.name for o in s.get_outputs()] for name, s in sessions.items()}
        times: dict[str, list[int]] = {name: [] for name in sessions}
        for _ in range(warmup):
            for name, session in sessions.items():
                session.run(outputs[name], feeds[name])
        for _ in range(repeats):
            for name, session in sessions.items():
                started = time.perf_counter_ns()
                session.run(outputs[name], feeds[name])
                times[name].append(time.perf_counter_ns() - started)
        for name in sessions:
            stats = _stats(times[name])
            results[name]["batches"].append(
                {
                    "batch_size": batch_size,
                    **stats,
                    "per_sample_p50_ms": stats["p50_ms"] / batch_size,
                    "warmup": warmup,
                    "repeats": repeats,
                }
            )
    report: dict[str, Any] = {
        "environment": _environment(threads),
        "settings": {
            "batch_sizes": list(batch_sizes),
            "warmup": warmup,
            "repeats": repeats,
            "interleaved": len(models) > 1,
            "inputs": "sample feeds" if sample is not None else "seeded random data",
        },
        "models": results,
        "baseline": baseline,
    }
    if baseline is not None:
        report["relative"] = {
            name: _relative(results[name]["batches"], results[baseline]["batches"]) for name in results
        }
    return report


def _relative(batches: list[dict[str, Any]], base: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for mine, theirs in zip(batches, base, strict=True):
        p50 = mine["p50_ms"] / theirs["p50_ms"] if theirs["p50_ms"] > 0 else math.inf
        p90 = mine["p90_ms"] / theirs["p90_ms"] if theirs["p90_ms"] > 0 else math.inf
        out.append(
            {
                "batch_size": mine["batch_size"],
                "p50_ratio": p50,
                "p90_ratio": p90,
                "slower": bool(p50 > 1.0 + SLOWER_MARGIN),
            }
        )
    return out


def measure_latency(
    onnx_path: Path,
    inputs: Mapping[str, np.ndarray] | None = None,
    *,
    batch_sizes: Sequence[int] = (1, 32),
    warmup: int = 10,
    repeats: int = 50,
    threads: int = 1,
    shapes: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, Any]:
    """p50 / p90 latency of one ONNX file per batch size (see the module docstring).

    inputs: sample feeds (rows repeated to each batch size), or None for seeded random data
    (`shapes`: per-sample shapes of symbolic dimensions). Returns {"environment", "settings", "file",
    "file_size_bytes", "session_load_ms", "batches": [...]} as one model of `compare_latency`.
    """
    report = compare_latency(
        {"model": Path(onnx_path)},
        batch_sizes=batch_sizes,
        warmup=warmup,
        repeats=repeats,
        threads=threads,
        sample=inputs,
        shapes=shapes,
    )
    return {"environment": report["environment"], "settings": report["settings"], **report["models"]["model"]}
