"""The rows the API fuzz seeds before it runs, so that requests get past "no such id": a project, an
ONNX model and a zipped one, an npz and an image-zip dataset, a queued and a succeeded fidelity job with
its results and per-sample rows, a fanned-out job with chunks, two more members of the team and a token;
DELETE operations get rows of their own."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient

from backend.accounts import Role
from backend.contracts import RESULT_FIDELITY_LAYERS, RESULT_FIDELITY_SUMMARY
from backend.db.models import Job, JobChunk, JobResult, SampleDivergence
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support import files
from tests.support.accounts import TestAccount, add_account
from tests.support.fuzz_files import image_zip, onnx_zip


class Seeded:
    """Ids of the rows seeded before the fuzz, by the parameter names that refer to them."""

    def __init__(self) -> None:
        self.by_param: dict[str, list[str]] = {}
        # Rows only DELETE operations get, so that deleting them does not starve the other operations.
        self.expendable: dict[str, list[str]] = {}
        self.headers: dict[str, str] = {}  # the signed-in fuzzer's

    def ids(self, name: str, method: str) -> list[str]:
        return (self.expendable if method == "DELETE" else self.by_param).get(name, [])


def _upload(client: TestClient, pid: str, what: str, filename: str, data: bytes, **form: str) -> str:
    response = client.post(f"/api/v1/projects/{pid}/{what}", files={"file": (filename, data)}, data=form)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def seed_rows(client: TestClient, settings: Settings, account: TestAccount) -> Seeded:
    seeded = Seeded()
    with session_factory(settings.resolved_database_url)() as session:
        # Other members of the fuzzer's team: one whose role may change, one who may be removed.
        colleague = add_account(session, "colleague", account.team_name, Role.viewer)
        leaver = add_account(session, "leaver", account.team_name, Role.member)
    revocable = client.post("/api/v1/auth/tokens", json={"name": "revocable"}).json()["id"]
    project = client.post("/api/v1/projects", json={"name": "fuzz", "description": "seeded"}).json()
    pid = project["id"]
    onnx = files.minimal_onnx_bytes()
    golden = _upload(client, pid, "models", "golden.onnx", onnx, input_shapes='{"input": [2, 4]}')
    compressed = _upload(client, pid, "models", "int8.zip", onnx_zip(), name="int8")
    npz = _upload(client, pid, "datasets", "d.npz", files.digits_like_npz(4))
    images = _upload(
        client, pid, "datasets", "imgs.zip", image_zip(), preprocessing='{"size": [8, 8], "mode": "L"}'
    )
    params = {"golden_model_id": golden, "compressed_model_id": compressed, "dataset_id": npz}
    queued = client.post("/api/v1/jobs", json={"project_id": pid, "kind": "fidelity", "params": params})
    assert queued.status_code == 201, queued.text
    victim_model = _upload(client, pid, "models", "victim.onnx", onnx)
    victim_dataset = _upload(client, pid, "datasets", "victim.npz", files.digits_like_npz(2))
    victim_job = client.post("/api/v1/jobs", json={"project_id": pid, "kind": "fidelity", "params": params})

    succeeded, fanned_out = uuid.uuid4(), uuid.uuid4()
    now = datetime.now(UTC)
    full_params = queued.json()["params"]
    with session_factory(settings.resolved_database_url)() as s:
        s.add_all(
            [
                Job(
                    id=succeeded,
                    project_id=uuid.UUID(pid),
                    kind="fidelity",
                    params=full_params,
                    status="succeeded",
                    progress=1.0,
                    progress_message="done",
                    attempts=1,
                    started_at=now - timedelta(seconds=3),
                    finished_at=now,
                ),
                Job(
                    id=fanned_out,
                    project_id=uuid.UUID(pid),
                    kind="fidelity",
                    params=full_params,
                    status="running",
                    progress=0.5,
                    progress_message="2 of 4 chunks",
                    attempts=1,
                    chunks_total=2,
                    started_at=now,
                ),
            ]
        )
        s.flush()
        s.add_all(
            [
                JobResult(job_id=succeeded, key=RESULT_FIDELITY_SUMMARY, payload=_summary()),
                JobResult(job_id=succeeded, key=RESULT_FIDELITY_LAYERS, payload=_layers()),
                JobChunk(job_id=fanned_out, index=0, spec={"layers": ["a"]}, status="succeeded", attempts=1),
                JobChunk(job_id=fanned_out, index=1, spec={"layers": ["b"]}, status="failed", error="boom"),
                *[
                    SampleDivergence(
                        job_id=succeeded,
                        output_name="output",
                        sample_index=i,
                        kl=None if i == 3 else 0.01 * i,
                        cosine=1.0 - 0.01 * i,
                        mse=0.001 * i,
                        sqnr_db=None if i == 0 else 40.0 - i,
                        top1_match=i != 2,
                        golden_class=i % 3,
                        compressed_class=(i + (i == 2)) % 3,
                        label=i % 3,
                        flagged=i == 2,
                        finite=i != 3,
                    )
                    for i in range(4)
                ],
            ]
        )
        s.commit()

    jobs = [queued.json()["id"], str(succeeded), str(fanned_out)]
    seeded.by_param = {
        "team_id": [str(account.team_id)],
        "user_id": [str(colleague.user_id)],
        "project_id": [pid],
        "model_id": [golden, compressed],
        "golden_model_id": [golden],
        "compressed_model_id": [compressed],
        "dataset_id": [npz, images],
        "job_id": jobs,
    }
    seeded.expendable = {
        "user_id": [str(leaver.user_id)],
        "token_id": [revocable],
        "model_id": [victim_model],
        "dataset_id": [victim_dataset],
        "job_id": [victim_job.json()["id"]],
    }
    return seeded


def _summary() -> dict[str, Any]:
    metrics = {
        "kl_mean_nats": 0.02,
        "js_mean_nats": 0.005,
        "top1_match": 0.75,
        "topk_agreement": 0.9,
        "cosine_mean": 0.99,
        "sqnr_db": 31.5,
        "labels": {"top1_accuracy_drop_pp": 25.0},
        "calibration": {"ece_shift": 0.01},
    }
    return {
        "primary_output": "output",
        "n_samples": 4,
        "outputs": {"output": metrics},
        "per_sample_summary": {"concentration": {"verdict": "concentrated"}},
        "warnings": [],
    }


def _layers() -> dict[str, Any]:
    stats = {"cosine_mean": 0.99, "cosine_min": 0.95, "sqnr_db": 30.0, "sqnr_db_infinite": False}
    return {
        "n_samples": 4,
        "layers": [
            {
                "name": "output",
                "compressed_name": "output",
                "op_type": "Identity",
                "depth": 0,
                "depth_fraction": 0.0,
                "accumulated": stats,
                "local": None,
                "local_note": "the first layer",
            }
        ],
        "unmatched_golden": [],
        "unmatched_compressed": ["extra"],
        "notes": [],
    }
