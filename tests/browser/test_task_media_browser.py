"""The sample inspector's media views in the browser (issue 30): a segmenter's label maps over its picture, an
image-output model's pictures with their amplified difference, and a signal model's waveforms as WAVs, each
from a fidelity job on the embedded stack's real worker (the tiny models of tests/support/tiny_task_models.py
and their 3-bit copies). The browser loads every picture at the size the job stored, moves the mask opacity and
the zoom of all three pictures together, and decodes each WAV with its own audio decoder (not Kneeboard's code)
to the frames and rate the API states. Driven by drive_task_media.mjs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from kneeboard_client import KneeboardClient
from tests.browser.support import driver_config, run_driver
from tests.support.services import Process
from tests.support.tiny_task_models import (
    TinyPictureModel,
    TinySegmenter,
    TinyWaveModel,
    golden_and_3bit_pair,
)

pytestmark = pytest.mark.browser

DRIVER = Path(__file__).with_name("drive_task_media.mjs")
SAMPLE = 2
RATE = 8000


def _job(
    client: KneeboardClient,
    pid: str,
    folder: Path,
    model: torch.nn.Module,
    arrays: dict[str, np.ndarray],
    std: float = 0.3,
    **task: Any,
) -> str:
    """Upload the model, its 3-bit copy and `arrays` (an "input" and the task's annotations) and run a fidelity
    job with `task`."""
    folder.mkdir()
    golden, compressed = golden_and_3bit_pair(model, arrays["input"], folder, output_name="out", std=std)
    np.savez(folder / "data.npz", **arrays)
    models = [client.upload_model(pid, path)["id"] for path in (golden, compressed)]
    for model_id in models:
        client.wait_model(model_id)
    dataset = client.upload_dataset(pid, folder / "data.npz")["id"]
    job = client.create_fidelity_job(pid, *models, dataset, batch_size=4, **task)
    assert client.wait_job(job["id"], timeout=300)["status"] == "succeeded", job
    return str(job["id"])


def test_the_inspector_shows_masks_pictures_and_playable_audio(
    tools: tuple[str, str], stack: tuple[str, Process, str], tmp_path: Path
) -> None:
    node, chromium = tools
    base, proc, token = stack
    client = KneeboardClient(base, token=token)
    pid = client.create_project("task media")["id"]
    rng = np.random.default_rng(0)
    pictures = rng.uniform(0, 1, (8, 1, 16, 16)).astype(np.float32)
    t = np.arange(400) / RATE
    clean = (0.6 * np.sin(2 * np.pi * rng.uniform(200, 800, (6, 1, 1)) * t)).astype(np.float32)
    noisy = (clean + 0.2 * rng.standard_normal(clean.shape)).astype(np.float32)
    jobs = {
        "segmentation": _job(
            client, pid, tmp_path / "seg", TinySegmenter(),
            {"input": pictures - 0.5, "masks": rng.integers(0, 3, (8, 16, 16))}, std=0.5, task="segmentation",
        ),
        "image": _job(client, pid, tmp_path / "image", TinyPictureModel(), {"input": pictures}, task="image"),
        "signal": _job(
            client, pid, tmp_path / "signal", TinyWaveModel(), {"input": noisy, "clean": clean},
            task="signal", task_options={"sample_rate": RATE},
        ),
    }  # fmt: skip
    views = {kind: client.http.get(f"/jobs/{job}/samples/{SAMPLE}/task").json() for kind, job in jobs.items()}

    config = driver_config(base, chromium, "task-media", sample=SAMPLE, sampleRate=RATE, **jobs)
    seen = run_driver(node, DRIVER, config, proc)
    assert seen["consoleErrors"] == []

    # Segmentation: truth, golden and compressed label maps, each a 16 × 16 picture as the job stored it, drawn
    # at the opacity the slider sets; the disagreement layer over both models' maps when asked for.
    assert seen["maskRoles"] == ["mask-truth", "mask-golden", "mask-compressed"]
    assert [m[:2] for m in seen["masks"]] == [[16, 16]] * 3
    assert [m[3] for m in seen["masks"]] == [0.6] * 3
    assert [m[3] for m in seen["masksAfterOpacity"]] == [0.2] * 3
    assert views["segmentation"]["disagreeing_pixels"] > 0
    assert [m[:2] for m in seen["disagreementLayers"]] == [[16, 16]] * 2
    assert seen["segmentationErrors"] == 0

    # Image output: three 16 × 16 pictures, drawn at one width, four times wider together at zoom 4.
    assert seen["pictureRoles"] == ["picture-golden", "picture-compressed", "picture-difference"]
    assert [p[:2] for p in seen["pictures"]] == [[16, 16]] * 3
    widths = {p[2] for p in seen["pictures"]}
    assert len(widths) == 1 and widths.pop() > 16
    assert {p[2] for p in seen["picturesZoomed"]} == {seen["pictures"][0][2] * 4}
    assert seen["imageErrors"] == 0

    # Signal: clean, golden and compressed waveforms; each WAV fetched with the page's session and decoded by
    # Chromium to the 400 frames at 8 kHz the job stored (0.05 s, as the API states).
    signal = views["signal"]
    assert signal["sample_rate"] == RATE and signal["duration_s"] == pytest.approx(0.05)
    assert seen["waveforms"] == 3
    assert [a["label"] for a in seen["audio"]] == ["clean audio", "golden audio", "compressed audio"]
    for decoded in seen["audio"]:
        assert decoded["status"] == 200 and decoded["type"] == "audio/wav"
        assert decoded["frames"] == 400 and decoded["sampleRate"] == RATE
        assert decoded["duration"] == pytest.approx(signal["duration_s"])
    assert seen["signalErrors"] == 0
