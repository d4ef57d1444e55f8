"""The fidelity job's robustness step (issue 13, seed 003): when the job asks for it, both loaded models
run on seeded, corrupted copies of the dataset (worker/engine/robustness) and the result is one more
stored document beside the per-class and sequence ones (RESULT_FIDELITY_ROBUSTNESS).

Like the layer profile, the step is extra: whatever stops it (a bug, an allocation that fails, a runtime
that refuses a corrupted input) leaves a document whose ``error`` says why, and the clean report stands.
Only a cancellation and the soft time limit go through. The out-of-distribution dataset is extra
twice over: one that cannot be read or does not fit the models leaves ``ood.error`` and the slices stand.

The corrupted inputs of each point's worst samples are drawn as PNGs as the points end (robustness_images.py)
and kept in memory; the job's result writer stores them as one archive in the artifact store, named by
the document's ``images`` (RobustnessResults.store_pictures): after the steps that follow this one, so a
job stopped or failed by them stores no archive that nothing would release.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded
from sqlalchemy.orm import Session

from backend.contracts import RESULT_FIDELITY_ROBUSTNESS, FidelityJobParams
from backend.robustness_contracts import RobustnessOptions
from worker.engine.errors import EngineError, JobCancelled
from worker.engine.fidelity.compare import FidelityReport
from worker.engine.types import Runner
from worker.jobs.progress_span import span_fraction
from worker.jobs.robustness_images import WorstPictures
from worker.runtime import JobContext, json_safe, out_of_memory, raise_if_stopping

logger = logging.getLogger(__name__)


@dataclass
class RobustnessResults:
    """documents: {RESULT_FIDELITY_ROBUSTNESS: document} when the job asks for robustness slices, else {};
    pictures: the worst samples' PNGs, not stored yet (None without the slices; never stored for a
    document whose ``error`` says the slices failed)."""

    documents: dict[str, Any]
    pictures: WorstPictures | None = None

    def store_pictures(self, ctx: JobContext, session: Session) -> None:
        """From the job's result writer, before the document is added to `session`: store the pictures'
        archive and name it in the document's ``images``; released again if `session` does not commit
        (WorstPictures.store)."""
        document = self.documents.get(RESULT_FIDELITY_ROBUSTNESS)
        if self.pictures is not None and document is not None and document.get("error") is None:
            document["images"] = self.pictures.store(ctx, session, document)


def robustness_results(
    ctx: JobContext,
    params: FidelityJobParams,
    runners: list[Runner],
    arrays: Mapping[str, np.ndarray],
    labels: np.ndarray | None,
    report: FidelityReport,
    at: float,
    read_ood: Callable[[uuid.UUID], tuple[str, dict[str, np.ndarray]]] | None = None,
    load_twin: Callable[[uuid.UUID], Runner] | None = None,
    spans: tuple[float, float] | None = None,
) -> RobustnessResults:
    """The robustness document and the pictures its result writer stores (RobustnessResults).

    runners: the golden and compressed runners the clean comparison used; report: its result (the
    baseline of the brittleness ratio); at: the job's progress fraction when the step starts; spans:
    where the out-of-distribution set starts and where the step ends (progress_span.fidelity_spans): the
    bar moves from `at` as the slices x severities are done, then through the out-of-distribution
    samples (None: held at `at`, the messages say how far it is); read_ood(id) -> (name, arrays): reads the
    out-of-distribution dataset when the job names one; load_twin(id) -> Runner: loads the PyTorch twin
    of an ONNX golden model for the adversarial slices (a twin that fails to load skips only those)."""
    if params.robustness is None:
        return RobustnessResults({})
    from worker.engine.fidelity.compare import FidelityParams
    from worker.engine.robustness import RobustnessParams, evaluate_robustness

    options = params.robustness
    ood_at, end = spans if spans is not None else (at, at)

    def on_progress(done: int, total: int, label: str) -> None:
        fraction = span_fraction(at, ood_at, done, total)
        ctx.progress(fraction, f"robustness: {done} of {total} slices x severities ({label})")

    twin, twin_problem = _twin(options, runners[0], load_twin)
    pictures = WorstPictures(arrays)
    try:
        document = evaluate_robustness(
            runners[0],
            runners[1],
            arrays,
            labels,
            cast(FidelityParams, report.params),
            report.per_sample,
            report.outputs[report.primary_output]["kind"],
            RobustnessParams(
                slices=tuple(options.slices),
                severities=tuple(options.severities),
                seed=options.seed,
                max_samples=options.max_samples,
            ),
            on_progress=on_progress,
            primary_output=report.primary_output,
            twin=twin,
            twin_problem=twin_problem,
            worst_inputs=pictures.keep,
        )
        document["primary_output"] = report.primary_output
        document["images"] = None  # until the result writer stores the pictures
    except (JobCancelled, SoftTimeLimitExceeded):
        raise
    except Exception as exc:  # the slices are extra: whatever stops them must not take the report along
        raise_if_stopping(exc)  # the engine wraps runtime failures; a stop inside one still stops
        document = {"error": robustness_error(exc, out_of_memory(exc))}
    if options.ood_dataset_id is not None and document.get("error") is None:
        document["ood"] = _ood(ctx, options, runners, report, read_ood, (ood_at, end))
    return RobustnessResults({RESULT_FIDELITY_ROBUSTNESS: json_safe(document)}, pictures)


def _twin(
    options: RobustnessOptions, golden: Runner, load_twin: Callable[[uuid.UUID], Runner] | None
) -> tuple[Runner | None, str | None]:
    """(the PyTorch twin the adversarial slices attack, why it is missing) when the job pairs one with an
    ONNX golden model and asks for those slices; a twin that cannot be loaded skips only them."""
    from worker.engine.loaders.torch_runner import TorchRunner
    from worker.engine.robustness import SLICES

    wanted = any(SLICES[name].target == "gradient" for name in options.slices)
    if options.twin_model_id is None or not wanted or isinstance(golden, TorchRunner):
        return None, None
    try:
        if load_twin is None:
            raise EngineError("no model loader was given")  # a caller's bug, said in the result
        return load_twin(options.twin_model_id), None
    except (JobCancelled, SoftTimeLimitExceeded):
        raise
    except Exception as exc:
        raise_if_stopping(exc)
        return None, f"the PyTorch twin could not be loaded: {exc}"


def _ood(
    ctx: JobContext,
    options: RobustnessOptions,
    runners: list[Runner],
    report: FidelityReport,
    read_ood: Callable[[uuid.UUID], tuple[str, dict[str, np.ndarray]]] | None,
    span: tuple[float, float],
) -> dict[str, Any]:
    """The out-of-distribution part of the document: {dataset_id, dataset_name, metrics..., error}; the
    bar moves through `span` (start, end) as its samples are compared."""
    from worker.engine.fidelity.compare import FidelityParams
    from worker.engine.robustness import evaluate_ood

    dataset_id = options.ood_dataset_id
    assert dataset_id is not None
    head: dict[str, Any] = {"dataset_id": str(dataset_id), "dataset_name": None}

    def on_progress(done: int, total: int) -> None:
        fraction = span_fraction(*span, done, total)
        ctx.progress(fraction, f"out-of-distribution data: {done} of {total} samples compared")

    try:
        if read_ood is None:
            raise EngineError("no dataset reader was given")  # a caller's bug, said in the result
        head["dataset_name"], arrays = read_ood(dataset_id)
        ctx.progress(span_fraction(*span, 0, 1), f"out-of-distribution data {head['dataset_name']!r}")
        return head | evaluate_ood(
            runners[0],
            runners[1],
            arrays,
            None,
            cast(FidelityParams, report.params),
            report.per_sample,
            report.outputs[report.primary_output]["kind"],
            max_samples=options.max_samples,
            on_progress=on_progress,
        )
    except (JobCancelled, SoftTimeLimitExceeded):
        raise
    except Exception as exc:  # the slices stand whatever happens to the second dataset
        raise_if_stopping(exc)
        return head | {"error": ood_error(exc, out_of_memory(exc))}


def ood_error(exc: Exception, memory: bool) -> str:
    """Why the out-of-distribution comparison is missing, and what to change."""
    if memory:
        return (
            f"the out-of-distribution dataset ran out of memory ({type(exc).__name__}: {exc}). Lower the "
            "job's batch_size or robustness.max_samples."
        )
    if isinstance(exc, EngineError):
        return f"the out-of-distribution dataset could not be compared: {exc}"
    logger.exception("the out-of-distribution comparison failed")
    return (
        f"the out-of-distribution dataset could not be compared (internal error {type(exc).__name__}: "
        f"{exc}; please report it)."
    )


def robustness_error(exc: Exception, memory: bool) -> str:
    """Why the robustness document is missing, and what to change."""
    if memory:
        return (
            f"the robustness slices ran out of memory ({type(exc).__name__}: {exc}). The clean report is "
            "complete. Lower the job's batch_size or robustness.max_samples, or raise the worker's memory "
            "limit (KNEEBOARD_WORKER_MEMORY_LIMIT_MB)."
        )
    if isinstance(exc, EngineError):
        return f"the robustness slices could not be run: {exc}. The clean report is complete."
    logger.exception("the robustness slices failed")
    return (
        f"the robustness slices could not be run (internal error {type(exc).__name__}: {exc}; please "
        "report it). The clean report is complete; run the job without robustness to skip them."
    )
