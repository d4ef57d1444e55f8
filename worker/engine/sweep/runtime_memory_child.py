"""The child process of `runtime_memory.measure_runtime_memory`: run as a script by a fresh interpreter, it
imports numpy and onnxruntime only (no torch, no Kneeboard package), so that its resident memory before the
session is the interpreter + onnxruntime baseline and its peak is that of one inference session.

    python runtime_memory_child.py REQUEST.json

REQUEST: {"model", "batch_size", "runs", "threads", "sample" (an .npz of sample rows, or null)}. Prints one
JSON line: {"baseline_rss_mib", "after_load_rss_mib", "peak_rss_mib", "peak_reset", "load_ms", "run_ms"}.
Any failure exits non-zero with the reason on stderr (the parent quotes its tail).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

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


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def _reset_peak() -> bool:
    """VmHWM back to the current RSS (Linux 4.0+): the peak then excludes the imports' transient memory."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _inputs(session: Any, batch_size: int, sample: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """As latency.make_inputs: sample rows repeated cyclically (by name, or the only array for a one-input
    model), else seeded random data of the declared dtype and shape."""
    rng = np.random.default_rng(0)
    args = session.get_inputs()
    feeds = {}
    for arg in args:
        given = sample.get(arg.name)
        if given is None and len(args) == 1 and len(sample) == 1:
            given = next(iter(sample.values()))
        dtype = _NUMPY_OF.get(arg.type)
        if given is not None:
            rows = np.arange(batch_size) % len(given)
            feeds[arg.name] = given[rows].astype(dtype or given.dtype, copy=False)
            continue
        dims = list(arg.shape)[1:]
        if dtype is None or not all(isinstance(d, int) for d in dims):
            raise RuntimeError(f"input {arg.name!r} ({arg.type}, shape {arg.shape}) needs sample feeds")
        shape = [batch_size, *dims]
        if np.issubdtype(dtype, np.floating):
            feeds[arg.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[arg.name] = rng.integers(0, 2, shape).astype(dtype)
    return feeds


def main(request_path: str) -> None:
    request = json.loads(Path(request_path).read_text())
    sample: dict[str, np.ndarray] = {}
    if request.get("sample"):
        with np.load(request["sample"], allow_pickle=False) as archive:
            sample = {name: archive[name] for name in archive.files}
    baseline = _status_kib("VmRSS")
    reset = _reset_peak()
    options = ort.SessionOptions()  # as latency._session
    options.intra_op_num_threads = int(request["threads"])
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    started = time.perf_counter_ns()
    session = ort.InferenceSession(request["model"], options, providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter_ns() - started) / 1e6
    after_load = _status_kib("VmRSS")
    feeds = _inputs(session, int(request["batch_size"]), sample)
    outputs = [o.name for o in session.get_outputs()]
    started = time.perf_counter_ns()
    for _ in range(int(request["runs"])):
        session.run(outputs, feeds)
    run_ms = (time.perf_counter_ns() - started) / 1e6
    peak = _status_kib("VmHWM")
    report = {
        "baseline_rss_mib": baseline / 1024,
        "after_load_rss_mib": after_load / 1024,
        "peak_rss_mib": peak / 1024,
        "peak_reset": reset,
        "load_ms": load_ms,
        "run_ms": run_ms,
    }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
