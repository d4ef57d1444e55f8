"""Every paged list bounds its offset and limit: a value past the bound is a 422 that names the parameter
(an offset of 2**63 was a 500 from Postgres's bigint OFFSET), and the largest allowed offset is served (an
empty page of the real total) by the real database."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.api.schemas import MAX_OFFSET
from backend.contracts import RESULT_FIDELITY_SUMMARY
from backend.db.models import Job, JobResult, SampleDivergence, SweepPoint
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support.accounts import TestAccount


def _paged_routes(settings: Settings, project_id: str, team_id: uuid.UUID) -> dict[str, str]:
    """One path per paged list, over a succeeded fidelity job with 3 samples and a sweep with 3 points."""
    with session_factory(settings.resolved_database_url)() as session:
        refs = {k: str(uuid.uuid4()) for k in ("golden_model_id", "compressed_model_id", "dataset_id")}
        fidelity = Job(
            project_id=uuid.UUID(project_id), kind="fidelity", params=refs, status="succeeded", attempts=1
        )
        sweep = Job(project_id=uuid.UUID(project_id), kind="sweep", params={}, status="succeeded", attempts=1)
        session.add_all([fidelity, sweep])
        session.flush()
        session.add(JobResult(job_id=fidelity.id, key=RESULT_FIDELITY_SUMMARY, payload={"n_samples": 3}))
        for i in range(3):
            session.add(
                SampleDivergence(job_id=fidelity.id, output_name="logits", sample_index=i, kl=0.1 * i)
            )
            session.add(
                SweepPoint(
                    job_id=sweep.id, index=i, label=f"p{i}", config={}, objectives={"kl_mean": 0.1}, point={}
                )
            )
        session.commit()
        return {
            "jobs": "/api/v1/jobs",
            "samples": f"/api/v1/jobs/{fidelity.id}/fidelity/samples",
            "points": f"/api/v1/jobs/{sweep.id}/sweep/points",
            "runs": f"/api/v1/projects/{project_id}/fidelity-runs",
            "audit": f"/api/v1/teams/{team_id}/audit",
        }


@pytest.mark.parametrize("name", ["jobs", "samples", "points", "runs", "audit"])
def test_offsets_and_limits_past_their_bounds_are_422(
    client: TestClient, project: dict[str, Any], settings: Settings, account: TestAccount, name: str
) -> None:
    path = _paged_routes(settings, project["id"], account.team_id)[name]
    first = client.get(path)
    assert first.status_code == 200, first.text
    total = first.json()["total"]
    assert total >= 1
    for params in ({"offset": 2**63}, {"offset": MAX_OFFSET + 1}, {"offset": -1}, {"limit": 10**6}):
        response = client.get(path, params=params)
        assert response.status_code == 422, (params, response.text)
        assert next(iter(params)) in response.text
    deepest = client.get(path, params={"offset": MAX_OFFSET})
    assert deepest.status_code == 200, deepest.text
    assert deepest.json()["items"] == []
    assert deepest.json()["total"] == total
