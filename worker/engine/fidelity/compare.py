"""Streaming comparison of a compressed model against its golden model over a dataset.

`compare_models` runs both runners batch by batch and folds each batch into running sums, so its memory
does not grow with the dataset except for: the per-sample table of the primary output (a few scalars per
sample, O(N)) and, for outputs compared as embeddings, the embeddings themselves (O(N·D), needed by the
nearest-neighbour agreement).

Every metric is defined, with its formula, in `worker.engine.metrics`.

Output kinds, per output, from the per-sample shape of its first batch:
- ``(C,)`` with C ≥ 2 → "classification" (or "embedding" / "regression" when `FidelityParams.task` asks);
- ``()`` or ``(1,)`` → "regression";
- anything else → "tensor" (numerical metrics only).
Every kind also gets MSE, MAE, max |a − b|, SQNR and cosine mean/min on the raw outputs.

The primary output is the task adapter's output when the job's task has one (so that `kneeboard check`
and sweeps find its task block by default: a detector's post-NMS scores [N, K] would otherwise pass for a
classifier), else the first classification output (golden order), else the first output. Labels, the
per-sample table, flagging and the concentration summary refer to it.

Samples holding NaN/Inf in either model's output are counted per output, left out of that output's
metrics, flagged in the per-sample table, and reported in `FidelityReport.warnings`.

This module assembles the run and the report; the parts live beside it: `fidelity_params` (options),
`fidelity_binding` (dataset → inputs, batched runs, output pairing), `fidelity_accumulators` (running
sums per output) and `fidelity_table` (the per-sample table, concentration). Names that callers import
from here are re-exported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.fidelity.accumulators import _ClassificationAcc, _OutputAcc, infer_kind
from worker.engine.fidelity.binding import (
    _bind_compressed,
    _check_lengths,
    _dataset_length,
    _match_outputs,
    _resolve_labels,
    _run_batch,
    bind_inputs,
    format_shape,
)
from worker.engine.fidelity.params import (
    ATTENTION_MASK_KEY,
    CONCENTRATION_RULE,
    CONCENTRATION_SHARE,
    DEFAULT_THRESHOLD_KL,
    LABELS_KEY,
    MAX_STORED_FLIPS,
    NN_BLOCK,
    FidelityParams,
    OutputKind,
    Task,
)
from worker.engine.fidelity.table import (
    PER_SAMPLE_KEYS,
    _empty_table,
    _fill_table,
    _finish_table,
    concentration,
)
from worker.engine.tasks.image_output import TARGETS_KEY, image_shape_problem
from worker.engine.tasks.image_views import ImageSampleViews
from worker.engine.tasks.interface import ShowsSamples, TaskAdapter, TaskContext, adapter_for
from worker.engine.types import Runner

__all__ = [
    "ATTENTION_MASK_KEY",
    "CONCENTRATION_RULE",
    "CONCENTRATION_SHARE",
    "DEFAULT_THRESHOLD_KL",
    "LABELS_KEY",
    "MAX_STORED_FLIPS",
    "NN_BLOCK",
    "PER_SAMPLE_KEYS",
    "FidelityParams",
    "FidelityReport",
    "OutputKind",
    "Task",
    "_ClassificationAcc",
    "_run_batch",
    "bind_inputs",
    "compare_models",
    "concentration",
    "format_shape",
    "infer_kind",
]


@dataclass
class FidelityReport:
    """The result of `compare_models`.

    outputs: per golden output name, its metrics dict (see `summary_dict`).
    per_sample: the per-sample table of the primary output, one array of length n_samples per key of
        PER_SAMPLE_KEYS: kl (KL(P‖Q) nats), cosine, mse, sqnr_db (±inf possible), top1_match (bool),
        golden_class, compressed_class, label (-1 without labels), finite (bool), flagged (bool).
        Samples that are not finite hold NaN / -1 / False. For a primary output that is not a
        classification, kl is NaN, the classes are -1 and top1_match is True for every finite sample
        (there is no class to flip); flagged then marks only non-finite samples.
    per_class: per classification output, its per-class damage (`worker.engine.tasks.classification`).
    sequence: per output shaped (N, T, D), its token and pooled fidelity (`worker.engine.metrics.sequence`).
    task_per_sample: with a task adapter (`worker.engine.tasks.interface`), its per-sample values (name →
        array of length n_samples); its block is the `task` of its primary output in `outputs`.
    task_samples: with an adapter that `ShowsSamples`, its predictions of the first samples for the
        inspector (boxes of both models, transcripts, label maps, waveforms), or with task "image" the first
        image output's pictures (`worker.engine.tasks.image_views`), else None.
    """

    n_samples: int
    n_finite: int
    primary_output: str
    output_matching: Literal["name", "position"]
    outputs: dict[str, dict[str, Any]]
    per_sample: dict[str, np.ndarray]
    per_sample_summary: dict[str, Any]
    warnings: list[str]
    notes: list[str]
    params: FidelityParams
    per_class: dict[str, dict[str, Any]] = field(default_factory=dict)
    sequence: dict[str, dict[str, Any]] = field(default_factory=dict)
    task_per_sample: dict[str, np.ndarray] = field(default_factory=dict)
    task_samples: dict[str, Any] | None = None

    def classes_dict(self) -> dict[str, Any] | None:
        """The per-class damage document (stored apart from the summary), or None without a
        classification output: primary_output and outputs (golden output name → per-class dict)."""
        if not self.per_class:
            return None
        return {"primary_output": self.primary_output, "outputs": self.per_class}

    def sequence_dict(self) -> dict[str, Any] | None:
        """The sequence-fidelity document, or None without an (N, T, D) output: outputs (golden output
        name → token and pooled metrics)."""
        if not self.sequence:
            return None
        return {"outputs": self.sequence}

    def summary_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary: no NaN/inf (they become None; +inf SQNR sets sqnr_db_infinite).

        Keys: n_samples, n_finite (samples finite in every output), primary_output, output_matching
        ("name" | "position"), outputs (golden output name → metrics dict), per_sample_summary (output,
        n_flagged, threshold_kl, flag_rule, concentration), warnings, notes, params.
        Every metrics dict has kind, compressed_output, per_sample_shape, n_samples, n_finite,
        n_nonfinite_golden, n_nonfinite_compressed, mse, mae, max_abs_err, sqnr_db, sqnr_db_infinite,
        cosine_mean, cosine_min; classification adds the divergences (``*_mean_nats`` / ``*_mean_bits``),
        tv_mean, top-k agreement, confidence, label_flips and labels (accuracy and calibration, or None);
        regression adds r2; embedding adds nearest_neighbour_agreement.
        """
        return {
            "n_samples": self.n_samples,
            "n_finite": self.n_finite,
            "primary_output": self.primary_output,
            "output_matching": self.output_matching,
            "outputs": self.outputs,
            "per_sample_summary": self.per_sample_summary,
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "params": asdict(self.params),
        }


