"""Calibration vs evaluation range: how much of the evaluation set's golden activations fall outside the
range the golden model showed on a calibration set (the data a compressed model's quantizers were
calibrated on).

A quantizer calibrated by min/max represents what it saw; evaluation values beyond that range are clipped
or squeezed into the edge steps. Before the profile's evaluation pass the golden model alone runs over the
first `max_samples` calibration samples, in batches sized from the memory budget like the profile's own
(a one-sample probe first), and of each matched golden layer only its running min and max are kept. During
the evaluation pass every golden value of a layer is compared with that range
(`CalibrationCounter`): `calibration_outside_rate` = (values below + values above) / n_values. NaN is never
outside. The range is the golden model's, so it measures the data shift alone, whatever the compressed
model's quantizers did with it (golden_outside_rate measures against those).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Protocol

import numpy as np

from worker.engine.errors import DatasetMismatchError
from worker.engine.layer_profile.accumulate import LayerPair
from worker.engine.layer_profile.batching import Rebatcher, profile_batch_size
from worker.engine.layer_profile.shift import CalibrationCounter
from worker.engine.layer_profile.sides import Feeds, batch_size_of, stops_the_job

CALIBRATION_SAMPLES = 256
"""Default cap on the calibration samples run. Min/max calibration of int8 quantizers commonly uses a few
hundred samples; the pass costs one golden capture per sample. On the digits CNN (1 thread) the pass over
256 samples took 0.45 ms and counting the 395 k golden values of 360 evaluation samples 0.06 ms, against
21.7 ms for the whole profile."""


class GoldenCapture(Protocol):
    """The part of a profile side the calibration pass uses."""

    def capture(self, feeds: Feeds, names: Collection[str]) -> dict[str, np.ndarray]: ...


def first_samples(batches: Iterable[Feeds], limit: int) -> Iterator[Feeds]:
    """The batches' first `limit` samples (a batch that crosses the limit is sliced: a view of a memory-
    mapped array reads nothing more)."""
    left = limit
    for feeds in batches:
        if left <= 0:
            return
        n = batch_size_of(feeds)
        if n > left:
            feeds = {name: a[:left] for name, a in feeds.items()}
            n = left
        left -= n
        yield feeds


def calibration_ranges(
    golden: GoldenCapture,
    names: Collection[str],
    batches: Iterable[Feeds],
    budget_mb: float,
    fixed: int | None,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[dict[str, tuple[float, float]], int]:
    """(golden name -> (min, max) over the batches, samples run). Only the running extremes are kept; the
    first batch (one sample, or the model's fixed batch) sizes the rest from `budget_mb`. NaN anywhere in
    a layer makes its range NaN. Raises DatasetMismatchError without samples; the golden side's errors
    propagate."""
    rebatched = Rebatcher(batches, fixed or 1)
    ranges: dict[str, tuple[float, float]] = {}
    done = 0
    for feeds in rebatched:
        n = batch_size_of(feeds)
        captured = golden.capture(feeds, names)
        held = sum(int(v.nbytes) for v in captured.values())
        for name, values in captured.items():
            if values.size == 0:
                continue
            low, high = float(values.min()), float(values.max())
            if name in ranges:
                old_low, old_high = ranges[name]
                nan = np.isnan(low) or np.isnan(old_low)
                low = np.nan if nan else min(low, old_low)
                high = np.nan if nan else max(high, old_high)
            ranges[name] = (low, high)
        del captured
        if done == 0:
            rebatched.size = profile_batch_size(held / n, budget_mb, fixed)
        done += n
        if on_progress is not None:
            on_progress(done)
    if done == 0:
        raise DatasetMismatchError("the calibration set has no samples")
    return ranges, done


def plan_calibration(
    golden: GoldenCapture,
    pairs: list[LayerPair],
    batches: Iterable[Feeds],
    max_samples: int,
    budget_mb: float,
    fixed: int | None,
    notes: list[str],
    on_progress: Callable[[int], None] | None = None,
) -> int | None:
    """Run the calibration pass and give each pair's shift accumulator its CalibrationCounter; returns the
    calibration samples run. A calibration set the golden model cannot run (wrong shape, wrong inputs, no
    samples) leaves a note and no counters (None): the rest of the profile stands. Only a cancellation or
    the task's time limit go through."""
    if max_samples < 1:
        raise ValueError(f"max_samples must be at least 1, got {max_samples}")
    names = {pair.golden for pair in pairs if pair.shift is not None}
    keep_inputs = getattr(golden, "keep_inputs", None)
    if keep_inputs:  # a torch side keeps each call's inputs for the local values: not needed here
        golden.keep_inputs = False  # type: ignore[attr-defined]
    try:
        ranges, n = calibration_ranges(
            golden, names, first_samples(batches, max_samples), budget_mb, fixed, on_progress
        )
    except Exception as exc:  # a calibration set that does not fit the model
        if stops_the_job(exc):
            raise
        notes.append(
            f"The calibration set could not be run through the golden model ({exc}); calibration_outside_rate "
            "is not reported. The rest of the profile does not depend on it."
        )
        return None
    finally:
        if keep_inputs:
            golden.keep_inputs = True  # type: ignore[attr-defined]
    undefined = []
    for pair in pairs:
        if pair.shift is None or pair.golden not in ranges:
            continue
        low, high = ranges[pair.golden]
        if np.isnan(low) or np.isnan(high):
            undefined.append(pair.golden)
        else:
            pair.shift.calibration = CalibrationCounter(low, high)
    if undefined:
        notes.append(
            f"No calibration range for {', '.join(undefined)}: their golden values on the calibration set "
            "include NaN."
        )
    return n
