"""The profile's activation-shift fields and likely causes are served typed and whole by
GET /jobs/{id}/fidelity/layers, from a document the engine's own dataclasses write; profiles stored before
they existed stay readable (shift null, no causes)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from backend.contracts import RESULT_FIDELITY_LAYERS
from backend.db.models import Job, JobResult
from backend.db.session import engine_for
from backend.settings import Settings
from worker.engine.layer_profile.causes import likely_causes
from worker.engine.layer_profile.results import LayerFidelity, LayerProfile, LayerStats
from worker.engine.layer_profile.shift import ActivationShift, Histogram


def _profile_doc() -> dict[str, Any]:
    histogram = Histogram(0.0, 2.5, [5, 3] + [0] * 30, [6, 1] + [0] * 30, 0, 2, 0, 3, 10)
    shift = ActivationShift(
        n_values=10,
        golden_min=0.0,
        golden_max=3.0,
        compressed_min=0.0,
        compressed_max=2.5,
        histogram=histogram,
        quantizer_min=0.0,
        quantizer_max=2.5,
        clip_rate=0.3,
        golden_outside_rate=0.2,
        dead_unit_rate=0.125,
        golden_positive=8,
        error_amplification=1.5,
    )
    stats = LayerStats(12.0, 0.99, 0.9)
    layer = LayerFidelity("relu", "relu_dq", "Relu", 0, 0.0, stats, stats, canonical_id="conv1", shift=shift)
    profile = LayerProfile(layers=[layer], n_samples=2, profile_batch_size=1)
    profile.likely_causes = likely_causes(profile.layers)
    return json.loads(json.dumps(profile.to_dict(), allow_nan=False))


def _stored(settings: Settings, project_id: str, payload: dict[str, Any]) -> uuid.UUID:
    ids = {k: str(uuid.uuid4()) for k in ("golden_model_id", "compressed_model_id", "dataset_id")}
    with Session(engine_for(settings.resolved_database_url)) as s:
        job = Job(
            project_id=uuid.UUID(project_id), kind="fidelity", params=ids, status="succeeded", attempts=1
        )
        s.add(job)
        s.flush()
        s.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_LAYERS, payload=payload))
        s.commit()
        return job.id


def test_shift_and_causes_are_served_whole(
    client: TestClient, settings: Settings, project: dict[str, str]
) -> None:
    doc = _profile_doc()
    # 30x, 10^0.8 = 6.3x (local 12 dB against 20) and 2.5x over their thresholds
    assert [c["kind"] for c in doc["likely_causes"]] == ["clipping", "local_error", "dead_units"]
    served = client.get(f"/api/v1/jobs/{_stored(settings, project['id'], doc)}/fidelity/layers")
    assert served.status_code == 200, served.text
    body = served.json()
    assert body["layers"][0]["shift"] == doc["layers"][0]["shift"]
    assert body["likely_causes"] == doc["likely_causes"]


def test_profiles_without_shift_stay_readable(
    client: TestClient, settings: Settings, project: dict[str, str]
) -> None:
    doc = _profile_doc()
    del doc["likely_causes"]
    del doc["layers"][0]["shift"]
    body = client.get(f"/api/v1/jobs/{_stored(settings, project['id'], doc)}/fidelity/layers").json()
    assert body["layers"][0]["shift"] is None and body["likely_causes"] == []
    assert body["layers"][0]["accumulated"]["sqnr_db"] == 12.0