def compare_models(
    golden: Runner,
    compressed: Runner,
    arrays: Mapping[str, np.ndarray],
    labels: np.ndarray | None,
    params: FidelityParams,
    on_progress: Callable[[int, int], None] | None = None,
    *,
    sample_views: bool = True,
) -> FidelityReport:
    """Compare the compressed model with the golden one over a dataset, batch by batch.

    arrays: the dataset, named after the model inputs (see `bind_inputs`). labels: class indices of the
    primary output, or None (then the dataset's "labels" array is used if present). on_progress is called
    as (samples done, total) after each batch; it may raise JobCancelled, which propagates. sample_views=False
    skips encoding the label maps, pictures and waveforms the inspector shows (callers that do not store them).
    Raises DatasetMismatchError or OutputMismatchError when the dataset or the models do not fit.
    """
    warnings: list[str] = []
    notes: list[str] = []
    g_feeds = bind_inputs(arrays, golden.inputs)
    c_feeds = _bind_compressed(arrays, golden.inputs, g_feeds, compressed.inputs, notes)
    n = _check_lengths(g_feeds) if g_feeds else _dataset_length(arrays)
    if n == 0:
        raise DatasetMismatchError("the dataset has no samples")
    lab = _resolve_labels(labels, arrays, n)
    pairs, matching = _match_outputs(golden.outputs, compressed.outputs)
    if matching == "position":
        warnings.append(
            "output names differ; matched by position: "
            + ", ".join(f"golden '{g}' ↔ compressed '{c}'" for g, c in pairs)
        )
    accs = [_OutputAcc(g, c, params) for g, c in pairs]
    task = adapter_for(params.task)
    task_rows: dict[str, list[np.ndarray]] = {}
    image_views: ImageSampleViews | None = None  # task "image" has no adapter; its inspector pictures
    primary: _OutputAcc | None = None
    table: dict[str, np.ndarray] = {}
    masks: dict[str, np.ndarray | None] = {}
    n_all_finite = 0
    for start in range(0, n, params.batch_size):
        stop = min(n, start + params.batch_size)
        g_out = _run_batch(golden, {k: v[start:stop] for k, v in g_feeds.items()}, stop - start, "golden")
        c_out = _run_batch(
            compressed, {k: v[start:stop] for k, v in c_feeds.items()}, stop - start, "compressed"
        )
        if primary is None:
            primary = _start(accs, g_out, c_out)
            if task is not None:
                _start_task(task, accs, g_out, arrays, n, params, sample_views)
                primary = next(acc for acc in accs if acc.golden_name == task.primary_output)
            lab = _labels_for(primary, lab, warnings)
            table = _empty_table(n)
            if lab is not None:
                table["label"][:] = lab
            masks = _sequence_masks(accs, arrays.get(ATTENTION_MASK_KEY), n, warnings)
            targets = _image_targets(accs, arrays.get(TARGETS_KEY), n, params)
            image_views = _image_views(accs, params) if sample_views else None
        all_finite = np.ones(stop - start, dtype=np.bool_)
        for acc in accs:
            batch_labels = lab[start:stop] if (acc is primary and lab is not None) else None
            mask = masks.get(acc.golden_name)
            finite, cls, ps = acc.update(
                g_out[acc.golden_name],
                c_out[acc.compressed_name],
                start,
                batch_labels,
                None if mask is None else mask[start:stop],
                None if acc.image is None or targets is None else targets[start:stop],
            )
            all_finite &= finite
            if acc is primary:
                _fill_table(table, start, finite, cls, ps)
        n_all_finite += int(all_finite.sum())
        if image_views is not None:
            image_views.update(g_out[image_views.output], c_out[_compressed_name(accs, image_views.output)])
        if task is not None:
            c_named = {acc.golden_name: c_out[acc.compressed_name] for acc in accs}
            for key, values in task.update(g_out, c_named, start, stop).items():
                task_rows.setdefault(key, []).append(np.asarray(values))
        if on_progress is not None:
            on_progress(stop, n)
    assert primary is not None  # n > 0, so at least one batch ran
    report = _report(accs, primary, table, matching, n, n_all_finite, params, warnings, notes)
    if image_views is not None:
        report.task_samples = image_views.sample_views()
    if task is not None:
        report.outputs[task.primary_output]["task"] = task.to_dict()
        report.task_per_sample = {key: np.concatenate(parts) for key, parts in task_rows.items()}
        if isinstance(task, ShowsSamples) and sample_views:
            report.task_samples = task.sample_views()
    return report


