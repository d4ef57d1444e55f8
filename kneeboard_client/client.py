"""A typed, thin Python client of Kneeboard's REST API over httpx.

Results are the API's JSON objects (plain dicts): the client adds no model layer of its own, so it keeps
working as the server adds fields. It imports nothing of the server (no torch, onnxruntime, SQLAlchemy,
Celery or FastAPI): `pip install ./kneeboard_client` is all a CI runner needs.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

FINAL = ("succeeded", "failed", "cancelled")
"""Job statuses after which a job never changes again."""

Json = dict[str, Any]
ProgressCallback = Callable[[Json], None]
"""Called with the job (GET /jobs/{id}) each time it is polled while waiting."""


class ApiError(Exception):
    """The API answered with an HTTP error; `body` is its JSON error object (or the text)."""

    def __init__(self, response: httpx.Response) -> None:
        self.status_code = response.status_code
        try:
            self.body: Any = response.json()
        except ValueError:
            self.body = response.text
        super().__init__(f"HTTP {response.status_code}: {self.body}")

    @property
    def message(self) -> str:
        """The API's own explanation (its `detail` / `message`), else the whole body."""
        if isinstance(self.body, dict):
            for key in ("message", "detail"):
                if isinstance(self.body.get(key), str):
                    return str(self.body[key])
        return str(self.body)


