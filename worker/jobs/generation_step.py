"""The fidelity job's generated-text step (issue 31): with task "language_model" and `generate_tokens` > 0,
both models continue the dataset's prompts and the continuations are compared
(`worker.engine.tasks.lm_generation`). Checked before the comparison runs (a prompt or model that cannot
generate stops the job at its start), run after it, on the job's own runners; the block is stored under the
task block as `generation` and the per-sample values join the task's."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from backend.contracts import FidelityJobParams
from backend.db.models import Model
from worker.engine.errors import ModelLoadError
from worker.engine.types import ModelFormat, Runner
from worker.jobs.progress_span import span_fraction
from worker.runtime import JobContext

if TYPE_CHECKING:
    from worker.engine.fidelity.compare import FidelityReport
    from worker.engine.tasks.generation.similarity import Embedder
    from worker.engine.tasks.lm_generation import GenerationRequest


def generation_request(
    ctx: JobContext,
    params: FidelityJobParams,
    golden_file: tuple[Path, ModelFormat],
    runners: list[Runner],
    arrays: dict[str, np.ndarray],
) -> GenerationRequest | None:
    """None unless the job generates; else its checked request, decoding with the tokenizer.json inside the
    golden model's zip unless the option `tokenizer` is "none", with the embedding model of the option
    `similarity_model_id` loaded."""
    from worker.engine.tasks import lm_generation
    from worker.engine.tasks.generation.tokenizer import TextDecoder, read_tokenizer

    options: dict[str, Any] = dict(params.task_options)
    if params.task != "language_model" or not options.get("generate_tokens"):
        return None
    path, fmt = golden_file
    found = (
        read_tokenizer(path) if fmt == "onnx_zip" and options.get("tokenizer", "model") == "model" else None
    )
    decoder = TextDecoder(*found) if found is not None else TextDecoder()
    request = lm_generation.generation_request(
        options, arrays, runners[0], runners[1], decoder, params.batch_size
    )
    if request is not None and options.get("similarity_model_id"):
        request.similarity = similarity_embedder(ctx, str(options["similarity_model_id"]), params)
    return request


def similarity_embedder(ctx: JobContext, model_id: str, params: FidelityJobParams) -> Embedder:
    """The embedding model of `similarity_model_id` with the tokenizer.json of its zip (the launch check has
    seen both; a model changed since stops the job here with the reason)."""
    from worker.engine.tasks.generation.similarity import embedder
    from worker.engine.tasks.generation.tokenizer import read_tokenizer
    from worker.jobs.inputs import detached_row, load_runner

    try:
        row_id = uuid.UUID(model_id)
    except ValueError as exc:
        raise ModelLoadError(f"task option 'similarity_model_id' is not a model id: {model_id!r}") from exc
    name = detached_row(ctx, Model, row_id).name
    loaded = load_runner(ctx, row_id, "embedding", params.threads)
    path, fmt = loaded.file
    found = read_tokenizer(path) if fmt == "onnx_zip" else None
    if found is None:
        raise ModelLoadError(
            f"the embedding model {name!r} has no tokenizer.json: upload it as a zip of its .onnx and tokenizer.json"
        )
    return embedder(loaded.runner, found[0], name, params.batch_size)


def comparison_runners(params: FidelityJobParams, runners: list[Runner]) -> list[Runner]:
    """For task "language_model", decoder exports with position_ids or a KV cache seen as teacher-forced models
    (their extra inputs filled in, `present.*` left out), so the dataset's input_ids compare them; the others
    unchanged."""
    if params.task != "language_model":
        return runners
    from worker.engine.tasks.generation.teacher_forced import teacher_forced

    return [teacher_forced(runner) for runner in runners]


def add_generation(
    ctx: JobContext,
    request: GenerationRequest,
    runners: list[Runner],
    report: FidelityReport,
    span: tuple[float, float],
) -> None:
    """Generate with both models and put the block under the report's task block; per-sample values join
    `report.task_per_sample`. The bar moves through `span` (start, end) as continuations are done."""
    from worker.engine.tasks.lm_generation import hoisted, run_generation

    def on_progress(done: int, total: int) -> None:
        ctx.progress(
            span_fraction(*span, done, total),
            f"generating text: {done} of {total} continuations ({total // 2} prompts, 2 models)",
        )

    block, per_sample = run_generation(request, runners[0], runners[1], on_progress)
    task = next(metrics["task"] for metrics in report.outputs.values() if metrics.get("task") is not None)
    task["generation"] = block
    task.update(hoisted(block))
    report.task_per_sample.update(per_sample)
