"""Streaming comparison of a compressed model against its golden model over a dataset.

`compare_models` runs both runners batch by batch and folds each batch into running sums, so its memory
does not grow with the dataset except for: the per-sample table of the primary output (a few scalars per
sample, O(N)) and, for outputs compared as embeddings, the embeddings themselves (O(N·D), needed by the
nearest-neighbour agreement).

Every metric follows DESIGN.md, "Definitions"; the formulas live in `worker.engine.metrics`.

Output kinds, per output, from the per-sample shape of its first batch:
- ``(C,)`` with C ≥ 2 → "classification" (or "embedding" / "regression" when `FidelityParams.task` asks);
- ``()`` or ``(1,)`` → "regression";
- anything else → "tensor" (numerical metrics only).
Every kind also gets MSE, MAE, max |a − b|, SQNR and cosine mean/min on the raw outputs.

The primary output is the first classification output (golden order), else the first output. Labels,
the per-sample table, flagging and the concentration summary refer to it.

Samples holding NaN/Inf in either model's output are counted per output, left out of that output's
metrics, flagged in the per-sample table, and reported in `FidelityReport.warnings`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from worker.engine.errors import DatasetMismatchError, EngineError, OutputMismatchError
from worker.engine.metrics import agreement, distributions, numerical
from worker.engine.metrics.calibration import ReliabilityBins
from worker.engine.metrics.numerical import NumericalAccumulator, RegressionAccumulator, json_float
from worker.engine.types import Dim, Runner, TensorSpec

Task = Literal["auto", "classification", "embedding", "regression"]
OutputKind = Literal["classification", "embedding", "regression", "tensor"]

DEFAULT_THRESHOLD_KL = 0.1
"""Default per-sample KL (nats) above which a sample is flagged; about 0.14 bits of extra code length."""

MAX_STORED_FLIPS = 1000
"""At most this many label flips are listed per output; the total count is always reported."""

CONCENTRATION_SHARE = 0.5
"""Verdict rule: "concentrated" when the worst 10% of samples carry more than this share of the total."""

CONCENTRATION_RULE = "concentrated when the worst 10% of samples carry more than 50% of the total divergence"

NN_BLOCK = 1024
"""Rows per block of the nearest-neighbour search (memory O(N·NN_BLOCK))."""

LABELS_KEY = "labels"
"""Dataset array ignored by `bind_inputs`; used as labels by `compare_models` when none are passed."""


@dataclass
class FidelityParams:
    """Options of `compare_models`.

    batch_size: samples per call to each runner (a runner whose inputs have a fixed batch dimension is
        called in chunks of that size, the last one padded).
    top_k: k of top-k agreement, top-k overlap and top-k accuracy (clipped to the number of classes).
    threshold_kl: a sample of the primary output is flagged when its KL(P‖Q) in nats exceeds this
        (default 0.1 nats); None flags by top-1 flips (and non-finite outputs) only.
    task: "auto" infers each output's kind from its shape; "classification", "embedding" or "regression"
        decide how 2-D outputs ``(N, D)`` with D ≥ 2 are compared (other shapes keep their inferred kind).
    outputs_are_probabilities: for classification outputs, True when the models output probabilities
        (clamped at 1e-12, renormalised, then logged), False for logits, None to detect it per model and
        output on the first batch (non-negative rows that sum to 1 within 1e-3).
    """

    batch_size: int = 64
    top_k: int = 5
    threshold_kl: float | None = DEFAULT_THRESHOLD_KL
    task: Task = "auto"
    outputs_are_probabilities: bool | None = None

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {self.batch_size}")
        if self.top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {self.top_k}")
        if self.task not in ("auto", "classification", "embedding", "regression"):
            raise ValueError(f"unknown task {self.task!r}")
        if self.threshold_kl is not None and not self.threshold_kl >= 0:
            raise ValueError(f"threshold_kl must be a non-negative number or None, got {self.threshold_kl}")


# ---------------------------------------------------------------------------------------------- inputs


def format_shape(shape: Sequence[Dim]) -> str:
    """A shape as users read it: ``(batch, 1, 8, 8)``; unknown dimensions print as ``?``."""
    parts = ["?" if d is None else str(d) for d in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def bind_inputs(arrays: Mapping[str, np.ndarray], specs: list[TensorSpec]) -> dict[str, np.ndarray]:
    """Match dataset arrays to a model's inputs; returns ``{input name: array}``.

    Arrays are taken by input name; a single-input model also accepts a single array of any name. The
    "labels" array is ignored. Every array must have the same length (the batch dimension, first), the
    same rank as its spec, and the spec's fixed sizes in every other dimension; a fixed batch size in the
    spec is not checked here (the runner is then called in chunks of that size). An array is cast to the
    spec's dtype when that is a same-kind cast (e.g. float64 → float32, uint8 → float32, int64 → int32
    when the values fit). Anything else raises DatasetMismatchError.
    """
    candidates = {k: np.asarray(v) for k, v in arrays.items() if k != LABELS_KEY}
    names = [s.name for s in specs]
    if all(n in candidates for n in names):
        chosen = {s.name: candidates[s.name] for s in specs}
    elif len(specs) == 1 and len(candidates) == 1:
        chosen = {specs[0].name: next(iter(candidates.values()))}
    else:
        raise DatasetMismatchError(
            f"the model expects inputs {names} but the dataset has arrays {sorted(candidates)}; "
            "name the dataset arrays after the model inputs"
        )
    _check_lengths(chosen)
    return {s.name: _fit_to_spec(chosen[s.name], s) for s in specs}


def _check_lengths(arrays: Mapping[str, np.ndarray]) -> int:
    lengths: dict[str, int] = {}
    for name, arr in arrays.items():
        if arr.ndim == 0:
            raise DatasetMismatchError(f"dataset array '{name}' is a scalar; it needs a batch dimension")
        lengths[name] = int(arr.shape[0])
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"'{k}' has {v}" for k, v in lengths.items())
        raise DatasetMismatchError(f"dataset arrays have different lengths: {listed}")
    return next(iter(lengths.values()), 0)


def _fit_to_spec(arr: np.ndarray, spec: TensorSpec) -> np.ndarray:
    if spec.shape:  # an empty spec shape is taken as "rank unknown": nothing to check
        expected = spec.shape[1:]
        given = arr.shape[1:]
        fits = len(expected) == len(given) and all(
            not isinstance(e, int) or e == g for e, g in zip(expected, given, strict=True)
        )
        if not fits:
            raise DatasetMismatchError(
                f"input '{spec.name}' expects shape {format_shape(spec.shape)} "
                f"but the dataset gives {format_shape(arr.shape)}"
            )
    return _cast(arr, spec)


def _cast(arr: np.ndarray, spec: TensorSpec) -> np.ndarray:
    try:
        target = np.dtype(spec.dtype)
    except TypeError:
        return arr  # a dtype numpy does not know (e.g. bfloat16): leave it to the runner
    if arr.dtype == target:
        return arr
    ok = np.can_cast(arr.dtype, target, casting="same_kind")
    if ok and target.kind in "iu" and arr.dtype.kind in "iu" and arr.size:
        info = np.iinfo(target)
        ok = bool(arr.min() >= info.min and arr.max() <= info.max)
    if not ok:
        raise DatasetMismatchError(
            f"input '{spec.name}' expects dtype {target.name} but the dataset gives {arr.dtype.name}, "
            "which cannot be converted safely"
        )
    return arr.astype(target, copy=False)


def _bind_compressed(
    arrays: Mapping[str, np.ndarray],
    golden_specs: list[TensorSpec],
    golden_feeds: dict[str, np.ndarray],
    specs: list[TensorSpec],
    notes: list[str],
) -> dict[str, np.ndarray]:
    """Bind the compressed model's inputs: by name, else by position when the counts agree."""
    try:
        return bind_inputs(arrays, specs)
    except DatasetMismatchError:
        if len(specs) != len(golden_specs) or {s.name for s in specs} == {s.name for s in golden_specs}:
            raise
    by_position = {c.name: golden_feeds[g.name] for g, c in zip(golden_specs, specs, strict=True)}
    notes.append(
        f"input names differ (golden: {[s.name for s in golden_specs]}, compressed: {[s.name for s in specs]}); "
        "inputs matched by position"
    )
    return bind_inputs(by_position, specs)


