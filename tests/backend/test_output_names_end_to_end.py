"""Any legal ONNX output name works end to end (issue 32): a real ONNX model pair (onnxruntime) whose outputs
are named with quotes, slashes, spaces, commas, braces, a leading $ and non-ASCII, compared by the engine
with the top-k recorder, stored as the fidelity handler stores it; the sample inspector, the per-sample CSV
and the offline report serve every output by its exact name (a name with a quote used to answer 500: the
name went unescaped into a JSON path). Over Postgres here; SQLite in test_output_names_sqlite.py."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import numpy as np
import onnx
import pytest
from fastapi.testclient import TestClient
from onnx import TensorProto, helper, numpy_helper

from backend.contracts import RESULT_FIDELITY_SUMMARY
from backend.db.models import Job, JobResult, SampleDivergence
from backend.db.session import session_factory
from backend.services.sample_inspector import RESULT_FIDELITY_SAMPLE_TOPK
from backend.settings import Settings
from tests.backend.test_report_export import _download, api, dist, project_id  # noqa: F401 (fixtures)
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.fidelity.sample_topk import SampleTopK
from worker.engine.loaders.onnx_runner import load_onnx
from worker.jobs.fidelity import sample_rows
from worker.runtime import json_safe

NAMES = ['logits "quoted"', "head/scores é 出力", '$x,{y} \\ "z"']
N, FEATURES, CLASSES = 9, 4, 6


def classifier(path: Path, weights: list[np.ndarray]) -> Path:
    """x [batch, FEATURES] -> one MatMul per output, each output named from NAMES."""
    nodes, inits = [], []
    for i, (name, w) in enumerate(zip(NAMES, weights, strict=True)):
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", ["x", f"w{i}"], [name]))
    graph = helper.make_graph(
        nodes,
        "names",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", FEATURES])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", CLASSES]) for n in NAMES],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def stored_job(settings: Settings, project: str, dataset_id: str, tmp: Path, x: np.ndarray) -> str:
    rng = np.random.default_rng(3)
    weights = [rng.normal(size=(FEATURES, CLASSES)) for _ in NAMES]
    golden = load_onnx(classifier(tmp / "golden.onnx", weights), 1)
    compressed = load_onnx(
        classifier(tmp / "compressed.onnx", [w + rng.normal(size=w.shape) for w in weights]), 1
    )
    assert [o.name for o in golden.outputs] == NAMES
    recorder = SampleTopK()
    report = compare_models(
        recorder.wrap(golden, "golden"),
        recorder.wrap(compressed, "compressed"),
        {"x": x},
        None,
        FidelityParams(batch_size=4),
    )
    document = recorder.document(report)
    assert document is not None and sorted(document["output_names"]) == sorted(NAMES)
    with session_factory(settings.resolved_database_url)() as session:
        job = Job(
            project_id=uuid.UUID(project),
            kind="fidelity",
            status="succeeded",
            attempts=1,
            params={
                "golden_model_id": str(uuid.uuid4()),
                "compressed_model_id": str(uuid.uuid4()),
                "dataset_id": dataset_id,
            },
        )
        session.add(job)
        session.flush()
        session.add(
            JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload=json_safe(report.summary_dict()))
        )
        session.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_SAMPLE_TOPK, payload=document))
        session.add_all(
            SampleDivergence(**row) for row in sample_rows(job.id, report.primary_output, report.per_sample)
        )
        session.commit()
        return str(job.id)


@pytest.fixture
def job(api: TestClient, project_id: str, settings: Settings, tmp_path: Path) -> str:  # noqa: F811
    x = np.random.default_rng(1).normal(size=(N, FEATURES)).astype(np.float32)
    buf = io.BytesIO()
    np.savez(buf, x=x)
    dataset = api.post(f"/api/v1/projects/{project_id}/datasets", files={"file": ("d.npz", buf.getvalue())})
    assert dataset.status_code == 201, dataset.text
    return stored_job(settings, project_id, dataset.json()["id"], tmp_path, x)


@pytest.mark.parametrize("index", [0, N - 1])
def test_the_inspector_serves_every_output_by_its_name(api: TestClient, job: str, index: int) -> None:  # noqa: F811
    response = api.get(f"/api/v1/jobs/{job}/samples/{index}")
    assert response.status_code == 200, response.text
    outputs = {o["output"]: o for o in response.json()["outputs"]}
    assert sorted(outputs) == sorted(NAMES)
    for name, output in outputs.items():
        assert output["compressed_output"] == name  # matched by name in both models
        assert output["num_classes"] == CLASSES
        for role in ("golden", "compressed"):
            probabilities = output[role]["probabilities"]
            assert len(output[role]["classes"]) == len(probabilities) == 5
            assert probabilities == sorted(probabilities, reverse=True) and 0 < probabilities[0] <= 1


def test_the_csv_filters_by_an_odd_name(api: TestClient, job: str) -> None:  # noqa: F811
    primary = api.get(f"/api/v1/jobs/{job}/fidelity/samples.csv", params={"output": NAMES[0]})
    assert primary.status_code == 200, primary.text
    assert primary.text.count(NAMES[0].replace('"', '""')) == N


def test_the_report_exports(api: TestClient, job: str) -> None:  # noqa: F811
    _, doc = _download(api, job, "fidelity")
    assert doc["job_id"] == job
    assert any(name in str(doc) for name in NAMES)
