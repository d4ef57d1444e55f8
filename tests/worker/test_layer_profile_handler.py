"""The fidelity job's layer profile (worker/jobs/fidelity.py _layer_profile) on the real demo models: whatever
stops the profile (an allocation that fails in numpy or in onnxruntime, a bug) leaves a document that says
why and what to change, so the job keeps its output-level report; a cancellation and the soft time limit go
through, even from inside the runtime or the local sub-graphs; TorchScript gets its note."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from celery.exceptions import SoftTimeLimitExceeded

from backend.contracts import FidelityJobParams
from backend.settings import Settings
from worker.demo.models import (
    export_torchscript,
    load_digits_split,
    train_digits_cnn,
    write_demo_bundle,
)
from worker.engine.errors import JobCancelled
from worker.engine.layer_profile import DEFAULT_MEMORY_BUDGET_MB, TORCHSCRIPT_NOTE
from worker.jobs.layer_profile_step import _layer_profile

ORT_ALLOCATION_FAILURE = (
    "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while running Conv node. "
    "Failed to allocate memory for requested buffer of size 18956992512"
)


@dataclass(frozen=True)
class Demo:
    golden: Path
    int8: Path
    x: np.ndarray


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    bundle = write_demo_bundle(tmp_path_factory.mktemp("demo"))
    return Demo(bundle.golden_onnx, bundle.int8_onnx, np.load(bundle.test_npz)["input"][:40])


def profile(models: list[tuple[Path, Any]], x: np.ndarray, progress: Any = None) -> dict[str, Any]:
    """_layer_profile as the fidelity handler calls it, with a context that records progress."""
    seen: list[str] = []
    ctx = SimpleNamespace(
        progress=progress or (lambda fraction, message: seen.append(message)),
        settings=SimpleNamespace(profile_memory_budget_mb=0.5),
    )
    params = FidelityJobParams(
        golden_model_id=uuid.uuid4(), compressed_model_id=uuid.uuid4(), dataset_id=uuid.uuid4(), threads=1
    )
    return _layer_profile(ctx, params, models, {"input": x}, len(x), 0.5)  # type: ignore[arg-type]


def onnx_pair(demo: Demo) -> list[tuple[Path, Any]]:
    return [(demo.golden, "onnx"), (demo.int8, "onnx")]


def test_the_setting_default_is_the_engines_default() -> None:
    assert Settings().profile_memory_budget_mb == DEFAULT_MEMORY_BUDGET_MB


def test_a_profile_is_made_in_the_budgets_batches(demo: Demo) -> None:
    doc = profile(onnx_pair(demo), demo.x)
    assert "error" not in doc and doc["n_samples"] == len(demo.x)
    assert 1 < doc["profile_batch_size"] < len(demo.x)  # 0.5 MiB: several batches of the digits CNN
    assert any(layer["qdq_err"] is not None for layer in doc["layers"])


def raise_in_sums(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """Make the profile's accumulation raise `exc` (after both models ran the first batch)."""

    def fail(*args: object) -> None:
        raise exc

    monkeypatch.setattr("worker.engine.layer_profile.accumulate.sample_sums", fail)
    monkeypatch.setattr("worker.engine.layer_profile.accumulate.shared_sample_sums", fail)


def raise_in_runtime(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """Make every onnxruntime run raise `exc` (the engine wraps it in an EngineError)."""
    import onnxruntime

    def fail(*args: object, **kwargs: object) -> None:
        raise exc

    monkeypatch.setattr(onnxruntime.InferenceSession, "run", fail)


def test_numpy_out_of_memory_leaves_a_note_with_what_to_change(
    demo: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    raise_in_sums(monkeypatch, MemoryError("Unable to allocate 18.1 GiB for an array"))
    doc = profile(onnx_pair(demo), demo.x)
    assert set(doc) == {"error"}
    assert "out of memory" in doc["error"] and "18.1 GiB" in doc["error"]
    assert "KNEEBOARD_PROFILE_MEMORY_BUDGET_MB (now 0.5 MiB" in doc["error"]
    assert "output-level report is complete" in doc["error"]


def test_onnxruntime_allocation_failure_is_named_as_memory(
    demo: Demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    raise_in_runtime(monkeypatch, RuntimeError(ORT_ALLOCATION_FAILURE))
    doc = profile(onnx_pair(demo), demo.x)
    assert "out of memory" in doc["error"] and "Failed to allocate memory" in doc["error"]
    assert "KNEEBOARD_PROFILE_MEMORY_BUDGET_MB" in doc["error"]


def test_a_bug_in_the_profile_is_reported_not_raised(demo: Demo, monkeypatch: pytest.MonkeyPatch) -> None:
    raise_in_sums(monkeypatch, ZeroDivisionError("float division by zero"))
    doc = profile(onnx_pair(demo), demo.x)
    assert "internal error ZeroDivisionError: float division by zero" in doc["error"]
    assert "layer_profile=false" in doc["error"]


@pytest.mark.parametrize("where", ["sums", "runtime", "local"])
def test_the_soft_time_limit_goes_through(demo: Demo, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """Celery raises SoftTimeLimitExceeded (an Exception) wherever Python is: in numpy code, on return
    from onnxruntime (wrapped by the engine in an EngineError) or in the local sub-graphs (whose failures
    are otherwise recorded per layer)."""
    stop = SoftTimeLimitExceeded()
    if where == "sums":
        raise_in_sums(monkeypatch, stop)
    elif where == "runtime":
        raise_in_runtime(monkeypatch, stop)
    else:

        def fail(*args: object) -> None:
            raise stop

        monkeypatch.setattr("worker.engine.layer_profile.onnx_local.OnnxLocal.run", fail)
    with pytest.raises(SoftTimeLimitExceeded) as raised:
        profile(onnx_pair(demo), demo.x)
    assert raised.value is stop


def test_a_cancellation_goes_through(demo: Demo) -> None:
    def progress(fraction: float, message: str) -> None:
        if "samples" in message:
            raise JobCancelled("cancelled")

    with pytest.raises(JobCancelled):
        profile(onnx_pair(demo), demo.x, progress)


def test_torchscript_models_get_the_note(tmp_path: Path) -> None:
    split = load_digits_split()
    script = export_torchscript(train_digits_cnn(split, epochs=1), split.x_test[:2], tmp_path / "cnn.pt")
    doc = profile([(script, "torchscript"), (script, "torchscript")], split.x_test[:8])
    assert doc["layers"] == [] and doc["notes"] == [TORCHSCRIPT_NOTE] and doc["kernel_gap"] is None
