"""Attention-map fidelity in a fidelity job, run in-process by the real handlers on all-MiniLM-L6-v2 (fp32
ONNX export against a third party's int8 ONNX, tests/support/pretrained_*.py) over the real app and Postgres:
the document is stored beside the report, listed in its diagnostics, served whole and typed by
GET /jobs/{id}/fidelity/attention and equal to scipy's divergences of the softmaxes plain onnxruntime
sessions capture (tests/engine/test_attention_fidelity.py); a step that fails or cannot pair the graphs
leaves the job succeeded with a document that says why, and a golden graph without attention none."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from backend.api.app import create_app
from backend.api.result_schemas.attention import FidelityAttentionOut
from backend.api.routes.report_export import DATA_OPEN
from backend.contracts import RESULT_FIDELITY_ATTENTION
from backend.db.models import JobResult
from backend.db.session import session_factory
from backend.settings import Settings
from tests.backend.test_typed_results import extras, missing
from tests.conftest import truncate_all
from tests.engine.test_attention_fidelity import onnx_softmaxes
from tests.support.attention_torch import scipy_divergences
from tests.support.fidelity_api import FidelityApi
from tests.support.pretrained_minilm import minilm_fp32_onnx, minilm_int8_onnx, tokenize
from tests.support.services import stack_settings
from worker.engine.attention import AttentionOutcome

SENTENCES = (
    "A man is playing a guitar on stage.",
    "The cat is sleeping on the sofa.",
    "The stock market fell sharply this morning.",
    "How do I reset my password?",
    "Quantized models run faster on phones, but do their attention maps stay the same?",
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def settings(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return stack_settings(pg_url, tmp_path_factory.mktemp("attention_job"), "attention")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    folder = tmp_path_factory.mktemp("attention_models")
    dataset = folder / "sentences.npz"
    tokens = tokenize(SENTENCES)
    np.savez(dataset, input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"],
             token_type_ids=tokens["token_type_ids"])  # fmt: skip
    return minilm_fp32_onnx(folder), minilm_int8_onnx(), dataset


@pytest.fixture
def api(settings: Settings, pg_url: str, files: tuple[Path, Path, Path]) -> Iterator[FidelityApi]:
    truncate_all(pg_url)
    dist = settings.data_dir.parent / "dist"  # the offline page's one element the export fills
    dist.mkdir(exist_ok=True)
    (dist / "offline.html").write_text(f"<html><body>{DATA_OPEN}</script></body></html>")
    with TestClient(create_app(settings, run_reaper=False, frontend_dist=dist)) as http:
        yield FidelityApi(http, settings, "attention", *files)
    truncate_all(pg_url)


def stored(settings: Settings, job_id: str) -> dict[str, Any] | None:
    with session_factory(settings.resolved_database_url)() as s:
        return s.execute(
            select(JobResult.payload).where(
                JobResult.job_id == uuid.UUID(job_id), JobResult.key == RESULT_FIDELITY_ATTENTION
            )
        ).scalar_one_or_none()


def test_the_document_is_stored_listed_and_served_typed(
    api: FidelityApi, files: tuple[Path, Path, Path]
) -> None:
    job_id = api.fidelity(layer_profile=False)
    assert "attention" in api.get(f"/jobs/{job_id}/fidelity").json()["diagnostics"]
    answer = api.get(f"/jobs/{job_id}/fidelity/attention")
    assert answer.status_code == 200, answer.text
    served = answer.json()
    document = stored(api.settings, job_id)
    assert document is not None and "error" not in document
    assert served == {"job_id": job_id, "error": None, **document}
    assert not list(missing(document, served)), "the schema dropped or changed a stored field"
    assert not list(extras(FidelityAttentionOut.model_validate(served))), "a stored field has no schema"
    # The shareable report file embeds it as served.
    export = api.get(f"/jobs/{job_id}/export.html")
    assert export.status_code == 200, export.text
    embedded = json.loads(export.text.split(DATA_OPEN, 1)[1].split("</script>", 1)[0])
    assert embedded["responses"][f"/api/v1/jobs/{job_id}/fidelity/attention"] == served
    # scipy on the softmaxes of plain onnxruntime sessions over the same arrays.
    feeds = dict(np.load(files[2]))
    keep = feeds["attention_mask"] != 0
    kl_ref, js_ref = scipy_divergences(onnx_softmaxes(files[0], feeds), onnx_softmaxes(files[1], feeds), keep)
    assert (served["heads"], len(served["layers"]), served["n_samples"]) == (12, 6, len(SENTENCES))
    assert served["mask_input"] == "attention_mask" and served["n_queries"] == int(keep.sum())
    assert all(layer["golden_node"] and layer["compressed_node"] for layer in served["layers"])
    # Measured in tests/engine/test_attention_fidelity.py: within 3e-12 of scipy; the job's batches differ.
    np.testing.assert_allclose([layer["kl"] for layer in served["layers"]], kl_ref, rtol=1e-6)
    np.testing.assert_allclose([layer["js"] for layer in served["layers"]], js_ref, rtol=1e-6)


@pytest.mark.parametrize("how", ["raises", "unpaired"])
def test_a_failing_step_leaves_the_report(
    api: FidelityApi, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    def fail(*args: object, **kwargs: object) -> AttentionOutcome:
        if how == "raises":
            raise ZeroDivisionError("float division by zero")
        return AttentionOutcome(None, "the attention softmaxes cannot be paired: 6 and 5")

    monkeypatch.setattr("worker.engine.attention.attention_fidelity_of", fail)
    job_id = api.fidelity(layer_profile=False)
    report = api.get(f"/jobs/{job_id}/fidelity")
    assert report.status_code == 200 and report.json()["summary"]["n_samples"] == len(SENTENCES)
    served = api.get(f"/jobs/{job_id}/fidelity/attention").json()
    if how == "raises":
        assert (
            "internal error ZeroDivisionError" in served["error"] and "report is complete" in served["error"]
        )
    else:
        assert served["error"] == "the attention softmaxes cannot be paired: 6 and 5"
    assert served["layers"] == []


def test_missing_document_is_404(
    api: FidelityApi, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("worker.engine.attention.onnx_side.attention_softmaxes", lambda model: [])
    job_id = api.fidelity(layer_profile=False)
    assert "attention" not in api.get(f"/jobs/{job_id}/fidelity").json()["diagnostics"]
    answer = api.get(f"/jobs/{job_id}/fidelity/attention")
    assert answer.status_code == 404 and "has no attention maps" in answer.json()["detail"]
