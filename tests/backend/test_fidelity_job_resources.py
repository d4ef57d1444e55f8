"""A fidelity job stores what it cost (issue 32): its peak RSS, the comparison's and the job's seconds and the
batch it compared in, served typed with the summary. The demo's digits CNN against its int8 copy, run
in-process by the real FidelityHandler over the real app and Postgres; and the batch rule of the job on a
real ONNX model whose early activation is large."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.backend.test_robustness_job import api, bundle, settings  # noqa: F401 (fixtures)
from tests.engine.test_fidelity_batching import Wide
from tests.support.fidelity_api import FidelityApi
from worker.demo.models import export_onnx
from worker.engine.fidelity.batching import ACTIVATION_BUDGET_BYTES
from worker.engine.loaders import load_model
from worker.jobs.fidelity import _comparison_batch


def test_a_job_stores_its_peak_memory_and_timings(api: FidelityApi) -> None:  # noqa: F811
    job_id = api.fidelity(batch_size=50)
    answer = api.get(f"/jobs/{job_id}/fidelity")
    assert answer.status_code == 200, answer.text
    resources = answer.json()["summary"]["resources"]
    assert resources["batch_size"] == 50  # the digits' activations are small: the batch asked for
    assert 50 < resources["peak_rss_mib"] < 8192
    assert 0 < resources["compare_s"] <= resources["job_s"]


def test_a_large_activation_shrinks_the_batch_and_says_so(tmp_path: Path) -> None:
    torch_model = Wide().eval()
    x = np.random.default_rng(0).random((8, 3, 64, 64), dtype=np.float32)
    path = export_onnx(torch_model, x[:1], tmp_path / "wide.onnx")
    runner = load_model(path, "onnx")
    per_sample = 48 * 64 * 64 * 4
    batch, note = _comparison_batch(4096, (path, "onnx"), runner, {"input": x})
    assert batch == ACTIVATION_BUDGET_BYTES // per_sample
    assert note is not None and f"batches of {batch} samples, not 4096" in note
    assert _comparison_batch(8, (path, "onnx"), runner, {"input": x}) == (8, None)
    assert _comparison_batch(4096, (path, "onnx"), runner, {"other": x}) == (4096, None)