def _start_task(
    task: TaskAdapter,
    accs: list[_OutputAcc],
    g_out: Mapping[str, np.ndarray],
    arrays: Mapping[str, np.ndarray],
    n: int,
    params: FidelityParams,
    sample_views: bool,
) -> None:
    shapes = {acc.golden_name: tuple(int(d) for d in np.shape(g_out[acc.golden_name])[1:]) for acc in accs}
    task.start(TaskContext(shapes, arrays, n, dict(params.task_options), sample_views))
    if task.primary_output not in shapes:
        raise OutputMismatchError(
            f"task {params.task!r} reports on output {task.primary_output!r}, which the model does not have"
        )


def _start(accs: list[_OutputAcc], g_out: dict[str, np.ndarray], c_out: dict[str, np.ndarray]) -> _OutputAcc:
    for acc in accs:
        acc.check_shapes(g_out[acc.golden_name], c_out[acc.compressed_name])
        acc.start(g_out[acc.golden_name], c_out[acc.compressed_name])
    return next((a for a in accs if a.kind == "classification"), accs[0])


def _image_targets(
    accs: list[_OutputAcc], raw: np.ndarray | None, n: int, params: FidelityParams
) -> np.ndarray | None:
    """With task "image": the dataset's reference pictures (None without them). The task must find an image
    output, and the references must fit it: otherwise the job stops here, at its first batch, saying why."""
    if params.task != "image":
        return None
    image_outputs = [acc for acc in accs if acc.image is not None]
    if not image_outputs:
        problems = "; ".join(
            f"'{acc.golden_name}': {image_shape_problem(acc.per_sample_shape)}" for acc in accs
        )
        raise OutputMismatchError(f"task 'image' found no output that is a batch of pictures ({problems})")
    if raw is None:
        return None
    shape = (n, *image_outputs[0].per_sample_shape)
    if np.shape(raw) != shape:
        raise DatasetMismatchError(
            f"'{TARGETS_KEY}' has shape {format_shape(np.shape(raw))}; the image output "
            f"'{image_outputs[0].golden_name}' needs {format_shape(shape)}"
        )
    return np.asarray(raw)


