"""Golden and compressed models on corrupted copies of the dataset, slice by slice and severity by
severity, compared with `compare_models` (the same metrics as the clean report).

Memory: the dataset (memory-mapped) is read and corrupted one chunk of rows at a time, about
CHUNK_BUDGET_BYTES of input per chunk (whole batches), so a run holds one corrupted chunk, never a
corrupted dataset. Per point it keeps the primary output's per-sample KL, classes and labels (a few
scalars per sample, as the clean report does) and the running worst samples, with their corrupted image
rows when the caller asks for them (worst_inputs.py: at most 2 x WORST_SAMPLES rows per image array).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.fidelity.params import ATTENTION_MASK_KEY, LABELS_KEY
from worker.engine.loaders.torch_runner import TorchRunner
from worker.engine.robustness.adversarial import (
    GoldenAttack,
    adversarial_chunk,
    attack_skip_reason,
    twin_mismatch,
)
from worker.engine.robustness.tokens import TokenStats, is_token_ids, token_stats
from worker.engine.robustness.transforms import (
    SEVERITIES,
    SEVERITY_NAMES,
    SLICES,
    ArrayStats,
    applies_to,
    array_stats,
    corrupt,
    is_image,
)
from worker.engine.robustness.worst_inputs import (
    RunningWorst,
    WorstInputSink,
    ranked_divergence,
    top_positions,
)
from worker.engine.types import Runner

CHUNK_BUDGET_BYTES = 32 * 2**20
"""Input bytes corrupted at once (the transforms work in float64, so about 2-3x this at the peak)."""

WORST_SAMPLES = 10


@dataclass(frozen=True)
class RobustnessParams:
    """slices: names from `SLICES` (all by default; none when only an out-of-distribution dataset is
    compared, see ood.py); severities: from 1 (mild) to 3 (severe); seed of
    the random corruptions; max_samples: only the first this many samples (None: all)."""

    slices: tuple[str, ...] = tuple(SLICES)
    severities: tuple[int, ...] = SEVERITIES
    seed: int = 0
    max_samples: int | None = None

    def __post_init__(self) -> None:
        unknown = [s for s in self.slices if s not in SLICES]
        if unknown:  # no slice at all is allowed: a job may ask only for its out-of-distribution dataset
            raise ValueError(f"unknown robustness slices {unknown}; known: {', '.join(SLICES)}")
        if not self.severities or any(s not in SEVERITIES for s in self.severities):
            raise ValueError(f"severities must be among {SEVERITIES}, got {self.severities}")
        if self.max_samples is not None and self.max_samples < 1:
            raise ValueError("max_samples must be at least 1")


@dataclass
class _PointSums:
    """The primary output's per-sample columns over the samples of one slice x severity."""

    kl: list[np.ndarray] = field(default_factory=list)
    mse: list[np.ndarray] = field(default_factory=list)
    cosine: list[np.ndarray] = field(default_factory=list)
    golden: list[np.ndarray] = field(default_factory=list)
    compressed: list[np.ndarray] = field(default_factory=list)
    label: list[np.ndarray] = field(default_factory=list)
    finite: list[np.ndarray] = field(default_factory=list)
    warnings: set[str] = field(default_factory=set)

    def add(self, table: Mapping[str, np.ndarray], warnings: list[str]) -> None:
        self.kl.append(table["kl"])
        self.mse.append(table["mse"])
        self.cosine.append(table["cosine"])
        self.golden.append(table["golden_class"])
        self.compressed.append(table["compressed_class"])
        self.label.append(table["label"])
        self.finite.append(table["finite"])
        self.warnings.update(warnings)

    def columns(self) -> dict[str, np.ndarray]:
        return {
            "kl": np.concatenate(self.kl),
            "mse": np.concatenate(self.mse),
            "cosine": np.concatenate(self.cosine),
            "golden_class": np.concatenate(self.golden),
            "compressed_class": np.concatenate(self.compressed),
            "label": np.concatenate(self.label),
            "finite": np.concatenate(self.finite),
        }


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None


