"""A fidelity job with robustness slices through the queue and a real worker process: the document is
served typed by GET /jobs/{id}/robustness and listed in the report's diagnostics, with the
out-of-distribution dataset the job names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from backend.api.result_schemas.robustness import RobustnessOut
from tests.backend.test_typed_results import extras
from tests.e2e.conftest import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_queued_job_with_robustness_serves_its_slices(
    make_stack: Any, demo_files: Any, tmp_path: Path
) -> None:
    stack: Stack = make_stack()
    stack.add_worker("w1")
    c = stack.client
    project = c.create_project("robustness")
    golden = c.upload_model(project["id"], demo_files.golden_onnx)
    int8 = c.upload_model(project["id"], demo_files.int8_onnx)
    dataset = c.upload_dataset(project["id"], demo_files.test_npz)
    digits = np.load(demo_files.test_npz)
    np.savez(tmp_path / "inverted.npz", input=1.0 - digits["input"], labels=digits["labels"])
    ood = c.upload_dataset(project["id"], tmp_path / "inverted.npz")
    for model in (golden, int8):
        assert c.wait_model(model["id"], timeout=120)["status"] == "ready"
    params = {
        "golden_model_id": golden["id"],
        "compressed_model_id": int8["id"],
        "dataset_id": dataset["id"],
        "layer_profile": False,
        "robustness": {
            "slices": ["gaussian_noise", "gaussian_blur"],
            "severities": [1, 3],
            "ood_dataset_id": ood["id"],
        },
    }
    job = c.create_job(project["id"], "fidelity", params)
    done = c.wait_job(job["id"], timeout=300)
    assert done["status"] == "succeeded", done["error"]
    response = c.http.get(f"/jobs/{job['id']}/robustness")
    assert response.status_code == 200, response.text
    served = RobustnessOut.model_validate(response.json())
    assert not list(extras(served)) and served.error is None
    assert [s.name for s in served.slices] == ["gaussian_noise", "gaussian_blur"]
    noise = served.slices[0].points
    assert [p.severity for p in noise] == [1, 3]
    assert noise[0].brittleness_ratio is not None and noise[1].brittleness_ratio is not None
    assert noise[1].kl_mean_nats is not None and noise[0].kl_mean_nats is not None
    assert noise[1].kl_mean_nats > noise[0].kl_mean_nats
    # The worker process read the second dataset from the artifact store (the in-process check of its
    # numbers against scipy is tests/backend/test_robustness_job.py).
    assert served.ood is not None and served.ood.error is None, served.ood
    assert served.ood.dataset_name == "inverted.npz" and served.ood.n_samples == 360
    assert served.ood.kl_mean_nats is not None and served.ood.brittleness_ratio is not None
    report = c.http.get(f"/jobs/{job['id']}/fidelity").json()
    assert "robustness" in report["diagnostics"]
