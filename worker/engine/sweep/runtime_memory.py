"""The run-time memory of an ONNX file: the peak resident memory of an onnxruntime inference session that
loads it and runs it, measured in a child process (issue 33).

Why a child: the sweep's worker is a Celery pool process that holds torch, the golden model, the dataset and
its caches (hundreds of MiB) and runs job after job; its own peak says nothing about one model. A fresh
interpreter (`runtime_memory_child.py`, run with this Python; neither fork, which would copy the pool
process, nor an import of Kneeboard) imports numpy and onnxruntime, reads VmRSS (the baseline), resets its
VmHWM (Linux keeps a process's peak RSS there; writing 5 to /proc/self/clear_refs sets it back to the current
RSS), creates the session with latency.py's options (CPUExecutionProvider, intra-op threads pinned, inter-op
1, sequential), runs `runs` inferences at `batch_size` and reads VmHWM: the peak.

Reported: peak_rss_mib, baseline_rss_mib, session_mib = peak - baseline (what loading and running the model
adds to a process that already has onnxruntime), after_load_rss_mib, the load and run times, and wall_s (the
whole measurement, interpreter start included: its cost per point). A child past `timeout_s` is killed; one
that fails or dies (exit code or signal) raises EngineError with the tail of its stderr.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from worker.engine.errors import EngineError

CHILD = Path(__file__).with_name("runtime_memory_child.py")
DEFAULT_TIMEOUT_S = 120.0
_STDERR_TAIL = 800


def _write_sample(sample: Mapping[str, np.ndarray], rows: int, path: Path) -> bool:
    """The first `rows` rows of each numeric array (the child repeats them to the batch size); False: none."""
    arrays = {}
    for name, value in sample.items():
        array = np.asarray(value)
        if array.ndim >= 1 and array.dtype.kind in "biufc" and len(array) > 0:
            arrays[name] = np.ascontiguousarray(array[:rows])
    if not arrays:
        return False
    np.savez(path, **arrays)  # type: ignore[arg-type]
    return True


def _died(code: int, stderr: str) -> str:
    how = f"exit code {code}"
    if code < 0:
        try:
            how = f"signal {signal.Signals(-code).name}"
        except ValueError:
            how = f"signal {-code}"
    tail = stderr.strip()[-_STDERR_TAIL:]
    return f"{how}: {tail}" if tail else how


def measure_runtime_memory(
    onnx_path: Path,
    *,
    batch_size: int = 1,
    sample: Mapping[str, np.ndarray] | None = None,
    threads: int = 1,
    runs: int = 3,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """Peak RSS of a child process running the ONNX file in onnxruntime (see the module docstring).

    sample: feeds whose rows are repeated to `batch_size` (by input name, or the only array for a
    one-input model); inputs it lacks get seeded random data of their declared dtype and shape.
    """
    path = Path(onnx_path)
    if not path.is_file():
        raise EngineError(f"no ONNX file at {path}")
    if batch_size < 1 or runs < 1 or threads < 1 or timeout_s <= 0:
        raise EngineError("batch_size, runs and threads must be at least 1, the timeout positive")
    with tempfile.TemporaryDirectory(prefix="kneeboard-memory-") as tmp:
        sample_path = Path(tmp) / "sample.npz"
        has_sample = sample is not None and _write_sample(sample, batch_size, sample_path)
        request = {
            "model": str(path.resolve()),
            "batch_size": batch_size,
            "runs": runs,
            "threads": threads,
            "sample": str(sample_path) if has_sample else None,
        }
        request_path = Path(tmp) / "request.json"
        request_path.write_text(json.dumps(request))
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, str(CHILD), str(request_path)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:  # subprocess.run has killed and reaped the child
            raise EngineError(
                f"measuring the run-time memory of {path.name} took more than {timeout_s:g} s; the child "
                "process was killed"
            ) from exc
        wall_s = time.perf_counter() - started
    if done.returncode != 0:
        raise EngineError(
            f"the child process measuring the run-time memory of {path.name} failed ("
            f"{_died(done.returncode, done.stderr)})"
        )
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError) as exc:
        raise EngineError(
            f"the memory child of {path.name} printed no report: {done.stdout[-200:]!r}"
        ) from exc
    peak, baseline = float(report["peak_rss_mib"]), float(report["baseline_rss_mib"])
    return {
        "method": "VmHWM of a child process (onnxruntime CPUExecutionProvider)",
        "file": path.name,
        "batch_size": batch_size,
        "runs": runs,
        "threads": threads,
        "peak_rss_mib": peak,
        "baseline_rss_mib": baseline,
        "session_mib": peak - baseline,
        "after_load_rss_mib": float(report["after_load_rss_mib"]),
        "peak_reset": bool(report["peak_reset"]),
        "load_ms": float(report["load_ms"]),
        "run_ms": float(report["run_ms"]),
        "wall_s": wall_s,
    }
