"""The image-output task (worker/engine/tasks/image_output.py, issue 30 item 6): a small convolutional
denoiser trained in the test on synthetic pictures (bright squares and discs on dark, Gaussian noise),
against a copy with 3-bit weights, compared by `compare_models` with task "image". Every PSNR and SSIM is
checked against scikit-image (`peak_signal_noise_ratio`, `structural_similarity` with the Gaussian window
of Wang et al.), computed here on the two models' own outputs."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest
import torch
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

from kneeboard_client.thresholds import Limit, check_limit, output_metrics
from tests.support.task_views import png_pixels, u8
from worker.engine.compression import compress_module
from worker.engine.compression.configs import WeightQuant
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.types import TensorSpec

SIZE = 24
SSIM_ATOL = 1e-6


def _pictures(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(noisy, clean) pictures (n, 1, SIZE, SIZE) in [0, 1]."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:SIZE, :SIZE]
    clean = np.zeros((n, 1, SIZE, SIZE), dtype=np.float32)
    for i in range(n):
        for _ in range(2):
            cy, cx, r = [*rng.integers(4, SIZE - 4, size=2).tolist(), int(rng.integers(2, 6))]
            shape = (
                (np.abs(yy - cy) <= r) & (np.abs(xx - cx) <= r)
                if rng.random() < 0.5
                else (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
            )
            clean[i, 0][shape] = rng.uniform(0.5, 1.0)
    noisy = np.clip(clean + rng.normal(0, 0.15, clean.shape), 0, 1).astype(np.float32)
    return noisy, clean


class Denoiser(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.conv3 = torch.nn.Conv2d(16, 1, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        return torch.sigmoid(self.conv3(h))


class ModuleRunner:
    """A torch module as a Runner: input 'noisy' (batch, 1, SIZE, SIZE), output 'denoised' of that shape."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module.eval()

    @property
    def inputs(self) -> list[TensorSpec]:
        return [TensorSpec("noisy", ("batch", 1, SIZE, SIZE), "float32")]

    @property
    def outputs(self) -> list[TensorSpec]:
        return [TensorSpec("denoised", ("batch", 1, SIZE, SIZE), "float32")]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        with torch.inference_mode():
            return {"denoised": self.module(torch.from_numpy(np.asarray(feeds["noisy"]))).numpy()}


@pytest.fixture(scope="module")
def denoisers() -> tuple[torch.nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    noisy, clean = _pictures(512, seed=1)
    x, y = torch.from_numpy(noisy), torch.from_numpy(clean)
    model = Denoiser()
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(60):
        for start in range(0, len(x), 128):
            optimiser.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x[start : start + 128]), y[start : start + 128])
            loss.backward()
            optimiser.step()
    plan = {name: WeightQuant(3) for name in ("conv1", "conv2", "conv3")}
    return model.eval(), compress_module(model, plan)[0].eval()


def _run(model: torch.nn.Module, x: np.ndarray) -> np.ndarray:
    with torch.inference_mode():
        return model(torch.from_numpy(x)).double().numpy()


