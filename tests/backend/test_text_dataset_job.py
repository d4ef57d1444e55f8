"""A fidelity job on a JSONL of prompts (issue 31), run in-process by the real handlers over the real app and
Postgres: the text is stored as uploaded, tokenized by the worker with the tokenizer.json inside the golden
model's zip, and the served task block equals the engine's on arrays built here by calling `tokenizers`
directly (prompt ids + reference ids, padded on the right, the prompts cut from the left to the context).
A bad line is a 422 at upload; a golden model without a tokenizer, a corpus without a context and a text
dataset for another task are 422s at launch."""

from __future__ import annotations

import json
import uuid
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from fastapi.testclient import TestClient
from tokenizers import Tokenizer

from backend.api.result_schemas.fidelity import FidelitySummaryOut
from backend.db.models import Model
from backend.db.session import session_factory
from backend.settings import Settings
from kneeboard_client.thresholds import Limit, check_limit, output_metrics
from tests.backend.test_generation_job import CHARS, NEW, TIMINGS, _files
from tests.backend.test_typed_results import extras
from tests.engine.tiny_decoder import char_tokenizer
from tests.support.app_fixtures import app_fixtures
from tests.support.fidelity_api import FidelityApi
from tests.support.pretrained_minilm import minilm_int8_onnx, minilm_model_dir, tokenize
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.loaders.onnx_runner import load_onnx
from worker.engine.tasks.generation.teacher_forced import teacher_forced
from worker.engine.tasks.generation.tokenizer import TextDecoder
from worker.engine.tasks.lm_generation import generation_request, run_generation
from worker.jobs.fidelity import FidelityHandler
from worker.jobs.inspect import InspectHandler
from worker.runtime import execute_job

settings, http = app_fixtures("text-dataset-job")
CONTEXT = 14


def _records(rng: np.random.Generator) -> list[dict[str, str]]:
    lengths = rng.integers(2, 13, 10)  # some prompts longer than CONTEXT - NEW = 8 tokens
    return [
        {"prompt": "".join(rng.choice(CHARS, n)), "reference": "".join(rng.choice(CHARS, 4))} for n in lengths
    ]


def _padded(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    ids = np.zeros((len(rows), max(map(len, rows))), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, : len(row)], mask[i, : len(row)] = row, 1
    return ids, mask


def _expected_arrays(records: list[dict[str, str]]) -> dict[str, np.ndarray]:
    tokenizer = Tokenizer.from_str(char_tokenizer(CHARS))
    prompts = [tokenizer.encode(r["prompt"]).ids for r in records]
    full = [
        p + tokenizer.encode(r["reference"], add_special_tokens=False).ids
        for p, r in zip(prompts, records, strict=True)
    ]
    ids, mask = _padded([row[-CONTEXT:] for row in full])
    reference = np.zeros_like(mask)  # the reference tokens: the end of each (cut) row
    for i, (row, r) in enumerate(zip(full, records, strict=True)):
        kept, length = (
            min(len(row), CONTEXT),
            len(tokenizer.encode(r["reference"], add_special_tokens=False).ids),
        )
        reference[i, max(0, kept - length) : kept] = 1
    prompt_ids, prompt_mask = _padded([p[-(CONTEXT - NEW) :] for p in prompts])
    references = np.array([r["reference"] for r in records])
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "prompt_ids": prompt_ids,
        "prompt_ids_mask": prompt_mask,
        "references": references,
        "reference_mask": reference,
    }


@pytest.fixture()
def text_api(http: TestClient, settings: Settings, tmp_path: Path) -> tuple[FidelityApi, dict[str, Any]]:
    files = _files(tmp_path)
    records = _records(np.random.default_rng(1))
    path = tmp_path / "prompts.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    api = FidelityApi(http, settings, "text-dataset", files["golden_zip"], files["compressed"], path)
    return api, files | {"records": records, "jsonl": path}