class KneeboardClient:
    """Signed in with a personal API token (`kneeboard token create`): `token`, else $KNEEBOARD_API_TOKEN."""

    def __init__(self, base_url: str, timeout: float = 120.0, token: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        token = token or os.environ.get("KNEEBOARD_API_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=self.base_url + "/api/v1", timeout=timeout, headers=headers)

    def __enter__(self) -> KneeboardClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _json(self, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise ApiError(response)
        return None if response.status_code == 204 else response.json()

    # Service and account

    def health(self) -> Json:
        return self._json(self.http.get("/health"))

    def wait_healthy(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.health()
                return
            except (httpx.HTTPError, ApiError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def me(self) -> Json:
        """The signed-in account (fails with 401 when the token is missing or wrong)."""
        return self._json(self.http.get("/auth/me"))

    # Projects, models, datasets

    def projects(self) -> list[Json]:
        return self._json(self.http.get("/projects"))

    def create_project(self, name: str, description: str = "") -> Json:
        return self._json(self.http.post("/projects", json={"name": name, "description": description}))

    def upload_model(
        self,
        project_id: str,
        path: Path,
        name: str | None = None,
        input_shapes: dict[str, list[int]] | None = None,
    ) -> Json:
        data = {
            k: v
            for k, v in (("name", name), ("input_shapes", json.dumps(input_shapes) if input_shapes else None))
            if v
        }
        with Path(path).open("rb") as f:
            return self._json(
                self.http.post(
                    f"/projects/{project_id}/models", files={"file": (Path(path).name, f)}, data=data
                )
            )

    def upload_dataset(self, project_id: str, path: Path, name: str | None = None) -> Json:
        with Path(path).open("rb") as f:
            return self._json(
                self.http.post(
                    f"/projects/{project_id}/datasets",
                    files={"file": (Path(path).name, f)},
                    data={"name": name} if name else {},
                )
            )

    def model(self, model_id: str) -> Json:
        return self._json(self.http.get(f"/models/{model_id}"))

    def dataset(self, dataset_id: str) -> Json:
        return self._json(self.http.get(f"/datasets/{dataset_id}"))

    def wait_model(self, model_id: str, timeout: float = 300.0) -> Json:
        """Wait until the worker has inspected the model: status ready or invalid (with its error)."""
        deadline = time.monotonic() + timeout
        while (model := self.model(model_id))["status"] == "inspecting":
            if time.monotonic() > deadline:
                raise TimeoutError(f"model {model_id} still inspecting after {timeout} s")
            time.sleep(0.3)
        return model

    # Jobs

    def create_job(self, project_id: str, kind: str, params: Json) -> Json:
        return self._json(
            self.http.post("/jobs", json={"project_id": project_id, "kind": kind, "params": params})
        )

    def create_fidelity_job(
        self, project_id: str, golden_model_id: str, compressed_model_id: str, dataset_id: str, **params: Any
    ) -> Json:
        """A fidelity job; `params` are the optional FidelityJobParams (batch_size, top_k, threshold_kl...)."""
        ids = {
            "golden_model_id": golden_model_id,
            "compressed_model_id": compressed_model_id,
            "dataset_id": dataset_id,
        }
        return self.create_job(project_id, "fidelity", ids | params)

    def create_sensitivity_job(self, project_id: str, model_id: str, dataset_id: str, **params: Any) -> Json:
        """A sensitivity scan of one model; `params` are the optional SensitivityJobParams (configs...)."""
        return self.create_job(
            project_id, "sensitivity", {"model_id": model_id, "dataset_id": dataset_id} | params
        )

    def job(self, job_id: str) -> Json:
        return self._json(self.http.get(f"/jobs/{job_id}"))

    def jobs(
        self,
        project_id: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        limit: int = 50,
        tag: str | None = None,
    ) -> list[Json]:
        """Jobs of your teams' projects, newest first (one page of `limit`), optionally only those tagged `tag`."""
        pairs = (("project_id", project_id), ("kind", kind), ("status", status), ("tag", tag))
        params = {k: v for k, v in pairs if v is not None}
        return self._json(self.http.get("/jobs", params=params | {"limit": limit}))["items"]

    def update_job(
        self, job_id: str, name: str | None = None, notes: str | None = None, tags: list[str] | None = None
    ) -> Json:
        """Rename a job, replace its notes or its tags (only the fields given change)."""
        body = {k: v for k, v in (("name", name), ("notes", notes), ("tags", tags)) if v is not None}
        return self._json(self.http.patch(f"/jobs/{job_id}", json=body))

    def wait_job(
        self,
        job_id: str,
        timeout: float = 600.0,
        on_progress: ProgressCallback | None = None,
        poll_s: float = 0.3,
    ) -> Json:
        """Poll the job until it is succeeded, failed or cancelled; `on_progress(job)` after each poll."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if on_progress is not None:
                on_progress(job)
            if job["status"] in FINAL:
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job['status']} after {timeout} s")
            time.sleep(poll_s)

    def cancel_job(self, job_id: str) -> Json:
        return self._json(self.http.post(f"/jobs/{job_id}/cancel"))

    # Results

    def fidelity(self, job_id: str) -> Json:
        """The fidelity report of a succeeded job: ids and `summary` (per output metrics)."""
        return self._json(self.http.get(f"/jobs/{job_id}/fidelity"))

    def fidelity_samples(
        self,
        job_id: str,
        sort: str = "kl",
        order: str = "desc",
        limit: int = 50,
        offset: int = 0,
        flagged: bool | None = None,
        flipped: bool | None = None,
        output: str | None = None,
    ) -> Json:
        """One page ({items, total, limit, offset}) of the per-sample divergences, worst first by default."""
        params: dict[str, Any] = {"sort": sort, "order": order, "limit": limit, "offset": offset}
        params |= {
            k: v for k, v in (("flagged", flagged), ("flipped", flipped), ("output", output)) if v is not None
        }
        return self._json(self.http.get(f"/jobs/{job_id}/fidelity/samples", params=params))

    def fidelity_runs(
        self,
        project_id: str,
        golden_model_id: str | None = None,
        dataset_id: str | None = None,
        limit: int = 100,
    ) -> list[Json]:
        """Succeeded fidelity jobs of a project with their headline numbers and model names, newest first."""
        params: dict[str, Any] = {"limit": limit}
        params |= {k: v for k, v in (("golden_model_id", golden_model_id), ("dataset_id", dataset_id)) if v}
        return self._json(self.http.get(f"/projects/{project_id}/fidelity-runs", params=params))["items"]

    def sensitivity(self, job_id: str) -> Json:
        return self._json(self.http.get(f"/jobs/{job_id}/sensitivity"))

    def report_url(self, job: Json) -> str:
        """The dashboard page of a job's results."""
        suffix = {"sensitivity": "/sensitivity", "sweep": "/sweep"}.get(str(job.get("kind")), "")
        return f"{self.base_url}/#/jobs/{job['id']}{suffix}"