def test_psnr_and_ssim_against_the_golden_model_and_the_clean_pictures_match_scikit_image(
    denoisers: tuple[torch.nn.Module, torch.nn.Module],
) -> None:
    golden, compressed = denoisers
    noisy, clean = _pictures(40, seed=2)
    report = compare_models(
        ModuleRunner(golden),
        ModuleRunner(compressed),
        {"noisy": noisy, "targets": clean},
        None,
        FidelityParams(batch_size=16, task="image"),
    )
    g, c = _run(golden, noisy), _run(compressed, noisy)
    ref = clean.astype(np.float64)

    def sk(pred: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        psnr = [peak_signal_noise_ratio(truth[i], pred[i], data_range=1.0) for i in range(len(pred))]
        ssim = [
            structural_similarity(
                truth[i, 0],
                pred[i, 0],
                data_range=1.0,
                gaussian_weights=True,
                sigma=1.5,
                use_sample_covariance=False,
            )
            for i in range(len(pred))
        ]
        return np.array(psnr), np.array(ssim)

    task = report.summary_dict()["outputs"]["denoised"]["task"]
    assert task["name"] == "image" and task["data_range"] == 1.0
    psnr, ssim = sk(c, g)
    assert task["against_golden"]["psnr_db_mean"] == pytest.approx(psnr.mean(), rel=1e-6)
    assert task["against_golden"]["psnr_db_min"] == pytest.approx(psnr.min(), rel=1e-6)
    assert task["against_golden"]["ssim_mean"] == pytest.approx(ssim.mean(), abs=SSIM_ATOL)
    assert task["psnr_db_vs_golden"] == task["against_golden"]["psnr_db_mean"]

    psnr_g, ssim_g = sk(g, ref)
    psnr_c, ssim_c = sk(c, ref)
    targets = task["against_targets"]
    assert targets["golden"]["psnr_db_mean"] == pytest.approx(psnr_g.mean(), rel=1e-6)
    assert targets["compressed"]["psnr_db_mean"] == pytest.approx(psnr_c.mean(), rel=1e-6)
    assert targets["golden"]["ssim_mean"] == pytest.approx(ssim_g.mean(), abs=SSIM_ATOL)
    assert targets["compressed"]["ssim_mean"] == pytest.approx(ssim_c.mean(), abs=SSIM_ATOL)
    assert task["psnr_drop_db"] == pytest.approx(psnr_g.mean() - psnr_c.mean(), abs=1e-4)
    # The trained denoiser cleans (beats the noisy input) and 3-bit weights cost picture quality.
    assert psnr_g.mean() > np.mean(
        [peak_signal_noise_ratio(ref[i], noisy[i], data_range=1.0) for i in range(40)]
    )
    assert task["psnr_drop_db"] > 0.1

    # kneeboard check reads the drop as worse when it rises, PSNR against the golden as worse when it falls.
    _, metrics = output_metrics(report.summary_dict(), None)
    assert not check_limit(metrics, Limit("psnr_drop_db", "max", task["psnr_drop_db"] / 2)).passed
    assert check_limit(metrics, Limit("psnr_db_vs_golden", "min", task["psnr_db_vs_golden"] - 1)).passed


def test_identical_pictures_have_infinite_psnr_kept_out_of_the_mean(
    denoisers: tuple[torch.nn.Module, torch.nn.Module],
) -> None:
    golden, _ = denoisers
    noisy, _ = _pictures(8, seed=3)
    report = compare_models(
        ModuleRunner(golden), ModuleRunner(golden), {"noisy": noisy}, None, FidelityParams(task="image")
    )
    task = report.summary_dict()["outputs"]["denoised"]["task"]
    assert task["against_golden"]["n_identical"] == 8
    assert task["psnr_db_vs_golden"] is None and task["against_golden"]["ssim_mean"] == pytest.approx(1.0)
    assert task["against_targets"] is None


def test_targets_of_the_wrong_shape_and_outputs_that_are_not_pictures_are_refused(
    denoisers: tuple[torch.nn.Module, torch.nn.Module],
) -> None:
    golden, compressed = denoisers
    noisy, clean = _pictures(8, seed=4)
    with pytest.raises(DatasetMismatchError, match="'targets' has shape"):
        compare_models(
            ModuleRunner(golden),
            ModuleRunner(compressed),
            {"noisy": noisy, "targets": clean[:, :, :20, :20]},
            None,
            FidelityParams(task="image"),
        )

    class Flat(ModuleRunner):
        @property
        def outputs(self) -> list[TensorSpec]:
            return [TensorSpec("denoised", ("batch", SIZE * SIZE), "float32")]

        def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {"denoised": super().run(feeds)["denoised"].reshape(len(feeds["noisy"]), -1)}

    with pytest.raises(OutputMismatchError, match="task 'image' found no output"):
        compare_models(Flat(golden), Flat(compressed), {"noisy": noisy}, None, FidelityParams(task="image"))


def test_the_inspector_pictures_decode_to_numpys_drawing_of_both_outputs_and_their_difference(
    denoisers: tuple[torch.nn.Module, torch.nn.Module],
) -> None:
    """Each kept PNG decodes (Pillow) to numpy's 8-bit drawing of the torch outputs over the stated range,
    the difference PNG to |golden − compressed| times the stated gain, and the sample's PSNR/SSIM are
    scikit-image's; the stored pictures are within half a grey level of the outputs."""
    golden, compressed = denoisers
    noisy, _ = _pictures(20, seed=4)
    report = compare_models(
        ModuleRunner(golden), ModuleRunner(compressed), {"noisy": noisy}, None, FidelityParams(task="image")
    )
    views = report.task_samples
    assert views is not None and views["task"] == "image" and views["output"] == "denoised"
    assert views["n_samples"] == 16  # IMAGE_VIEWS_MAX of 20
    unviewed = compare_models(
        ModuleRunner(golden),
        ModuleRunner(compressed),
        {"noisy": noisy},
        None,
        FidelityParams(task="image"),
        sample_views=False,
    )
    assert unviewed.task_samples is None
    g, c = _run(golden, noisy), _run(compressed, noisy)
    for i, view in enumerate(views["samples"]):
        assert view["value_range"] == [0.0, 1.0]  # sigmoid outputs lie in the default data range
        assert np.array_equal(png_pixels(view["golden"]), u8(g[i, 0], 0, 1))
        assert np.array_equal(png_pixels(view["compressed"]), u8(c[i, 0], 0, 1))
        assert np.abs(png_pixels(view["compressed"]) / 255 - c[i, 0]).max() <= 0.5 / 255 + 1e-9
        gain = view["difference_gain"]
        diff = np.abs(g[i, 0] - c[i, 0])
        level = np.percentile(diff, 99.5)
        assert level * gain <= 1 < level * gain * 2  # the largest power of two that keeps it in range
        assert np.array_equal(png_pixels(view["difference"]), u8(diff * gain, 0, 1))
        assert view["max_abs_difference"] == pytest.approx(diff.max(), rel=1e-12)
        assert view["psnr_db"] == pytest.approx(peak_signal_noise_ratio(g[i], c[i], data_range=1.0), rel=1e-6)
        ssim = structural_similarity(
            g[i, 0], c[i, 0], data_range=1.0, gaussian_weights=True, sigma=1.5, use_sample_covariance=False
        )
        assert view["ssim"] == pytest.approx(ssim, abs=SSIM_ATOL)


def test_out_of_range_and_nan_pictures_are_clipped_and_counted() -> None:
    from worker.engine.tasks.image_views import image_view

    golden = np.linspace(-0.5, 1.0, 16 * 16).reshape(1, 16, 16)
    compressed = golden.copy()
    compressed[0, 0, :3] = [np.nan, 7.0, -3.0]
    view = image_view(golden, compressed, 1.0)
    assert view["value_range"] == [-0.5, 1.0] and view["clipped"] == 2 and view["nonfinite"] == 1
    drawn = png_pixels(view["compressed"])
    assert drawn[0, :3].tolist() == [0, 255, 0]  # NaN drawn as the range's low end, the rest clipped
    assert png_pixels(view["difference"])[0, 0] == 255  # a NaN difference is white
    assert view["difference_gain"] == 1  # 2 of 256 pixels off by >= 1.5 reach the 99.5th percentile
    speckled = golden + 0.001
    speckled[0, 5, 5] = 5.0  # one speckle does not stop a small error everywhere from being amplified
    view = image_view(golden, speckled, 1.0)
    assert view["difference_gain"] == 1024 and view["clipped"] == 2  # the speckle and 1.001 past the top
    assert png_pixels(view["difference"])[5, 5] == 255
    assert png_pixels(view["difference"])[0, 0] == round(0.001 * 1024 / 1.5 * 255)