def _resolve_labels(labels: np.ndarray | None, arrays: Mapping[str, np.ndarray], n: int) -> np.ndarray | None:
    """Labels as int64 of length n (from the argument, else the dataset's "labels" array), or None."""
    raw = labels if labels is not None else arrays.get(LABELS_KEY)
    if raw is None:
        return None
    lab = np.asarray(raw)
    if lab.ndim == 2 and lab.shape[1] == 1:
        lab = lab[:, 0]
    if lab.ndim != 1 or lab.shape[0] != n:
        raise DatasetMismatchError(
            f"labels must be one class index per sample, shape ({n},), but have shape {format_shape(lab.shape)}"
        )
    if lab.dtype.kind == "f" and not np.all(np.isfinite(lab) & (lab == np.round(lab))):
        raise DatasetMismatchError("labels must be integer class indices")
    if lab.dtype.kind not in "iuf":
        raise DatasetMismatchError(f"labels must be integer class indices, not {lab.dtype.name}")
    return lab.astype(np.int64)


# ---------------------------------------------------------------------------------------------- running


def _fixed_batch(specs: list[TensorSpec]) -> int | None:
    for s in specs:
        if s.shape and isinstance(s.shape[0], int) and s.shape[0] > 0:
            return int(s.shape[0])
    return None


