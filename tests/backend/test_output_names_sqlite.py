"""The sample inspector serves outputs with any legal ONNX name on the embedded database too (issue 32):
the same real ONNX model pair as test_output_names_end_to_end.py, over SQLite (its JSON path syntax differs
from PostgreSQL's, so the name is matched with json_each there)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.db.migrations import upgrade_to_head
from backend.settings import Settings
from tests.backend.test_output_names_end_to_end import CLASSES, FEATURES, NAMES, N, stored_job
from tests.support.accounts import account_in


def test_every_output_by_its_name_over_sqlite(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", seed_demo=False, max_upload_bytes=5 * 1024 * 1024)
    settings.data_dir.mkdir()
    upgrade_to_head(settings.resolved_database_url)
    assert settings.resolved_database_url.startswith("sqlite")
    account = account_in(settings.resolved_database_url, username="ada", team="vision")
    x = np.random.default_rng(1).normal(size=(N, FEATURES)).astype(np.float32)
    buf = io.BytesIO()
    np.savez(buf, x=x)
    with TestClient(create_app(settings, run_reaper=False), headers=account.headers) as client:
        project = client.post("/api/v1/projects", json={"name": "names"}).json()
        dataset = client.post(
            f"/api/v1/projects/{project['id']}/datasets", files={"file": ("d.npz", buf.getvalue())}
        )
        assert dataset.status_code == 201, dataset.text
        job = stored_job(settings, project["id"], dataset.json()["id"], tmp_path, x)
        response = client.get(f"/api/v1/jobs/{job}/samples/{N - 1}")
    assert response.status_code == 200, response.text
    outputs = {o["output"]: o for o in response.json()["outputs"]}
    assert sorted(outputs) == sorted(NAMES)
    for name, output in outputs.items():
        assert output["compressed_output"] == name and output["num_classes"] == CLASSES
        assert output["outputs_are_probabilities"] == {"golden": False, "compressed": False}
        assert len(output["golden"]["classes"]) == len(output["compressed"]["probabilities"]) == 5