def point_metrics(table: Mapping[str, np.ndarray], divergence: str) -> dict[str, Any]:
    """Mean KL, MSE and cosine, top-1 agreement and both accuracies over the finite samples of a
    per-sample table (the columns of `compare_models`' table); accuracies are None without labels. The
    cosine (of the primary outputs, flattened per sample) serves outputs that are not classifications,
    e.g. an encoder's hidden states, where there is no KL."""
    finite = table["finite"].astype(bool)
    g, c, lab = table["golden_class"][finite], table["compressed_class"][finite], table["label"][finite]
    classified = divergence == "kl"
    labelled = classified and lab.size > 0 and bool((lab >= 0).all())
    return {
        "n_samples": int(finite.size),
        "n_finite": int(finite.sum()),
        "kl_mean_nats": _mean(table["kl"][finite]) if classified else None,
        "mse_mean": _mean(table["mse"][finite]),
        "cosine_mean": _mean(table["cosine"][finite]),
        "top1_agreement": _mean((g == c).astype(np.float64)) if classified else None,
        "golden_accuracy": _mean((g == lab).astype(np.float64)) if labelled else None,
        "compressed_accuracy": _mean((c == lab).astype(np.float64)) if labelled else None,
    }


def worst_samples(
    table: Mapping[str, np.ndarray], divergence: str, k: int = WORST_SAMPLES
) -> list[dict[str, Any]]:
    """The k samples of highest divergence, worst first (ties by sample index): the ranking RunningWorst
    keeps the corrupted rows by (worst_inputs.py), so that a sample whose outputs or divergence are not
    finite (NaN, +inf) is never listed, and the k listed are the k worst finite ones."""
    values = ranked_divergence(table, divergence)
    order = top_positions(np.arange(len(values), dtype=np.int64), values, k)
    return [
        {
            "sample_index": int(i),
            "divergence": float(values[i]),
            "golden_class": int(table["golden_class"][i]) if table["golden_class"][i] >= 0 else None,
            "compressed_class": int(table["compressed_class"][i])
            if table["compressed_class"][i] >= 0
            else None,
            "label": int(table["label"][i]) if table["label"][i] >= 0 else None,
        }
        for i in order
    ]


def brittleness_ratio(value: float | None, clean: float | None) -> float | None:
    """Divergence off the clean data / divergence on it; None when either is undefined or the clean one
    is 0."""
    if value is None or clean is None or clean <= 0:
        return None
    return value / clean


def clean_baseline(
    clean_table: Mapping[str, np.ndarray], n: int, primary_kind: str
) -> tuple[str, dict[str, Any], float | None]:
    """(divergence, clean metrics, clean divergence) over the first n rows of the clean report's
    per-sample table: the baseline every brittleness ratio divides by. The divergence is KL for a
    classification output, else MSE."""
    divergence = "kl" if primary_kind == "classification" else "mse"
    clean = point_metrics({k: np.asarray(v[:n]) for k, v in clean_table.items()}, divergence)
    return divergence, clean, clean[divergence_key(divergence)]


def divergence_key(divergence: str) -> str:
    """The metrics' key of the mean divergence."""
    return "kl_mean_nats" if divergence == "kl" else "mse_mean"


