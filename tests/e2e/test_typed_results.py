"""Typed results on what the real worker writes: a fidelity job (with its layer profile), a sensitivity scan
(all-but view, plans, channel importance) and a sweep run through the queue; every result route serves the
stored document whole (nothing dropped or changed by its schema) and every field of it is declared in a
schema (nothing passed through untyped)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.api.diagnostic_schemas import FidelityClassesOut
from backend.api.result_schemas.sweep_search import SweepSearchOut
from backend.api.routes.sweep import FrontierOut, SweepPointOut
from backend.api.schemas import FidelityReportOut, LayerProfileOut, Page, SampleDivergenceOut
from backend.api.sensitivity_schemas import (
    ChannelImportanceOut,
    MixedPrecisionPlansOut,
    SensitivityComparisonOut,
    SensitivityReportOut,
)
from backend.db.models import JobResult, SweepPoint
from backend.db.session import engine_for
from tests.backend.test_typed_results import extras, missing
from tests.e2e.conftest import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _typed(model: type[BaseModel], body: Any) -> BaseModel:
    parsed = model.model_validate(body)
    assert not list(extras(parsed)), f"{model.__name__}: fields no schema declares: {list(extras(parsed))}"
    return parsed


def test_every_result_the_worker_writes_is_served_whole_and_typed(make_stack: Any, demo_files: Any) -> None:
    stack: Stack = make_stack()
    stack.add_worker("w1")
    c = stack.client
    project = c.create_project("typed")
    golden = c.upload_model(project["id"], demo_files.golden_onnx)
    int8 = c.upload_model(project["id"], demo_files.int8_onnx)
    dataset = c.upload_dataset(project["id"], demo_files.test_npz)
    for model in (golden, int8):
        assert c.wait_model(model["id"], timeout=120)["status"] == "ready"

    def run(kind: str, params: dict[str, Any]) -> str:
        job = c.create_job(project["id"], kind, {"dataset_id": dataset["id"]} | params)
        done = c.wait_job(job["id"], timeout=300)
        assert done["status"] == "succeeded", done["error"]
        return str(job["id"])

    fidelity = run(
        "fidelity",
        {
            "golden_model_id": golden["id"],
            "compressed_model_id": int8["id"],
            "layer_profile": True,
            "layer_profile_samples": 32,
        },
    )
    scan = run(
        "sensitivity",
        {
            "model_id": golden["id"],
            "configs": [{"type": "weight_quant", "bits": 8}, {"type": "weight_quant", "bits": 2}],
            "max_samples": 48,
            "all_but": True,
            "mixed_precision_bits": [5],
            "importance_methods": ["l1", "reconstruction"],
        },
    )
    sweep = run(
        "sweep",
        {
            "model_id": golden["id"],
            "configs": [
                {"type": "weight_quant", "bits": 8, "per_channel": True},
                {"type": "magnitude_prune", "sparsity": 0.5},
            ],
            "mixed_precision": {"sensitivity_job_id": scan, "average_bits": [5]},
            "search": {
                "sensitivity_job_id": scan,
                "low": {"type": "weight_quant", "bits": 2},
                "high": {"type": "weight_quant", "bits": 8},
                "threshold": 0.99,
            },
            "max_samples": 48,
            "latency_batch_sizes": [1],
            "latency_repeats": 3,
        },
    )
    with Session(engine_for(stack.settings.resolved_database_url)) as s:
        stored = {
            key: payload for key, payload in s.execute(select(JobResult.key, JobResult.payload)).tuples()
        }
        points = {p.index: p for p in s.scalars(select(SweepPoint).order_by(SweepPoint.index))}

    def get(path: str, **params: Any) -> Any:
        response = c.http.get(path, params=params)
        assert response.status_code == 200, f"{path}: {response.text[:500]}"
        return response.json()

    def served_whole(stored_doc: Any, served: Any, what: str) -> None:
        lost = list(missing(stored_doc, served))
        assert not lost, f"{what}: the response lost or changed {lost[:20]}"

    report = get(f"/jobs/{fidelity}/fidelity")
    _typed(FidelityReportOut, report)
    served_whole(stored["fidelity.summary"], report["summary"], "fidelity summary")
    profile = get(f"/jobs/{fidelity}/fidelity/layers")
    LayerProfileOut.model_validate(profile)
    served_whole(stored["fidelity.layers"], profile, "layer profile")
    samples = Page[SampleDivergenceOut].model_validate(get(f"/jobs/{fidelity}/fidelity/samples"))
    assert samples.total == report["summary"]["n_samples"]
    assert all(not row.sqnr_db_infinite for row in samples.items if row.sqnr_db is not None)
    classes = get(f"/jobs/{fidelity}/fidelity/classes")
    _typed(FidelityClassesOut, classes)
    served_whole(stored["fidelity.classes"], classes, "per-class damage")
    assert classes["outputs"][report["summary"]["primary_output"]]["by"] == "label"

    for route, key in (("sensitivity", "sensitivity.result"), ("sensitivity/all-but", "sensitivity.all_but")):
        body = get(f"/jobs/{scan}/{route}", cells=True)
        _typed(SensitivityReportOut, body)
        served_whole(stored[key], body, route)
    plans = get(f"/jobs/{scan}/sensitivity/plans")
    _typed(MixedPrecisionPlansOut, plans)
    served_whole(stored["sensitivity.plans"], plans, "plans")
    assert plans["plans"][0]["measurement"]["measured"]["kl_mean"] is not None
    for layer, methods in stored["sensitivity.importance"]["layers"].items():
        for method, doc in methods.items():
            body = get(f"/jobs/{scan}/sensitivity/channels", layer=layer, method=method)
            _typed(ChannelImportanceOut, body)
            served_whole(doc, body, f"channels {layer} {method}")
    _typed(SensitivityComparisonOut, get("/sensitivity-profiles", job_ids=[scan]))

    served = get(f"/jobs/{sweep}/sweep/points", details=True)["items"]
    assert [p["index"] for p in served] == sorted(points)
    mixed = [p for p in served if p["config"]["type"] == "mixed_precision"]
    assert len(mixed) == 1 and isinstance(mixed[0]["config"]["bits"], dict), [p["config"] for p in served]
    for body in served:
        _typed(SweepPointOut, body)
        row = points[body["index"]]
        served_whole(row.point, body["point"], f"point {row.label}")
        served_whole(row.config, body["config"], f"config {row.label}")
        served_whole(row.export_manifest, body["export_manifest"], f"manifest {row.label}")
    search = get(f"/jobs/{sweep}/sweep/search")
    _typed(SweepSearchOut, search)
    served_whole(stored["sweep.search"], search, "search")
    steps = [p for p in served if p["config"]["type"] == "search_step"]
    assert [p["label"] for p in steps] == [f"search-k{s['k']}" for s in search["steps"]]
    assert [p["index"] for p in steps] == [s["index"] for s in search["steps"]]
    frontier = get("/sweep-frontier", job_ids=[sweep], objective=["kl_mean:min", "size_bytes:min"])
    _typed(FrontierOut, frontier)
    assert frontier["objectives"] == [
        {"name": "kl_mean", "direction": "min"},
        {"name": "size_bytes", "direction": "min"},
    ]