def _run_batch(runner: Runner, feeds: dict[str, np.ndarray], n: int, role: str) -> dict[str, np.ndarray]:
    """Run one batch of n samples, in padded chunks when the runner's batch size is fixed."""
    fixed = _fixed_batch(runner.inputs)
    if fixed is None or fixed == n:
        return _checked(runner.run(feeds), runner, n, role)
    parts: list[dict[str, np.ndarray]] = []
    for start in range(0, n, fixed):
        idx = np.minimum(np.arange(start, start + fixed), n - 1)  # pads by repeating the last sample
        out = _checked(runner.run({k: v[idx] for k, v in feeds.items()}), runner, fixed, role)
        keep = min(fixed, n - start)
        parts.append({k: v[:keep] for k, v in out.items()})
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _checked(out: Mapping[str, np.ndarray], runner: Runner, n: int, role: str) -> dict[str, np.ndarray]:
    result: dict[str, np.ndarray] = {}
    for spec in runner.outputs:
        if spec.name not in out:
            raise EngineError(
                f"the {role} model returned outputs {sorted(out)} but declares {[s.name for s in runner.outputs]}"
            )
        arr = np.asarray(out[spec.name])
        if arr.ndim == 0 or arr.shape[0] != n:
            raise EngineError(
                f"the {role} model's output '{spec.name}' has shape {format_shape(arr.shape)} "
                f"for a batch of {n} samples; outputs must be batch first"
            )
        result[spec.name] = arr
    return result


def _match_outputs(
    golden: list[TensorSpec], compressed: list[TensorSpec]
) -> tuple[list[tuple[str, str]], Literal["name", "position"]]:
    """Pairs (golden name, compressed name): by name when the name sets agree, else by position."""
    g_names, c_names = [s.name for s in golden], [s.name for s in compressed]
    how: Literal["name", "position"]
    if set(g_names) == set(c_names) and len(g_names) == len(c_names):
        pairs, how = [(n, n) for n in g_names], "name"
    elif len(g_names) == len(c_names):
        pairs, how = list(zip(g_names, c_names, strict=True)), "position"
    else:
        raise OutputMismatchError(
            f"the golden model has outputs {g_names} and the compressed model has {c_names}; "
            "they need the same names or at least the same number of outputs"
        )
    g_specs, c_specs = {s.name: s for s in golden}, {s.name: s for s in compressed}
    for g, c in pairs:
        _check_static_shapes(g_specs[g], c_specs[c])
    return pairs, how


