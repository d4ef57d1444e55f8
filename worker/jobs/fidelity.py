"""The fidelity job: run the golden and the compressed model over a dataset, compare their outputs, and
store the summary, per-sample table, per-class damage, layer profile, robustness and attention results."""

from __future__ import annotations

import time
import uuid
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import insert
from sqlalchemy.orm import Session

from backend.contracts import (
    RESULT_FIDELITY_CLASSES,
    RESULT_FIDELITY_LAYERS,
    RESULT_FIDELITY_SEQUENCE,
    RESULT_FIDELITY_SUMMARY,
    RESULT_FIDELITY_TASK_PROXY,
    RESULT_FIDELITY_TASK_SAMPLES,
    FidelityJobParams,
)
from backend.db.models import Dataset, JobResult, SampleDivergence
from backend.services.sample_inspector import RESULT_FIDELITY_SAMPLE_TOPK
from backend.services.trend_spread import RESULT_FIDELITY_SPREAD, spread_document
from worker.engine.types import ModelFormat, Runner
from worker.jobs.generation_step import add_generation, comparison_runners, generation_request
from worker.jobs.inputs import detached_row, load_runner, named_dataset, read_dataset
from worker.jobs.layer_profile_step import kernel_gap_outputs, layer_profile_results, profile_plan
from worker.jobs.progress_span import fidelity_spans, generation_work, robustness_work
from worker.jobs.text_dataset_step import text_tokenizing, with_text_prompts
from worker.peak_memory import peak_rss_mib, reset_peak_rss
from worker.runtime import JobContext, ResultWriter, json_safe

if TYPE_CHECKING:
    from worker.engine.fidelity.compare import FidelityReport