def chunk_rows(arrays: Mapping[str, np.ndarray], batch_size: int) -> int:
    """Rows per chunk: whole batches holding about CHUNK_BUDGET_BYTES of input, at least one batch."""
    row_bytes = sum(a[:1].nbytes for a in arrays.values()) or 1
    batches = max(1, CHUNK_BUDGET_BYTES // (row_bytes * batch_size))
    return batches * batch_size


@dataclass(frozen=True)
class _Setup:
    """What the slices need besides the dataset: per-array statistics and the golden attack."""

    stats: dict[str, ArrayStats]
    tokens: dict[str, TokenStats]
    attack: GoldenAttack | None
    attack_skip: str | None
    twin: dict[str, Any] | None
    """How the PyTorch twin the attacks used matched the golden model (None: no twin used)."""


def _setup(
    golden: Runner,
    inputs: Mapping[str, np.ndarray],
    n: int,
    primary_kind: str,
    primary_output: str | None,
    slices: tuple[str, ...],
    twin: Runner | None = None,
    twin_problem: str | None = None,
) -> _Setup:
    stats = {
        k: array_stats(v[:n])
        for k, v in inputs.items()
        if k != ATTENTION_MASK_KEY and np.issubdtype(v.dtype, np.floating)
    }
    tokens: dict[str, TokenStats] = {}
    if any(SLICES[s].target == "tokens" for s in slices):
        mask = inputs.get(ATTENTION_MASK_KEY)
        for k, v in inputs.items():
            if k != ATTENTION_MASK_KEY and is_token_ids(k, v):
                found = token_stats(v[:n], None if mask is None else mask[:n])
                if found.pool.size >= 2:
                    tokens[k] = found
    attack, skip, twin_figures = None, None, None
    if any(SLICES[s].target == "gradient" for s in slices):
        names = [o.name for o in golden.outputs]
        index = names.index(primary_output) if primary_output in names else 0
        attacker = twin if twin is not None and not isinstance(golden, TorchRunner) else golden
        skip = attack_skip_reason(attacker, primary_kind, bool(stats))
        if twin_problem is not None and not isinstance(attacker, TorchRunner):
            skip = twin_problem  # the twin the user paired could not be loaded: say that, not "pair a twin"
        if skip is None and attacker is twin:
            skip, twin_figures = twin_mismatch(golden, attacker, inputs, index)
        if skip is None and isinstance(attacker, TorchRunner):
            attack = GoldenAttack(attacker, index, {k: (st.low, st.high) for k, st in stats.items()})
            skip = _probe(attack, inputs)
            attack = attack if skip is None else None
    return _Setup(stats, tokens, attack, skip, twin_figures)


def _probe(attack: GoldenAttack, inputs: Mapping[str, np.ndarray]) -> str | None:
    """One FGSM step on the first two samples: a golden model without input gradients (a detach or
    no_grad inside it, integer-only ops) skips the attacks with the reason instead of failing the
    other slices (the step's error would drop them all)."""
    try:
        attack.craft({k: np.asarray(v[:2]) for k, v in inputs.items()}, "fgsm", 0.0)
    except RuntimeError as exc:  # what torch.autograd raises for a graph without gradients
        return f"the golden model gives no input gradient ({str(exc).splitlines()[0]})"
    return None


def _skip(name: str, setup: _Setup, inputs: Mapping[str, np.ndarray]) -> str | None:
    """Why slice `name` does not apply to this dataset and pair (None when it does)."""
    target = SLICES[name].target
    if target == "gradient":
        return setup.attack_skip
    if target == "tokens":
        if setup.tokens:
            return None
        return (
            "needs token-id inputs (an integer array [N, T] that is not a mask, type, segment or position "
            "array, with at least 2 distinct ordinary ids)"
        )
    if any(applies_to(name, inputs[k]) for k in setup.stats):
        return None
    if target == "image":
        return "needs image inputs (a float array shaped [N, C, H, W] or [N, H, W, C])"
    return "the dataset has no float input to corrupt"


def _chunk(
    name: str,
    severity: int,
    inputs: Mapping[str, np.ndarray],
    start: int,
    stop: int,
    setup: _Setup,
    seed: int,
    batch_size: int,
) -> dict[str, np.ndarray]:
    """Rows [start, stop) of every input, corrupted by the slice (arrays it does not touch unchanged)."""
    raw = {k: np.asarray(v[start:stop]) for k, v in inputs.items()}
    value = SLICES[name].values[severity - 1]
    if SLICES[name].target == "gradient":
        assert setup.attack is not None
        return adversarial_chunk(setup.attack, raw, name, value, batch_size)
    idx = np.arange(start, stop)
    mask = raw.get(ATTENTION_MASK_KEY)
    out = dict(raw)
    for k, v in raw.items():
        found = setup.stats.get(k) or setup.tokens.get(k)
        if found is not None:
            out[k] = corrupt(name, severity, v, idx, found, seed, mask=mask)
    return out


def _image_arrays(name: str, setup: _Setup, inputs: Mapping[str, np.ndarray]) -> list[str]:
    """The image arrays slice `name` changes (the pictures worth keeping for its worst samples)."""
    gradient = SLICES[name].target == "gradient"
    return [k for k in setup.stats if is_image(inputs[k]) and (gradient or applies_to(name, inputs[k]))]


def evaluate_robustness(
    golden: Runner,
    compressed: Runner,
    arrays: Mapping[str, np.ndarray],
    labels: np.ndarray | None,
    fidelity: FidelityParams,
    clean_table: Mapping[str, np.ndarray],
    primary_kind: str,
    params: RobustnessParams,
    on_progress: Callable[[int, int, str], None] | None = None,
    primary_output: str | None = None,
    twin: Runner | None = None,
    twin_problem: str | None = None,
    worst_inputs: WorstInputSink | None = None,
) -> dict[str, Any]:
    """The robustness document: per slice and severity, both accuracies, mean KL (MSE for a primary
    output that is not a classification), mean cosine, top-1 agreement, the brittleness ratio (slice
    divergence / clean divergence, None when the clean one is 0) and the worst samples.

    clean_table: the clean report's per-sample table (FidelityReport.per_sample); its first n rows are
    the baseline. on_progress(points done, points, label) after each slice x severity; it may raise
    JobCancelled. primary_output: the output the adversarial slices attack (None: the golden's first).
    twin: a PyTorch copy of an ONNX golden model for the adversarial slices (see adversarial.py);
    twin_problem: why the twin the job names could not be loaded (the adversarial slices' skip reason).
    worst_inputs: when given, called with the corrupted image rows of every point's worst samples as each
    point ends (worst_inputs.py); each worst sample then gets ``image``: whether the sink kept its picture.
    """
    inputs = {k: v for k, v in arrays.items() if k not in (LABELS_KEY,)}
    n = len(next(iter(inputs.values())))
    if params.max_samples is not None:
        n = min(n, params.max_samples)
    divergence, clean, clean_div = clean_baseline(clean_table, n, primary_kind)
    setup = _setup(golden, inputs, n, primary_kind, primary_output, params.slices, twin, twin_problem)
    lab = None if labels is None else np.asarray(labels[:n])
    rows = chunk_rows(inputs, fidelity.batch_size)
    quiet = replace(fidelity, threshold_kl=None)
    slices: list[dict[str, Any]] = []
    reasons = {name: _skip(name, setup, inputs) for name in params.slices}
    skipped = [{"name": s, "reason": r} for s, r in reasons.items() if r is not None]
    todo = [s for s, r in reasons.items() if r is None]
    total, done = len(todo) * len(params.severities), 0
    for name in todo:
        points = []
        images = _image_arrays(name, setup, inputs) if worst_inputs is not None else []
        for severity in sorted(params.severities):
            sums = _PointSums()
            running = RunningWorst(images, WORST_SAMPLES)
            for start in range(0, n, rows):
                stop = min(n, start + rows)
                chunk = _chunk(name, severity, inputs, start, stop, setup, params.seed, fidelity.batch_size)
                part = compare_models(  # no inspector views: a chunk's are never stored
                    golden,
                    compressed,
                    chunk,
                    None if lab is None else lab[start:stop],
                    quiet,
                    sample_views=False,
                )
                sums.add(part.per_sample, part.warnings)
                running.add(start, ranked_divergence(part.per_sample, divergence), chunk)
            table = sums.columns()
            metrics = point_metrics(table, divergence)
            div = metrics[divergence_key(divergence)]
            worst = worst_samples(table, divergence)
            if worst_inputs is not None:
                kept = running.hand_over(worst_inputs, name, severity)
                worst = [w | {"image": w["sample_index"] in kept} for w in worst]
            points.append(
                {
                    "severity": severity,
                    "severity_name": SEVERITY_NAMES[severity],
                    "value": SLICES[name].values[severity - 1],
                    **metrics,
                    "brittleness_ratio": brittleness_ratio(div, clean_div),
                    "worst_samples": worst,
                    "warnings": sorted(sums.warnings),
                }
            )
            done += 1
            if on_progress is not None:
                on_progress(done, total, f"{name} {SEVERITY_NAMES[severity]}")
        spec = SLICES[name]
        slices.append({"name": name, "parameter": spec.parameter, "target": spec.target, "points": points})
    return {
        "n_samples": n,
        "divergence": divergence,
        "seed": params.seed,
        "clean": clean,
        "slices": slices,
        "skipped": skipped,
        "twin": setup.twin,
        "error": None,
    }
