"""Entropy (KL) and min-max calibration of activation ranges against onnxruntime's own calibrators
(`onnxruntime.quantization.calibrate.create_calibrator`) on the same model and data (issue 33).

The engine collects its statistics batch by batch (two passes: the range, then the histograms); the
calibrator gets the whole set as one batch, so its histogram is np.histogram over [−max|x|, max|x|] on
the same values and needs none of its re-binning merges. It is given the engine's bin count
(ENTROPY_BINS) and levels (2^bits − 1) as num_bins / num_quantized_bins.

Tolerance: 1 % of one histogram bin (2·max|x| / 2048). Both choose a window of bins, so a different choice
moves an end by at least a whole bin; within a bin the ends differ only by the activations themselves,
which onnxruntime computes with its graph optimisations on (its min, max and edges differ from the engine's
in the last float32 bits: ≈1e-4 bin measured).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnxruntime.quantization.calibrate import CalibrationDataReader, CalibrationMethod, create_calibrator

from worker.demo.models import DemoBundle, DigitsSplit
from worker.engine.compression import Calibration, open_compressible
from worker.engine.compression.configs import ActivationQuant, config_from_dict
from worker.engine.compression.entropy_calibration import ENTROPY_BINS
from worker.engine.compression.ops import activation_qparams


class _OneBatch(CalibrationDataReader):
    def __init__(self, x: np.ndarray) -> None:
        self.batches = [{"input": x}]

    def get_next(self) -> dict[str, np.ndarray] | None:
        return self.batches.pop() if self.batches else None


def _ort_ranges(
    model: Path, x: np.ndarray, method: CalibrationMethod, tmp: Path, levels: int = 255
) -> dict[str, tuple[float, float]]:
    options = (
        {"num_bins": ENTROPY_BINS, "num_quantized_bins": levels}
        if method == CalibrationMethod.Entropy
        else {}
    )
    calibrator = create_calibrator(
        model,
        None,
        augmented_model_path=str(tmp / "augmented.onnx"),
        calibrate_method=method,
        extra_options=options,
    )
    calibrator.collect_data(_OneBatch(x))
    data = calibrator.compute_data()
    ranges = {name: np.ravel(np.asarray(data[name].range_value, dtype=np.float64)) for name in data.data}
    return {name: (float(r[0]), float(r[-1])) for name, r in ranges.items()}


def _engine(model: Path, x: np.ndarray, config: ActivationQuant) -> dict[str, tuple[float, float, float]]:
    """Output tensor → (lo, hi) of the engine's quantizer (widened to include 0) and the histogram's bin
    width, calibrated in batches of 64."""
    handle = open_compressible(model, "onnx")
    handle.prepare({"input": x[:1]})
    calibration = Calibration(handle, {"input": x}, 64)
    names = [layer.name for layer in handle.layers()]
    calibration.ensure_for(dict.fromkeys(names, config))
    out = {}
    for name in names:
        for key in handle.output_keys(name):
            stats = calibration.stats(name, key)
            q = activation_qparams(stats, config)
            out[key] = (q.lo, q.hi, 2 * max(abs(stats.lo), abs(stats.hi)) / ENTROPY_BINS)
    return out


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("heavy_tails", [False, True])
def test_entropy_ranges_agree_with_onnxruntimes_entropy_calibrator(
    digits_bundle: DemoBundle, digits_split: DigitsSplit, tmp_path: Path, bits: int, heavy_tails: bool
) -> None:
    x = digits_split.x_train[:300]
    if heavy_tails:  # a few inputs scaled up, so that the tails are long and clipping them pays
        scale = np.where(np.random.default_rng(0).random(len(x)) < 0.05, 6.0, 1.0).astype(np.float32)
        x = (x * scale[:, None, None, None]).astype(np.float32)
    config = config_from_dict({"type": "activation_quant", "bits": bits, "calibration": "entropy"})
    assert isinstance(config, ActivationQuant)
    ours = _engine(digits_bundle.golden_onnx, x, config)
    theirs = _ort_ranges(digits_bundle.golden_onnx, x, CalibrationMethod.Entropy, tmp_path, 2**bits - 1)
    minmax = _engine(digits_bundle.golden_onnx, x, ActivationQuant(bits, "minmax"))
    clipped = 0
    for key, (lo, hi, width) in ours.items():
        ort_lo, ort_hi = theirs[key]
        assert lo == pytest.approx(min(ort_lo, 0.0), abs=0.01 * width), key
        assert hi == pytest.approx(max(ort_hi, 0.0), abs=0.01 * width), key
        clipped += (hi < minmax[key][1] - width) + (lo > minmax[key][0] + width)
    assert clipped, "no range was clipped: the search never left the min-max range"


def test_minmax_ranges_agree_with_onnxruntimes_minmax_calibrator(
    digits_bundle: DemoBundle, digits_split: DigitsSplit, tmp_path: Path
) -> None:
    x = digits_split.x_train[:300]
    ours = _engine(digits_bundle.golden_onnx, x, ActivationQuant(8, "minmax"))
    theirs = _ort_ranges(digits_bundle.golden_onnx, x, CalibrationMethod.MinMax, tmp_path)
    for key, (lo, hi, _) in ours.items():
        ort_lo, ort_hi = theirs[key]
        # the same float32 extremes, up to onnxruntime's optimised kernels (last bits)
        assert lo == pytest.approx(min(ort_lo, 0.0), rel=1e-5, abs=1e-6), key
        assert hi == pytest.approx(max(ort_hi, 0.0), rel=1e-5, abs=1e-6), key


def test_a_histogram_coarser_than_the_levels_keeps_the_min_max_range() -> None:
    """16-bit activations: 65,535 levels do not fit 2,048 bins, so entropy calibration keeps min-max."""
    from worker.engine.compression.entropy_calibration import entropy_threshold, symmetric_histogram

    values = np.random.default_rng(1).laplace(size=10_000).astype(np.float32)
    hist, edges = symmetric_histogram(values, float(np.abs(values).max()))
    lo, hi = float(values.min()), float(values.max())
    assert entropy_threshold(hist, edges, 2**16 - 1, lo, hi) == (lo, hi)
    low, high = entropy_threshold(hist, edges, 255, lo, hi)
    assert lo < low < 0 < high < hi  # 8 bits: a Laplace sample's tails are clipped
