"""Datasets that carry a task's annotations beside the model inputs (issue 30): segmentation 'masks' (an
integer array) and CTC 'transcripts' (a fixed-width unicode array, dtype '<U..', the one way an .npz holds
text without pickling) are accepted by the upload over the real API, listed with their shapes, previewed,
and read back by the worker's memory-mapped reader as they were written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from fastapi.testclient import TestClient

from backend.settings import Settings
from dataset_readers.npz.mapped import load_npz_mapped
from tests.support import files


def test_masks_and_transcripts_upload_preview_and_read_back(
    client: TestClient, project: dict[str, Any], settings: Settings, tmp_path: Path
) -> None:
    rng = np.random.default_rng(0)
    transcripts = np.array(["the cat", "a dog sat down", "ünïcode ok", ""])
    data = files.npz_bytes(
        features=rng.random((4, 12, 6), dtype=np.float32),
        transcripts=transcripts,
        masks=rng.integers(0, 3, (4, 5, 5)),
    )
    response = client.post(f"/api/v1/projects/{project['id']}/datasets", files={"file": ("speech.npz", data)})
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["n_samples"] == 4
    assert body["arrays"]["transcripts"]["shape"] == [4]
    assert body["arrays"]["transcripts"]["dtype"].startswith("str")
    assert body["arrays"]["masks"] == {"shape": [4, 5, 5], "dtype": "int64"}

    preview = client.get(f"/api/v1/datasets/{body['id']}/samples", params={"limit": 4})
    assert preview.status_code == 200, preview.text

    (tmp_path / "speech.npz").write_bytes(data)
    arrays = load_npz_mapped(tmp_path / "speech.npz", tmp_path / "cache")
    assert arrays["transcripts"].dtype.kind == "U"
    assert arrays["transcripts"][1:3].tolist() == ["a dog sat down", "ünïcode ok"]
