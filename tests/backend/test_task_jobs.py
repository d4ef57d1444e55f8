"""Fidelity jobs with task 'segmentation' and 'ctc' (issue 30), run in-process by the real handlers over the
real app and Postgres: the models and the dataset (with its 'masks' or its '<U..' 'transcripts' array) are
uploaded through the API, the job succeeds (layer profile included), and its task block is served whole and
typed, equal to the block `compare_models` makes from the same files. The models are small untrained
networks and their 3-bit copies: the numbers themselves are checked against the reference libraries in
tests/engine/test_segmentation_task.py and tests/engine/test_ctc_task.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from backend.api.result_schemas.fidelity import FidelitySummaryOut
from backend.api.routes.report_export import DATA_OPEN
from backend.settings import Settings
from task_specs.metrics import TASK_METRICS
from tests.backend.test_typed_results import extras
from tests.support.app_fixtures import app_fixtures
from tests.support.fidelity_api import FidelityApi
from tests.support.task_proxy_checks import check_task_proxy
from tests.support.tiny_task_models import TinySegmenter, golden_and_3bit_pair
from worker.engine.fidelity.compare import FidelityParams, FidelityReport, compare_models
from worker.engine.jsonable import json_safe
from worker.engine.loaders.onnx_runner import load_onnx

VOCAB = ["<blank>", "|", "a", "b", "c"]


class _Ctc(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv1d(4, 8, 3, padding=1)
        self.head = torch.nn.Conv1d(8, len(VOCAB), 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (N, T, F) -> (N, T, V)
        return self.head(torch.relu(self.conv1(x.transpose(1, 2)))).transpose(1, 2)


def _pair(model: torch.nn.Module, sample: np.ndarray, folder: Path, input_name: str) -> tuple[Path, Path]:
    return golden_and_3bit_pair(model, sample, folder, input_name=input_name)


settings, http = app_fixtures("task-jobs")


def _served_task(api: FidelityApi, job_id: str) -> dict[str, Any]:
    answer = api.get(f"/jobs/{job_id}/fidelity")
    assert answer.status_code == 200, answer.text
    summary = answer.json()["summary"]
    assert list(extras(FidelitySummaryOut.model_validate(summary))) == []
    return summary["outputs"]["logits"]["task"]


def _engine_task(
    golden: Path, compressed: Path, data: dict[str, np.ndarray], params: FidelityParams
) -> tuple[Any, FidelityReport]:
    report = compare_models(load_onnx(golden, 1), load_onnx(compressed, 1), data, None, params)
    return json_safe(report.summary_dict())["outputs"]["logits"]["task"], report


def test_a_segmentation_job_serves_its_task_block(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 1, 12, 12)).astype(np.float32)
    masks = rng.integers(0, 3, (20, 12, 12))
    golden, compressed = _pair(TinySegmenter(), x, tmp_path, "input")
    np.savez(tmp_path / "seg.npz", input=x, masks=masks)
    api = FidelityApi(http, settings, "segmentation", golden, compressed, tmp_path / "seg.npz")
    options = {"boundary_tolerance": 1}
    job_id = api.fidelity(task="segmentation", task_options=options, batch_size=8)
    served = _served_task(api, job_id)
    params = FidelityParams(batch_size=8, task="segmentation", task_options=options)
    block, report = _engine_task(golden, compressed, {"input": x, "masks": masks}, params)
    assert served == block
    assert served["against_masks"] is not None and served["boundary_tolerance"] == 1
    proxy = check_task_proxy(
        api, job_id, report, {"iou_vs_golden", "pixel_agreement", "boundary_f1_vs_golden"}
    )
    assert proxy["proxy"] == "sqnr_db" and proxy["task"] == "segmentation"
    views = api.get(f"/jobs/{job_id}/samples/0/task")  # label maps (tests/backend/test_task_sample_views.py)
    assert views.status_code == 200 and views.json()["task"] == "segmentation"
    # compare runs and trends carry the task's numbers, each with kneeboard check's direction
    run = api.get(f"/projects/{api.project}/fidelity-runs").json()["items"][0]
    trend = api.get(f"/projects/{api.project}/trends?golden_model_id={api.golden}").json()["points"][0]
    for head in (run["headline"]["task"], trend["headline"]["task"]):
        assert head["name"] == "segmentation"
        assert {m["metric"]: m["value"] for m in head["metrics"]} == {
            k: served[k] for k in TASK_METRICS["segmentation"]
        }
        directions = {m["metric"]: m["higher_is_better"] for m in head["metrics"]}
        assert directions["miou_vs_golden"] and not directions["miou_drop"]
        assert served["miou_drop"] is not None and served["miou_vs_golden"] is not None
    plain = api.fidelity(batch_size=8, layer_profile=False)  # no task: no task values, no proxy
    runs = api.get(f"/projects/{api.project}/fidelity-runs").json()["items"]
    assert [r["headline"]["task"] is None for r in runs] == [True, False]  # newest first
    assert "task" not in api.get(f"/jobs/{plain}/fidelity").json()["diagnostics"]
    assert api.get(f"/jobs/{plain}/fidelity/task").status_code == 404
    assert api.get(f"/jobs/{plain}/fidelity/samples").json()["items"][0]["task_values"] is None


def test_a_ctc_job_reads_transcripts_from_the_uploaded_npz(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((20, 16, 4)).astype(np.float32)
    texts = np.array([" ".join(rng.choice(["ab", "c", "ba", "cab"], size=2)) for _ in range(20)])
    golden, compressed = _pair(_Ctc(), x, tmp_path, "features")
    np.savez(tmp_path / "speech.npz", features=x, transcripts=texts)
    api = FidelityApi(http, settings, "ctc", golden, compressed, tmp_path / "speech.npz")
    options = {"vocabulary": VOCAB}
    job_id = api.fidelity(task="ctc", task_options=options, batch_size=8)
    served = _served_task(api, job_id)
    params = FidelityParams(batch_size=8, task="ctc", task_options=options)
    block, report = _engine_task(golden, compressed, {"features": x, "transcripts": texts}, params)
    assert served == block
    assert served["against_transcripts"]["golden"]["n_reference_words"] == 40
    metrics = {"wer_vs_golden", "cer_vs_golden", "wer_golden", "wer_compressed", "wer_delta"}
    assert check_task_proxy(api, job_id, report, metrics)["task"] == "ctc"
    # the report's table sorted by a per-sample task value (the engine's own per-sample WER change)
    page = api.get(f"/jobs/{job_id}/fidelity/samples?task_metric=wer_delta&limit=20").json()
    deltas = [row["task_values"]["wer_delta"] for row in page["items"]]
    per_sample = report.task_per_sample  # the stored delta is compressed − golden, made at storage
    expected = sorted((per_sample["wer_compressed"] - per_sample["wer_golden"]).tolist(), reverse=True)
    assert deltas == pytest.approx(expected) and page["total"] == 20
    assert len(set(deltas)) > 1  # an order to check
    bad = api.get(f"/jobs/{job_id}/fidelity/samples?task_metric=wer%27%3B%20drop")
    assert bad.status_code == 422, bad.text
    # the inspector's transcripts, one sample at a time, as the engine kept them
    assert "task_samples" in api.get(f"/jobs/{job_id}/fidelity").json()["diagnostics"]
    assert report.task_samples is not None
    for index in (0, 19):
        one = api.get(f"/jobs/{job_id}/samples/{index}/task")
        assert one.status_code == 200, one.text
        kept = report.task_samples["samples"][index]
        assert one.json() == {"task": "ctc", "job_id": job_id, "index": index, **kept}
        assert kept["reference"] == texts[index]
    past = api.get(f"/jobs/{job_id}/samples/20/task")
    assert past.status_code == 404 and "first 20 samples" in past.json()["detail"]
    # the shareable report holds them as served, for the samples it can inspect
    export = api.get(f"/jobs/{job_id}/export.html")
    assert export.status_code == 200, export.text
    embedded = json.loads(export.text.split(DATA_OPEN, 1)[1].split("</script>", 1)[0])["responses"]
    held = [path for path in embedded if path.endswith("/task") and "/samples/" in path]
    assert len(held) == 20
    assert (
        embedded[f"/api/v1/jobs/{job_id}/samples/3/task"] == api.get(f"/jobs/{job_id}/samples/3/task").json()
    )


def test_a_wrong_task_mapping_is_refused_at_launch_saying_what_was_expected(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    """The model is inspected (its outputs are declared), so the API checks the mapping before queueing: a
    vocabulary that does not fit the output, an output the model does not have and masks that do not fit are
    422s naming what was expected, and no job row is left behind; the right mapping is accepted."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 16, 4)).astype(np.float32)
    golden, compressed = _pair(_Ctc(), x, tmp_path, "features")
    np.savez(tmp_path / "speech.npz", features=x, transcripts=np.array(["ab"] * 6))
    api = FidelityApi(http, settings, "ctc-launch", golden, compressed, tmp_path / "speech.npz")
    base = {"golden_model_id": api.golden, "compressed_model_id": api.int8, "dataset_id": api.dataset}

    def launch(task: str, options: dict[str, Any]) -> Any:
        params = base | {"task": task, "task_options": options}
        body = {"project_id": api.project, "kind": "fidelity", "params": params}
        return http.post("/api/v1/jobs", headers=api.headers, json=body)

    short = launch("ctc", {"vocabulary": VOCAB[:4]})
    assert short.status_code == 422, short.text
    assert "scores 5 tokens but the vocabulary lists 4" in short.text
    missing = launch("ctc", {"vocabulary": VOCAB, "output": "frames"})
    assert missing.status_code == 422 and "no output 'frames'" in missing.text and "'logits'" in missing.text
    wrong_task = launch("segmentation", {})
    assert wrong_task.status_code == 422 and "needs an output shaped (N, C, H, W)" in wrong_task.text
    assert api.get(f"/jobs?project_id={api.project}&kind=fidelity").json()["items"] == []
    assert launch("ctc", {"vocabulary": VOCAB}).status_code == 201


