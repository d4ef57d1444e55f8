"""Each sample's top-k classes and probabilities under both models, for the sample inspector.

`SampleTopK.wrap` puts a recorder around each runner that `compare_models` calls, so the top-k come from the
very outputs the comparison folds in: no second pass over the dataset. After the comparison, `document`
turns what was recorded into probabilities the way the comparison did (`worker.engine.fidelity.accumulators`
`_OutputAcc._log_probs`): the report says, per classification output and model, whether the outputs were
taken as probabilities (clamped, renormalised) or as logits (softmax); both candidates are kept per batch
because that decision is only known once the first finite batch was seen, and the transforms are the engine's
own (`distributions.log_softmax`, `distributions.probabilities_to_log`).

A recording runner reports its inputs with a free batch dimension and pads batches to a fixed batch size
itself (with the comparison's own `_run_batch`), so it sees every sample exactly once and in order.

Memory: 2 candidates x 2 arrays x k values per sample, model and classification output (N=10,000, k=5:
about 1.6 MB per output and model), whatever the number of classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from worker.engine.fidelity.binding import _run_batch
from worker.engine.fidelity.compare import FidelityReport
from worker.engine.metrics import distributions
from worker.engine.types import Runner, TensorSpec

TOP_K = 5
"""Classes kept per sample, model and output (fewer when the output has fewer classes)."""

SIGNIFICANT_DIGITS = 7
"""Probabilities are stored with float32's precision: 7 significant digits (halves the document's size
against float64's 17)."""

Role = Literal["golden", "compressed"]


@dataclass
class _Batches:
    """Top-k per batch of one output of one model, for both readings of its values."""

    logits: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)  # (classes, probabilities)
    probabilities: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)


def _top(log_probs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest classes per row, most probable first (equal values: the smaller class first, as argmax),
    and their probabilities. argpartition then a sort of the k: a full argsort of 1,000 classes made the
    recorder cost +68 % of the comparison's time (N=10,000, C=1,000), this about +20 %."""
    if k < log_probs.shape[1]:
        part = np.argpartition(-log_probs, k - 1, axis=1)[:, :k]
    else:
        part = np.broadcast_to(np.arange(log_probs.shape[1]), log_probs.shape)
    values = np.take_along_axis(log_probs, part, axis=1)
    # A tie across the k-th place (a quantized model's outputs often tie) may have kept a larger class:
    # those rows take the full stable sort.
    tied = np.count_nonzero(log_probs >= values.min(axis=1, keepdims=True), axis=1) > k
    if tied.any():
        part = part.copy()
        part[tied] = np.argsort(-log_probs[tied], axis=1, kind="stable")[:, :k]
        values = np.take_along_axis(log_probs, part, axis=1)
    within = np.lexsort((part, -values), axis=1)  # by value descending, then class ascending
    order = np.take_along_axis(part, within, axis=1)
    return order.astype(np.int32), np.exp(np.take_along_axis(values, within, axis=1))


def _nan_rows(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full((n, k), -1, dtype=np.int32), np.full((n, k), np.nan)


class _RecordingRunner:
    """A runner that hands every output batch of shape (n, C), C >= 2, to the recorder."""

    def __init__(self, inner: Runner, role: Role, recorder: SampleTopK) -> None:
        self._inner, self._role, self._recorder = inner, role, recorder

    @property
    def inputs(self) -> list[TensorSpec]:
        """The inner specs, a fixed batch size made free (run() re-batches); a named batch dimension stays
        named, so that a shape error still reads "(batch, 4)"."""
        return [
            replace(s, shape=(None, *s.shape[1:])) if s.shape and isinstance(s.shape[0], int) else s
            for s in self._inner.inputs
        ]

    @property
    def outputs(self) -> list[TensorSpec]:
        return self._inner.outputs

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        n = int(next(iter(feeds.values())).shape[0]) if feeds else 1
        out = _run_batch(self._inner, dict(feeds), n, self._role)
        self._recorder.add(self._role, out)
        return out


class SampleTopK:
    """Records both models' outputs batch by batch; `document` gives the per-sample top-k afterwards."""

    def __init__(self, k: int = TOP_K) -> None:
        self.k = k
        self._seen: dict[Role, dict[str, _Batches]] = {"golden": {}, "compressed": {}}

    def wrap(self, runner: Runner, role: Role) -> Runner:
        return _RecordingRunner(runner, role, self)

    def add(self, role: Role, outputs: Mapping[str, np.ndarray]) -> None:
        for name, raw in outputs.items():
            values = np.asarray(raw)
            if values.ndim != 2 or values.shape[1] < 2 or values.dtype.kind not in "biuf":
                continue
            x = values.astype(np.float64)
            k = min(self.k, x.shape[1])
            finite = np.all(np.isfinite(x), axis=1)
            batches = self._seen[role].setdefault(name, _Batches())
            for reading, transform in (
                (batches.logits, distributions.log_softmax),
                (batches.probabilities, distributions.probabilities_to_log),
            ):
                classes, probs = _nan_rows(x.shape[0], k)
                if finite.any():
                    classes[finite], probs[finite] = _top(transform(x[finite]), k)
                reading.append((classes, probs))

    def document(self, report: FidelityReport) -> dict[str, Any] | None:
        """Per classification output of the report (golden name): both models' top-k classes and
        probabilities per sample (null for a sample whose output is not finite); None without one.
        output_names lists the outputs, so a reader can find them without loading every row."""
        outputs: dict[str, Any] = {}
        for golden_name, metrics in report.outputs.items():
            if metrics.get("kind") != "classification":
                continue
            decided = metrics.get("outputs_are_probabilities") or {}
            names: dict[Role, str] = {"golden": golden_name, "compressed": metrics["compressed_output"]}
            entry: dict[str, Any] = {
                "compressed_output": names["compressed"],
                "num_classes": metrics.get("num_classes"),
                "outputs_are_probabilities": {role: bool(decided.get(role)) for role in names},
            }
            for role, name in names.items():
                batches = self._seen[role].get(name)
                if batches is None:
                    break
                chosen = batches.probabilities if decided.get(role) else batches.logits
                classes = np.concatenate([c for c, _ in chosen])
                probs = np.concatenate([p for _, p in chosen])
                if (
                    classes.shape[0] != report.n_samples
                ):  # never expected: better no document than a wrong one
                    break
                entry[role] = _lists(classes, probs)
            else:
                outputs[golden_name] = entry
        if not outputs:
            return None
        return {"k": self.k, "n_samples": report.n_samples, "output_names": list(outputs), "outputs": outputs}


def _lists(classes: np.ndarray, probs: np.ndarray) -> dict[str, list[Any]]:
    """JSON lists: one row per sample, None for a sample whose output was not finite."""
    finite = np.all(classes >= 0, axis=1)
    text = f"{{:.{SIGNIFICANT_DIGITS}g}}"
    return {
        "classes": [row if ok else None for row, ok in zip(classes.tolist(), finite.tolist(), strict=True)],
        "probabilities": [
            [float(text.format(v)) for v in row] if ok else None
            for row, ok in zip(probs.tolist(), finite.tolist(), strict=True)
        ],
    }
