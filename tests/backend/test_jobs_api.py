"""Job endpoints over the real API and Postgres (no worker here: jobs stay queued)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support import files

MISSING = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def fidelity_inputs(client: TestClient, project: dict[str, Any]) -> dict[str, str]:
    pid = project["id"]
    onnx = files.minimal_onnx_bytes()
    golden = client.post(f"/api/v1/projects/{pid}/models", files={"file": ("g.onnx", onnx)}).json()
    compressed = client.post(f"/api/v1/projects/{pid}/models", files={"file": ("c.onnx", onnx)}).json()
    dataset = client.post(
        f"/api/v1/projects/{pid}/datasets",
        files={"file": ("d.npz", files.npz_bytes(input=__import__("numpy").zeros((4, 4), "float32")))},
    ).json()
    return {
        "golden_model_id": golden["id"],
        "compressed_model_id": compressed["id"],
        "dataset_id": dataset["id"],
    }


def _create(client: TestClient, project_id: str, params: dict[str, Any], kind: str = "fidelity") -> Any:
    return client.post("/api/v1/jobs", json={"project_id": project_id, "kind": kind, "params": params})


def test_create_get_list_cancel_delete(
    client: TestClient, project: dict[str, Any], fidelity_inputs: dict[str, str]
) -> None:
    created = _create(client, project["id"], fidelity_inputs | {"top_k": 3})
    assert created.status_code == 201, created.text
    job = created.json()
    assert job["kind"] == "fidelity" and job["status"] == "queued" and job["progress"] == 0.0
    assert job["params"]["top_k"] == 3 and job["params"]["batch_size"] == 64  # defaults filled in

    assert client.get(f"/api/v1/jobs/{job['id']}").json()["id"] == job["id"]
    listed = client.get(
        "/api/v1/jobs", params={"project_id": project["id"], "kind": "fidelity", "status": "queued"}
    ).json()
    assert [j["id"] for j in listed["items"]] == [job["id"]] and listed["total"] == 1
    assert client.get("/api/v1/jobs", params={"status": "running"}).json()["total"] == 0

    cancelled = client.post(f"/api/v1/jobs/{job['id']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = client.post(f"/api/v1/jobs/{job['id']}/cancel")
    assert again.status_code == 409 and "already cancelled" in again.json()["detail"]

    assert client.delete(f"/api/v1/jobs/{job['id']}").status_code == 204
    assert client.get(f"/api/v1/jobs/{job['id']}").status_code == 404


def test_results_of_an_unfinished_job_are_a_conflict(
    client: TestClient, project: dict[str, Any], fidelity_inputs: dict[str, str]
) -> None:
    job = _create(client, project["id"], fidelity_inputs).json()
    response = client.get(f"/api/v1/jobs/{job['id']}/fidelity")
    assert response.status_code == 409 and "queued" in response.json()["detail"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"top_k": 0}, "params.top_k"),
        ({"batch_size": -1}, "params.batch_size"),
        ({"threshold_kl": -0.5}, "params.threshold_kl"),
        ({"task": "poetry"}, "params.task"),
        ({"surprise": 1}, "params.surprise"),
    ],
)
def test_bad_parameters_name_the_field(
    client: TestClient,
    project: dict[str, Any],
    fidelity_inputs: dict[str, str],
    change: dict[str, Any],
    message: str,
) -> None:
    response = _create(client, project["id"], fidelity_inputs | change)
    assert response.status_code == 422 and message in response.json()["detail"]


def test_unknown_kind_lists_the_available_ones(client: TestClient, project: dict[str, Any]) -> None:
    response = _create(client, project["id"], {}, kind="astrology")
    assert response.status_code == 422 and "available kinds: fidelity" in response.json()["detail"]


def test_unknown_ids_are_404(
    client: TestClient, project: dict[str, Any], fidelity_inputs: dict[str, str]
) -> None:
    assert _create(client, MISSING, fidelity_inputs).status_code == 404
    response = _create(client, project["id"], fidelity_inputs | {"dataset_id": MISSING})
    assert response.status_code == 404 and "no dataset" in response.json()["detail"]
    for path in (f"/jobs/{MISSING}", f"/models/{MISSING}", f"/datasets/{MISSING}", f"/projects/{MISSING}"):
        assert client.get(f"/api/v1{path}").status_code == 404, path
    assert client.post(f"/api/v1/jobs/{MISSING}/cancel").status_code == 404
    assert client.delete(f"/api/v1/jobs/{MISSING}").status_code == 404
    assert client.get("/api/v1/jobs/not-a-uuid").status_code == 422


def test_models_of_another_project_cannot_be_used(
    client: TestClient, project: dict[str, Any], fidelity_inputs: dict[str, str]
) -> None:
    other = client.post("/api/v1/projects", json={"name": f"other-{uuid.uuid4().hex[:6]}"}).json()
    response = _create(client, other["id"], fidelity_inputs)
    assert response.status_code == 404 and "in project" in response.json()["detail"]


def test_duplicate_project_name_is_a_conflict(client: TestClient, project: dict[str, Any]) -> None:
    response = client.post("/api/v1/projects", json={"name": project["name"]})
    assert response.status_code == 409 and "already exists" in response.json()["detail"]


def test_job_kinds_publish_their_parameter_schema(client: TestClient) -> None:
    kinds = client.get("/api/v1/job-kinds").json()
    fidelity = next(k for k in kinds if k["kind"] == "fidelity")
    assert {"golden_model_id", "compressed_model_id", "dataset_id", "top_k"} <= set(
        fidelity["params_schema"]["properties"]
    )


@pytest.mark.parametrize(
    ("kind", "params", "expected"),
    [
        (
            "sensitivity",
            {"configs": [{"type": "weight_quant", "bits": 99}]},
            "params.configs.0.weight_quant.bits: Input should be less than or equal to 16",
        ),
        (
            "sensitivity",
            {"configs": [{"type": "weight_quant", "bits": 1}]},
            "params.configs.0.weight_quant.bits: Input should be greater than or equal to 2",
        ),
        (
            "sweep",
            {"configs": [{"type": "magnitude_prune", "sparsity": 1.5}]},
            "params.configs.0.magnitude_prune.sparsity: Input should be less than or equal to 1",
        ),
        ("fidelity", {"top_k": 0}, "params.top_k: Input should be greater than or equal to 1"),
        ("fidelity", {"threshold_kl": -1}, "params.threshold_kl: Input should be greater than or equal to 0"),
        (
            "sweep",
            {"latency_repeats": 2},
            "params.latency_repeats: Input should be greater than or equal to 3",
        ),
    ],
)
def test_out_of_range_job_parameters_name_the_field_and_the_range(
    client: TestClient, project: dict[str, Any], kind: str, params: dict[str, Any], expected: str
) -> None:
    ids = {"model_id": str(uuid.uuid4()), "dataset_id": str(uuid.uuid4())}
    if kind == "fidelity":
        ids = {
            "golden_model_id": ids["model_id"],
            "compressed_model_id": ids["model_id"],
            "dataset_id": ids["dataset_id"],
        }
    body = {"project_id": project["id"], "kind": kind, "params": ids | params}
    response = client.post("/api/v1/jobs", json=body)
    assert response.status_code == 422, response.text
    assert expected in response.json()["detail"]