class FidelityHandler:
    """Runs the golden and the compressed model over a dataset and compares their outputs."""

    def run(self, ctx: JobContext) -> ResultWriter:
        from worker.engine.fidelity.compare import FidelityParams, compare_models
        from worker.engine.fidelity.sample_topk import SampleTopK
        from worker.jobs.attention_step import attention_results, reusable_models
        from worker.jobs.robustness_step import robustness_results

        measured = reset_peak_rss()  # this pool process may have run bigger jobs before
        job_start = time.perf_counter()

        params = FidelityJobParams.model_validate(ctx.params)
        loaded = [
            load_runner(ctx, model_id, role, params.threads, announce=True)
            for role, model_id in (
                ("golden", params.golden_model_id),
                ("compressed", params.compressed_model_id),
            )
        ]
        models = [model.file for model in loaded]
        runners = [model.runner for model in loaded]
        del loaded
        dataset = detached_row(ctx, Dataset, params.dataset_id)
        ctx.progress(0.0, f"reading the dataset {dataset.name!r}")
        tokenizing = text_tokenizing(dataset.kind, params, models[0], runners[0])  # None unless text
        arrays = read_dataset(ctx, dataset, tokenize=tokenizing)
        params = with_text_prompts(params, tokenizing)
        labels = arrays.pop("labels", None)
        n = len(next(iter(arrays.values()))) if arrays else 0
        plan = profile_plan(params, models, n)  # the layer profile's (and kernel gap's) share of the work

        def on_progress(done: int, total: int) -> None:
            ctx.progress(share * done / max(total, 1), f"{done} of {total} samples compared")

        # checked (and its embedding model loaded) before any model runs
        generation = generation_request(ctx, params, models[0], runners, arrays)
        spans = fidelity_spans(
            n,
            plan.n_rerun,
            plan.n_profiled,
            robustness_work(params.robustness, n),
            0
            if generation is None
            else generation_work(len(generation.prompts), generation.config.new_tokens),
        )
        share = spans.generation  # the clean comparison's span of the bar, from 0
        batch_size, batch_note = _comparison_batch(params.batch_size, models[0], runners[0], arrays)
        fidelity_params = FidelityParams(
            batch_size=batch_size,
            top_k=params.top_k,
            threshold_kl=params.threshold_kl,
            task=params.task,
            outputs_are_probabilities=params.outputs_are_probabilities,
            flip_confidence=params.flip_confidence,
            image_data_range=params.image_data_range,
            pooling=params.pooling,
            task_options=dict(params.task_options),
        )
        topk = SampleTopK()  # each sample's top-k classes of both models, recorded as the comparison runs
        compare_start = time.perf_counter()
        compared = comparison_runners(params, runners)  # a decoder's cache inputs filled in
        report = compare_models(
            topk.wrap(compared[0], "golden"), topk.wrap(compared[1], "compressed"), arrays, labels,
            fidelity_params, on_progress=on_progress,
        )  # fmt: skip
        compare_s = time.perf_counter() - compare_start
        if generation is not None:
            add_generation(ctx, generation, runners, report, (spans.generation, spans.rerun))
        if batch_note:
            report.notes.append(batch_note)
        if tokenizing is not None:
            report.notes.extend(tokenizing.notes)
        runtime_outputs = kernel_gap_outputs(
            ctx, plan, compared, arrays, report.outputs, fidelity_params, spans.rerun, spans.robustness
        )

        def load_twin(model_id: uuid.UUID) -> Runner:
            return load_runner(ctx, model_id, "twin", params.threads).runner

        # an out-of-distribution set is compared on its first robustness.max_samples samples only: read no more
        ood_limit = params.robustness.max_samples if params.robustness is not None else None
        robustness = robustness_results(
            ctx,
            params,
            runners,
            arrays,
            labels,
            report,
            spans.robustness,
            partial(named_dataset, ctx, limit=ood_limit),
            load_twin,
            spans=(spans.ood, spans.profile),
        )
        attention_models = reusable_models(runners)  # torch programs: the attention step loads no file
        del runners  # the profile loads its own instrumented copies
        summary = json_safe(report.summary_dict())
        # Per-class damage and sequence fidelity are documents of their own, beside the typed summary.
        diagnostics = {
            key: json_safe(document)
            for key, document in (
                (RESULT_FIDELITY_CLASSES, report.classes_dict()),
                (RESULT_FIDELITY_SEQUENCE, report.sequence_dict()),
                (RESULT_FIDELITY_SAMPLE_TOPK, topk.document(report)),
                (RESULT_FIDELITY_SPREAD, spread_document(report.per_sample)),  # the trend's noise
                (RESULT_FIDELITY_TASK_SAMPLES, report.task_samples),  # boxes / transcripts to inspect
            )
            if document is not None
        }
        diagnostics.update(robustness.documents)  # {} unless the job asks for robustness slices
        diagnostics.update(
            attention_results(ctx, models, arrays, params.threads, spans.profile, attention_models)
        )
        task_values, task_proxy = task_proxy_results(report)
        if task_proxy is not None:
            diagnostics[RESULT_FIDELITY_TASK_PROXY] = task_proxy
        samples = sample_rows(ctx.job_id, report.primary_output, report.per_sample, task_values)
        del task_values
        layers = layer_profile_results(
            ctx, params, models, arrays, plan, spans.profile, runtime_outputs, partial(named_dataset, ctx)
        )

        summary["resources"] = {
            "peak_rss_mib": peak_rss_mib() if measured else None,
            "compare_s": compare_s,
            "job_s": time.perf_counter() - job_start,
            "batch_size": batch_size,
        }

        def write(session: Session) -> None:
            # The pictures' archive is stored here, in the transaction that commits the document naming it:
            # a job stopped or failed after the slices stores none, one that does not commit releases it.
            robustness.store_pictures(ctx, session)
            session.add(JobResult(job_id=ctx.job_id, key=RESULT_FIDELITY_SUMMARY, payload=summary))
            for key, document in diagnostics.items():
                session.add(JobResult(job_id=ctx.job_id, key=key, payload=document))
            if layers is not None:
                session.add(JobResult(job_id=ctx.job_id, key=RESULT_FIDELITY_LAYERS, payload=layers))
            if samples:
                session.execute(insert(SampleDivergence), samples)

        return write

    def on_failure(self, session: Session, ctx: JobContext, message: str) -> None:
        return None


