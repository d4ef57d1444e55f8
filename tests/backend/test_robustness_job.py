"""A fidelity job with robustness slices, run in-process by the real handlers on the demo's digits CNN
(float ONNX against its int8 QDQ copy) over the real app and Postgres: the robustness document is stored
beside the clean report, listed in its diagnostics and served whole and typed by GET /jobs/{id}/robustness;
a robustness step that fails leaves the job succeeded with its clean report and a document that says why;
a job run without the option answers 404 there. An out-of-distribution dataset is compared like a slice
(checked against scipy on onnxruntime's outputs); one that does not fit leaves the slices standing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.special
from fastapi.testclient import TestClient
from sqlalchemy import select

from backend.api.app import create_app
from backend.api.result_schemas.robustness import RobustnessOut
from backend.contracts import RESULT_FIDELITY_ROBUSTNESS
from backend.db.models import JobResult, Model
from backend.db.session import session_factory
from backend.settings import Settings
from tests.backend.test_typed_results import extras, missing
from tests.conftest import truncate_all
from tests.support.fidelity_api import FidelityApi
from tests.support.services import stack_settings
from worker.demo.models import DemoBundle, write_demo_bundle
from worker.jobs.inspect import InspectHandler
from worker.runtime import execute_job

SAMPLES = 96


@pytest.fixture(scope="module")
def settings(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return stack_settings(pg_url, tmp_path_factory.mktemp("robustness_job"), "robustness")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> DemoBundle:
    return write_demo_bundle(tmp_path_factory.mktemp("robustness_demo"))


@pytest.fixture
def api(settings: Settings, pg_url: str, bundle: DemoBundle) -> Iterator[FidelityApi]:
    truncate_all(pg_url)
    with TestClient(create_app(settings, run_reaper=False)) as http:
        yield FidelityApi(http, settings, "robustness", bundle.golden_onnx, bundle.int8_onnx, bundle.test_npz)
    truncate_all(pg_url)


def stored(settings: Settings, job_id: str) -> dict[str, Any] | None:
    with session_factory(settings.resolved_database_url)() as s:
        return s.execute(
            select(JobResult.payload).where(
                JobResult.job_id == uuid.UUID(job_id), JobResult.key == RESULT_FIDELITY_ROBUSTNESS
            )
        ).scalar_one_or_none()


def test_the_document_is_stored_listed_and_served_typed(api: FidelityApi, bundle: DemoBundle) -> None:
    slices = ["gaussian_noise", "occlusion", "jpeg", "fgsm"]
    options = {"slices": slices, "severities": [1, 3], "max_samples": SAMPLES}
    job_id = api.fidelity(layer_profile=False, robustness=options)
    report = api.get(f"/jobs/{job_id}/fidelity").json()
    assert "robustness" in report["diagnostics"]
    answer = api.get(f"/jobs/{job_id}/robustness")
    assert answer.status_code == 200, answer.text
    served = answer.json()
    document = stored(api.settings, job_id)
    assert document is not None and document["error"] is None
    assert not list(missing(document, served)), "the schema dropped or changed a stored field"
    assert not list(extras(RobustnessOut.model_validate(served))), "a stored field has no schema"
    assert served["n_samples"] == SAMPLES and served["primary_output"] == "logits"
    assert [(s["name"], s["target"]) for s in served["slices"]] == [
        ("gaussian_noise", "float"), ("occlusion", "image"), ("jpeg", "image")
    ]  # fmt: skip
    assert all([p["severity"] for p in s["points"]] == [1, 3] for s in served["slices"])
    assert all(0 < p["cosine_mean"] <= 1 for s in served["slices"] for p in s["points"])
    # The demo's golden model is ONNX: no input gradients, so the attack is skipped and says why.
    (skipped,) = served["skipped"]
    assert skipped["name"] == "fgsm" and "golden model is ONNX" in skipped["reason"]
    labels = np.load(bundle.test_npz)["labels"][:SAMPLES]
    worst = served["slices"][0]["points"][-1]["worst_samples"]
    assert all(w["label"] == labels[w["sample_index"]] for w in worst)


def test_a_failing_step_leaves_the_clean_report(api: FidelityApi, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr("worker.engine.robustness.evaluate_robustness", fail)
    job_id = api.fidelity(layer_profile=False, robustness={"max_samples": SAMPLES})
    report = api.get(f"/jobs/{job_id}/fidelity")
    assert report.status_code == 200 and report.json()["summary"]["n_samples"] == 360
    served = api.get(f"/jobs/{job_id}/robustness").json()
    assert (
        "internal error ZeroDivisionError" in served["error"]
        and "clean report is complete" in served["error"]
    )
    assert served["slices"] == []
    samples = api.get(f"/jobs/{job_id}/fidelity/samples?limit=5").json()
    assert samples["total"] == 360


def test_a_job_without_the_option_has_no_document(api: FidelityApi) -> None:
    job_id = api.fidelity(layer_profile=False)
    assert "robustness" not in api.get(f"/jobs/{job_id}/fidelity").json()["diagnostics"]
    answer = api.get(f"/jobs/{job_id}/robustness")
    assert answer.status_code == 404 and "has no robustness" in answer.json()["detail"]


def test_unknown_slices_and_severities_are_refused(api: FidelityApi) -> None:
    base = {"golden_model_id": api.golden, "compressed_model_id": api.int8, "dataset_id": api.dataset}
    bad: dict[str, Any]
    for bad in ({"slices": ["snow"]}, {"severities": [4]}, {"slices": []}, {"seed": -1}):
        answer = api.http.post(
            "/api/v1/jobs",
            headers=api.headers,
            json={"project_id": api.project, "kind": "fidelity", "params": base | {"robustness": bad}},
        )
        assert answer.status_code == 422, (bad, answer.text)


def ort_probabilities(path: Path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    logits = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
    return np.asarray(scipy.special.softmax(logits.astype(np.float64), axis=1))


def test_an_ood_dataset_is_compared_like_a_slice(
    api: FidelityApi, bundle: DemoBundle, tmp_path: Path
) -> None:
    """The digits inverted (white strokes on black become black on white) as the out-of-distribution data:
    KL, agreement, accuracies and the brittleness ratio equal scipy's on onnxruntime's own outputs."""
    digits = np.load(bundle.test_npz)
    inverted = (1.0 - digits["input"]).astype(np.float32)
    np.savez(tmp_path / "inverted.npz", input=inverted, labels=digits["labels"])
    ood = api.upload("datasets", tmp_path / "inverted.npz")
    job_id = api.fidelity(layer_profile=False, robustness={"slices": [], "ood_dataset_id": ood})
    served = RobustnessOut.model_validate(api.get(f"/jobs/{job_id}/robustness").json())
    assert not list(extras(served)) and served.error is None and served.slices == []
    assert served.ood is not None and served.ood.error is None
    assert served.ood.dataset_name == "inverted.npz" and str(served.ood.dataset_id) == ood
    p = ort_probabilities(bundle.golden_onnx, inverted)
    q = ort_probabilities(bundle.int8_onnx, inverted)
    kl = scipy.special.rel_entr(p, q).sum(axis=1)
    assert served.ood.n_samples == len(inverted) and served.ood.n_finite == len(inverted)
    assert served.ood.kl_mean_nats == pytest.approx(kl.mean(), rel=1e-5)
    assert served.ood.top1_agreement == pytest.approx((p.argmax(1) == q.argmax(1)).mean())
    assert served.ood.golden_accuracy == pytest.approx((p.argmax(1) == digits["labels"]).mean())
    assert served.ood.compressed_accuracy == pytest.approx((q.argmax(1) == digits["labels"]).mean())
    p_clean = ort_probabilities(bundle.golden_onnx, digits["input"])
    q_clean = ort_probabilities(bundle.int8_onnx, digits["input"])
    clean_kl = scipy.special.rel_entr(p_clean, q_clean).sum(axis=1).mean()
    assert served.ood.brittleness_ratio == pytest.approx(kl.mean() / clean_kl, rel=1e-4)
    assert served.ood.golden_accuracy < served.clean.golden_accuracy  # inverted digits are off-distribution
    worst = [w.sample_index for w in served.ood.worst_samples]
    assert worst == list(np.argsort(-kl, kind="stable")[:10])


def test_an_ood_dataset_that_does_not_fit_leaves_the_slices(api: FidelityApi, tmp_path: Path) -> None:
    np.savez(tmp_path / "flat.npz", input=np.zeros((20, 64), np.float32))
    flat = api.upload("datasets", tmp_path / "flat.npz")
    options = {"slices": ["gaussian_noise"], "severities": [1], "max_samples": 40, "ood_dataset_id": flat}
    job_id = api.fidelity(layer_profile=False, robustness=options)
    served = RobustnessOut.model_validate(api.get(f"/jobs/{job_id}/robustness").json())
    assert served.error is None and [s.name for s in served.slices] == ["gaussian_noise"]
    assert served.ood is not None and served.ood.dataset_name == "flat.npz"
    assert served.ood.error is not None and "could not be compared" in served.ood.error
    assert "input" in served.ood.error and served.ood.n_samples == 0


def test_an_ood_dataset_must_be_the_projects(api: FidelityApi, tmp_path: Path) -> None:
    other = api.post("/projects", json={"name": "elsewhere"})["id"]
    np.savez(tmp_path / "elsewhere.npz", input=np.zeros((4, 1, 8, 8), np.float32))
    with (tmp_path / "elsewhere.npz").open("rb") as f:
        foreign = api.post(f"/projects/{other}/datasets", files={"file": ("elsewhere.npz", f)})["id"]
    base = {"golden_model_id": api.golden, "compressed_model_id": api.int8, "dataset_id": api.dataset}
    answer = api.http.post(
        "/api/v1/jobs",
        headers=api.headers,
        json={
            "project_id": api.project,
            "kind": "fidelity",
            "params": base | {"robustness": {"ood_dataset_id": foreign}},
        },
    )
    assert answer.status_code == 404, answer.text
    assert foreign in answer.json()["detail"]


def test_a_pytorch_twin_runs_the_attacks_on_an_onnx_golden_model(
    api: FidelityApi, bundle: DemoBundle
) -> None:
    twin = api.upload("models", bundle.golden_pt2)
    with session_factory(api.settings.resolved_database_url)() as s:
        inspect_id = s.get_one(Model, uuid.UUID(twin)).inspect_job_id
    assert execute_job(str(inspect_id), InspectHandler(), api.settings) == "succeeded"
    options = {"slices": ["fgsm"], "severities": [3], "max_samples": 40, "twin_model_id": twin}
    job_id = api.fidelity(layer_profile=False, robustness=options)
    served = RobustnessOut.model_validate(api.get(f"/jobs/{job_id}/robustness").json())
    assert served.error is None and served.skipped == [] and [s.name for s in served.slices] == ["fgsm"]
    assert served.twin is not None and served.twin.top1_agreement == 1.0
    point = served.slices[0].points[0]
    assert point.golden_accuracy is not None and served.clean.golden_accuracy is not None
    assert (
        point.golden_accuracy < served.clean.golden_accuracy
    )  # crafted on the twin, it moves the ONNX golden
    # Without the twin the same job skips the attack and says how to run it.
    plain = api.fidelity(
        layer_profile=False, robustness={"slices": ["fgsm"], "severities": [3], "max_samples": 40}
    )
    skipped = RobustnessOut.model_validate(api.get(f"/jobs/{plain}/robustness").json()).skipped
    assert [s.name for s in skipped] == ["fgsm"] and "twin_model_id" in skipped[0].reason


def test_a_twin_must_be_a_pytorch_model(api: FidelityApi) -> None:
    base = {"golden_model_id": api.golden, "compressed_model_id": api.int8, "dataset_id": api.dataset}
    answer = api.http.post(
        "/api/v1/jobs",
        headers=api.headers,
        json={
            "project_id": api.project,
            "kind": "fidelity",
            "params": base | {"robustness": {"slices": ["fgsm"], "twin_model_id": api.int8}},
        },
    )
    assert answer.status_code == 422, answer.text
    assert "PyTorch copy" in answer.json()["detail"]
