"""A short ranked list of likely causes of a compressed model's divergence, from its per-layer profile.

Five kinds, each a measure compared with a threshold; `score` = measure / threshold (every measure is a
linear ratio, so scores of different kinds compare as "how many times over its threshold"), and only
scores >= 1 are listed, highest first, at most PER_KIND of a kind and MAX_CAUSES in all:

- clipping: clip_rate, the share of the compressed values entering a layer's quantizer outside its
  representable range (threshold CLIP_RATE);
- dead_units: among a ReLU-family layer's golden values > 0, the share exactly 0 in the compressed model
  (threshold DEAD_RATE);
- error_growth: how much a layer grows the error it receives from the layer before it (in profile
  order): its accumulated noise-to-signal ratio (Σ error² / Σ golden², 10^(−SQNR/10)) less its local one,
  over the previous layer's accumulated ratio (threshold GROWTH), for layers whose error is mostly
  carried in (CARRIED_SHARE; otherwise the difference of two close numbers is noise);
- local_error: a layer's error alone (local SQNR) against LOCAL_SQNR_DB, as error power over the power at
  that SQNR;
- calibration_range (profiles given a calibration set): calibration_outside_rate, the share of the
  evaluation set's golden values outside the layer's golden range on the calibration set, against
  calibration_threshold(n) for n calibration samples.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from worker.engine.layer_profile.results import LayerFidelity, LayerStats, LikelyCause

CLIP_RATE = 0.01
DEAD_RATE = 0.05
GROWTH = 4.0
CARRIED_SHARE = 0.5
"""error_growth needs at least this share of the layer's accumulated error to be carried in."""
LOCAL_SQNR_DB = 20.0
CALIBRATION_RATE = 0.01
"""As CLIP_RATE: a min/max-calibrated quantizer clips what lies outside the range it saw, so 1 % outside is
1 % clipped."""
PER_KIND = 3
MAX_CAUSES = 8


def _label(layer: LayerFidelity) -> str:
    return layer.canonical_id or layer.name


def _pct(share: float) -> str:
    return f"{100 * share:.1f} %"


def _clipping(layers: Sequence[LayerFidelity]) -> list[LikelyCause]:
    out = []
    for layer in layers:
        shift = layer.shift
        if shift is None or shift.clip_rate is None or shift.quantizer_min is None:
            continue
        assert shift.quantizer_max is not None
        numbers = {
            "clip_rate": shift.clip_rate,
            "golden_outside_rate": shift.golden_outside_rate or 0.0,
            "quantizer_min": shift.quantizer_min,
            "quantizer_max": shift.quantizer_max,
            "golden_min": shift.golden_min,
            "golden_max": shift.golden_max,
        }
        message = (
            f"layer {_label(layer)} clips {_pct(shift.clip_rate)} of its outputs (quantizer range "
            f"[{shift.quantizer_min:.4g}, {shift.quantizer_max:.4g}], golden values in "
            f"[{shift.golden_min:.4g}, {shift.golden_max:.4g}], {_pct(shift.golden_outside_rate or 0.0)} "
            "of them outside); raise its range (calibrate on data like this) or keep it at 16 bit"
        )
        out.append(_cause("clipping", layer, None, shift.clip_rate, CLIP_RATE, message, numbers))
    return out


def _dead_units(layers: Sequence[LayerFidelity]) -> list[LikelyCause]:
    out = []
    for layer in layers:
        shift = layer.shift
        if shift is None or shift.dead_unit_rate is None or shift.golden_positive is None:
            continue
        dead = round(shift.dead_unit_rate * shift.golden_positive)
        numbers = {"dead_unit_rate": shift.dead_unit_rate, "golden_positive": float(shift.golden_positive)}
        channels = ""
        if shift.dead_channels and shift.active_channels:
            numbers |= {
                "dead_channels": float(shift.dead_channels),
                "active_channels": float(shift.active_channels),
            }
            channels = f"; {shift.dead_channels} of {shift.active_channels} channels never fire"
        message = (
            f"layer {_label(layer)}: {_pct(shift.dead_unit_rate)} dead units ({dead} of "
            f"{shift.golden_positive} values positive in the golden model are exactly 0 in the compressed "
            f"one{channels}); small activations are rounded to zero: give the layer or its input a finer step"
        )
        out.append(_cause("dead_units", layer, None, shift.dead_unit_rate, DEAD_RATE, message, numbers))
    return out


def _noise_ratio(stats: LayerStats | None) -> float | None:
    """Σ error² / Σ golden² from an SQNR; None when undefined."""
    if stats is None or math.isnan(stats.sqnr_db):
        return None
    return 0.0 if math.isinf(stats.sqnr_db) and stats.sqnr_db > 0 else 10 ** (-stats.sqnr_db / 10)