def _image_views(accs: list[_OutputAcc], params: FidelityParams) -> ImageSampleViews | None:
    """With task "image", a keeper of the first image output's pictures for the sample inspector."""
    first = next((acc for acc in accs if acc.image is not None), None)
    return None if first is None else ImageSampleViews(first.golden_name, params.image_data_range)


def _compressed_name(accs: list[_OutputAcc], golden_name: str) -> str:
    return next(acc.compressed_name for acc in accs if acc.golden_name == golden_name)


def _sequence_masks(
    accs: list[_OutputAcc], raw: np.ndarray | None, n: int, warnings: list[str]
) -> dict[str, np.ndarray | None]:
    """The dataset's attention mask for each sequence output whose token count it fits (else None, with
    a warning: its tokens are then all kept)."""
    out: dict[str, np.ndarray | None] = {}
    for acc in accs:
        if acc.sequence is None or raw is None:
            continue
        mask = np.asarray(raw)
        tokens = acc.per_sample_shape[0]
        if mask.shape != (n, tokens):
            warnings.append(
                f"'{ATTENTION_MASK_KEY}' has shape {format_shape(mask.shape)}, not ({n}, {tokens}) as output "
                f"'{acc.golden_name}' needs; its token metrics keep every token"
            )
            out[acc.golden_name] = None
        else:
            out[acc.golden_name] = mask
    return out


def _labels_for(primary: _OutputAcc, lab: np.ndarray | None, warnings: list[str]) -> np.ndarray | None:
    if lab is None:
        return None
    if primary.kind != "classification":
        warnings.append(
            f"labels ignored: the primary output '{primary.golden_name}' is not a classification output"
        )
        return None
    n_classes = primary.per_sample_shape[0]
    if lab.min() < 0 or lab.max() >= n_classes:
        raise DatasetMismatchError(
            f"labels range from {int(lab.min())} to {int(lab.max())} but output '{primary.golden_name}' "
            f"has {n_classes} classes (0 to {n_classes - 1})"
        )
    return lab


def _report(
    accs: list[_OutputAcc],
    primary: _OutputAcc,
    table: dict[str, np.ndarray],
    matching: Literal["name", "position"],
    n: int,
    n_all_finite: int,
    params: FidelityParams,
    warnings: list[str],
    notes: list[str],
) -> FidelityReport:
    is_cls = primary.kind == "classification"
    _finish_table(table, params.threshold_kl, is_cls)
    for acc in accs:
        text = acc.nonfinite_warning()
        if text:
            warnings.append(text)
        warnings.extend(acc.warnings)
        notes.extend(acc.notes)
    summary = {
        "output": primary.golden_name,
        "n_flagged": int(table["flagged"].sum()),
        "threshold_kl": params.threshold_kl if is_cls else None,
        "flag_rule": (
            "non-finite output, top-1 flip, or KL(P‖Q) above threshold_kl" if is_cls else "non-finite output"
        ),
        "concentration": concentration(table["kl"] if is_cls else table["mse"], "kl" if is_cls else "mse"),
    }
    return FidelityReport(
        n_samples=n,
        n_finite=n_all_finite,
        primary_output=primary.golden_name,
        output_matching=matching,
        outputs={acc.golden_name: acc.to_dict() for acc in accs},
        per_sample=table,
        per_sample_summary=summary,
        warnings=warnings,
        notes=notes,
        params=params,
        per_class={a.golden_name: d for a in accs if (d := a.per_class_dict()) is not None},
        sequence={a.golden_name: d for a in accs if (d := a.sequence_dict()) is not None},
    )