def _check_static_shapes(g: TensorSpec, c: TensorSpec) -> None:
    if not g.shape or not c.shape:
        return
    gs, cs = g.shape[1:], c.shape[1:]
    clash = len(gs) != len(cs) or any(
        isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(gs, cs, strict=True)
    )
    if clash:
        raise OutputMismatchError(
            f"golden output '{g.name}' has shape {format_shape(g.shape)} but compressed output "
            f"'{c.name}' has {format_shape(c.shape)}"
        )


# ---------------------------------------------------------------------------------------------- kinds


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
            self.classification = _ClassificationAcc(top_k=min(self.params.top_k, self.per_sample_shape[0]))
        elif self.kind == "regression":
            self.regression = RegressionAccumulator()

    def check_shapes(self, g: np.ndarray, c: np.ndarray) -> None:
        if g.shape[1:] != c.shape[1:]:
            raise OutputMismatchError(
                f"golden output '{self.golden_name}' gives per-sample shape {format_shape(g.shape[1:])} "
                f"but compressed output '{self.compressed_name}' gives {format_shape(c.shape[1:])}"
            )

    def update(
        self, g_raw: np.ndarray, c_raw: np.ndarray, start: int, labels: np.ndarray | None
    ) -> tuple[np.ndarray, dict[str, np.ndarray], numerical.NumericalPerSample]:
        """Fold a batch in; returns the finite mask, classification per-sample values and numerics."""
        self.check_shapes(g_raw, c_raw)
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
        if self.kind == "embedding":
            out["nearest_neighbour_agreement"] = json_float(self._nn_agreement())
            out["nearest_neighbour_metric"] = "cosine"
        return out

    def _nn_agreement(self) -> float:
        g_parts, c_parts = self.embeddings
        if not g_parts:
            return float("nan")
        share, _ = agreement.nearest_neighbour_agreement(
            np.concatenate(g_parts), np.concatenate(c_parts), block=NN_BLOCK
        )
        return share


# ---------------------------------------------------------------------------------------------- per-sample table


PER_SAMPLE_KEYS = (
    "kl",
    "cosine",
    "mse",
    "sqnr_db",
    "top1_match",
    "golden_class",
    "compressed_class",
    "label",
    "finite",
    "flagged",
)


def _empty_table(n: int) -> dict[str, np.ndarray]:
    return {
        "kl": np.full(n, np.nan),
        "cosine": np.full(n, np.nan),
        "mse": np.full(n, np.nan),
        "sqnr_db": np.full(n, np.nan),
        "top1_match": np.zeros(n, dtype=np.bool_),
        "golden_class": np.full(n, -1, dtype=np.int64),
        "compressed_class": np.full(n, -1, dtype=np.int64),
        "label": np.full(n, -1, dtype=np.int64),
        "finite": np.zeros(n, dtype=np.bool_),
        "flagged": np.zeros(n, dtype=np.bool_),
    }


def _fill_table(
    table: dict[str, np.ndarray],
    start: int,
    finite: np.ndarray,
    cls: dict[str, np.ndarray],
    ps: numerical.NumericalPerSample,
) -> None:
    rows = start + np.flatnonzero(finite)
    table["finite"][start : start + finite.shape[0]] = finite
    table["cosine"][rows] = ps.cosine
    table["mse"][rows] = ps.mse
    table["sqnr_db"][rows] = ps.sqnr_db
    if cls:
        for key in ("kl", "golden_class", "compressed_class", "top1_match"):
            table[key][rows] = cls[key]
    else:
        table["top1_match"][rows] = True  # no class to flip


