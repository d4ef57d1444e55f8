"""The run-time memory of an ONNX file, measured in a child process (worker/engine/sweep/runtime_memory.py).

Checked against independent figures: a model holding a 4096 × 4096 float32 weight (64 MiB, the
initializer's nbytes) needs at least that much more session memory than a tiny model, and the child's peak
(its VmHWM) agrees with the kernel's own ru_maxrss of RUSAGE_CHILDREN taken around the child. ru_maxrss is
taken in a small launcher interpreter, not in pytest: at exec the kernel carries the parent's peak RSS into
the child's ru_maxrss, so a parent bigger than the child (pytest holds torch: ~600 MiB) would hide the child's
figure. Bad files and children that die or hang end in a clear EngineError, the hung child killed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from worker.engine.errors import EngineError
from worker.engine.sweep import runtime_memory
from worker.engine.sweep.runtime_memory import measure_runtime_memory

ROOT = Path(__file__).resolve().parents[3]

# Loads runtime_memory.py alone (not the worker.engine.sweep package, which imports torch-sized modules),
# measures one file, and prints the report with the kernel's ru_maxrss of its children, before and after,
# and its own peak (VmHWM: its ru_maxrss holds pytest's, carried in at its exec).
_LAUNCHER = """
import importlib.util, json, resource, sys
sys.path.insert(0, sys.argv[1])
spec = importlib.util.spec_from_file_location("runtime_memory", sys.argv[2])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
report = module.measure_runtime_memory(sys.argv[3], batch_size=4)
after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
own = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"report": report, "children_before_kib": before, "children_after_kib": after, "own_kib": own}))
"""


def _matmul_model(n: int, path: Path) -> int:
    """y = x @ W with W an n × n float32 initializer; returns W's nbytes."""
    weight = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", n])],
        [numpy_helper.from_array(weight, "w")],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return int(weight.nbytes)


def _launch(model: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, str(ROOT), runtime_memory.__file__, str(model)],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_big_weight_costs_its_bytes_and_the_peak_is_the_kernels_figure(tmp_path: Path) -> None:
    weight_bytes = _matmul_model(4096, tmp_path / "big.onnx")
    _matmul_model(8, tmp_path / "tiny.onnx")
    big, tiny = _launch(tmp_path / "big.onnx"), _launch(tmp_path / "tiny.onnx")
    for run in (big, tiny):
        report = run["report"]
        assert isinstance(report, dict)
        # the launcher is smaller than the child, so ru_maxrss is the child's own peak (KiB on Linux)
        assert run["own_kib"] < report["peak_rss_mib"] * 1024  # type: ignore[operator]
        kernel_mib = run["children_after_kib"] / 1024  # type: ignore[operator]
        assert run["children_before_kib"] == 0
        assert kernel_mib == pytest.approx(report["peak_rss_mib"], abs=2.0, rel=0.02)
        assert report["session_mib"] == pytest.approx(report["peak_rss_mib"] - report["baseline_rss_mib"])
        assert report["baseline_rss_mib"] > 0 and report["session_mib"] > 0
    big_report, tiny_report = big["report"], tiny["report"]
    assert isinstance(big_report, dict) and isinstance(tiny_report, dict)
    extra_mib = big_report["session_mib"] - tiny_report["session_mib"]
    assert extra_mib >= 0.95 * weight_bytes / 2**20, (extra_mib, weight_bytes)
    # and not absurdly more: the protobuf and the session's tensor, a few copies at most
    assert extra_mib <= 4 * weight_bytes / 2**20, (extra_mib, weight_bytes)


def test_sample_feeds_are_repeated_to_the_batch_size(tmp_path: Path) -> None:
    _matmul_model(8, tmp_path / "tiny.onnx")
    sample = {"x": np.ones((2, 8), np.float32), "labels": np.arange(2), "names": np.array(["a", "b"])}
    report = measure_runtime_memory(tmp_path / "tiny.onnx", batch_size=5, sample=sample, runs=2)
    assert report["batch_size"] == 5 and report["runs"] == 2 and report["wall_s"] > 0


def test_a_corrupt_file_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"this is no protobuf" * 100)
    started = time.monotonic()
    with pytest.raises(EngineError, match=r"corrupt\.onnx failed \(exit code 1: .*") as caught:
        measure_runtime_memory(corrupt, timeout_s=60)
    assert time.monotonic() - started < 60
    assert "InferenceSession" in str(caught.value) or "onnxruntime" in str(caught.value).lower()
    with pytest.raises(EngineError, match="no ONNX file"):
        measure_runtime_memory(tmp_path / "missing.onnx")
    with pytest.raises(EngineError, match="at least 1"):
        measure_runtime_memory(corrupt, batch_size=0)


def _stand_in(tmp_path: Path, body: str) -> Path:
    """A child script in place of the real one: it records its pid, then does `body`."""
    script = tmp_path / "child.py"
    script.write_text(
        f"import os, sys, time\nopen({str(tmp_path / 'pid')!r}, 'w').write(str(os.getpid()))\n{body}\n"
    )
    return script


def test_a_child_past_the_timeout_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _matmul_model(8, tmp_path / "tiny.onnx")
    monkeypatch.setattr(runtime_memory, "CHILD", _stand_in(tmp_path, "time.sleep(600)"))
    started = time.monotonic()
    with pytest.raises(EngineError, match=r"more than 2 s; the child process was killed"):
        measure_runtime_memory(tmp_path / "tiny.onnx", timeout_s=2)
    assert time.monotonic() - started < 15
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped: no such process any more
        os.kill(pid, 0)


def test_a_child_killed_by_a_signal_says_which(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _matmul_model(8, tmp_path / "tiny.onnx")
    body = "sys.stderr.write('allocating...\\n'); sys.stderr.flush(); os.kill(os.getpid(), 9)"
    monkeypatch.setattr(runtime_memory, "CHILD", _stand_in(tmp_path, body))
    with pytest.raises(EngineError, match=r"failed \(signal SIGKILL: allocating\.\.\.\)"):
        measure_runtime_memory(tmp_path / "tiny.onnx")
    monkeypatch.setattr(runtime_memory, "CHILD", _stand_in(tmp_path, "print('no json')"))
    with pytest.raises(EngineError, match="printed no report"):
        measure_runtime_memory(tmp_path / "tiny.onnx")
