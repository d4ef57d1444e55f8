"""A sweep of a causal language model on a JSONL of prompts (issue 31), run in-process by the real sweep
handler over the real app and Postgres: the text is tokenized at job time with the tokenizer.json inside the
golden model's zip, every point is scored teacher-forced (task 'language_model': next-token KL, perplexity),
and the group-wise 4-bit point runs on onnxruntime's MatMulNBits kernels."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from fastapi.testclient import TestClient

from backend.settings import Settings
from tests.backend.test_generation_job import CHARS, _zip
from tests.backend.test_sweep_calibration_job import _run_fanout
from tests.backend.test_text_dataset_job import _expected_arrays, _records
from tests.engine.tiny_decoder import TinyDecoder, char_tokenizer, export
from tests.support.app_fixtures import app_fixtures
from tests.support.fidelity_api import FidelityApi
from worker.jobs.sweep import SweepHandler

settings, http = app_fixtures("text-sweep-job")


def test_a_sweep_of_a_language_model_on_prompts(
    http: TestClient, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.manual_seed(0)
    plain = export(TinyDecoder(len(CHARS)).eval(), tmp_path / "golden.onnx", cache=False)
    golden = _zip(plain, char_tokenizer(CHARS), tmp_path / "golden.zip")
    records = _records(np.random.default_rng(1))
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    api = FidelityApi(http, settings, "text-sweep", golden, plain, prompts)
    params: dict[str, Any] = {
        "model_id": api.golden,
        "dataset_id": api.dataset,
        "task": "language_model",
        "task_options": {"context_tokens": 14},
        "configs": [{"type": "weight_quant", "bits": 4, "symmetric": False, "group_size": 16}],
        "latency": False,
    }
    for change, words in (
        ({"task": "auto", "task_options": {}}, "tokenized at job time by a fidelity job or a sweep of task"),
        ({"model_id": api.int8}, "the golden model has no tokenizer.json"),  # the plain .onnx, no zip
    ):
        refused = api.http.post(
            "/api/v1/jobs",
            headers=api.headers,
            json={"project_id": api.project, "kind": "sweep", "params": params | change},
        )
        assert refused.status_code == 422 and words in refused.text, refused.text
    job_id = _run_fanout(api, "sweep", params, SweepHandler(), monkeypatch)
    points = {p["label"]: p for p in api.get(f"/jobs/{job_id}/sweep/points").json()["items"]}
    assert set(points) == {"fp32", "w4-asym-g16"}
    golden_nll = points["fp32"]["objectives"]["task.nll_golden"]
    int4 = points["w4-asym-g16"]
    assert int4["objectives"]["task.ppl_delta"] > 0 and int4["objectives"]["task.kl_mean"] > 0

    # independent: the text tokenized here with `tokenizers`, both files run by onnxruntime teacher-forced
    # (positions counted over the mask as transformers does), the perplexity of the reference tokens in numpy
    arrays = _expected_arrays(records)
    download = api.get(f"/jobs/{job_id}/sweep/points/{int4['index']}/export")
    assert download.status_code == 200, download.text
    with zipfile.ZipFile(io.BytesIO(download.content)) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".onnx"))
        (tmp_path / "int4.onnx").write_bytes(archive.read(name))
    exported = onnx.load(str(tmp_path / "int4.onnx"))
    assert {n.op_type for n in exported.graph.node} >= {"MatMulNBits"}  # onnxruntime's real 4-bit kernels
    scored = arrays["reference_mask"][:, 1:] == 1
    assert int4["objectives"]["task.n_next_tokens"] == scored.sum()
    nll = {name: _reference_nll(path, arrays)[scored].mean() for name, path in
           (("golden", plain), ("int4", tmp_path / "int4.onnx"))}  # fmt: skip
    assert golden_nll == pytest.approx(nll["golden"], rel=1e-5)
    # what the deployed 4-bit file computes, as the export's measured block says
    manifest = api.get(f"/jobs/{job_id}/sweep/points/{int4['index']}").json()["export_manifest"]
    measured = manifest["metrics"]["measured"]["task_metrics"]
    assert measured["nll_compressed"] == pytest.approx(nll["int4"], rel=1e-5)
    assert measured["ppl_delta"] == pytest.approx(np.exp(nll["int4"]) - np.exp(nll["golden"]), rel=1e-4)
    # The frontier scores that deployed file (issues 31/33: its figures come from the file it times), not
    # the simulation, which also quantizes the two embedding tables that MatMulNBits leaves float (listed, and
    # the export says it does not match the simulation); the simulation stays beside it, the more pessimistic
    # one here (2.9417 simulated vs 2.9377 nats measured).
    assert manifest["matches_simulation"] is False
    assert [entry.split(" ")[0] for entry in manifest["quantization"]["left_float"]] == [
        "/embed/Gather",
        "/position/Gather",
    ]
    assert int4["objectives"]["task.nll_compressed"] == pytest.approx(nll["int4"], rel=1e-5)
    assert int4["objectives"]["task.ppl_delta"] == pytest.approx(measured["ppl_delta"], rel=1e-12)
    point = api.get(f"/jobs/{job_id}/sweep/points/{int4['index']}").json()["point"]
    assert (point["fidelity_source"], point["fidelity_export_kind"]) == ("measured", "real-matmulnbits")
    simulated = point["fidelity_simulated"]["task_metrics"]["nll_compressed"]
    assert simulated > measured["nll_compressed"] + 1e-3, (simulated, measured["nll_compressed"])


def _reference_nll(path: Path, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Per next token: −log p(token) by the model in onnxruntime, teacher-forced."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    mask = arrays["attention_mask"]
    feeds = {
        "input_ids": arrays["input_ids"],
        "attention_mask": mask,
        "position_ids": np.where(mask != 0, np.cumsum(mask, axis=1) - 1, 1),
    }
    logits = session.run(["logits"], feeds)[0].astype(np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    targets = arrays["input_ids"][:, 1:]
    return -np.take_along_axis(log_p[:, :-1], targets[..., None], -1)[..., 0]
