"""A small Python client of the public REST API (used by the demo seeder, benchmarks and tests)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import httpx

FINAL = ("succeeded", "failed", "cancelled")


class ApiError(Exception):
    def __init__(self, response: httpx.Response) -> None:
        self.status_code = response.status_code
        try:
            self.body: Any = response.json()
        except ValueError:
            self.body = response.text
        super().__init__(f"HTTP {response.status_code}: {self.body}")


class KneeboardClient:
    """Signed in with a personal API token: `token`, else $KNEEBOARD_API_TOKEN."""

    def __init__(self, base_url: str, timeout: float = 120.0, token: str | None = None) -> None:
        token = token or os.environ.get("KNEEBOARD_API_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=base_url.rstrip("/") + "/api/v1", timeout=timeout, headers=headers)

    def _json(self, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise ApiError(response)
        return None if response.status_code == 204 else response.json()

    def health(self) -> dict[str, Any]:
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

    def projects(self) -> list[dict[str, Any]]:
        return self._json(self.http.get("/projects"))

    def create_project(self, name: str, description: str = "") -> dict[str, Any]:
        return self._json(self.http.post("/projects", json={"name": name, "description": description}))

    def upload_model(
        self,
        project_id: str,
        path: Path,
        name: str | None = None,
        input_shapes: dict[str, list[int]] | None = None,
    ) -> dict[str, Any]:
        data = {
            k: v
            for k, v in (("name", name), ("input_shapes", json.dumps(input_shapes) if input_shapes else None))
            if v
        }
        with path.open("rb") as f:
            return self._json(
                self.http.post(f"/projects/{project_id}/models", files={"file": (path.name, f)}, data=data)
            )

    def upload_dataset(self, project_id: str, path: Path, name: str | None = None) -> dict[str, Any]:
        with path.open("rb") as f:
            return self._json(
                self.http.post(
                    f"/projects/{project_id}/datasets",
                    files={"file": (path.name, f)},
                    data={"name": name} if name else {},
                )
            )

    def model(self, model_id: str) -> dict[str, Any]:
        return self._json(self.http.get(f"/models/{model_id}"))

    def wait_model(self, model_id: str, timeout: float = 300.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (model := self.model(model_id))["status"] == "inspecting":
            if time.monotonic() > deadline:
                raise TimeoutError(f"model {model_id} still inspecting after {timeout} s")
            time.sleep(0.3)
        return model

    def create_job(self, project_id: str, kind: str, params: dict[str, Any]) -> dict[str, Any]:
        return self._json(
            self.http.post("/jobs", json={"project_id": project_id, "kind": kind, "params": params})
        )

    def job(self, job_id: str) -> dict[str, Any]:
        return self._json(self.http.get(f"/jobs/{job_id}"))

    def wait_job(self, job_id: str, timeout: float = 600.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (job := self.job(job_id))["status"] not in FINAL:
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job['status']} after {timeout} s")
            time.sleep(0.3)
        return job

    def fidelity(self, job_id: str) -> dict[str, Any]:
        return self._json(self.http.get(f"/jobs/{job_id}/fidelity"))