def _finish_table(table: dict[str, np.ndarray], threshold: float | None, classification: bool) -> None:
    """flagged = non-finite, or a top-1 flip, or KL above the threshold (classification only)."""
    flagged = ~table["finite"]
    if classification:
        flagged |= table["finite"] & ~table["top1_match"]
        if threshold is not None:
            flagged |= np.nan_to_num(table["kl"], nan=0.0) > threshold
    table["flagged"] = flagged


def concentration(values: npt.ArrayLike, measure: str) -> dict[str, Any]:
    """Share of the total divergence carried by the worst 1% and worst 10% of samples, and a verdict.

    Worst p% = the ceil(p/100·n) samples (at least 1) with the largest values. The verdict is
    "concentrated" when the worst 10% carry more than 50% of the total, else "uniform" (also when the
    total is 0, where the shares are None). A uniform spread gives shares of about 1% and 10%.
    """
    v = np.asarray(values, dtype=np.float64)
    v = np.maximum(v[np.isfinite(v)], 0.0)
    total = float(v.sum())
    out: dict[str, Any] = {"measure": measure, "n": int(v.shape[0]), "rule": CONCENTRATION_RULE}
    if v.shape[0] == 0 or total <= 0.0:
        return out | {"worst_1pct_share": None, "worst_10pct_share": None, "verdict": "uniform"}
    desc = np.sort(v)[::-1]
    shares = {}
    for pct in (1, 10):
        k = max(1, math.ceil(pct / 100 * v.shape[0]))
        shares[pct] = float(desc[:k].sum() / total)
    verdict = "concentrated" if shares[10] > CONCENTRATION_SHARE else "uniform"
    return out | {"worst_1pct_share": shares[1], "worst_10pct_share": shares[10], "verdict": verdict}


# ---------------------------------------------------------------------------------------------- report


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
) -> FidelityReport:
    """Compare the compressed model with the golden one over a dataset, batch by batch.

    arrays: the dataset, named after the model inputs (see `bind_inputs`). labels: class indices of the
    primary output, or None (then the dataset's "labels" array is used if present). on_progress is called
    as (samples done, total) after each batch; it may raise JobCancelled, which propagates.
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
    primary: _OutputAcc | None = None
    table: dict[str, np.ndarray] = {}
    n_all_finite = 0
    for start in range(0, n, params.batch_size):
        stop = min(n, start + params.batch_size)
        g_out = _run_batch(golden, {k: v[start:stop] for k, v in g_feeds.items()}, stop - start, "golden")
        c_out = _run_batch(
            compressed, {k: v[start:stop] for k, v in c_feeds.items()}, stop - start, "compressed"
        )
        if primary is None:
            primary = _start(accs, g_out, c_out)
            lab = _labels_for(primary, lab, warnings)
            table = _empty_table(n)
            if lab is not None:
                table["label"][:] = lab
        all_finite = np.ones(stop - start, dtype=np.bool_)
        for acc in accs:
            batch_labels = lab[start:stop] if (acc is primary and lab is not None) else None
            finite, cls, ps = acc.update(
                g_out[acc.golden_name], c_out[acc.compressed_name], start, batch_labels
            )
            all_finite &= finite
            if acc is primary:
                _fill_table(table, start, finite, cls, ps)
        n_all_finite += int(all_finite.sum())
        if on_progress is not None:
            on_progress(stop, n)
    assert primary is not None  # n > 0, so at least one batch ran
    return _report(accs, primary, table, matching, n, n_all_finite, params, warnings, notes)


def _dataset_length(arrays: Mapping[str, np.ndarray]) -> int:
    return _check_lengths({k: np.asarray(v) for k, v in arrays.items()}) if arrays else 0


def _start(accs: list[_OutputAcc], g_out: dict[str, np.ndarray], c_out: dict[str, np.ndarray]) -> _OutputAcc:
    for acc in accs:
        acc.check_shapes(g_out[acc.golden_name], c_out[acc.compressed_name])
        acc.start(g_out[acc.golden_name], c_out[acc.compressed_name])
    return next((a for a in accs if a.kind == "classification"), accs[0])


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
    )