def _floats(values: np.ndarray) -> list[float | None]:
    return [v if np.isfinite(v) else None for v in values.astype(np.float64).tolist()]


def _classes(values: np.ndarray) -> list[int | None]:
    return [v if v >= 0 else None for v in values.astype(np.int64).tolist()]


def task_proxy_results(report: FidelityReport) -> tuple[dict[str, np.ndarray], dict[str, Any] | None]:
    """With a task adapter: its per-sample values (with their compressed − golden deltas) for the per-sample
    rows, and the "does the divergence predict the task?" document (`worker.engine.tasks.proxy`); else
    ({}, None)."""
    from worker.engine.tasks.proxy import proxy_document, with_deltas

    if not report.task_per_sample:
        return {}, None
    values = with_deltas(report.task_per_sample)
    task = next(m["task"] for m in report.outputs.values() if m.get("task") is not None)
    document = proxy_document(
        report.per_sample,
        values,
        task=str(task.get("name", report.params.task)),
        task_output=str(task.get("output", report.primary_output)),
        proxy_output=report.primary_output,
    )
    return values, json_safe(document)


def sample_rows(
    job_id: uuid.UUID,
    output_name: str,
    table: dict[str, np.ndarray],
    task_values: dict[str, np.ndarray] | None = None,
) -> list[dict[str, Any]]:
    """Rows of the per-sample divergence table of one output (NaN and class -1 become NULL), each with the
    task's per-sample values (metric → number or None) when `task_values` has any, else task_values NULL."""
    columns: dict[str, list[Any]] = {
        "kl": _floats(table["kl"]),
        "cosine": _floats(table["cosine"]),
        "mse": _floats(table["mse"]),
        "sqnr_db": _floats(table["sqnr_db"]),
        "golden_class": _classes(table["golden_class"]),
        "compressed_class": _classes(table["compressed_class"]),
        "label": _classes(table["label"]),
        "top1_match": table["top1_match"].astype(bool).tolist(),
        "flagged": table["flagged"].astype(bool).tolist(),
        "finite": table["finite"].astype(bool).tolist(),
    }
    n = len(columns["kl"])
    if task_values:
        per_metric = {metric: _floats(values) for metric, values in task_values.items()}
        columns["task_values"] = [{m: v[i] for m, v in per_metric.items()} for i in range(n)]
    else:
        columns["task_values"] = [None] * n
    return [
        {"job_id": job_id, "output_name": output_name, "sample_index": i}
        | {k: v[i] for k, v in columns.items()}
        for i in range(n)
    ]


def _comparison_batch(
    requested: int, golden: tuple[Path, ModelFormat], runner: Runner, arrays: dict[str, np.ndarray]
) -> tuple[int, str | None]:
    """The comparison's batch: the job's batch_size, fewer for an ONNX golden model whose largest activation
    would not fit the memory budget (worker.engine.fidelity.batching), with the note that says so."""
    from worker.engine.fidelity.batching import (
        ACTIVATION_BUDGET_BYTES,
        memory_batch_size,
        onnx_largest_activation_bytes,
    )

    path, fmt = golden
    feeds = {spec.name: arrays[spec.name] for spec in runner.inputs if spec.name in arrays}
    if fmt != "onnx" or len(feeds) != len(runner.inputs):
        return requested, None
    largest = onnx_largest_activation_bytes(path, feeds)
    batch = memory_batch_size(requested, largest)
    if batch >= requested or largest is None:
        return requested, None
    return batch, (
        f"compared in batches of {batch} samples, not {requested}: the golden model's largest activation is "
        f"{largest / 2**20:.1f} MiB a sample, and a batch's is kept within {ACTIVATION_BUDGET_BYTES >> 20} MiB"
    )
