"""A golden / compressed pair and a dataset uploaded through the real app (in-process TestClient), with
their inspections run by the real handler, and fidelity jobs run in-process: for the job tests that read
what one fidelity job stored and served (robustness, attention)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from backend.accounts import Role
from backend.db.models import Model
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support.accounts import add_account
from worker.jobs.fidelity import FidelityHandler
from worker.jobs.inspect import InspectHandler
from worker.runtime import execute_job


class FidelityApi:
    """An admin's view of one project holding the pair (`golden`, `int8`) and `dataset` (ids)."""

    def __init__(
        self,
        http: TestClient,
        settings: Settings,
        project: str,
        golden: Path,
        compressed: Path,
        dataset: Path,
    ) -> None:
        self.http, self.settings = http, settings
        with session_factory(settings.resolved_database_url)() as s:
            self.headers = add_account(s, None, None, Role.admin).headers
        self.project = self.post("/projects", json={"name": project})["id"]
        self.golden = self.upload("models", golden)
        self.int8 = self.upload("models", compressed)
        self.dataset = self.upload("datasets", dataset)
        for model_id in (self.golden, self.int8):
            with session_factory(settings.resolved_database_url)() as s:
                job_id = s.get_one(Model, uuid.UUID(model_id)).inspect_job_id
            assert execute_job(str(job_id), InspectHandler(), settings) == "succeeded"

    def post(self, path: str, **kwargs: Any) -> Any:
        answer = self.http.post(f"/api/v1{path}", headers=self.headers, **kwargs)
        assert answer.status_code in (200, 201, 202), answer.text
        return answer.json()

    def get(self, path: str) -> Any:
        return self.http.get(f"/api/v1{path}", headers=self.headers)

    def upload(self, kind: str, path: Path) -> str:
        with path.open("rb") as f:
            return str(self.post(f"/projects/{self.project}/{kind}", files={"file": (path.name, f)})["id"])

    def submit(self, **params: Any) -> str:
        """A fidelity job of the pair on the dataset with `params`, queued (not run)."""
        base = {"golden_model_id": self.golden, "compressed_model_id": self.int8, "dataset_id": self.dataset}
        job = self.post(
            "/jobs", json={"project_id": self.project, "kind": "fidelity", "params": base | params}
        )
        return str(job["id"])

    def fidelity(self, **params: Any) -> str:
        """A fidelity job of the pair on the dataset with `params`, run to success in this process."""
        job_id = self.submit(**params)
        assert execute_job(job_id, FidelityHandler(), self.settings) == "succeeded"
        return job_id
