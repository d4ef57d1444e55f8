"""Per-output accumulators of the fidelity comparison: each batch is folded into running sums.

`_OutputAcc` holds everything for one pair of outputs (numerics on the raw values, then the comparison
of its kind); `_ClassificationAcc` the divergences, agreement, flips, accuracy and calibration of a
classification output. Formulas live in `worker.engine.metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from worker.engine.errors import OutputMismatchError
from worker.engine.fidelity.binding import format_shape
from worker.engine.fidelity.params import MAX_STORED_FLIPS, NN_BLOCK, FidelityParams, OutputKind, Task
from worker.engine.metrics import agreement, distributions, numerical
from worker.engine.metrics.calibration import ReliabilityBins
from worker.engine.metrics.numerical import NumericalAccumulator, RegressionAccumulator, json_float
from worker.engine.metrics.sequence import SequenceAccumulator
from worker.engine.tasks.classification import PerClassAccumulator
from worker.engine.tasks.classification_scores import task_summary
from worker.engine.tasks.image_output import ImageOutputAccumulator, image_shape_problem

SLICE_BYTES = 32 << 20
"""At most this many bytes of float64 per output per fold (`_OutputAcc.update`): the metrics make ~10 copies of
the block, so a 0.56 B decoder's logits at batch 8 (8 x 128 x 32 000) folded whole took 2.6 GB beside the
models (bench_llm: peak RSS 2.96x the fp32 weights); per sample they take a tenth of that."""


def infer_kind(per_sample_shape: tuple[int, ...], task: Task = "auto") -> OutputKind:
    """The comparison used for an output with this per-sample shape (see the module docstring)."""
    if per_sample_shape in ((), (1,)):
        return "regression"
    if len(per_sample_shape) == 1 and per_sample_shape[0] >= 2:
        if task == "embedding":
            return "embedding"
        if task == "regression":
            return "regression"
        return "classification"
    return "tensor"


# ---------------------------------------------------------------------------------------------- accumulators


_CLS_SUMS = ("kl", "kl_reverse", "js", "ce", "entropy_g", "entropy_c", "tv", "top1", "topk", "overlap")


@dataclass
class _ClassificationAcc:
    top_k: int
    n: int = 0
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(_CLS_SUMS, 0.0))
    conf_g: float = 0.0
    conf_c: float = 0.0
    kl_max: float = 0.0
    flip_count: int = 0
    flips: list[dict[str, int]] = field(default_factory=list)
    n_labeled: int = 0
    correct: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("g1", "c1", "gk", "ck"), 0))
    bins_g: ReliabilityBins = field(default_factory=ReliabilityBins)
    bins_c: ReliabilityBins = field(default_factory=ReliabilityBins)
    per_class: PerClassAccumulator | None = None

    def update(
        self, lp: np.ndarray, lq: np.ndarray, indices: np.ndarray, labels: np.ndarray | None
    ) -> dict[str, np.ndarray]:
        """Fold a batch of finite log-probabilities in; returns per-sample kl, classes and top-1 match."""
        per = {
            "kl": distributions.kl(lp, lq),
            "kl_reverse": distributions.reverse_kl(lp, lq),
            "js": distributions.js(lp, lq),
            "ce": distributions.cross_entropy(lp, lq),
            "entropy_g": distributions.entropy(lp),
            "entropy_c": distributions.entropy(lq),
            "tv": distributions.total_variation(lp, lq),
            "top1": agreement.top1_match(lp, lq),
            "topk": agreement.topk_agreement(lp, lq, self.top_k),
            "overlap": agreement.topk_overlap(lp, lq, self.top_k),
        }
        for key, values in per.items():
            self.sums[key] += float(np.sum(values, dtype=np.float64))
        if self.per_class is not None:
            self.per_class.update(lp, lq, per["kl"], indices, labels)
        self.n += int(lp.shape[0])
        if lp.shape[0]:
            self.kl_max = max(self.kl_max, float(per["kl"].max()))
        p_max, q_max = np.exp(lp.max(axis=1)), np.exp(lq.max(axis=1))
        self.conf_g += float(p_max.sum())
        self.conf_c += float(q_max.sum())
        g_cls, c_cls = agreement.top1(lp), agreement.top1(lq)
        self._add_flips(agreement.label_flips(g_cls, c_cls), indices)
        if labels is not None:
            self._add_labels(lp, lq, g_cls, c_cls, p_max, q_max, labels)
        return {"kl": per["kl"], "golden_class": g_cls, "compressed_class": c_cls, "top1_match": per["top1"]}

    def _add_flips(self, flips: agreement.LabelFlips, indices: np.ndarray) -> None:
        self.flip_count += len(flips)
        room = MAX_STORED_FLIPS - len(self.flips)
        for i, g, c in list(zip(flips.indices, flips.golden, flips.compressed, strict=True))[: max(room, 0)]:
            self.flips.append({"index": int(indices[i]), "golden": int(g), "compressed": int(c)})

    def _add_labels(
        self,
        lp: np.ndarray,
        lq: np.ndarray,
        g_cls: np.ndarray,
        c_cls: np.ndarray,
        p_max: np.ndarray,
        q_max: np.ndarray,
        labels: np.ndarray,
    ) -> None:
        g_ok, c_ok = g_cls == labels, c_cls == labels
        self.n_labeled += int(labels.shape[0])
        self.correct["g1"] += int(g_ok.sum())
        self.correct["c1"] += int(c_ok.sum())
        self.correct["gk"] += int(agreement.in_topk(lp, labels, self.top_k).sum())
        self.correct["ck"] += int(agreement.in_topk(lq, labels, self.top_k).sum())
        self.bins_g.update(p_max, g_ok)
        self.bins_c.update(q_max, c_ok)

    def to_dict(self) -> dict[str, Any]:
        n = self.n
        mean = {k: (self.sums[k] / n if n else float("nan")) for k in _CLS_SUMS}
        nats_bits: dict[str, Any] = {}
        for key, name in (
            ("kl", "kl"),
            ("kl_reverse", "kl_reverse"),
            ("js", "js"),
            ("ce", "cross_entropy"),
            ("entropy_g", "entropy_golden"),
            ("entropy_c", "entropy_compressed"),
        ):
            nats_bits[f"{name}_mean_nats"] = json_float(mean[key])
            nats_bits[f"{name}_mean_bits"] = json_float(mean[key] / distributions.LN2)
        conf_g = self.conf_g / n if n else float("nan")
        conf_c = self.conf_c / n if n else float("nan")
        return nats_bits | {
            "kl_max_nats": json_float(self.kl_max) if n else None,
            "tv_mean": json_float(mean["tv"]),
            "top_k": self.top_k,
            "top1_match": json_float(mean["top1"]),
            "topk_agreement": json_float(mean["topk"]),
            "topk_overlap": json_float(mean["overlap"]),
            "confidence_mean_golden": json_float(conf_g),
            "confidence_mean_compressed": json_float(conf_c),
            "confidence_shift": json_float(conf_c - conf_g),
            "label_flips": {
                "count": self.flip_count,
                "stored": len(self.flips),
                "capped": self.flip_count > len(self.flips),
                "items": list(self.flips),
            },
            "labels": self._labels_dict(),
            "task": task_summary(self.per_class.task_scores()) if self.per_class is not None else None,
        }

    def _labels_dict(self) -> dict[str, Any] | None:
        m = self.n_labeled
        if m == 0:
            return None
        acc = {k: v / m for k, v in self.correct.items()}
        return {
            "n": m,
            "golden_top1_accuracy": acc["g1"],
            "compressed_top1_accuracy": acc["c1"],
            "top1_accuracy_drop_pp": 100.0 * (acc["g1"] - acc["c1"]),
            "golden_topk_accuracy": acc["gk"],
            "compressed_topk_accuracy": acc["ck"],
            "topk_accuracy_drop_pp": 100.0 * (acc["gk"] - acc["ck"]),
            "calibration": {
                "golden": self.bins_g.to_dict(),
                "compressed": self.bins_c.to_dict(),
                "ece_shift": json_float(self.bins_c.ece() - self.bins_g.ece()),
            },
        }


@dataclass
class _OutputAcc:
    """Everything accumulated for one pair of outputs."""

    golden_name: str
    compressed_name: str
    params: FidelityParams
    kind: OutputKind | None = None
    per_sample_shape: tuple[int, ...] = ()
    n_samples: int = 0
    n_finite: int = 0
    n_nonfinite_golden: int = 0
    n_nonfinite_compressed: int = 0
    numerics: NumericalAccumulator = field(default_factory=NumericalAccumulator)
    classification: _ClassificationAcc | None = None
    regression: RegressionAccumulator | None = None
    sequence: SequenceAccumulator | None = None
    image: ImageOutputAccumulator | None = None
    embeddings: tuple[list[np.ndarray], list[np.ndarray]] = field(default_factory=lambda: ([], []))
    is_probability: dict[str, bool | None] = field(
        default_factory=lambda: {"golden": None, "compressed": None}
    )
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def start(self, g: np.ndarray, c: np.ndarray) -> None:
        """Decide the kind from the first batch."""
        self.per_sample_shape = tuple(int(d) for d in g.shape[1:])
        self.kind = infer_kind(self.per_sample_shape, self.params.task)
        if self.kind == "classification":
            n_classes = self.per_sample_shape[0]
            self.classification = _ClassificationAcc(
                top_k=min(self.params.top_k, n_classes),
                per_class=PerClassAccumulator(n_classes, threshold=self.params.flip_confidence),
            )
        elif self.kind == "regression":
            self.regression = RegressionAccumulator()
        elif self.params.task == "image" and image_shape_problem(self.per_sample_shape) is None:
            self.image = ImageOutputAccumulator(self.params.image_data_range)
        elif len(self.per_sample_shape) == 2:  # (T, D): token embeddings of a sequence model
            self.sequence = SequenceAccumulator(pooling=self.params.pooling, top_k=self.params.top_k)

    def check_shapes(self, g: np.ndarray, c: np.ndarray) -> None:
        if g.shape[1:] != c.shape[1:]:
            raise OutputMismatchError(
                f"golden output '{self.golden_name}' gives per-sample shape {format_shape(g.shape[1:])} "
                f"but compressed output '{self.compressed_name}' gives {format_shape(c.shape[1:])}"
            )

    def update(
        self,
        g_raw: np.ndarray,
        c_raw: np.ndarray,
        start: int,
        labels: np.ndarray | None,
        mask: np.ndarray | None = None,
        targets: np.ndarray | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray], numerical.NumericalPerSample]:
        """Fold a batch in; returns the finite mask, classification per-sample values and numerics.
        mask: the batch's attention mask ``(n, T)`` for a sequence output, or None. targets: the batch's
        reference pictures for an image output, or None. A batch whose float64 copy would pass
        `SLICE_BYTES` is folded a few samples at a time (the same sums, in the same sample order)."""
        self.check_shapes(g_raw, c_raw)
        n = int(g_raw.shape[0])
        step = max(1, SLICE_BYTES // max(1, 8 * int(np.prod(g_raw.shape[1:]))))
        if n <= step:
            return self._update_block(g_raw, c_raw, start, labels, mask, targets)

        def part(x: np.ndarray | None, i: int) -> np.ndarray | None:
            return None if x is None else x[i : i + step]

        parts = [
            self._update_block(
                g_raw[i : i + step],
                c_raw[i : i + step],
                start + i,
                part(labels, i),
                part(mask, i),
                part(targets, i),
            )
            for i in range(0, n, step)
        ]
        finite = np.concatenate([p[0] for p in parts])
        cls = {key: np.concatenate([p[1][key] for p in parts]) for key in parts[0][1]}
        ps = numerical.NumericalPerSample(
            **{f.name: np.concatenate([getattr(p[2], f.name) for p in parts]) for f in fields(parts[0][2])}
        )
        return finite, cls, ps

    def _update_block(
        self,
        g_raw: np.ndarray,
        c_raw: np.ndarray,
        start: int,
        labels: np.ndarray | None,
        mask: np.ndarray | None,
        targets: np.ndarray | None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray], numerical.NumericalPerSample]:
        g = np.asarray(g_raw, dtype=np.float64)
        c = np.asarray(c_raw, dtype=np.float64)
        fin_g = np.all(np.isfinite(g.reshape(g.shape[0], -1)), axis=1)
        fin_c = np.all(np.isfinite(c.reshape(c.shape[0], -1)), axis=1)
        finite = fin_g & fin_c
        self.n_samples += int(g.shape[0])
        self.n_nonfinite_golden += int((~fin_g).sum())
        self.n_nonfinite_compressed += int((~fin_c).sum())
        self.n_finite += int(finite.sum())
        gf, cf = g[finite], c[finite]
        ps = self.numerics.update(gf, cf)
        indices = start + np.flatnonzero(finite)
        cls: dict[str, np.ndarray] = {}
        if self.classification is not None:
            lp, lq = self._log_probs(gf, "golden"), self._log_probs(cf, "compressed")
            cls = self.classification.update(lp, lq, indices, None if labels is None else labels[finite])
        elif self.regression is not None:
            self.regression.update(gf, cf)
        elif self.sequence is not None:
            self.sequence.update(gf, cf, None if mask is None else mask[finite])
        elif self.image is not None:
            ref = None if targets is None else np.asarray(targets, dtype=np.float64)[finite]
            self.image.update(gf, cf, ref)
        elif self.kind == "embedding":
            self.embeddings[0].append(gf.reshape(gf.shape[0], -1))
            self.embeddings[1].append(cf.reshape(cf.shape[0], -1))
        return finite, cls, ps

    def _log_probs(self, x: np.ndarray, role: str) -> np.ndarray:
        known = self.is_probability[role]
        if known is None and x.shape[0]:
            forced = self.params.outputs_are_probabilities
            known = distributions.looks_like_probabilities(x) if forced is None else forced
            self.is_probability[role] = known
            if known and forced is None:
                self.notes.append(
                    f"{role} output '{self._name(role)}' looks like probabilities; clamped at "
                    f"{distributions.PROBABILITY_EPS:g}, renormalised and logged instead of log_softmax"
                )
        if known:
            if x.shape[0] and not distributions.looks_like_probabilities(x):
                self._warn_once(
                    f"{role} output '{self._name(role)}' is treated as probabilities but a batch has rows that "
                    "are negative or do not sum to 1"
                )
            return distributions.probabilities_to_log(x)
        return distributions.log_softmax(x)

    def _name(self, role: str) -> str:
        return self.golden_name if role == "golden" else self.compressed_name

    def _warn_once(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def nonfinite_warning(self) -> str | None:
        excluded = self.n_samples - self.n_finite
        if excluded == 0:
            return None
        return (
            f"output '{self.golden_name}': {excluded} of {self.n_samples} samples hold NaN/Inf "
            f"(golden: {self.n_nonfinite_golden}, compressed: {self.n_nonfinite_compressed}); "
            "they are excluded from this output's metrics"
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "compressed_output": self.compressed_name,
            "per_sample_shape": list(self.per_sample_shape),
            "n_samples": self.n_samples,
            "n_finite": self.n_finite,
            "n_nonfinite_golden": self.n_nonfinite_golden,
            "n_nonfinite_compressed": self.n_nonfinite_compressed,
            **self.numerics.to_dict(),
        }
        if self.classification is not None:
            out["outputs_are_probabilities"] = dict(self.is_probability)
            out["num_classes"] = self.per_sample_shape[0]
            out |= self.classification.to_dict()
        if self.regression is not None:
            out["r2"] = json_float(self.regression.r2())
        if self.image is not None:
            out["task"] = self.image.to_dict()
        if self.kind == "embedding":
            out["nearest_neighbour_agreement"] = json_float(self._nn_agreement())
            out["nearest_neighbour_metric"] = "cosine"
        return out

    def per_class_dict(self) -> dict[str, Any] | None:
        """Per-class damage (`worker.engine.tasks.classification`) of a classification output, else None."""
        if self.classification is None or self.classification.per_class is None:
            return None
        return self.classification.per_class.to_dict()

    def sequence_dict(self) -> dict[str, Any] | None:
        """Token and pooled fidelity (`worker.engine.metrics.sequence`) of an (N, T, D) output, else None."""
        return None if self.sequence is None else self.sequence.to_dict()

    def _nn_agreement(self) -> float:
        g_parts, c_parts = self.embeddings
        if not g_parts:
            return float("nan")
        share, _ = agreement.nearest_neighbour_agreement(
            np.concatenate(g_parts), np.concatenate(c_parts), block=NN_BLOCK
        )
        return share
