"""Per-sample pages over the real API and Postgres, served from a cached order: every order and filter, paged
to the end, gives exactly the rows of a plain Python sort of what was stored (nulls last, ties by sample
index), with the right total, and deep pages need no sort in the database."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from backend.contracts import RESULT_FIDELITY_SUMMARY
from backend.db.models import Job, JobResult, SampleDivergence
from backend.db.session import session_factory
from backend.settings import Settings

N = 60


def _fidelity_job(settings: Settings, project_id: str) -> tuple[str, list[dict[str, Any]]]:
    rng = np.random.default_rng(11)
    rows = []
    for i in range(N):
        kl = None if i % 13 == 0 else float(rng.choice([0.5, 0.25, rng.random()]))  # ties and nulls
        rows.append(
            {"sample_index": i, "kl": kl, "cosine": float(rng.random()), "mse": float(rng.random()),
             "flagged": bool(i % 3 == 0), "top1_match": bool(i % 4)}
        )  # fmt: skip
    with session_factory(settings.resolved_database_url)() as session:
        job = Job(
            project_id=uuid.UUID(project_id), kind="fidelity", params={}, status="succeeded", attempts=1
        )
        session.add(job)
        session.flush()
        session.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload={}))
        session.add_all(SampleDivergence(job_id=job.id, output_name="logits", **row) for row in rows)
        session.commit()
        return str(job.id), rows


def _expected(rows: list[dict[str, Any]], sort: str, order: str, flagged: bool | None) -> list[int]:
    kept = [r for r in rows if flagged is None or r["flagged"] == flagged]
    present = [r for r in kept if r[sort] is not None]
    present.sort(key=lambda r: r["sample_index"])  # ties: the smaller sample index first, either direction
    present.sort(key=lambda r: r[sort], reverse=order == "desc")
    return [r["sample_index"] for r in present] + sorted(r["sample_index"] for r in kept if r[sort] is None)


@pytest.mark.parametrize("sort", ["kl", "cosine", "sample_index"])
def test_every_page_in_every_order_matches_a_plain_sort(
    client: TestClient, project: dict[str, Any], settings: Settings, sort: str
) -> None:
    job_id, rows = _fidelity_job(settings, project["id"])
    for order in ("asc", "desc"):
        for flagged in (None, True):
            expected = _expected(rows, sort, order, flagged)
            seen: list[int] = []
            for offset in range(0, N + 7, 7):
                params: dict[str, Any] = {"sort": sort, "order": order, "limit": 7, "offset": offset}
                if flagged is not None:
                    params["flagged"] = flagged
                response = client.get(f"/api/v1/jobs/{job_id}/fidelity/samples", params=params)
                assert response.status_code == 200, response.text
                assert response.json()["total"] == len(expected)
                seen += [item["sample_index"] for item in response.json()["items"]]
            assert seen == expected, (order, flagged)
