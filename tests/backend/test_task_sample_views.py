"""The sample inspector's label maps, image-output pictures and audio (issue 30), served by the real app over
Postgres from fidelity jobs run in-process by the real handler: every view equals what the engine computes
from the same ONNX files (decoded with Pillow, numpy and scipy's WAV reader, not with the code under test),
the WAVs hold the stored waveforms within 16-bit quantization, and the shareable report embeds the answers.
The models are small untrained networks and their 3-bit copies; the engine tests check the numbers."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient
from scipy.io import wavfile

from backend.api.routes.report_export import DATA_OPEN
from backend.settings import Settings
from tests.support.app_fixtures import app_fixtures
from tests.support.fidelity_api import FidelityApi
from tests.support.task_views import png_pixels, u8
from tests.support.tiny_task_models import (
    TinyPictureModel,
    TinySegmenter,
    TinyWaveModel,
    golden_and_3bit_pair,
)
from worker.engine.loaders.onnx_runner import load_onnx

settings, http = app_fixtures("task-views")


def _pair(model: torch.nn.Module, sample: np.ndarray, folder: Path) -> tuple[Path, Path]:
    return golden_and_3bit_pair(model, sample, folder, output_name="out", std=0.3)


def _outputs(golden: Path, compressed: Path, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return load_onnx(golden, 1).run({"input": x})["out"], load_onnx(compressed, 1).run({"input": x})["out"]


def _exported_task_samples(api: FidelityApi, job_id: str) -> dict[str, Any]:
    export = api.get(f"/jobs/{job_id}/export.html")
    assert export.status_code == 200, export.text
    embedded = json.loads(export.text.split(DATA_OPEN, 1)[1].split("</script>", 1)[0])["responses"]
    return {path: body for path, body in embedded.items() if path.endswith("/task") and "/samples/" in path}


def test_a_segmentation_sample_serves_both_label_maps_the_mask_and_where_they_differ(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((12, 1, 16, 16)).astype(np.float32)
    masks = rng.integers(0, 3, (12, 16, 16))
    masks[:, 0, :] = 255  # a void band: transparent in the truth's overlay
    golden, compressed = _pair(TinySegmenter(), x, tmp_path)
    np.savez(tmp_path / "seg.npz", input=x, masks=masks)
    api = FidelityApi(http, settings, "seg-views", golden, compressed, tmp_path / "seg.npz")
    job_id = api.fidelity(task="segmentation", batch_size=5, layer_profile=False)
    g, c = (o.argmax(1) for o in _outputs(golden, compressed, x))
    assert (g != c).any()
    for index in (0, 11):
        answer = api.get(f"/jobs/{job_id}/samples/{index}/task")
        assert answer.status_code == 200, answer.text
        view = answer.json()
        assert view["task"] == "segmentation" and view["image_size"] == [16, 16]
        assert view["picture"] == f"/api/v1/jobs/{job_id}/samples/{index}/input.png"
        assert np.array_equal(png_pixels(view["golden"]), g[index])  # palette index = class id
        assert np.array_equal(png_pixels(view["compressed"]), c[index])
        assert np.array_equal(png_pixels(view["truth"]), masks[index])
        assert np.array_equal(png_pixels(view["disagreement"]), (g[index] != c[index]).astype(np.uint8))
        assert view["disagreeing_pixels"] == int((g[index] != c[index]).sum()) and view["n_pixels"] == 256
        assert view["pixel_agreement"] == pytest.approx((g[index] == c[index]).mean())
        counts = {k["label"]: (k["golden_pixels"], k["truth_pixels"]) for k in view["classes"]}
        assert counts == {k: (int((g[index] == k).sum()), int((masks[index] == k).sum())) for k in range(3)}
        assert view["classes"][1]["colour"] == "#800000"  # the VOC palette's class 1
    # The inspection of a job without a classification output: the sample's divergence row, no probabilities.
    inspected = api.get(f"/jobs/{job_id}/samples/3")
    assert inspected.status_code == 200, inspected.text
    assert inspected.json()["outputs"] == [] and inspected.json()["n_samples"] == 12
    assert inspected.json()["metrics"]["sample_index"] == 3
    assert api.get(f"/jobs/{job_id}/samples/12").status_code == 404
    past = api.get(f"/jobs/{job_id}/samples/12/task")
    assert past.status_code == 404 and "first 12 samples" in past.json()["detail"]
    no_audio = api.get(f"/jobs/{job_id}/samples/0/task/audio/golden")
    assert no_audio.status_code == 404 and "only signal jobs" in no_audio.json()["detail"]
    embedded = _exported_task_samples(api, job_id)
    one = embedded[f"/api/v1/jobs/{job_id}/samples/0/task"]
    assert one["picture"].startswith("data:image/png;base64,")
    assert np.array_equal(png_pixels(one["golden"]), g[0])


def test_an_image_output_sample_serves_both_pictures_and_their_amplified_difference(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, (20, 1, 16, 16)).astype(np.float32)
    golden, compressed = _pair(TinyPictureModel(), x, tmp_path)
    np.savez(tmp_path / "pictures.npz", input=x)
    api = FidelityApi(http, settings, "image-views", golden, compressed, tmp_path / "pictures.npz")
    job_id = api.fidelity(task="image", batch_size=8, layer_profile=False)
    g, c = _outputs(golden, compressed, x)
    for index in (0, 15):
        view = api.get(f"/jobs/{job_id}/samples/{index}/task").json()
        assert view["task"] == "image" and view["output"] == "out" and view["image_size"] == [16, 16]
        assert view["value_range"] == [0.0, 1.0] and view["layout"] == "grey"
        assert np.array_equal(png_pixels(view["golden"]), u8(g[index, 0], 0, 1))
        assert np.array_equal(png_pixels(view["compressed"]), u8(c[index, 0], 0, 1))
        diff = np.abs(g[index, 0].astype(np.float64) - c[index, 0])
        assert np.array_equal(png_pixels(view["difference"]), u8(diff * view["difference_gain"], 0, 1))
        mse = float((diff**2).mean())
        assert view["psnr_db"] == pytest.approx(10 * np.log10(1 / mse), rel=1e-5)
    past = api.get(f"/jobs/{job_id}/samples/16/task")  # 16 kept of 20
    assert past.status_code == 404 and "first 16 samples" in past.json()["detail"]
    assert len(_exported_task_samples(api, job_id)) == 16


def _wav(answer: Any) -> tuple[int, np.ndarray]:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "audio/wav"
    rate, pcm = wavfile.read(io.BytesIO(answer.content))
    assert pcm.dtype == np.int16
    return rate, pcm


def test_a_signal_sample_plays_both_outputs_and_the_clean_reference_as_wav(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    rng = np.random.default_rng(2)
    t = np.arange(400) / 8000
    clean = (0.6 * np.sin(2 * np.pi * rng.uniform(200, 800, (6, 1, 1)) * t)).astype(np.float32)
    noisy = (clean + 0.2 * rng.standard_normal(clean.shape)).astype(np.float32)
    clean[3, 0, :5] = 1.5  # a reference past full scale: the sample's three WAVs share one gain
    golden, compressed = _pair(TinyWaveModel(), noisy, tmp_path)
    np.savez(tmp_path / "audio.npz", input=noisy, clean=clean)
    api = FidelityApi(http, settings, "signal-views", golden, compressed, tmp_path / "audio.npz")
    job_id = api.fidelity(
        task="signal", task_options={"sample_rate": 8000}, batch_size=4, layer_profile=False
    )
    g, c = _outputs(golden, compressed, noisy)
    waves = {"golden": g, "compressed": c, "clean": clean}
    for index in (0, 3):
        view = api.get(f"/jobs/{job_id}/samples/{index}/task").json()
        assert view["task"] == "signal" and view["sample_rate"] == 8000 and view["shape"] == [1, 400]
        assert view["duration_s"] == pytest.approx(0.05)
        peak = max(float(np.abs(w[index]).max()) for w in waves.values())
        assert view["gain"] == pytest.approx(1 / peak if peak > 1 else 1.0, rel=1e-6)
        assert index != 3 or view["gain"] < 1
        for role, wave in waves.items():
            url = view["audio"][role]
            assert url == f"/api/v1/jobs/{job_id}/samples/{index}/task/audio/{role}"
            rate, pcm = _wav(http.get(url, headers=api.headers))
            assert rate == 8000 and pcm.shape == (400,)
            # within 16-bit quantization: half a step of 1/32767 at the stated gain
            assert (
                np.abs(pcm / 32767 / view["gain"] - wave[index, 0]).max() <= 0.5 / 32767 / view["gain"] + 1e-7
            )
            outline = np.array(view["outline"][role])
            assert outline.shape == (400, 2) and np.allclose(outline[:, 0], wave[index, 0], atol=1e-7)
        g64, c64 = g[index, 0].astype(np.float64), c[index, 0].astype(np.float64)
        snr = 10 * np.log10((g64**2).sum() / ((g64 - c64) ** 2).sum())
        assert view["snr_db_vs_golden"] == pytest.approx(snr, rel=1e-6)
    assert api.get(f"/jobs/{job_id}/samples/0/task/audio/noisy").status_code == 422
    assert api.get(f"/jobs/{job_id}/samples/6/task/audio/golden").status_code == 404
    embedded = _exported_task_samples(api, job_id)
    one = embedded[f"/api/v1/jobs/{job_id}/samples/0/task"]
    assert one["audio"]["golden"].startswith("data:audio/wav;base64,")


def test_a_signal_job_without_a_clean_reference_has_no_clean_wav(
    http: TestClient, settings: Settings, tmp_path: Path
) -> None:
    noisy = np.random.default_rng(3).standard_normal((3, 1, 300)).astype(np.float32)
    golden, compressed = _pair(TinyWaveModel(), noisy, tmp_path)
    np.savez(tmp_path / "audio.npz", input=noisy)
    api = FidelityApi(http, settings, "signal-plain", golden, compressed, tmp_path / "audio.npz")
    refused = http.post(
        "/api/v1/jobs",
        headers=api.headers,
        json={
            "project_id": api.project,
            "kind": "fidelity",
            "params": {
                "golden_model_id": api.golden,
                "compressed_model_id": api.int8,
                "dataset_id": api.dataset,
                "task": "signal",
                "task_options": {"sample_rate": 100},
            },
        },
    )
    assert refused.status_code == 422 and "'sample_rate' must be an integer number of Hz" in refused.text
    job_id = api.fidelity(task="signal", layer_profile=False)
    view = api.get(f"/jobs/{job_id}/samples/0/task").json()
    assert (
        view["sample_rate"] == 16000 and view["audio"]["clean"] is None and view["outline"]["clean"] is None
    )
    rate, _ = _wav(api.get(f"/jobs/{job_id}/samples/0/task/audio/golden"))
    assert rate == 16000 and view["gain"] < 1  # unit-variance noise peaks past full scale
    missing = api.get(f"/jobs/{job_id}/samples/0/task/audio/clean")
    assert missing.status_code == 404 and "no 'clean' array" in missing.json()["detail"]
