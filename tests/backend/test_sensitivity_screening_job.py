"""A screened sensitivity job (issue 31), run in-process by the real fan-out handler over the real app and
Postgres: a 41-Linear residual MLP (tests/support/varied_mlp.py) exported to ONNX, screening with top_k 4
and control 3. The stored report is typed, says which cells are exact (the matrix's `exact` grid and each
cell's flag), carries the screening summary, and its exact cells equal an exact scan of those layers
computed directly by the engine. Screening with all_but or a task is refused at launch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from backend.api.sensitivity_schemas import SensitivityReportOut
from backend.settings import Settings
from tests.backend.test_sweep_calibration_job import _refusal, _run_fanout
from tests.backend.test_typed_results import extras
from tests.support.app_fixtures import app_fixtures
from tests.support.fidelity_api import FidelityApi
from tests.support.varied_mlp import varied_mlp_onnx
from worker.engine.compression import open_compressible
from worker.engine.sensitivity.scan import layer_sensitivity
from worker.jobs.sensitivity import SensitivityHandler

settings, http = app_fixtures("sensitivity-screening")

CONFIGS = [{"type": "weight_quant", "bits": 8}, {"type": "weight_quant", "bits": 4}]


def _params(api: FidelityApi, **extra: Any) -> dict[str, Any]:
    return {
        "model_id": api.golden,
        "dataset_id": api.dataset,
        "configs": CONFIGS,
        "batch_size": 32,
        "screening": {"top_k": 4, "control": 3, "seed": 5},
        "importance_methods": [],
        "mixed_precision_bits": [],
        "whole_model": False,
    } | extra


def _api(
    http: TestClient, settings: Settings, tmp_path: Path, name: str
) -> tuple[FidelityApi, Path, np.ndarray]:
    path, x = varied_mlp_onnx(tmp_path, blocks=20, samples=64)
    np.savez(tmp_path / "rows.npz", input=x)
    other = tmp_path / "other"
    other.mkdir()
    second, _ = varied_mlp_onnx(other, blocks=20, samples=2, seed=1)  # the api wants a second model
    return FidelityApi(http, settings, name, path, second, tmp_path / "rows.npz"), path, x


def test_a_screened_scan_marks_its_exact_cells_and_they_equal_the_exact_scan(
    http: TestClient, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api, path, x = _api(http, settings, tmp_path, "sensitivity-screening")
    job_id = _run_fanout(api, "sensitivity", _params(api), SensitivityHandler(), monkeypatch)
    answer = api.get(f"/jobs/{job_id}/sensitivity?cells=true")
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert list(extras(SensitivityReportOut.model_validate(report))) == []  # every new field typed
    summary = report["screening"]
    assert (summary["top_k"], summary["control"], summary["exact_cells"], summary["total_cells"]) == (
        4,
        3,
        14,
        82,
    )
    measured = set(summary["top_layers"]) | set(summary["control_layers"])
    rows, grid = report["matrix"]["rows"], report["matrix"]["exact"]
    assert len(rows) == 41
    assert {row for row, flags in zip(rows, grid, strict=True) if all(flags)} == measured
    assert not any(any(flags) for row, flags in zip(rows, grid, strict=True) if row not in measured)
    exact = layer_sensitivity(
        open_compressible(path, "onnx"), {"input": x}, CONFIGS, layers=sorted(measured), batch_size=32
    )
    for cell in report["cells"]:
        assert cell["exact"] == (cell["layer"] in measured)
        if cell["exact"]:
            assert cell["kl_mean"] == exact.cell(cell["layer"], cell["config"]).divergence.kl_mean
        else:
            assert cell["kl_mean"] is not None and cell["estimate"] is not None
    assert any("14 of 82 cells measured exactly" in note for note in report["notes"])


def test_screening_with_all_but_or_a_task_is_refused_at_launch(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    api, _, _ = _api(http, settings, tmp_path, "sensitivity-screening-bad")
    words = _refusal(api, _params(api, all_but=True), kind="sensitivity")
    assert "screening ranks every layer on KL / SQNR" in words
    words = _refusal(api, _params(api, screening={"top_k": -1}), kind="sensitivity")
    assert "top_k" in words