class _Lm(torch.nn.Module):
    """A causal language model's shape: token ids (N, T) in, next-token logits (N, T, V) out."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(len(VOCAB), 8)
        self.conv1 = torch.nn.Conv1d(8, 8, 3)
        self.head = torch.nn.Conv1d(8, len(VOCAB), 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.pad(self.embed(ids).transpose(1, 2), (2, 0))  # position t sees tokens <= t
        return self.head(torch.relu(self.conv1(x))).transpose(1, 2)


def test_a_language_model_job_reads_token_ids_and_the_attention_mask(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    rng = np.random.default_rng(3)
    ids = rng.integers(0, len(VOCAB), (20, 12))
    mask = np.ones_like(ids)
    mask[::2, -4:] = 0
    golden, compressed = _pair(_Lm(), ids, tmp_path, "input_ids")
    np.savez(tmp_path / "text.npz", input_ids=ids, attention_mask=mask)
    api = FidelityApi(http, settings, "lm", golden, compressed, tmp_path / "text.npz")
    job_id = api.fidelity(task="language_model", task_options={"top_k": 2}, batch_size=8)
    served = _served_task(api, job_id)
    params = FidelityParams(batch_size=8, task="language_model", task_options={"top_k": 2})
    block, _ = _engine_task(golden, compressed, {"input_ids": ids, "attention_mask": mask}, params)
    assert served == block
    assert served["n_tokens"] == int(mask.sum()) and served["ppl_delta"] is not None