def _error_growth(layers: Sequence[LayerFidelity]) -> list[LikelyCause]:
    """Layers that amplify the error they receive: with errors taken as independent noise, a layer's
    accumulated noise ratio is what it carries in plus what it adds (its local ratio), so
    gain = (accumulated − local) / the previous layer's accumulated ratio. A gain of 1 is error merely
    carried; GROWTH or more is a small earlier error grown by this layer."""
    out = []
    for before, layer in itertools.pairwise(layers):
        previous = _noise_ratio(before.accumulated)
        accumulated, local = _noise_ratio(layer.accumulated), _noise_ratio(layer.local)
        if previous is None or accumulated is None or local is None or previous == 0:
            continue
        carried = accumulated - local
        if carried < CARRIED_SHARE * accumulated:  # mostly its own error: the difference is noise
            continue
        gain = carried / previous
        numbers = {
            "growth": gain,
            "from_sqnr_db": before.accumulated.sqnr_db,
            "to_sqnr_db": layer.accumulated.sqnr_db,
            "to_local_sqnr_db": layer.local.sqnr_db if layer.local is not None else math.nan,
        }
        message = (
            f"error grows {gain:.1f}x from layer {_label(before)} (accumulated SQNR "
            f"{before.accumulated.sqnr_db:.1f} dB) to {_label(layer)} ({layer.accumulated.sqnr_db:.1f} dB, "
            f"of which it adds {numbers['to_local_sqnr_db']:.1f} dB alone): {_label(layer)} amplifies a small "
            f"earlier error; keep {_label(before)} and the layers before it at higher precision"
        )
        out.append(_cause("error_growth", before, layer.name, gain, GROWTH, message, numbers))
    return out


def _local_error(layers: Sequence[LayerFidelity]) -> list[LikelyCause]:
    out = []
    for layer in layers:
        if layer.local is None or not math.isfinite(layer.local.sqnr_db):
            continue
        local = layer.local.sqnr_db
        excess = 10 ** ((LOCAL_SQNR_DB - local) / 10)
        numbers = {"local_sqnr_db": local, "accumulated_sqnr_db": layer.accumulated.sqnr_db}
        message = (
            f"layer {_label(layer)} alone adds error at a local SQNR of {local:.1f} dB (accumulated "
            f"{layer.accumulated.sqnr_db:.1f} dB): keep it at higher precision"
        )
        out.append(_cause("local_error", layer, None, excess, 1.0, message, numbers))
    return out


def calibration_threshold(n_calibration: int) -> float:
    """The calibration_outside_rate worth a cause: CALIBRATION_RATE, and at least 2 / (n + 1). Were the
    evaluation set drawn like the n calibration samples, a new sample would lie beyond their max (or min)
    with probability 1 / (n + 1) for each side; values of one sample move together, so in the worst case
    that is the share of its values outside. Above it the evaluation data is not like the calibration data."""
    return max(CALIBRATION_RATE, 2.0 / (n_calibration + 1))


def _calibration_range(layers: Sequence[LayerFidelity], n_calibration: int | None) -> list[LikelyCause]:
    if n_calibration is None:
        return []
    threshold = calibration_threshold(n_calibration)
    out = []
    for layer in layers:
        shift = layer.shift
        if shift is None or shift.calibration_outside_rate is None or shift.calibration_min is None:
            continue
        assert shift.calibration_max is not None
        numbers = {
            "calibration_outside_rate": shift.calibration_outside_rate,
            "calibration_min": shift.calibration_min,
            "calibration_max": shift.calibration_max,
            "golden_min": shift.golden_min,
            "golden_max": shift.golden_max,
            "calibration_samples": float(n_calibration),
        }
        message = (
            f"layer {_label(layer)}: {_pct(shift.calibration_outside_rate)} of evaluation activations fall "
            f"outside the range seen on calibration ([{shift.calibration_min:.4g}, {shift.calibration_max:.4g}] "
            f"on {n_calibration} calibration samples, [{shift.golden_min:.4g}, {shift.golden_max:.4g}] on the "
            "evaluation set); calibrate on data like the evaluation set"
        )
        rate = shift.calibration_outside_rate
        out.append(_cause("calibration_range", layer, None, rate, threshold, message, numbers))
    return out


def _cause(
    kind: str,
    layer: LayerFidelity,
    to_layer: str | None,
    value: float,
    threshold: float,
    message: str,
    numbers: dict[str, float],
) -> LikelyCause:
    return LikelyCause(
        kind, layer.name, _label(layer), to_layer, value, threshold, value / threshold, message, numbers
    )


def likely_causes(layers: Sequence[LayerFidelity], n_calibration: int | None = None) -> list[LikelyCause]:
    """The ranked causes (see the module's docstring); `n_calibration`: the calibration samples behind
    the layers' calibration ranges (None: no calibration set)."""
    found: list[LikelyCause] = []
    for causes in (
        _clipping(layers),
        _dead_units(layers),
        _error_growth(layers),
        _local_error(layers),
        _calibration_range(layers, n_calibration),
    ):
        kept = sorted((c for c in causes if c.score >= 1), key=lambda c: -c.score)
        found.extend(kept[:PER_KIND])
    return sorted(found, key=lambda c: -c.score)[:MAX_CAUSES]
