"""A sensitivity scan fanned out over the worker pool: the same job with one worker process and with two,
against the same scan computed in this process with no queue at all (the baseline).

Embedded mode (SQLite, kombu's filesystem broker) so that nothing but this repository is needed; every
worker runs torch / onnxruntime on one thread, so two workers can use the machine's two cores.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import report

CONFIGS = [{"type": "weight_quant", "bits": 8}, {"type": "weight_quant", "bits": 4}]
SAMPLES = 4000
LAYERS = 8


def _model(folder: Path) -> tuple[Path, Path]:
    import torch

    from worker.engine.demo_models import export_onnx

    torch.manual_seed(0)
    width = 512
    layers: list[torch.nn.Module] = [torch.nn.Flatten(), torch.nn.Linear(64, width), torch.nn.ReLU()]
    for _ in range(LAYERS - 2):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    layers.append(torch.nn.Linear(width, 10))
    model = torch.nn.Sequential(*layers).eval()
    onnx_path = export_onnx(model, np.zeros((2, 1, 8, 8), dtype=np.float32), folder / "mlp.onnx")
    data = folder / "calibration.npz"
    np.savez(data, input=np.random.default_rng(0).random((SAMPLES, 1, 8, 8), dtype=np.float32))
    return onnx_path, data


def _in_process(model: Path, data: Path) -> float:
    import torch

    from worker.engine.compression import open_compressible
    from worker.engine.sensitivity import layer_sensitivity

    torch.set_num_threads(1)
    feeds = {"input": np.load(data)["input"]}
    start = time.perf_counter()
    layer_sensitivity(open_compressible(model, "onnx", intra_op_threads=1), feeds, CONFIGS, batch_size=500)
    return time.perf_counter() - start


def _through_the_queue_job(
    root: Path, model: Path, data: Path, workers: int, kind: str, params: dict[str, Any]
) -> tuple[float, set[str]]:
    """Run one job of `kind` through a fresh embedded stack with `workers` worker processes; returns its
    duration (started to finished, as the job row says) and the worker ids that took its chunks."""
    from backend.client import KneeboardClient
    from backend.db.migrations import upgrade_to_head
    from backend.settings import Settings
    from tests.support.accounts import account_in
    from tests.support.services import start_api, start_worker

    settings = Settings(data_dir=root / f"data-{kind}-{workers}", seed_demo=False)
    settings.data_dir.mkdir()
    upgrade_to_head(settings.resolved_database_url)
    account = account_in(settings.resolved_database_url, username="bench", team="bench")
    api, base = start_api(settings, root / f"api-{kind}-{workers}.log")
    procs = [
        start_worker(settings, root / f"worker-{kind}-{workers}-{i}.log", name=f"w{i}")
        for i in range(workers)
    ]
    try:
        c = KneeboardClient(base, token=account.token)
        project = c.create_project("bench")
        m = c.upload_model(project["id"], model)
        d = c.upload_dataset(project["id"], data)
        assert c.wait_model(m["id"], timeout=300)["status"] == "ready"
        job = c.create_job(project["id"], kind, {"model_id": m["id"], "dataset_id": d["id"]} | params)
        done = c.wait_job(job["id"], timeout=1800)
        assert done["status"] == "succeeded", done["error"]
        chunks = c.http.get(f"/jobs/{job['id']}/chunks").json()
        return float(done["duration_s"]), {ch["worker_id"] for ch in chunks}
    finally:
        for proc in procs:
            proc.stop()
        api.stop()


def _through_the_queue(root: Path, model: Path, data: Path, workers: int) -> tuple[float, set[str]]:
    params: dict[str, Any] = {
        "configs": CONFIGS,
        "max_samples": SAMPLES,
        "batch_size": 500,
        "whole_model": False,
        "mixed_precision_bits": [],
        "importance_methods": [],
        "threads": 1,
        "chunks": LAYERS,
    }
    return _through_the_queue_job(root, model, data, workers, "sensitivity", params)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model, data = _model(root)
        baseline = _in_process(model, data)
        one, _ = _through_the_queue(root, model, data, workers=1)
        two, used = _through_the_queue(root, model, data, workers=2)
        print(
            f"sensitivity: {LAYERS} Linear layers (512 wide) x {len(CONFIGS)} configs on {SAMPLES} samples, "
            f"{LAYERS} chunks, 1 thread per worker"
        )
        report("one scan in this process (no queue)", baseline, "baseline", baseline)
        report("sensitivity job, 1 worker process", one, "baseline", baseline)
        report(f"sensitivity job, 2 worker processes ({len(used)} used)", two, "baseline", baseline)
        print(f"{'speed-up of 2 workers over 1':<46} {one / two:10.2f}x")


if __name__ == "__main__":
    main()
