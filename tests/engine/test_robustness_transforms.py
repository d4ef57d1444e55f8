"""The robustness slices' corruptions (worker/engine/robustness/transforms.py) against independent
implementations: scipy.ndimage's Gaussian filter for the blur, numpy draws from the same seeded block
generator for the noise and the occlusion patch, the plain formulas for brightness and contrast; and the
rules that make reruns identical (a sample's corruption depends on its index, not on its batch)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from worker.demo.models import DigitsSplit
from worker.engine.robustness import SEVERITIES, SLICES, ArrayStats, array_stats, corrupt
from worker.engine.robustness.transforms import block_rng, block_rows

SEED = 11


@pytest.fixture(scope="module")
def images(digits_split: DigitsSplit) -> np.ndarray:
    return digits_split.x_test[:12]


@pytest.fixture(scope="module")
def stats(digits_split: DigitsSplit) -> ArrayStats:
    return array_stats(digits_split.x_test, chunk=50)


def test_stats_are_numpys(digits_split: DigitsSplit, stats: ArrayStats) -> None:
    x = digits_split.x_test.astype(np.float64)
    assert stats.mean == pytest.approx(x.mean(), rel=1e-9)
    assert stats.std == pytest.approx(x.std(), rel=1e-6)


@pytest.mark.parametrize("severity", SEVERITIES)
def test_blur_is_scipys_gaussian_filter(images: np.ndarray, stats: ArrayStats, severity: int) -> None:
    sigma = SLICES["gaussian_blur"].values[severity - 1]
    ours = corrupt("gaussian_blur", severity, images, np.arange(len(images)), stats, SEED)
    reference = ndimage.gaussian_filter(images.astype(np.float64), sigma=(0, 0, sigma, sigma), mode="reflect")
    np.testing.assert_allclose(ours, reference, atol=1e-6)
    assert ours.dtype == images.dtype


def test_blur_of_channels_last_images_blurs_height_and_width(stats: ArrayStats) -> None:
    rng = np.random.default_rng(0)
    nhwc = rng.normal(size=(3, 16, 12, 3)).astype(np.float32)
    ours = corrupt("gaussian_blur", 2, nhwc, np.arange(3), stats)
    reference = ndimage.gaussian_filter(nhwc.astype(np.float64), sigma=(0, 1.0, 1.0, 0), mode="reflect")
    np.testing.assert_allclose(ours, reference, atol=1e-5)


@pytest.mark.parametrize("severity", SEVERITIES)
def test_noise_is_the_samples_own_draws(images: np.ndarray, stats: ArrayStats, severity: int) -> None:
    rows = block_rows(images.shape[1:])
    indices = np.arange(rows - 5, rows - 5 + len(images))  # straddles two blocks
    ours = corrupt("gaussian_noise", severity, images, indices, stats, SEED)
    scale = SLICES["gaussian_noise"].values[severity - 1] * stats.std
    blocks = [block_rng(SEED, "gaussian_noise", severity, b).normal(size=(rows, 1, 8, 8)) for b in (0, 1)]
    for row, index in enumerate(indices):
        expected = images[row].astype(np.float64) + scale * blocks[index // rows][index % rows]
        np.testing.assert_allclose(ours[row], expected.astype(np.float32), rtol=0, atol=1e-6)
    measured = (ours.astype(np.float64) - images).std()
    assert measured == pytest.approx(scale, rel=0.1)  # 768 draws: the std is within 10 %


def test_brightness_and_contrast_follow_their_formulas(images: np.ndarray, stats: ArrayStats) -> None:
    idx = np.arange(len(images))
    for severity in SEVERITIES:
        shift = SLICES["brightness"].values[severity - 1]
        np.testing.assert_allclose(
            corrupt("brightness", severity, images, idx, stats), images + shift * stats.std, atol=1e-6
        )
        factor = SLICES["contrast"].values[severity - 1]
        expected = stats.mean + factor * (images - stats.mean)
        np.testing.assert_allclose(corrupt("contrast", severity, images, idx, stats), expected, atol=1e-6)


@pytest.mark.parametrize("severity", SEVERITIES)
def test_occlusion_fills_one_square_at_the_drawn_place(
    images: np.ndarray, stats: ArrayStats, severity: int
) -> None:
    ours = corrupt("occlusion", severity, images, np.arange(len(images)), stats, SEED)
    side = max(1, round(SLICES["occlusion"].values[severity - 1] * 8))
    rng = block_rng(SEED, "occlusion", severity, 0)
    rows = block_rows((1, 8, 8))
    tops, lefts = rng.integers(0, 8 - side + 1, size=rows), rng.integers(0, 8 - side + 1, size=rows)
    for row in range(len(images)):
        top, left = int(tops[row]), int(lefts[row])
        mask = np.zeros((8, 8), dtype=bool)
        mask[top : top + side, left : left + side] = True
        np.testing.assert_allclose(ours[row, 0][mask], np.float32(stats.mean))
        np.testing.assert_array_equal(ours[row, 0][~mask], images[row, 0][~mask])


ARRAY_SLICES = [name for name, spec in SLICES.items() if spec.target in ("float", "image")]
"""The slices made from a float array alone (token replacement: test_robustness_tokens.py; FGSM/PGD need
the golden model: test_robustness_adversarial.py)."""


@pytest.mark.parametrize("name", ARRAY_SLICES)
def test_a_samples_corruption_does_not_depend_on_its_batch(
    images: np.ndarray, stats: ArrayStats, name: str
) -> None:
    idx = np.arange(len(images))
    whole = corrupt(name, 3, images, idx, stats, SEED)
    again = corrupt(name, 3, images, idx, stats, SEED)
    pieces = np.concatenate(
        [corrupt(name, 3, images[i : i + 5], idx[i : i + 5], stats, SEED) for i in (0, 5, 10)]
    )
    np.testing.assert_array_equal(whole, again)
    np.testing.assert_array_equal(whole, pieces)
    assert not np.array_equal(whole, images)


def test_other_seeds_draw_other_noise(images: np.ndarray, stats: ArrayStats) -> None:
    idx = np.arange(len(images))
    a = corrupt("gaussian_noise", 1, images, idx, stats, seed=1)
    b = corrupt("gaussian_noise", 1, images, idx, stats, seed=2)
    assert not np.array_equal(a, b)


def test_only_noise_applies_to_flat_floats_and_nothing_to_integers(stats: ArrayStats) -> None:
    flat = np.linspace(0, 1, 40, dtype=np.float32).reshape(4, 10)
    tokens = np.arange(40, dtype=np.int64).reshape(4, 10)
    idx = np.arange(4)
    assert not np.array_equal(corrupt("gaussian_noise", 2, flat, idx, stats), flat)
    for name in ("brightness", "contrast", "gaussian_blur", "occlusion", "jpeg"):
        assert corrupt(name, 2, flat, idx, stats) is flat
    for name in [*ARRAY_SLICES, "token_replacement"]:  # ArrayStats: not a token array's statistics
        assert corrupt(name, 2, tokens, idx, stats) is tokens
    for name in ("fgsm", "pgd"):
        with pytest.raises(ValueError, match="golden model"):
            corrupt(name, 2, flat, idx, stats)
