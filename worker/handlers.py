"""Job handlers: thin adapters that load rows by id, call the engine, and return a result writer."""

from __future__ import annotations

import tempfile
import uuid
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np
from sqlalchemy import insert
from sqlalchemy.orm import Session

from backend.contracts import (
    RESULT_FIDELITY_CLASSES,
    RESULT_FIDELITY_LAYERS,
    RESULT_FIDELITY_SEQUENCE,
    RESULT_FIDELITY_SUMMARY,
    RESULT_MODEL_GRAPH,
    FidelityJobParams,
    ImagePreprocessing,
    InspectParams,
)
from backend.db.models import Dataset, JobResult, Model, ModelStatus, SampleDivergence
from backend.image_datasets import describe_image_zip
from backend.services.sample_inspector import RESULT_FIDELITY_SAMPLE_TOPK
from backend.services.trend_spread import RESULT_FIDELITY_SPREAD, spread_document
from worker.engine.errors import DatasetMismatchError, ModelLoadError
from worker.engine.types import ModelFormat, Runner
from worker.layer_profile_step import kernel_gap_outputs, layer_profile_results, profile_plan
from worker.lost_work import model_invalid
from worker.model_files import model_file
from worker.runtime import JobContext, ResultWriter, json_safe

Row = TypeVar("Row", Model, Dataset)


def detached_row(ctx: JobContext, table: type[Row], row_id: uuid.UUID) -> Row:
    """A row read in a short session and detached, so no session stays open during the engine's work."""
    with ctx.sessions() as session:
        row = session.get(table, row_id)
        if row is None:
            error = ModelLoadError if table is Model else DatasetMismatchError
            raise error(f"{table.__name__.lower()} {row_id} was deleted while the job waited")
        session.expunge(row)
        return row


def load_dataset(
    path: Path, dataset: Dataset, cache_dir: Path | None = None, limit: int | None = None
) -> dict[str, np.ndarray]:
    """The dataset's arrays (and "labels" when it has them), whatever its upload format, cut to their first
    `limit` samples when given. .npz arrays are memory-mapped (compressed members are decompressed once into
    cache_dir / <sha256>) and the cut is a view, so a job holds only the batches it works on. A zip of
    images is decoded into memory, only its first `limit` images: 50,000 training images at 224 x 224 RGB
    would be 30 GB of float32, so a calibration set read whole would not fit."""
    if dataset.kind == "npz":
        from worker.engine.npz import load_npz_mapped

        cache = (cache_dir or Path(tempfile.gettempdir()) / "kneeboard-datasets") / dataset.artifact_sha256
        mapped = load_npz_mapped(path, cache)
        return mapped if limit is None else {key: a[:limit] for key, a in mapped.items()}
    if dataset.kind == "image_zip":
        from worker.engine.images import images_to_array

        recipe = ImagePreprocessing.model_validate(dataset.preprocessing or {})
        listing = describe_image_zip(str(path), path.stat().st_size, verify_images=False)
        arrays = {
            recipe.input_name: images_to_array(
                path,
                listing.images[:limit],
                recipe.size,
                recipe.mode,
                recipe.scale,
                recipe.mean,
                recipe.std,
                recipe.layout,
            )
        }
        if listing.labels is not None:
            arrays["labels"] = np.asarray(listing.labels[:limit], dtype=np.int64)
        return arrays
    raise DatasetMismatchError(f"dataset {dataset.name!r} has unknown kind {dataset.kind!r}")


def read_dataset(ctx: JobContext, dataset: Dataset, limit: int | None = None) -> dict[str, np.ndarray]:
    """`load_dataset` of a dataset row from the job's artifact store, cached in the worker's data dir."""
    return load_dataset(
        ctx.store.local_path(dataset.artifact_sha256), dataset, ctx.settings.data_dir / "dataset-cache", limit
    )


def named_dataset(
    ctx: JobContext, dataset_id: uuid.UUID, limit: int | None = None
) -> tuple[str, dict[str, np.ndarray]]:
    """(name, arrays) of a dataset of the job's project, read by id (its first `limit` samples when given)."""
    dataset = detached_row(ctx, Dataset, dataset_id)
    return dataset.name, read_dataset(ctx, dataset, limit)


class LoadedModel(NamedTuple):
    """A model row's runner and its local (path, format)."""

    runner: Runner
    file: tuple[Path, ModelFormat]


