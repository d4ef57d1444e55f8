"""Typed results (issue 17): the OpenAPI of the result routes holds no untyped object (a test that can
fail: the walker finds a planted one), stored documents from older workers stay readable, per-sample
SQNR says when null means +∞, and every document the real worker writes is served whole and typed (e2e).
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel
from sqlalchemy.orm import Session

from backend.api.app import create_app
from backend.api.result_schemas.common import ResultModel
from backend.contracts import RESULT_FIDELITY_SUMMARY, RESULT_SENSITIVITY, RESULT_SENSITIVITY_PLANS
from backend.db.models import Job, JobResult, SampleDivergence
from backend.db.session import engine_for
from backend.settings import Settings

# Untyped objects the result routes may still serve, each with why. An entry no longer needed fails
# test_the_allow_list_has_no_stale_entries, so the list only shrinks.
ALLOWED_UNTYPED = {
    "JobOut.params": "a job's parameters: their shape depends on the kind; each kind's params are validated "
    "by its model in backend/contracts.py and published as JSON Schema at GET /job-kinds",
    "JobChunkOut.spec": "what one chunk of a fanned-out job covers, as the kind's handler planned it (a "
    "scan's layers, a sweep's point): the worker's own bookkeeping, shown for debugging, not a result",
}


# The keywords that constrain what a value is (the others only annotate it).
SHAPE_KEYWORDS = {"type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "items", "properties"}


def _is_result_route(path: str, method: str, operation: dict[str, Any]) -> bool:
    """GET routes that serve what a job computed: under /jobs/{job_id}, or tagged with a result kind."""
    if method != "get" or not path.startswith("/api/v1/"):
        return False
    tags = set(operation.get("tags", []))
    return path.startswith("/api/v1/jobs/{job_id}") or bool(tags & {"fidelity", "sensitivity", "sweep"})


def untyped_objects(spec: dict[str, Any]) -> dict[str, str]:
    """Every place reachable from a result route's 2xx JSON response whose schema says nothing of its
    contents (`{}`, or an object with no properties whose values may be anything), by its location
    ("Schema.property" or the route), with the route that reaches it."""
    schemas = spec.get("components", {}).get("schemas", {})
    found: dict[str, str] = {}
    seen: set[str] = set()

    def untyped(node: dict[str, Any]) -> bool:
        if not node.keys() & SHAPE_KEYWORDS:  # only a title, description or default: any value at all
            return True
        if node.get("type") != "object" or node.get("properties"):
            return False
        extra = node.get("additionalProperties", True)
        return extra is True or extra == {}

    def walk(node: Any, where: str, route: str) -> None:
        if not isinstance(node, dict):
            return
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name not in seen:
                seen.add(name)
                walk(schemas[name], name, route)
            return
        if untyped(node):
            found.setdefault(where, route)
            return
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            for i, option in enumerate(node.get(key, [])):
                walk(option, where if key != "prefixItems" else f"{where}[{i}]", route)
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{where}[]", route)
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], f"{where}{{}}", route)
        for prop, sub in node.get("properties", {}).items():
            walk(sub, f"{where}.{prop}", route)

    for path, methods in spec.get("paths", {}).items():
        for method, operation in methods.items():
            if not _is_result_route(path, method, operation):
                continue
            route = f"{method.upper()} {path}"
            for status, response in operation.get("responses", {}).items():
                if not str(status).startswith("2"):
                    continue
                for media in response.get("content", {}).values():
                    if "schema" in media:
                        walk(media["schema"], route, route)
    return found


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as data_dir:
        return create_app(Settings(data_dir=Path(data_dir), seed_demo=False), run_reaper=False).openapi()


def test_result_routes_serve_no_untyped_object(spec: dict[str, Any]) -> None:
    assert any(_is_result_route(p, m, op) for p, ms in spec["paths"].items() for m, op in ms.items())
    untyped = {where: route for where, route in untyped_objects(spec).items() if where not in ALLOWED_UNTYPED}
    assert not untyped, f"untyped result objects (type them in backend/api/result_schemas): {untyped}"


def test_the_allow_list_has_no_stale_entries(spec: dict[str, Any]) -> None:
    assert set(ALLOWED_UNTYPED) <= set(untyped_objects(spec))


class _Loose(BaseModel):
    summary: dict[str, Any]
    anything: Any
    typed: dict[str, float | None]


class _Typed(BaseModel):
    values: dict[str, list[int]]


def test_the_walker_finds_an_untyped_object() -> None:
    """The negative case: a result route serving dict[str, Any] and Any is caught, a typed one is not."""
    app = FastAPI()

    @app.get("/api/v1/jobs/{job_id}/loose")
    def loose(job_id: str) -> _Loose:
        raise NotImplementedError

    @app.get("/api/v1/jobs/{job_id}/typed")
    def typed(job_id: str) -> _Typed:
        raise NotImplementedError

    @app.get("/api/v1/elsewhere")
    def elsewhere() -> _Loose:  # not a result route
        raise NotImplementedError

    found = untyped_objects(app.openapi())
    assert set(found) == {"_Loose.summary", "_Loose.anything"}
    assert found["_Loose.summary"] == "GET /api/v1/jobs/{job_id}/loose"


# --------------------------------------------------------------------------------------------------------
# Documents stored by older workers


def _succeeded(session: Session, project_id: str, kind: str, params: dict[str, Any]) -> Job:
    job = Job(project_id=uuid.UUID(project_id), kind=kind, params=params, status="succeeded", attempts=1)
    session.add(job)
    session.flush()
    return job


def test_old_documents_stay_readable(client: TestClient, settings: Settings, project: dict[str, str]) -> None:
    """A summary without the fields newer workers add (no kind, n_finite, sqnr_db_infinite, concentration,
    params) and a sensitivity scan without computed_layers/model/sqnr_db_infinite are served, typed, with
    the defaults; the numbers they hold come through."""
    ids = {k: str(uuid.uuid4()) for k in ("g", "c", "d")}
    old_summary = {
        "n_samples": 4,
        "primary_output": "logits",
        "outputs": {"logits": {"mse": 0.5, "sqnr_db": 12.5, "kl_mean_nats": 0.25, "top1_match": 0.75}},
        "per_sample_summary": {"output": "logits", "n_flagged": 1, "threshold_kl": 0.1},
        "warnings": ["w"],
    }
    old_scan = {
        "mode": "only",
        "configs": [{"id": "w8", "config": {"type": "weight_quant", "bits": 8}, "weight_bits": 8}],
        "layers": [
            {
                "name": "fc",
                "type": "Linear",
                "params": 10,
                "weight_params": 8,
                "macs": 8,
                "depth_index": 0,
                "depth_fraction": 0.0,
                "shared_with": [],
                "notes": [],
            }
        ],
        "primary_output": "logits",
        "output_kind": "classification",
        "n_samples": 4,
        "ranking_metric": "kl",
        "matrix": {
            "rows": ["fc"],
            "columns": ["w8"],
            "kl_mean": [[0.5]],
            "top1_agreement": [[1.0]],
            "sqnr_db": [[None]],
        },
        "ranking": {"overall": ["fc"], "by_config": {"w8": ["fc"]}},
        "cells": [{"layer": "fc", "config": "w8", "kl_mean": 0.5}],
        "whole_model": {"w8": {"kl_mean": 0.5, "top1_agreement": 1.0}},
        "notes": [],
    }
    with Session(engine_for(settings.resolved_database_url)) as s:
        fidelity = _succeeded(
            s,
            project["id"],
            "fidelity",
            {"golden_model_id": ids["g"], "compressed_model_id": ids["c"], "dataset_id": ids["d"]},
        )
        scan = _succeeded(s, project["id"], "sensitivity", {"model_id": ids["g"], "dataset_id": ids["d"]})
        s.add_all(
            [
                JobResult(job_id=fidelity.id, key=RESULT_FIDELITY_SUMMARY, payload=old_summary),
                JobResult(job_id=scan.id, key=RESULT_SENSITIVITY, payload=old_scan),
                JobResult(
                    job_id=scan.id, key=RESULT_SENSITIVITY_PLANS, payload={"plans": [{"average_bits": 4.0}]}
                ),
            ]
        )
        s.commit()
        fidelity_id, scan_id = fidelity.id, scan.id

    summary = client.get(f"/api/v1/jobs/{fidelity_id}/fidelity").json()["summary"]
    logits = summary["outputs"]["logits"]
    assert logits["kind"] == "classification"  # inferred from its divergences
    assert (logits["kl_mean_nats"], logits["sqnr_db"], logits["sqnr_db_infinite"]) == (0.25, 12.5, False)
    assert logits["labels"] is None and summary["per_sample_summary"]["concentration"] is None
    assert summary["warnings"] == ["w"] and summary["params"] is None

    report = client.get(f"/api/v1/jobs/{scan_id}/sensitivity", params={"cells": True}).json()
    assert report["computed_layers"] == [] and report["model"] is None
    assert report["matrix"]["sqnr_db_infinite"] is None
    assert report["cells"][0]["kl_mean"] == 0.5 and report["cells"][0]["sqnr_db_infinite"] is False
    assert report["whole_model"]["w8"]["top1_agreement"] == 1.0
    assert report["configs"][0]["config"] == {"type": "weight_quant", "bits": 8}  # nothing added
    plans = client.get(f"/api/v1/jobs/{scan_id}/sensitivity/plans").json()["plans"]
    assert plans[0]["average_bits"] == 4.0 and plans[0]["measurement"] is None


def test_per_sample_rows_say_when_null_sqnr_is_infinite(
    client: TestClient, settings: Settings, project: dict[str, str]
) -> None:
    """sqnr_db null means +∞ only for a finite sample with zero error; a non-finite sample, or one whose
    golden output is all zeros (−∞), is undefined."""
    rows = [  # (mse, sqnr_db, finite) -> expected sqnr_db_infinite
        ((0.0, None, True), True),
        ((0.5, None, True), False),  # zero signal: −∞
        ((None, None, False), False),
        ((0.5, 20.0, True), False),
    ]
    with Session(engine_for(settings.resolved_database_url)) as s:
        job = _succeeded(
            s,
            project["id"],
            "fidelity",
            {k: str(uuid.uuid4()) for k in ("golden_model_id", "compressed_model_id", "dataset_id")},
        )
        s.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload={}))
        s.add_all(
            SampleDivergence(
                job_id=job.id,
                output_name="y",
                sample_index=i,
                mse=mse,
                sqnr_db=sqnr,
                finite=finite,
                flagged=False,
            )
            for i, ((mse, sqnr, finite), _) in enumerate(rows)
        )
        s.commit()
        job_id = job.id
    page = client.get(
        f"/api/v1/jobs/{job_id}/fidelity/samples", params={"sort": "sample_index", "order": "asc"}
    )
    assert page.status_code == 200, page.text
    assert [item["sqnr_db_infinite"] for item in page.json()["items"]] == [want for _, want in rows]


# --------------------------------------------------------------------------------------------------------
# Documents the real worker writes


def extras(model: Any, where: str = "") -> Iterator[str]:
    """Fields a validated result carries that no schema declares (passed through by extra="allow")."""
    if isinstance(model, BaseModel):
        if isinstance(model, ResultModel):
            yield from (f"{where}.{key}" for key in (model.model_extra or {}))
        for name in type(model).model_fields:
            yield from extras(getattr(model, name), f"{where}.{name}")
    elif isinstance(model, list):
        for i, item in enumerate(model):
            yield from extras(item, f"{where}[{i}]")
    elif isinstance(model, dict):
        for key, item in model.items():
            yield from extras(item, f"{where}.{key}")


def missing(stored: Any, served: Any, where: str = "") -> Iterator[str]:
    """Where the served JSON lacks or changes what the stored document holds (the stored one ⊆ served)."""
    if isinstance(stored, dict):
        if not isinstance(served, dict):
            yield where
            return
        for key, value in stored.items():
            if key not in served:
                yield f"{where}.{key}"
            else:
                yield from missing(value, served[key], f"{where}.{key}")
    elif isinstance(stored, list):
        if not isinstance(served, list) or len(served) != len(stored):
            yield where
            return
        for i, (a, b) in enumerate(zip(stored, served, strict=True)):
            yield from missing(a, b, f"{where}[{i}]")
    elif stored != served:
        yield f"{where}: {stored!r} != {served!r}"


def test_configs_are_served_as_stored() -> None:
    """A config keeps exactly its stored fields, whatever its type (a mixed-precision point's per-layer bits
    included, as worker/jobs/sweep.py writes it)."""
    from backend.api.result_schemas.common import CompressionConfigOut

    for stored in (
        {"type": "mixed_precision", "average_bits": 5.0, "bits": {"conv1": 8, "fc": 2}},
        {"type": "quantize", "weights": {"type": "weight_quant", "bits": 4}, "activations": None},
        {"type": "schedule", "stages": [{"type": "magnitude_prune", "sparsity": 0.5}]},
        {"type": "none"},
    ):
        assert CompressionConfigOut.model_validate(stored).model_dump(mode="json") == stored
