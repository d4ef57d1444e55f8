"""Whole-job memory (issue 32): a real fidelity job — EfficientNet-Lite0 fp32 against its int8 QDQ version at
224 px, 64 samples, default parameters (the per-layer profile included, default threads) — run by the real FidelityHandler over
the real app (embedded SQLite), each in a fresh process. The job stores its own peak RSS (VmHWM reset at job
start) and seconds; the baseline is the same job with the comparison's memory-budget batch turned off (the
job's batch_size of 64 taken as is), measured in the same run. Goal: <= 1.5 GB, no slower.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench.common import report

_JOB = """
import json, os, sys
from pathlib import Path
if os.environ.get("BENCH_NO_BATCH_CAP"):
    import worker.engine.fidelity.batching as batching
    batching.ACTIVATION_BUDGET_BYTES = 1 << 60
from fastapi.testclient import TestClient
from backend.api.app import create_app
from backend.db.migrations import upgrade_to_head
from backend.settings import Settings
from tests.support.fidelity_api import FidelityApi
root = Path(sys.argv[1])
settings = Settings(data_dir=root / "data", seed_demo=False)
settings.data_dir.mkdir(exist_ok=True)
upgrade_to_head(settings.resolved_database_url)
with TestClient(create_app(settings, run_reaper=False)) as http:
    api = FidelityApi(http, settings, "bench", root / "lite0.onnx", root / "lite0_int8.onnx", root / "images.npz")
    job = api.fidelity()
    print("RESOURCES=" + json.dumps(api.get(f"/jobs/{job}/fidelity").json()["summary"]["resources"]))
"""


def _job(folder: Path, cap: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory(dir=folder) as run:
        for name in ("lite0.onnx", "lite0_int8.onnx", "images.npz"):
            os.link(folder / name, Path(run) / name)
        env = {**os.environ, **({} if cap else {"BENCH_NO_BATCH_CAP": "1"})}
        out = subprocess.run(
            [sys.executable, "-c", _JOB, run],
            capture_output=True,
            text=True,
            env=env,
            timeout=1800,
            check=False,
        )
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESOURCES=")), None)
    if line is None:
        raise RuntimeError(f"the job did not finish: {out.stderr[-2000:]}")
    return dict(json.loads(line.removeprefix("RESOURCES=")))


def main() -> None:
    from tests.support.pretrained_lite0 import efficientnet_lite0
    from tests.support.sample_images import sample_images
    from worker.demo.models import export_onnx, quantize_onnx_int8

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        images = sample_images().images
        golden = export_onnx(efficientnet_lite0(), images[:2], folder / "lite0.onnx")
        quantize_onnx_int8(golden, folder / "lite0_int8.onnx", images, reduce_range=True)
        np.savez(folder / "images.npz", input=np.tile(images, (4, 1, 1, 1)))
        print(
            "job memory: fidelity job, EfficientNet-Lite0 fp32 vs int8, 224 px, 64 samples, profile on, default threads"
        )
        base = _job(folder, cap=False)
        new = _job(folder, cap=True)
        report(f"batch {base['batch_size']} (as asked)", base["job_s"], "baseline", base["job_s"])
        print(f"    peak RSS {base['peak_rss_mib']:.0f} MiB, comparison {base['compare_s']:.2f} s")
        report(f"batch {new['batch_size']} (memory budget)", new["job_s"], "baseline", base["job_s"])
        print(f"    peak RSS {new['peak_rss_mib']:.0f} MiB, comparison {new['compare_s']:.2f} s")


if __name__ == "__main__":
    main()