def load_runner(
    ctx: JobContext, model_id: uuid.UUID, role: str, threads: int | None, *, announce: bool = False
) -> LoadedModel:
    """Load the model `model_id` in its runtime (the golden, compressed or twin model of a job: `role` names
    it in messages); an invalid model raises ModelLoadError. `announce` reports the load as progress 0
    (the job's first steps; a model loaded later, as the twin, leaves the progress bar where it is)."""
    from worker.engine.loaders import load_model

    model = detached_row(ctx, Model, model_id)
    if model.status == ModelStatus.invalid.value:
        raise ModelLoadError(f"the {role} model {model.name!r} is invalid: {model.error}")
    if announce:
        ctx.progress(0.0, f"loading the {role} model {model.name!r}")
    file = model_file(ctx, model)
    return LoadedModel(load_model(*file, intra_op_threads=threads), file)


class InspectHandler:
    """Loads an uploaded model and records its inputs, outputs, layers, parameters and MACs/FLOPs."""

    def run(self, ctx: JobContext) -> ResultWriter:
        from worker.engine.inspection import inspect_with_graph
        from worker.engine.loaders import load_model

        params = InspectParams.model_validate(ctx.params)
        model = detached_row(ctx, Model, params.model_id)
        path, fmt = model_file(ctx, model)
        ctx.progress(0.1, f"loading the {model.format} model in its runtime")
        load_model(path, fmt)  # the runtime that will run it must accept it
        ctx.progress(0.5, "inspecting layers, parameters and MACs")
        inspection, graph_model = inspect_with_graph(path, fmt, model.declared_input_shapes)
        report = json_safe(inspection.to_dict())
        graph = json_safe(graph_model.to_dict())

        def write(session: Session) -> None:
            row = session.get_one(Model, params.model_id)
            row.inspection = report
            session.add(JobResult(job_id=ctx.job_id, key=RESULT_MODEL_GRAPH, payload=graph))
            row.status = ModelStatus.ready.value
            row.error = None

        return write

    def on_failure(self, session: Session, ctx: JobContext, message: str) -> None:
        model_invalid(session, ctx.params, message)


class FidelityHandler:
    """Runs the golden and the compressed model over a dataset and compares their outputs."""

    def run(self, ctx: JobContext) -> ResultWriter:
        from worker.attention_step import attention_results, reusable_models
        from worker.engine.fidelity import FidelityParams, compare_models
        from worker.engine.sample_topk import SampleTopK
        from worker.robustness_step import robustness_results

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
        arrays = read_dataset(ctx, dataset)
        labels = arrays.pop("labels", None)
        n = len(next(iter(arrays.values()))) if arrays else 0
        plan = profile_plan(params, models, n)  # the layer profile's (and kernel gap's) share of the work
        total_work = plan.work(n)
        share = n / total_work

        def on_progress(done: int, total: int) -> None:
            ctx.progress(share * done / max(total, 1), f"{done} of {total} samples compared")

        fidelity_params = FidelityParams(
            batch_size=params.batch_size,
            top_k=params.top_k,
            threshold_kl=params.threshold_kl,
            task=params.task,
            outputs_are_probabilities=params.outputs_are_probabilities,
            flip_confidence=params.flip_confidence,
            pooling=params.pooling,
        )
        topk = SampleTopK()  # each sample's top-k classes of both models, recorded as the comparison runs
        report = compare_models(
            topk.wrap(runners[0], "golden"), topk.wrap(runners[1], "compressed"), arrays, labels,
            fidelity_params, on_progress=on_progress,
        )  # fmt: skip
        profile_start = (n + plan.n_rerun) / total_work
        runtime_outputs = kernel_gap_outputs(
            ctx, plan, runners, arrays, report.outputs, fidelity_params, share, profile_start
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
            share,
            partial(named_dataset, ctx, limit=ood_limit),
            load_twin,
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
            )
            if document is not None
        }
        diagnostics.update(robustness.documents)  # {} unless the job asks for robustness slices
        diagnostics.update(attention_results(ctx, models, arrays, params.threads, share, attention_models))
        samples = sample_rows(ctx.job_id, report.primary_output, report.per_sample)
        layers = layer_profile_results(
            ctx, params, models, arrays, plan, profile_start, runtime_outputs, partial(named_dataset, ctx)
        )

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


def sample_rows(job_id: uuid.UUID, output_name: str, table: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """Rows of the per-sample divergence table of one output (NaN and class -1 become NULL)."""
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
    return [
        {"job_id": job_id, "output_name": output_name, "sample_index": i}
        | {k: v[i] for k, v in columns.items()}
        for i in range(n)
    ]
