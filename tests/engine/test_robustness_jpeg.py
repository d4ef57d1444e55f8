"""The jpeg robustness slice (worker/engine/robustness/jpeg.py): each image against a round trip made
here with the plain 8-bit map and Pillow's encoder/decoder called directly, the 8-bit map's inverse, and
on the digits CNN (fp32 vs int8 QDQ, onnxruntime sessions of our own, scipy KL) the divergence at the
lowest quality above the clean and milder ones."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from PIL import Image
from scipy.special import softmax
from scipy.stats import entropy

from worker.demo.models import DemoBundle
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.loaders import load_model
from worker.engine.robustness import (
    SEVERITIES,
    SLICES,
    ArrayStats,
    RobustnessParams,
    array_stats,
    corrupt,
    evaluate_robustness,
)
from worker.engine.robustness.jpeg import from_uint8, to_uint8


def pillow_round_trip(u8: np.ndarray, quality: int) -> np.ndarray:
    buffer = io.BytesIO()
    extra = {"subsampling": 2} if u8.ndim == 3 else {}
    Image.fromarray(u8).save(buffer, "JPEG", quality=quality, **extra)
    return np.asarray(Image.open(io.BytesIO(buffer.getvalue())))


def reference_jpeg(x: np.ndarray, quality: int, low: float, high: float, channels_last: bool) -> np.ndarray:
    """Per image and channel (gray) or per image (RGB): the 8-bit map, Pillow, and back."""
    scale = 255.0 / (high - low)
    out = np.empty(x.shape, dtype=np.float64)
    for i in range(len(x)):
        image = x[i] if channels_last else np.moveaxis(x[i], 0, -1)
        u8 = np.clip(np.round((image.astype(np.float64) - low) * scale), 0, 255).astype(np.uint8)
        if u8.shape[-1] == 3:
            decoded = pillow_round_trip(u8, quality)
        else:
            decoded = np.stack([pillow_round_trip(u8[..., c], quality) for c in range(u8.shape[-1])], -1)
        back = low + decoded / scale
        out[i] = back if channels_last else np.moveaxis(back, -1, 0)
    return out


@pytest.mark.parametrize("severity", SEVERITIES)
def test_digits_images_are_pillows_round_trip(digits_bundle: DemoBundle, severity: int) -> None:
    with np.load(digits_bundle.test_npz) as npz:
        x = npz["input"][:20]
    stats = array_stats(x)
    assert (stats.low, stats.high) == (float(x.min()), float(x.max()))
    quality = int(SLICES["jpeg"].values[severity - 1])
    ours = corrupt("jpeg", severity, x, np.arange(20), stats, seed=3)
    expected = reference_jpeg(x, quality, stats.low, stats.high, channels_last=False)
    assert ours.dtype == x.dtype and ours.shape == x.shape
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-6)
    assert np.abs(ours - x).max() > 0.05  # the encoding changed the images (not a no-op)


def test_colour_channels_last_images_use_rgb_jpeg() -> None:
    rng = np.random.default_rng(4)
    smooth = np.cumsum(rng.normal(size=(3, 16, 16, 3)), axis=1)  # normalised-looking values, not [0, 1]
    x = smooth.astype(np.float32)
    stats = array_stats(x)
    ours = corrupt("jpeg", 2, x, np.arange(3), stats)
    expected = reference_jpeg(x, 15, stats.low, stats.high, channels_last=True)
    np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-5)
    # The RGB path differs from encoding the three channels as separate gray images (chroma subsampled).
    gray = np.stack(
        [
            reference_jpeg(x[..., c : c + 1], 15, stats.low, stats.high, channels_last=True)[..., 0]
            for c in range(3)
        ],
        -1,
    )
    assert np.abs(gray - ours).max() > 1e-3


def test_the_8_bit_map_is_reversed_within_half_a_step() -> None:
    x = np.linspace(-2.1, 2.6, 1001)
    back = from_uint8(to_uint8(x, -2.1, 2.6), -2.1, 2.6)
    assert np.abs(back - x).max() <= (2.6 + 2.1) / 510 + 1e-12
    np.testing.assert_array_equal(to_uint8(back, -2.1, 2.6), to_uint8(x, -2.1, 2.6))


def scipy_kl(bundle: DemoBundle, x: np.ndarray) -> float:
    def logits(path: object) -> np.ndarray:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return session.run(None, {session.get_inputs()[0].name: x})[0].astype(np.float64)

    p, q = softmax(logits(bundle.golden_onnx), axis=1), softmax(logits(bundle.int8_onnx), axis=1)
    return float(entropy(p, q, axis=1).mean())


@pytest.fixture(scope="module")
def jpeg_document(digits_bundle: DemoBundle) -> dict[str, Any]:
    with np.load(digits_bundle.test_npz) as npz:
        x, labels = npz["input"], npz["labels"]
    golden, compressed = (
        load_model(digits_bundle.golden_onnx, "onnx"),
        load_model(digits_bundle.int8_onnx, "onnx"),
    )
    fidelity = FidelityParams(batch_size=32)
    clean = compare_models(golden, compressed, {"input": x}, labels, fidelity)
    return evaluate_robustness(
        golden, compressed, {"input": x}, labels, fidelity, clean.per_sample, "classification",
        RobustnessParams(slices=("jpeg",)),
    )  # fmt: skip


def test_the_lowest_quality_diverges_most_on_the_digits_cnn(
    digits_bundle: DemoBundle, jpeg_document: dict[str, Any]
) -> None:
    """Each point's KL equals scipy's on Pillow-encoded images; quality 7 diverges more than the clean set
    and the milder qualities. The milder qualities are not ordered: on the digits CNN quality 25 and 15
    measured 0.92x and 0.94x the clean KL (JPEG's smoothing of 8x8 digits can move inputs away from the
    int8 model's rounding boundaries), so the test does not claim a monotone curve the model does not have."""
    with np.load(digits_bundle.test_npz) as npz:
        x = npz["input"]
    stats: ArrayStats = array_stats(x)
    (jpeg,) = jpeg_document["slices"]
    points = jpeg["points"]
    assert [p["value"] for p in points] == [25.0, 15.0, 7.0]
    clean = jpeg_document["clean"]["kl_mean_nats"]
    kls = [p["kl_mean_nats"] for p in points]
    for point in points:
        corrupted = corrupt("jpeg", point["severity"], x, np.arange(len(x)), stats)
        assert point["kl_mean_nats"] == pytest.approx(scipy_kl(digits_bundle, corrupted), rel=1e-4)
        assert point["brittleness_ratio"] == pytest.approx(point["kl_mean_nats"] / clean, rel=1e-9)
        assert 0 < point["cosine_mean"] < 1
    assert max(clean, kls[0], kls[1]) < kls[2]
    assert points[2]["brittleness_ratio"] > 1
