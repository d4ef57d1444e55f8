"""A sweep job that takes a task (issue 30), run in-process by the real sweep handler over the real app and
Postgres: a tiny segmentation CNN trained here (tests/support/segmentation.py), exported to ONNX, and a dataset
whose 'masks' ride beside the inputs. The sweep (fp32, W8, W2 per channel) is launched with task
"segmentation", a task objective and a task bound; each stored point carries task.<metric> objectives and its
typed fidelity's task_metrics, and GET /sweep-frontier over task.miou_drop orders and bounds the points by the
drops the points themselves measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from backend.api.result_schemas.sweep import SweepPointDocOut
from backend.settings import Settings
from tests.backend.test_typed_results import extras
from tests.support.app_fixtures import app_fixtures
from tests.support.fidelity_api import FidelityApi
from tests.support.segmentation import IGNORE, segmentation_files
from worker import fanout
from worker.engine.compression import compress_module
from worker.engine.compression.configs import WeightQuant
from worker.engine.formats.exporters import export_onnx
from worker.jobs.sweep import SweepHandler

BITS = (8, 2)


settings, http = app_fixtures("sweep-task")


def _run_sweep(api: FidelityApi, params: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> str:
    """Launch through the API, then plan and run every chunk here (the chunks' messages are caught)."""
    job = api.post("/jobs", json={"project_id": api.project, "kind": "sweep", "params": params})
    sent: list[int] = []
    monkeypatch.setattr(
        fanout, "enqueue_chunk", lambda settings, job_id, index, queue=None: sent.append(index)
    )
    handler = SweepHandler()
    assert fanout.execute_fanout_job(job["id"], handler, api.settings) == "fanned out"
    outcomes = [fanout.execute_chunk(job["id"], index, handler, api.settings) for index in sorted(sent)]
    assert outcomes[-1] == "succeeded", outcomes
    return str(job["id"])


def test_a_segmentation_sweep_has_a_frontier_over_its_miou_drop(
    http: TestClient, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = segmentation_files(tmp_path)
    api = FidelityApi(http, settings, "sweep-task", files.golden, files.int8, files.dataset)
    params = {
        "model_id": api.golden,
        "dataset_id": api.dataset,
        "configs": [{"type": "weight_quant", "bits": b, "per_channel": True} for b in BITS],
        "task": "segmentation",
        "task_options": {"ignore_index": IGNORE},
        "objectives": ["task.miou_drop:min", "size_bytes:min"],
        "bounds": ["task.miou_drop<=0.05"],
        "batch_size": 32,
        "latency": False,
        "export": False,
        "attribution": False,
    }
    job_id = _run_sweep(api, params, monkeypatch)

    page = api.get(f"/jobs/{job_id}/sweep/points?details=true")
    assert page.status_code == 200, page.text
    points = sorted(page.json()["items"], key=lambda p: p["index"])
    assert points[0]["label"] == "fp32" and len(points) == 1 + len(BITS)
    drops = []
    for p in points:
        fidelity = p["point"]["fidelity"]
        assert list(extras(SweepPointDocOut.model_validate(p["point"]))) == []  # typed, task_metrics included
        assert p["objectives"]["task.miou_drop"] == fidelity["task_metrics"]["miou_drop"]
        drops.append(fidelity["task_metrics"]["miou_drop"])
    assert drops[0] == 0.0 and drops[2] > 0.05 > drops[1]  # 2-bit weights lose mIoU against the masks

    query = {"job_ids": [job_id], "objective": ["size_bytes:min", "task.miou_drop:min"]}
    frontier = api.get(
        "/sweep-frontier?" + "&".join(f"{k}={v}" for k, vs in query.items() for v in vs)
    ).json()
    along = [p["objectives"]["task.miou_drop"] for p in frontier["frontier"]]
    # in order of size (the first objective): the smallest model, 2-bit, first with the largest drop
    assert along == sorted(along, reverse=True) and frontier["frontier"][0]["index"] == 2
    bounded = api.get(
        "/sweep-frontier?"
        + "&".join(f"{k}={v}" for k, vs in query.items() for v in vs)
        + "&bound=task.miou_drop%3C%3D0.05"
    ).json()
    assert bounded["filtered"] == 1 and 2 not in [p["index"] for p in bounded["frontier"]]
    assert all(p["objectives"]["task.miou_drop"] <= 0.05 for p in bounded["frontier"])


class _Denoiser(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 1, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.conv2(torch.relu(self.conv1(x))))


def test_an_image_sweep_reads_its_targets_beside_an_array_named_otherwise(
    http: TestClient, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dataset's one picture array ('noisy') feeds the model's one input ('input') by position, and its
    'targets' still reach the task: every point has a PSNR drop against them, on the frontier's axis."""
    torch.manual_seed(0)
    model = _Denoiser().eval()
    rng = np.random.default_rng(0)
    clean = rng.uniform(0, 1, (32, 1, 12, 12)).astype(np.float32)
    noisy = np.clip(clean + rng.normal(0, 0.1, clean.shape), 0, 1).astype(np.float32)
    golden = export_onnx(model, noisy[:2], tmp_path / "golden.onnx", "input", "denoised")
    copy = compress_module(model, {n: WeightQuant(8) for n in ("conv1", "conv2")})[0].eval()
    int8 = export_onnx(copy, noisy[:2], tmp_path / "w8.onnx", "input", "denoised")
    np.savez(tmp_path / "pictures.npz", noisy=noisy, targets=clean)
    api = FidelityApi(http, settings, "sweep-image", golden, int8, tmp_path / "pictures.npz")
    params = {
        "model_id": api.golden,
        "dataset_id": api.dataset,
        "configs": [{"type": "weight_quant", "bits": b, "per_channel": True} for b in BITS],
        "task": "image",
        "objectives": ["task.psnr_drop_db:min", "size_bytes:min"],
        "batch_size": 16,
        "latency": False,
        "export": False,
        "attribution": False,
    }
    job_id = _run_sweep(api, params, monkeypatch)
    points = sorted(api.get(f"/jobs/{job_id}/sweep/points").json()["items"], key=lambda p: p["index"])
    drops = [p["objectives"]["task.psnr_drop_db"] for p in points]
    assert drops[0] == 0.0 and all(isinstance(d, float) for d in drops), drops
    query = "objective=size_bytes%3Amin&objective=task.psnr_drop_db%3Amin"
    frontier = api.get(f"/sweep-frontier?job_ids={job_id}&{query}").json()
    assert frontier["excluded"] == [] and frontier["frontier"], frontier
