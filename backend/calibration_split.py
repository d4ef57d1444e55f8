"""Which samples calibrate activation ranges and which are evaluated: always disjoint (issue 33).

One rule, used by the API at launch (on the datasets' stored sample counts, so a bad request is a 422
before anything is queued) and by the worker (on the arrays it read, so both agree):

- a named calibration set (`calibration_dataset_id`): its first `calibration_samples` samples (default
  min(256, its length)) calibrate; the evaluation dataset's first `max_samples` samples are evaluated.
  The same dataset (the same id, or the same uploaded bytes) as the evaluation set is refused: its
  first samples would be both.
- no calibration set: the evaluation dataset is split. Its first c samples are held out for calibration
  and not evaluated, c = `calibration_samples` or, by default, min(128, N // 4) (N: the dataset's
  samples); samples c .. c + max_samples - 1 (at most N - 1) are evaluated. The first samples rather
  than a strided subset, so that an .npz stays a memory-mapped slice and the result can say the range.

Only jobs with an activation-quantized configuration split (weight-only configurations calibrate
nothing, and evaluate the first max_samples samples as before). Pure Python: no numpy, no torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

DEFAULT_HELD_OUT = 128
"""At most this many samples held out of the evaluation set when no calibration set is named."""
HELD_OUT_SHARE = 4
"""...and at most 1 / HELD_OUT_SHARE of it."""
DEFAULT_NAMED = 256
"""Samples of a named calibration set used by default (its first ones)."""


class CalibrationSplitError(ValueError):
    """The datasets cannot give disjoint calibration and evaluation samples; the message says why."""


@dataclass(frozen=True)
class CalibrationSplit:
    source: Literal["calibration_dataset", "held_out"]
    calibration_dataset_id: str
    calibration_start: int
    calibration_stop: int  # exclusive
    evaluation_dataset_id: str
    evaluation_start: int
    evaluation_stop: int  # exclusive

    @property
    def calibration_count(self) -> int:
        return self.calibration_stop - self.calibration_start

    @property
    def evaluation_count(self) -> int:
        return self.evaluation_stop - self.evaluation_start

    @property
    def disjoint(self) -> bool:
        if self.calibration_dataset_id != self.evaluation_dataset_id:
            return True
        return (
            self.calibration_stop <= self.evaluation_start or self.evaluation_stop <= self.calibration_start
        )

    def to_dict(self) -> dict[str, Any]:
        """The result's `calibration` block (served as CalibrationSamplesOut)."""
        return {
            "source": self.source,
            "dataset_id": self.calibration_dataset_id,
            "start": self.calibration_start,
            "stop": self.calibration_stop,
            "count": self.calibration_count,
            "evaluation_dataset_id": self.evaluation_dataset_id,
            "evaluation_start": self.evaluation_start,
            "evaluation_stop": self.evaluation_stop,
            "evaluation_count": self.evaluation_count,
            "disjoint": self.disjoint,
            "rule": self.rule(),
        }

    def rule(self) -> str:
        cal = f"samples {self.calibration_start}..{self.calibration_stop - 1}"
        ev = f"samples {self.evaluation_start}..{self.evaluation_stop - 1}"
        if self.source == "held_out":
            return (
                f"{cal} of the evaluation dataset calibrated the activation ranges and were held out; "
                f"{ev} were evaluated"
            )
        return f"{cal} of the calibration dataset calibrated the activation ranges; {ev} of the evaluation dataset were evaluated"


def plan_split(
    *,
    evaluation_dataset_id: str,
    evaluation_samples: int,
    max_samples: int,
    calibration_dataset_id: str | None,
    calibration_dataset_samples: int | None,
    calibration_samples: int | None,
    same_content: bool = False,
) -> CalibrationSplit:
    """The split by the module's rule; CalibrationSplitError (words for a 422) when there is none.

    same_content: the calibration set is the evaluation set's bytes uploaded again (the API knows)."""
    if calibration_dataset_id is not None:
        if calibration_dataset_id == evaluation_dataset_id or same_content:
            raise CalibrationSplitError(
                "calibration_dataset_id names the evaluation dataset itself, so its first samples would be "
                "both calibrated on and evaluated; leave calibration_dataset_id null to hold out the "
                "evaluation set's first samples for calibration, or name a different dataset"
            )
        available = int(calibration_dataset_samples or 0)
        if available < 1:
            raise CalibrationSplitError("the calibration dataset has no samples")
        wanted = calibration_samples if calibration_samples is not None else min(DEFAULT_NAMED, available)
        if wanted > available:
            raise CalibrationSplitError(
                f"calibration_samples is {wanted} but the calibration dataset has only {available} samples"
            )
        stop = min(max_samples, evaluation_samples)
        if stop < 1:
            raise CalibrationSplitError("the evaluation dataset has no samples")
        return CalibrationSplit(
            "calibration_dataset", calibration_dataset_id, 0, wanted, evaluation_dataset_id, 0, stop
        )
    n = int(evaluation_samples)
    held = (
        calibration_samples if calibration_samples is not None else min(DEFAULT_HELD_OUT, n // HELD_OUT_SHARE)
    )
    if held < 1 or held >= n:
        need = (
            "more than calibration_samples"
            if calibration_samples is not None
            else f"at least {HELD_OUT_SHARE}"
        )
        raise CalibrationSplitError(
            f"the evaluation dataset has {n} samples: too few to hold out calibration samples (needs {need}, "
            f"so that at least one calibrates and one is evaluated; by default min({DEFAULT_HELD_OUT}, N // "
            f"{HELD_OUT_SHARE}) calibrate and the rest are evaluated); name a calibration_dataset_id or use a "
            "larger dataset"
        )
    return CalibrationSplit(
        "held_out", evaluation_dataset_id, 0, held, evaluation_dataset_id, held, min(n, held + max_samples)
    )


_ACTIVATION_TYPES = ("activation_quant",)
_DATA_RANKED_NORMS = ("taylor", "reconstruction")
"""channel_prune norms that rank channels on calibration samples (worker/engine/compression/importance.py)."""


def quantizes_activations(config: Mapping[str, Any]) -> bool:
    """Whether a configuration (its JSON form: a "type" tag and fields) quantizes any activation - or ranks
    channels on samples (channel_prune by taylor / reconstruction importance, issue 33), which must not be
    the evaluated samples either: both calibrate, under the same rule."""
    kind = config.get("type")
    if kind in _ACTIVATION_TYPES:
        return True
    if kind == "channel_prune":
        return config.get("norm") in _DATA_RANKED_NORMS
    if kind == "quantize":
        return config.get("activations") is not None
    if kind == "schedule":
        return any(quantizes_activations(stage) for stage in config.get("stages") or [])
    return False


def any_quantizes_activations(configs: Iterable[Mapping[str, Any]]) -> bool:
    return any(quantizes_activations(c) for c in configs)
