"""Divergence of a compressed model's primary output from the golden one over a calibration set.

The compact measurement a sensitivity scan repeats for every layer × config: KL(P‖Q) mean and max
(nats), top-1 agreement, SQNR (dB) and MSE of the primary output, with the formulas of
`worker.engine.metrics` (each module there states its definitions). Golden outputs are computed once and reused.

Primary output: the first output whose per-sample shape is (C,) with C ≥ 2 (a classifier; KL and top-1
are defined), else the first output (KL and top-1 are None, SQNR and MSE still apply). Outputs that
already are probabilities (rows ≥ 0 summing to 1) are logged after clamping, as in `fidelity`.
Samples with NaN/Inf in the compressed output are left out of KL / top-1 / SQNR and counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from worker.engine.compression.model import Feeds, batches, digest_arrays
from worker.engine.errors import EngineError
from worker.engine.fidelity.compare import infer_kind
from worker.engine.metrics import agreement, distributions
from worker.engine.metrics.numerical import NumericalAccumulator, json_float
from worker.engine.types import Runner


@dataclass(frozen=True)
class Golden:
    """Golden primary outputs of a calibration set, per batch, and their log-probabilities."""

    output: str
    kind: str
    batch_size: int
    outputs: list[np.ndarray]
    log_probs: list[np.ndarray] | None
    probabilities: bool

    @property
    def n_samples(self) -> int:
        return sum(len(o) for o in self.outputs)

    @property
    def classification(self) -> bool:
        return self.log_probs is not None

    def digest(self) -> str:
        return digest_arrays(self.outputs)


def _log_probs(x: np.ndarray, probabilities: bool) -> np.ndarray:
    return distributions.probabilities_to_log(x) if probabilities else distributions.log_softmax(x)


def golden_outputs(runner: Runner, feeds: Feeds, batch_size: int) -> Golden:
    """Run the golden model once over the calibration set."""
    outputs: list[np.ndarray] = []
    name: str | None = None
    kind = "tensor"
    for batch in batches(feeds, batch_size):
        result = runner.run(batch)
        if name is None:
            name, kind = _primary(result)
        outputs.append(np.asarray(result[name]))
    assert name is not None
    return golden_from_outputs(name, kind, batch_size, outputs)


def golden_from_outputs(name: str, kind: str, batch_size: int, outputs: list[np.ndarray]) -> Golden:
    """A `Golden` from outputs computed elsewhere (a fan-out job's plan step shares them with its
    chunks); the log-probabilities are derived here, as `golden_outputs` derives them."""
    if kind != "classification":
        return Golden(name, kind, batch_size, outputs, None, False)
    finite = [o[np.all(np.isfinite(o.reshape(len(o), -1)), axis=1)] for o in outputs]
    if sum(len(f) for f in finite) < sum(len(o) for o in outputs):
        raise EngineError(f"the golden model's output {name!r} holds NaN/Inf on the calibration set")
    probabilities = all(distributions.looks_like_probabilities(o) for o in outputs)
    return Golden(
        name, kind, batch_size, outputs, [_log_probs(o, probabilities) for o in outputs], probabilities
    )


def _primary(result: Mapping[str, np.ndarray]) -> tuple[str, str]:
    names = list(result)
    if not names:
        raise EngineError("the model returned no outputs")
    for name in names:
        array = np.asarray(result[name])
        if array.ndim >= 1 and infer_kind(tuple(int(d) for d in array.shape[1:])) == "classification":
            return name, "classification"
    first = np.asarray(result[names[0]])
    return names[0], infer_kind(tuple(int(d) for d in first.shape[1:]))


@dataclass(frozen=True)
class Divergence:
    """How far the compressed primary output is from the golden one (None where undefined)."""

    kl_mean: float | None
    kl_max: float | None
    top1_agreement: float | None
    sqnr_db: float | None
    sqnr_db_infinite: bool
    mse: float | None
    n_samples: int
    n_nonfinite: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Divergence:
        return cls(**{key: data[key] for key in cls.__dataclass_fields__})

    def score(self, metric: str) -> float:
        """Sensitivity score, higher = more sensitive: KL mean (nats) or −SQNR (dB); +inf when the
        compressed output was non-finite for every sample."""
        if metric == "kl":
            return math.inf if self.kl_mean is None else self.kl_mean
        if self.sqnr_db_infinite:
            return -math.inf
        return math.inf if self.sqnr_db is None else -self.sqnr_db


class DivergenceAccumulator:
    """Running sums of a `Divergence`, fed one batch of compressed primary outputs at a time (batch
    `index` of the golden run), so a scan can interleave cells and batches and still get the numbers
    `measure` gets: both go through this one piece of arithmetic."""

    def __init__(self, golden: Golden) -> None:
        self.golden = golden
        self._numerics = NumericalAccumulator()
        self._kl_sum, self._kl_max = 0.0, -math.inf
        self._agree, self._n_finite, self._n_total = 0, 0, 0

    def update(self, index: int, output: np.ndarray) -> None:
        golden = self.golden
        c = np.asarray(output, dtype=np.float64)
        g = np.asarray(golden.outputs[index], dtype=np.float64)
        if c.shape != g.shape:
            raise EngineError(f"compressed output {golden.output!r} has shape {c.shape}, golden {g.shape}")
        finite = np.all(np.isfinite(c.reshape(len(c), -1)), axis=1)
        self._n_total += len(c)
        self._n_finite += int(finite.sum())
        self._numerics.update(g[finite], c[finite])
        if golden.log_probs is not None and finite.any():
            lq = _log_probs(c[finite], golden.probabilities)
            kl = distributions.kl(golden.log_probs[index][finite], lq)
            self._kl_sum += float(kl.sum())
            self._kl_max = max(self._kl_max, float(kl.max()))
            self._agree += int(agreement.top1_match(g[finite], c[finite]).sum())

    def result(self) -> Divergence:
        totals = self._numerics.to_dict()
        n_finite, n_total = self._n_finite, self._n_total
        classification = self.golden.log_probs is not None and n_finite > 0
        return Divergence(
            kl_mean=json_float(self._kl_sum / n_finite) if classification else None,
            kl_max=json_float(self._kl_max) if classification else None,
            top1_agreement=self._agree / n_total if classification else None,  # non-finite = disagrees
            sqnr_db=totals["sqnr_db"],
            sqnr_db_infinite=bool(totals["sqnr_db_infinite"]),
            mse=totals["mse"],
            n_samples=n_total,
            n_nonfinite=n_total - n_finite,
        )


def measure(runner: Runner, feeds: Feeds, golden: Golden) -> Divergence:
    """Run `runner` over the calibration set (same batches as the golden run) and compare."""
    accumulator = DivergenceAccumulator(golden)
    for index, batch in enumerate(batches(feeds, golden.batch_size)):
        accumulator.update(index, runner.run(batch)[golden.output])
    return accumulator.result()
