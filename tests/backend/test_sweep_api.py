"""Sweep results over the real API and Postgres: points stored as a worker's merge stores them, the frontier
across several sweeps against a brute-force non-dominated filter, bounds, and clear errors."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from backend.db.models import Job, JobStatus, SweepPoint
from backend.db.session import session_factory
from backend.settings import Settings


def _sweep(
    settings: Settings, project_id: str, points: list[dict[str, float | None]], status: str = "succeeded"
) -> str:
    with session_factory(settings.resolved_database_url)() as session:
        job = Job(
            project_id=uuid.UUID(project_id),
            kind="sweep",
            params={"model_id": str(uuid.uuid4()), "dataset_id": str(uuid.uuid4())},
            status=status,
            attempts=1,
        )
        session.add(job)
        session.flush()
        for i, values in enumerate(points):
            session.add(
                SweepPoint(
                    job_id=job.id,
                    index=i,
                    label=f"cfg-{i}",
                    config={"type": "weight_quant", "bits": 8},
                    objectives=values,
                    point={"fidelity": values},
                )
            )
        session.commit()
        return str(job.id)


def _brute_force(points: list[tuple[float, ...]], directions: list[str]) -> set[int]:
    sign = np.array([1.0 if d == "min" else -1.0 for d in directions])
    x = np.array(points) * sign
    keep = set()
    for i in range(len(x)):
        dominated = any(np.all(x[j] <= x[i]) and np.any(x[j] < x[i]) for j in range(len(x)) if j != i)
        if not dominated:
            keep.add(i)
    return keep


def test_the_frontier_of_two_sweeps_is_the_non_dominated_set(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    rng = np.random.default_rng(7)
    a = [
        {"kl_mean": float(k), "size_bytes": float(s), "top1_agreement": float(t)}
        for k, s, t in rng.random((40, 3))
    ]
    b = [
        {"kl_mean": float(k), "size_bytes": float(s), "top1_agreement": float(t)}
        for k, s, t in rng.random((30, 3))
    ]
    a[3]["kl_mean"] = None  # a point without a KL (e.g. NaN outputs) cannot be placed
    job_a, job_b = _sweep(settings, project["id"], a), _sweep(settings, project["id"], b)
    response = client.get(
        "/api/v1/sweep-frontier",
        params={
            "job_ids": [job_a, job_b],
            "objective": ["kl_mean:min", "size_bytes:min", "top1_agreement:max"],
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    ids = [f"{job_a}:{i}" for i in range(40) if i != 3] + [f"{job_b}:{i}" for i in range(30)]
    rows = [p for i, p in enumerate(a) if i != 3] + b
    expected = _brute_force(
        [(p["kl_mean"], p["size_bytes"], p["top1_agreement"]) for p in rows], ["min", "min", "max"]
    )  # type: ignore[misc]
    assert {p["id"] for p in body["frontier"]} == {ids[i] for i in expected}
    assert body["excluded"] == [f"{job_a}:3"] and body["n_points"] == 70
    assert {p["job_id"] for p in body["frontier"]} == {job_a, job_b}  # both sweeps on one frontier
    assert sum(p["knee"] for p in body["frontier"]) == 1 and body["knee"] in {
        p["id"] for p in body["frontier"]
    }


def test_bounds_filter_before_the_frontier(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    points = [
        {"kl_mean": 0.001, "size_bytes": 100.0, "p50_ms": 5.0},
        {"kl_mean": 0.01, "size_bytes": 50.0, "p50_ms": 1.0},
        {"kl_mean": 0.2, "size_bytes": 25.0, "p50_ms": 1.0},
        {"kl_mean": 0.05, "size_bytes": 60.0, "p50_ms": 9.0},  # dominated by point 1
    ]
    job = _sweep(settings, project["id"], points)
    query = {"job_ids": [job], "objective": ["kl_mean:min", "size_bytes:min"]}
    everything = client.get("/api/v1/sweep-frontier", params=query).json()
    assert [p["index"] for p in everything["frontier"]] == [0, 1, 2]
    bounded = client.get(
        "/api/v1/sweep-frontier", params=query | {"bound": ["kl_mean<=0.05", "p50_ms<=4"]}
    ).json()
    assert [p["index"] for p in bounded["frontier"]] == [1] and bounded["filtered"] == 3


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"objective": ["kl_mean:lowest"]}, "name:min or name:max"),
        ({"objective": ["kl_mean:min"], "bound": ["kl_mean=0.1"]}, "name<=number"),
        ({"objective": ["latency:min"]}, "unknown objective"),
        ({"objective": ["kl_mean:min", "kl_mean:max"]}, "distinct"),
    ],
)
def test_bad_frontier_requests_say_what_is_wrong(
    client: TestClient, project: dict[str, Any], settings: Settings, params: dict[str, Any], needle: str
) -> None:
    job = _sweep(settings, project["id"], [{"kl_mean": 0.1, "size_bytes": 1.0}])
    response = client.get("/api/v1/sweep-frontier", params={"job_ids": [job]} | params)
    assert response.status_code == 422 and needle in response.json()["detail"], response.text


def test_points_of_a_sweep_that_has_not_succeeded_are_a_conflict(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    job = _sweep(settings, project["id"], [], status=JobStatus.running.value)
    response = client.get(f"/api/v1/jobs/{job}/sweep/points")
    assert response.status_code == 409 and "running" in response.json()["detail"]
    done = _sweep(settings, project["id"], [{"kl_mean": 0.1}])
    page = client.get(f"/api/v1/jobs/{done}/sweep/points").json()
    assert page["total"] == 1 and page["items"][0]["export_available"] is False
    missing = client.get(f"/api/v1/jobs/{done}/sweep/points/0/export")
    assert missing.status_code == 404 and "export=false" in missing.json()["detail"]
    assert client.get(f"/api/v1/jobs/{done}/sweep/points/5").status_code == 404


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        (
            {"task": "ctc", "objectives": ["task.miou_drop:min", "size_bytes:min"]},
            "task.miou_drop is not a metric of task 'ctc'; its task metrics: task.wer_vs_golden",
        ),
        (
            {"task": "segmentation", "bounds": ["task.wer_delta<=0.01"]},
            "task.wer_delta is not a metric of task 'segmentation'; its task metrics: task.miou_vs_golden",
        ),
        ({"task": "segmentation", "objectives": ["task.miou_drop:lowest"]}, "params.objectives.0"),
        (
            {"task": "language_model", "task_options": {"generate_tokens": 8}},
            "a sweep does not generate text",
        ),
        (
            {"task": "language_model", "objectives": ["task.gen_bleu_vs_golden:max"]},
            "task.gen_bleu_vs_golden is not a metric of task 'language_model'",
        ),
    ],
)
def test_a_sweep_that_names_another_tasks_metric_is_refused_at_launch(
    client: TestClient, project: dict[str, Any], params: dict[str, Any], needle: str
) -> None:
    """The 422 comes from the params themselves (before the model and dataset are looked up): the table of
    task metrics (task_specs/metrics.py) names what the task measures."""
    ids = {"model_id": str(uuid.uuid4()), "dataset_id": str(uuid.uuid4())}
    body = {"project_id": project["id"], "kind": "sweep", "params": ids | params}
    response = client.post("/api/v1/jobs", json=body)
    assert response.status_code == 422 and needle in response.json()["detail"], response.text
    accepted = {
        "task": "segmentation",
        "objectives": ["task.miou_drop:min"],
        "bounds": ["task.miou_drop<=0.005"],
    }
    response = client.post("/api/v1/jobs", json=body | {"params": ids | accepted})
    assert response.status_code == 404 and "no model" in response.json()["detail"], (
        response.text
    )  # valid params
