"""A fidelity job that generates text (issue 31), run in-process by the real handlers over the real app and
Postgres: the golden model is uploaded as a zip of its ONNX export (with a KV cache) and its tokenizer.json, the
compressed one (a 3-bit copy, no cache) as a plain .onnx, the prompts as a left-padded .npz with references.
The served block is typed, equal to what the engine computes from the same files, and the per-sample values are
stored; a tokenizer of another vocabulary, a negative generate_tokens and a dataset without prompts are 422s at
launch. (The numbers themselves are checked against sacrebleu, rouge-score and torch in tests/engine.)"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from fastapi.testclient import TestClient
from tokenizers import Tokenizer

from backend.api.result_schemas.fidelity import FidelitySummaryOut
from backend.settings import Settings
from kneeboard_client.thresholds import Limit, check_limit, output_metrics
from tests.backend.test_typed_results import extras
from tests.engine.tiny_decoder import TinyDecoder, char_tokenizer, export, quantized
from tests.support.app_fixtures import app_fixtures
from tests.support.fidelity_api import FidelityApi
from tests.support.task_proxy_checks import check_task_proxy
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.loaders.onnx_runner import load_onnx
from worker.engine.tasks.generation.teacher_forced import teacher_forced
from worker.engine.tasks.generation.tokenizer import TextDecoder
from worker.engine.tasks.lm_generation import generation_request, run_generation
from worker.engine.tasks.proxy import with_deltas

CHARS = list("abcdefghij klmnop")
NEW = 6
TIMINGS = {"ms_per_token_golden", "ms_per_token_compressed"}


settings, http = app_fixtures("generation-job")


def _zip(onnx: Path, tokenizer: str, path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.write(onnx, "model.onnx")
        archive.writestr("tokenizer.json", tokenizer)
    return path


def _files(folder: Path) -> dict[str, Any]:
    torch.manual_seed(0)
    model = TinyDecoder(len(CHARS)).eval()
    golden = export(model, folder / "golden.onnx", cache=True)
    compressed = export(quantized(model, 3), folder / "compressed.onnx", cache=False)
    rng = np.random.default_rng(0)
    lengths = rng.integers(2, 9, 12)
    ids = np.zeros((12, 8), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, n in enumerate(lengths):
        ids[i, 8 - n :] = rng.integers(0, len(CHARS), n)
        mask[i, 8 - n :] = 1
    references = np.array(["".join(rng.choice(CHARS, NEW)) for _ in range(12)])
    np.savez(folder / "prompts.npz", input_ids=ids, attention_mask=mask, references=references)
    return {
        "golden": golden,
        "golden_zip": _zip(golden, char_tokenizer(CHARS), folder / "golden.zip"),
        "compressed": compressed,
        "dataset": folder / "prompts.npz",
        "arrays": {"input_ids": ids, "attention_mask": mask, "references": references},
    }


def test_a_generation_job_serves_its_typed_block_and_per_sample_values(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    files = _files(tmp_path)
    api = FidelityApi(
        http, settings, "generation", files["golden_zip"], files["compressed"], files["dataset"]
    )
    inspection = api.get(f"/models/{api.golden}").json()["inspection"]
    assert inspection["tokenizer"] == {"member": "tokenizer.json", "vocab_size": len(CHARS), "error": None}
    options = {"generate_tokens": NEW, "top_k": 2}
    # the layer profile is on (the default), over 8 of the 12 samples: the kernel gap's second output-level
    # pass runs the cached export teacher-forced as the comparison does
    job_id = api.fidelity(task="language_model", task_options=options, batch_size=4, layer_profile_samples=8)
    answer = api.get(f"/jobs/{job_id}/fidelity")
    assert answer.status_code == 200, answer.text
    summary = answer.json()["summary"]
    assert list(extras(FidelitySummaryOut.model_validate(summary))) == []
    served = summary["outputs"]["logits"]["task"]

    # the engine, on the same files: the teacher-forced pass, then generation decoded with the same tokenizer
    golden, compressed = load_onnx(files["golden"], 1), load_onnx(files["compressed"], 1)
    params = FidelityParams(batch_size=4, task="language_model", task_options=options)
    report = compare_models(teacher_forced(golden), teacher_forced(compressed), files["arrays"], None, params)
    decoder = TextDecoder(Tokenizer.from_str(char_tokenizer(CHARS)), "tokenizer.json")
    request = generation_request(options, files["arrays"], golden, compressed, decoder, 4)
    assert request is not None
    block, per_sample = run_generation(request, golden, compressed)
    generation = served["generation"]
    assert {k: v for k, v in generation.items() if k not in TIMINGS} == {
        k: v for k, v in block.items() if k not in TIMINGS
    }
    assert generation["kv_cache_golden"] and not generation["kv_cache_compressed"]
    assert generation["decoded_with"] == "tokenizer.json (tokenizer.json)" and generation["padding"] == "left"
    assert set(generation["samples"][0]["golden"]) <= set(CHARS)  # decoded text, not ids
    assert served["gen_exact_match_rate"] == block["exact_match_rate"]
    assert served["gen_bleu_drop"] == block["bleu_drop"] and served["gen_bleu_drop"] is not None
    _, metrics = output_metrics(summary, None)  # what `kneeboard check --min gen_bleu_vs_golden=...` reads
    bleu = metrics["task"]["gen_bleu_vs_golden"]
    assert check_limit(metrics, Limit("gen_bleu_vs_golden", "min", bleu - 1e-6)).passed
    assert not check_limit(metrics, Limit("gen_bleu_vs_golden", "min", bleu + 1e-6)).passed
    report.task_per_sample.update(per_sample)
    check_task_proxy(api, job_id, report, set(with_deltas(report.task_per_sample)))


def test_generation_options_that_cannot_work_are_422_at_launch(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    files = _files(tmp_path)
    other = _zip(files["golden"], char_tokenizer([*CHARS, "q", "r"]), tmp_path / "other.zip")
    api = FidelityApi(http, settings, "generation-422", other, files["compressed"], files["dataset"])

    def launch(**options: Any) -> Any:
        base = {"golden_model_id": api.golden, "compressed_model_id": api.int8, "dataset_id": api.dataset}
        params = base | {"task": "language_model", "task_options": options}
        body = {"project_id": api.project, "kind": "fidelity", "params": params}
        return api.http.post("/api/v1/jobs", headers=api.headers, json=body)

    answer = launch(generate_tokens=NEW)
    assert answer.status_code == 422, answer.text
    assert (
        f"tokenizer.json has {len(CHARS) + 2} tokens but output 'logits' scores {len(CHARS)}" in answer.text
    )
    assert launch(generate_tokens=NEW, tokenizer="none").status_code == 201  # ids joined by spaces instead
    answer = launch(generate_tokens=-1, tokenizer="none")
    assert answer.status_code == 422 and "whole number >= 0" in answer.text
    answer = launch(generate_tokens=NEW, tokenizer="none", prompt_ids="questions")
    assert answer.status_code == 422 and "'questions', which it lacks" in answer.text