def test_a_jsonl_dataset_is_tokenized_at_job_time_with_the_golden_tokenizer(
    text_api: tuple[FidelityApi, dict[str, Any]],
) -> None:
    api, files = text_api
    dataset = api.get(f"/datasets/{api.dataset}").json()
    assert dataset["kind"] == "prompts_jsonl" and dataset["n_samples"] == len(files["records"])
    assert dataset["arrays"] == {
        "prompt": {"shape": [10], "dtype": "str"},
        "reference": {"shape": [10], "dtype": "str"},
    }
    preview = api.get(f"/datasets/{api.dataset}/samples?offset=8&limit=8").json()  # the text as written
    assert preview["total"] == 10 and [item["index"] for item in preview["items"]] == [8, 9]
    assert [item["text"] for item in preview["items"]] == files["records"][8:]
    options = {"generate_tokens": NEW, "top_k": 2, "context_tokens": CONTEXT}
    job_id = api.fidelity(task="language_model", task_options=options, batch_size=4, layer_profile=False)
    summary = api.get(f"/jobs/{job_id}/fidelity").json()["summary"]
    assert list(extras(FidelitySummaryOut.model_validate(summary))) == []
    served = summary["outputs"]["logits"]["task"]
    assert "text tokenized at job time with tokenizer.json of the golden model" in summary["notes"]
    assert any("cut from the left to their last 8 tokens" in note for note in summary["notes"])

    arrays = _expected_arrays(files["records"])
    golden, compressed = load_onnx(files["golden"], 1), load_onnx(files["compressed"], 1)
    report = compare_models(
        teacher_forced(golden),
        teacher_forced(compressed),
        arrays,
        None,
        FidelityParams(
            batch_size=4, task="language_model", task_options=options | {"prompt_ids": "prompt_ids"}
        ),
    )
    expected = report.outputs["logits"]["task"]
    for key in ("n_tokens", "n_next_tokens", "kl_mean", "nll_golden", "nll_compressed", "top1_agreement"):
        assert served[key] == pytest.approx(expected[key], rel=1e-9, abs=1e-12), key
    assert served["n_tokens"] == int(arrays["attention_mask"].sum())
    # perplexity of the references alone: onnxruntime on the no-cache export, log-softmax in numpy
    session = ort.InferenceSession(str(files["compressed"]), providers=["CPUExecutionProvider"])
    positions = np.broadcast_to(np.arange(arrays["input_ids"].shape[1]), arrays["input_ids"].shape).copy()
    feeds = {
        "input_ids": arrays["input_ids"],
        "attention_mask": arrays["attention_mask"],
        "position_ids": positions,
    }
    logits = session.run(["logits"], feeds)[0].astype(np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    targets = arrays["input_ids"][:, 1:]
    nll = -np.take_along_axis(log_p[:, :-1], targets[..., None], -1)[..., 0]
    scored = arrays["reference_mask"][:, 1:] == 1
    assert served["nll_reference_only"] and served["n_next_tokens"] == int(scored.sum())
    assert served["nll_compressed"] == pytest.approx(nll[scored].mean(), rel=1e-5)
    assert served["ppl_compressed"] == pytest.approx(np.exp(nll[scored].mean()), rel=1e-5)
    decoder = TextDecoder(Tokenizer.from_str(char_tokenizer(CHARS)), "tokenizer.json")
    request = generation_request(
        options | {"prompt_ids": "prompt_ids"}, arrays, golden, compressed, decoder, 4
    )
    assert request is not None
    block, _ = run_generation(request, golden, compressed)
    generation = served["generation"]
    assert {k: v for k, v in generation.items() if k not in TIMINGS} == {
        k: v for k, v in block.items() if k not in TIMINGS
    }
    assert generation["prompt_array"] == "prompt_ids" and generation["padding"] == "right"
    assert generation["bleu_golden_vs_reference"] is not None  # the JSONL's references reached the scores
    assert generation["samples"][0]["prompt"] == files["records"][0]["prompt"][-(CONTEXT - NEW) :]


def test_text_datasets_that_cannot_work_are_refused_in_words(
    text_api: tuple[FidelityApi, dict[str, Any]], tmp_path: Path
) -> None:
    api, files = text_api
    files_jsonl: Path = files["jsonl"]

    def launch(golden: str, dataset: str, task: str = "language_model", **options: Any) -> Any:
        params = {"golden_model_id": golden, "compressed_model_id": api.int8, "dataset_id": dataset}
        body = {
            "project_id": api.project,
            "kind": "fidelity",
            "params": params | {"task": task, "task_options": options},
        }
        return api.http.post("/api/v1/jobs", headers=api.headers, json=body)

    answer = launch(api.int8, api.dataset)  # the plain .onnx carries no tokenizer.json
    assert answer.status_code == 422 and "the golden model has no tokenizer.json" in answer.text
    answer = launch(api.golden, api.dataset, task="auto")
    assert answer.status_code == 422 and "tokenized for task 'language_model' only" in answer.text
    answer = launch(api.golden, api.dataset, context_tokens=8, generate_tokens=8)
    assert answer.status_code == 422 and "leaves no room for a prompt in a context of 8" in answer.text
    answer = launch(api.golden, api.dataset, context_overflow="middle")
    assert answer.status_code == 422 and "'truncate_left' or 'refuse'" in answer.text

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("abc def ghi\n" * 20)
    corpus_id = api.upload("datasets", corpus)
    answer = launch(api.golden, corpus_id)
    assert answer.status_code == 422 and "set the task option 'context_tokens'" in answer.text
    answer = launch(api.golden, corpus_id, context_tokens=16, generate_tokens=4)
    assert answer.status_code == 201, answer.text
    job_id = answer.json()["id"]
    assert execute_job(job_id, FidelityHandler(), api.settings) == "succeeded"
    summary = api.get(f"/jobs/{job_id}/fidelity").json()["summary"]
    tokens = len(Tokenizer.from_str(char_tokenizer(CHARS)).encode(corpus.read_text()).ids)  # "\n" is unknown
    windows = -(-tokens // 16)
    assert f"the corpus's {tokens} tokens cut into {windows} windows of up to 16 tokens" in summary["notes"]
    task = summary["outputs"]["logits"]["task"]
    assert task["n_tokens"] == tokens and task["n_next_tokens"] == tokens - windows  # a next token in-window
    assert task["generation"]["n_samples"] == windows

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ab"}\n{"prompt": "cd"\n')
    with bad.open("rb") as f:
        answer = api.http.post(
            f"/api/v1/projects/{api.project}/datasets", headers=api.headers, files={"file": (bad.name, f)}
        )
    assert answer.status_code == 422 and "line 2 is not valid JSON" in answer.text

    # the same bytes as a corpus are another dataset; as prompts again, the one already stored
    same = tmp_path / "again.txt"
    same.write_bytes(files_jsonl.read_bytes())
    as_corpus = api.get(f"/datasets/{api.upload('datasets', same)}").json()
    assert as_corpus["kind"] == "text_corpus" and as_corpus["id"] != api.dataset
    preview = api.get(f"/datasets/{as_corpus['id']}/samples").json()
    assert preview["total"] == 1 and preview["items"][0]["text"] == {"text": same.read_text()}
    again = same.with_suffix(".jsonl")
    again.write_bytes(files_jsonl.read_bytes())
    with again.open("rb") as f:
        answer = api.http.post(
            f"/api/v1/projects/{api.project}/datasets", headers=api.headers, files={"file": (again.name, f)}
        )
    assert answer.status_code == 200 and answer.json()["duplicate_of"] == api.dataset


def _embedding_model(api: FidelityApi, folder: Path) -> str:
    """all-MiniLM-L6-v2 (a third party's int8 ONNX) zipped with its tokenizer.json, uploaded and inspected."""
    path = folder / "minilm.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.write(minilm_int8_onnx(), "model.onnx")
        archive.write(minilm_model_dir() / "tokenizer.json", "tokenizer.json")
    model_id = api.upload("models", path)
    with session_factory(api.settings.resolved_database_url)() as s:
        job_id = s.get_one(Model, uuid.UUID(model_id)).inspect_job_id
    assert execute_job(str(job_id), InspectHandler(), api.settings) == "succeeded"
    return model_id


def test_semantic_similarity_of_the_generations_with_a_project_model(
    text_api: tuple[FidelityApi, dict[str, Any]], tmp_path: Path
) -> None:
    api, files = text_api
    minilm = _embedding_model(api, tmp_path)
    options = {"generate_tokens": NEW, "context_tokens": CONTEXT, "similarity_model_id": minilm}
    job_id = api.fidelity(task="language_model", task_options=options, batch_size=4, layer_profile=False)
    summary = api.get(f"/jobs/{job_id}/fidelity").json()["summary"]
    assert list(extras(FidelitySummaryOut.model_validate(summary))) == []
    task = summary["outputs"]["logits"]["task"]
    generation = task["generation"]
    assert generation["similarity_model"] == "minilm.zip"

    # sentence-transformers' recipe on the served texts (all 10 are kept), computed here independently
    samples = generation["samples"]
    assert len(samples) == len(files["records"])
    session = ort.InferenceSession(str(minilm_int8_onnx()), providers=["CPUExecutionProvider"])

    def embed(texts: list[str]) -> np.ndarray:
        feeds = tokenize(texts)
        hidden = session.run(["last_hidden_state"], feeds)[0].astype(np.float64)
        mask = feeds["attention_mask"][:, :, None].astype(np.float64)
        return (hidden * mask).sum(1) / mask.sum(1)

    def cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray((a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)))

    g = embed([s["golden"] for s in samples])
    c = embed([s["compressed"] for s in samples])
    r = embed([rec["reference"] for rec in files["records"]])
    assert generation["semantic_similarity"] == pytest.approx(cos(c, g).mean(), abs=1e-5)
    assert generation["semantic_golden_vs_reference"] == pytest.approx(cos(g, r).mean(), abs=1e-5)
    assert generation["semantic_drop"] == pytest.approx(cos(g, r).mean() - cos(c, r).mean(), abs=1e-5)
    assert (
        task["gen_semantic_similarity"] == generation["semantic_similarity"]
    )  # hoisted for budgets and check
    _, metrics = output_metrics(summary, None)
    value = metrics["task"]["gen_semantic_similarity"]
    assert check_limit(metrics, Limit("gen_semantic_similarity", "min", value - 1e-6)).passed
    assert not check_limit(metrics, Limit("gen_semantic_similarity", "min", value + 1e-6)).passed
    served = api.get(f"/jobs/{job_id}/fidelity/samples?limit=20").json()["items"]
    by_index = {row["sample_index"]: row["task_values"] for row in served}
    assert by_index[3]["semantic_similarity"] == pytest.approx(cos(c, g)[3], abs=1e-5)

    def launch(**extra: Any) -> Any:
        params: dict[str, Any] = {
            "golden_model_id": api.golden,
            "compressed_model_id": api.int8,
            "dataset_id": api.dataset,
        }
        params |= {"task": "language_model", "task_options": {"generate_tokens": NEW} | extra}
        return api.http.post(
            "/api/v1/jobs",
            headers=api.headers,
            json={"project_id": api.project, "kind": "fidelity", "params": params},
        )

    answer = launch(similarity_model_id=str(uuid.uuid4()))
    assert answer.status_code == 422 and "there is no model" in answer.text
    answer = launch(similarity_model_id=api.int8)  # a plain .onnx: no tokenizer.json
    assert answer.status_code == 422 and "has no tokenizer.json to read the generated text" in answer.text
    answer = launch(similarity_model_id="minilm")
    assert answer.status_code == 422 and "must be the id of a model of this project" in answer.text
