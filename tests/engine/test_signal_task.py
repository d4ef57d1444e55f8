"""The signal task (issue 30, item 5) on a 1-D denoiser trained in the test on noisy sine mixtures and its
3-bit copy, run as ONNX: SNR and SI-SDR of every sample equal a plain numpy implementation of their
definitions (SI-SDR: zero-mean, the reference scaled by the projection), the trained golden model cleans the
signals (its SI-SDR against the clean ones well above the noisy input's), and wrong references are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.task_views import float32_wave
from worker.engine.compression import compress_module
from worker.engine.compression.configs import WeightQuant
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.formats.exporters import export_onnx
from worker.engine.jsonable import json_safe
from worker.engine.loaders.onnx_runner import load_onnx

T = 256


def _signals(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.arange(T) / T
    freqs = rng.uniform(2, 12, (n, 2, 1))
    clean = (np.sin(2 * np.pi * freqs * t + rng.uniform(0, 6, (n, 2, 1)))).sum(1, keepdims=True) / 2
    noisy = clean + 0.4 * rng.standard_normal(clean.shape)
    return noisy.astype(np.float32), clean.astype(np.float32)


class _Denoiser(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv1d(1, 16, 9, padding=4)
        self.conv2 = torch.nn.Conv1d(16, 1, 9, padding=4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv2(torch.relu(self.conv1(x)))


def _np_snr(e: np.ndarray, r: np.ndarray) -> np.ndarray:
    return 10 * np.log10((r**2).sum(-1) / ((e - r) ** 2).sum(-1))


def _np_si_sdr(e: np.ndarray, r: np.ndarray) -> np.ndarray:
    e = e - e.mean(-1, keepdims=True)
    r = r - r.mean(-1, keepdims=True)
    target = ((e * r).sum(-1, keepdims=True) / (r**2).sum(-1, keepdims=True)) * r
    return 10 * np.log10((target**2).sum(-1) / ((e - target) ** 2).sum(-1))


@pytest.fixture(scope="module")
def denoiser(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("signal")
    torch.manual_seed(0)
    model = _Denoiser()
    noisy, clean = _signals(256, 0)
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.from_numpy(noisy), torch.from_numpy(clean)
    for _ in range(150):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    copy = compress_module(model, {n: WeightQuant(3) for n in ("conv1", "conv2")})[0].eval()
    return (
        export_onnx(model, noisy[:2], folder / "golden.onnx", "input", "audio"),
        export_onnx(copy, noisy[:2], folder / "compressed.onnx", "input", "audio"),
    )


def test_snr_and_si_sdr_equal_their_definitions(denoiser: tuple[Path, Path]) -> None:
    golden, compressed = denoiser
    noisy, clean = _signals(40, 1)
    params = FidelityParams(batch_size=16, task="signal")
    report = compare_models(
        load_onnx(golden, 1), load_onnx(compressed, 1), {"input": noisy, "clean": clean}, None, params
    )
    block = json_safe(report.summary_dict())["outputs"]["audio"]["task"]
    g = load_onnx(golden, 1).run({"input": noisy})["audio"].astype(np.float64)
    c = load_onnx(compressed, 1).run({"input": noisy})["audio"].astype(np.float64)
    clean64 = clean.astype(np.float64)
    per_sample = {
        "snr_db_vs_golden": _np_snr(c, g).mean(1),
        "si_sdr_db_vs_golden": _np_si_sdr(c, g).mean(1),
        "si_sdr_db_golden": _np_si_sdr(g, clean64).mean(1),
        "si_sdr_db_compressed": _np_si_sdr(c, clean64).mean(1),
    }
    for key, want in per_sample.items():
        assert np.allclose(report.task_per_sample[key], want, rtol=1e-9), key
    assert block["si_sdr_db_vs_golden"] == pytest.approx(per_sample["si_sdr_db_vs_golden"].mean(), rel=1e-9)
    golden_sdr = per_sample["si_sdr_db_golden"].mean()
    assert block["si_sdr_drop_db"] == pytest.approx(
        golden_sdr - per_sample["si_sdr_db_compressed"].mean(), rel=1e-9
    )
    assert block["snr_drop_db"] == pytest.approx(
        _np_snr(g, clean64).mean() - _np_snr(c, clean64).mean(), rel=1e-9
    )
    noisy_sdr = _np_si_sdr(noisy.astype(np.float64), clean64).mean()
    assert golden_sdr > noisy_sdr + 3  # the denoiser learnt to clean: at least 3 dB better than its input
    assert block["si_sdr_drop_db"] > 0  # 3-bit weights cost signal quality


def test_identical_outputs_are_counted_not_averaged(denoiser: tuple[Path, Path]) -> None:
    golden, _ = denoiser
    noisy, _ = _signals(8, 2)
    params = FidelityParams(task="signal")
    block = json_safe(
        compare_models(
            load_onnx(golden, 1), load_onnx(golden, 1), {"input": noisy}, None, params
        ).summary_dict()
    )["outputs"]["audio"]["task"]
    assert block["n_identical"] == 8 and block["snr_db_vs_golden"] is None and block["against_clean"] is None


def test_wrong_references_and_outputs_are_refused(denoiser: tuple[Path, Path]) -> None:
    golden, compressed = denoiser
    noisy, clean = _signals(8, 3)
    runners = load_onnx(golden, 1), load_onnx(compressed, 1)
    with pytest.raises(DatasetMismatchError, match="'clean' has shape"):
        compare_models(
            *runners, {"input": noisy, "clean": clean[:, :, :100]}, None, FidelityParams(task="signal")
        )
    with pytest.raises(OutputMismatchError, match="no output 'wave'"):
        compare_models(
            *runners, {"input": noisy}, None, FidelityParams(task="signal", task_options={"output": "wave"})
        )


def test_the_inspector_keeps_each_waveform_as_the_model_gave_it(denoiser: tuple[Path, Path]) -> None:
    """The stored float32 waveforms are the ONNX outputs and the clean references bit for bit, with the
    sample's scores from the per-sample table; a bad sample rate is refused."""
    golden, compressed = denoiser
    noisy, clean = _signals(20, 4)
    params = FidelityParams(batch_size=8, task="signal", task_options={"sample_rate": 8000})
    runners = load_onnx(golden, 1), load_onnx(compressed, 1)
    report = compare_models(*runners, {"input": noisy, "clean": clean}, None, params)
    views = report.task_samples
    assert views is not None and views["task"] == "signal" and views["sample_rate"] == 8000
    assert views["n_samples"] == 16  # SIGNAL_VIEWS_MAX of 20
    g = runners[0].run({"input": noisy})["audio"]
    c = runners[1].run({"input": noisy})["audio"]
    for i, view in enumerate(views["samples"]):
        assert view["shape"] == [1, T]
        assert np.array_equal(float32_wave(view["golden"], view["shape"]), g[i])
        assert np.array_equal(float32_wave(view["compressed"], view["shape"]), c[i])
        assert np.array_equal(float32_wave(view["clean"], view["shape"]), clean[i])
        want = _np_si_sdr(c[i : i + 1].astype(np.float64), g[i : i + 1].astype(np.float64)).mean()
        assert view["si_sdr_db_vs_golden"] == pytest.approx(want, rel=1e-9)
        assert view["nonfinite"] == {"golden": 0, "compressed": 0, "clean": 0}
    for rate in (100, 16000.5, True):
        with pytest.raises(OutputMismatchError, match="'sample_rate' must be an integer number of Hz"):
            compare_models(
                *runners,
                {"input": noisy[:2]},
                None,
                FidelityParams(task="signal", task_options={"sample_rate": rate}),
            )


def test_a_non_finite_waveform_is_stored_finite_and_counted() -> None:
    from worker.engine.tasks.view_encoding import waveform_b64

    wave = np.array([0.5, np.nan, np.inf, -np.inf, -2.0])
    stored, bad = waveform_b64(wave)
    big = np.finfo(np.float32).max
    assert bad == 3 and np.array_equal(float32_wave(stored, [5]), np.array([0.5, 0, big, -big, -2.0], "<f4"))
