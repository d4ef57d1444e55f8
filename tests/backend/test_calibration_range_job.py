"""A fidelity job with a calibration set, run in-process by the real handlers on the demo's digits CNN
(float ONNX against its int8 QDQ copy) over the real app and Postgres: every profiled layer's
calibration range and the share of evaluation values outside it are stored and served typed by
GET /jobs/{id}/fidelity/layers, and equal numpy's on activations the test captures itself with onnxruntime;
a calibration set the model cannot run leaves a note while the report and the profile stand; a zip of
images is decoded only up to calibration_samples (a damaged image after them does not matter) and an .npz
is cut as a memory-mapped view; the API refuses another project's dataset (404), garbage (422) and a
calibration set without a profile (422)."""

from __future__ import annotations

import json
import struct
import uuid
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest
from sqlalchemy import select

from backend.api.schemas import LayerProfileOut
from backend.contracts import RESULT_FIDELITY_LAYERS
from backend.db.models import Dataset, JobResult
from backend.db.session import session_factory
from backend.settings import Settings
from dataset_readers.image_zip import decode as image_decode
from tests.backend.test_typed_results import missing
from tests.engine.test_activation_shift import capture
from tests.support.app_fixtures import demo_bundle_fixtures
from tests.support.fidelity_api import FidelityApi
from tests.support.images import png_bytes
from worker.demo.models import DemoBundle
from worker.engine.errors import DatasetMismatchError
from worker.jobs.inputs import load_dataset

settings, http, bundle, api = demo_bundle_fixtures("calibration")


def stored_profile(settings: Settings, job_id: str) -> dict[str, Any]:
    with session_factory(settings.resolved_database_url)() as s:
        return s.execute(
            select(JobResult.payload).where(
                JobResult.job_id == uuid.UUID(job_id), JobResult.key == RESULT_FIDELITY_LAYERS
            )
        ).scalar_one()


def test_the_calibration_range_is_stored_and_served(
    api: FidelityApi, bundle: DemoBundle, tmp_path: Path
) -> None:
    """The demo digits halved (with labels, which the profile leaves out) as the calibration set; 40 of
    them are used."""
    digits = np.load(bundle.test_npz)
    halved = (digits["input"] * np.float32(0.5)).astype(np.float32)
    np.savez(tmp_path / "halved.npz", input=halved, labels=digits["labels"])
    calibration = api.upload("datasets", tmp_path / "halved.npz")
    job_id = api.fidelity(calibration_dataset_id=calibration, calibration_samples=40)
    answer = api.get(f"/jobs/{job_id}/fidelity/layers")
    assert answer.status_code == 200, answer.text
    served = LayerProfileOut.model_validate(answer.json())
    stored = stored_profile(api.settings, job_id)
    assert not list(missing(stored, answer.json()))
    assert served.error is None and served.calibration_samples == 40
    x = digits["input"][: served.n_samples]
    names = [layer.name for layer in served.layers]
    cal = capture(bundle.golden_onnx, names, [halved[:40]])
    ev = capture(bundle.golden_onnx, names, [x])
    outside = 0
    for layer in served.layers:
        shift = layer.shift
        assert shift is not None
        low, high = cal[layer.name].min(), cal[layer.name].max()
        below, above = int((ev[layer.name] < low).sum()), int((ev[layer.name] > high).sum())
        assert (shift.calibration_min, shift.calibration_max) == (float(low), float(high)), layer.name
        assert (shift.calibration_below, shift.calibration_above) == (below, above), layer.name
        assert shift.calibration_outside_rate == pytest.approx(
            (below + above) / ev[layer.name].size, rel=1e-12
        )
        outside += below + above > 0
    assert outside >= 3
    kinds = [cause.kind for cause in served.likely_causes]
    assert "calibration_range" in kinds


def test_a_calibration_set_that_does_not_fit_leaves_a_note(api: FidelityApi, tmp_path: Path) -> None:
    np.savez(tmp_path / "flat.npz", input=np.zeros((20, 64), np.float32))
    flat = api.upload("datasets", tmp_path / "flat.npz")
    job_id = api.fidelity(calibration_dataset_id=flat)
    summary = api.get(f"/jobs/{job_id}/fidelity")
    assert summary.status_code == 200 and summary.json()["summary"]["n_samples"] > 0
    served = LayerProfileOut.model_validate(api.get(f"/jobs/{job_id}/fidelity/layers").json())
    assert served.error is None and served.calibration_samples is None and len(served.layers) >= 4
    assert all(layer.accumulated.sqnr_db is not None for layer in served.layers)
    assert all(layer.shift and layer.shift.calibration_outside_rate is None for layer in served.layers)
    note = next(note for note in served.notes if "calibration set could not be run" in note)
    assert "input" in note


def launch(api: FidelityApi, **params: Any) -> Any:
    base = {"golden_model_id": api.golden, "compressed_model_id": api.int8, "dataset_id": api.dataset}
    return api.http.post(
        "/api/v1/jobs",
        headers=api.headers,
        json={"project_id": api.project, "kind": "fidelity", "params": base | params},
    )


def test_the_calibration_set_must_be_the_projects(api: FidelityApi, tmp_path: Path) -> None:
    other = api.post("/projects", json={"name": "elsewhere"})["id"]
    np.savez(tmp_path / "elsewhere.npz", input=np.zeros((4, 1, 8, 8), np.float32))
    with (tmp_path / "elsewhere.npz").open("rb") as f:
        foreign = api.post(f"/projects/{other}/datasets", files={"file": ("elsewhere.npz", f)})["id"]
    answer = launch(api, calibration_dataset_id=foreign)
    assert answer.status_code == 404, answer.text
    assert foreign in answer.json()["detail"]
    answer = launch(api, calibration_dataset_id=str(uuid.uuid4()))
    assert answer.status_code == 404, answer.text


@pytest.mark.parametrize(
    "params",
    [
        {"calibration_dataset_id": "not-a-uuid"},
        {"calibration_dataset_id": 7},
        {"calibration_samples": 0},
    ],
)
def test_garbage_is_refused(api: FidelityApi, params: dict[str, Any]) -> None:
    answer = launch(api, **params)
    assert answer.status_code == 422, answer.text
    assert "params.calibration_" in answer.json()["detail"]


def test_a_calibration_set_needs_the_profile(api: FidelityApi) -> None:
    answer = launch(api, calibration_dataset_id=api.dataset, layer_profile=False)
    assert answer.status_code == 422, answer.text
    assert "layer_profile" in answer.json()["detail"]


def undecodable_png() -> bytes:
    """An 8 x 8 grayscale PNG whose chunks all have valid CRCs (the upload's Image.verify() accepts it) but
    whose image data is not a zlib stream: decoding it raises."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 8, 8, 8, 0, 0, 0, 0)  # 8 x 8, 8 bits, grayscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", b"not zlib") + chunk(b"IEND", b"")


def digit_zip(path: Path, pixels: np.ndarray, labels: np.ndarray, damaged_at: int) -> Path:
    """The digits (N, 8, 8) uint8 as PNGs in file-name order, with an undecodable image at `damaged_at`
    and a labels.csv for all of them."""
    names = [f"{i:03d}.png" for i in range(len(pixels) + 1)]
    images = [png_bytes(p) for p in pixels]
    images.insert(damaged_at, undecodable_png())
    y = [int(v) for v in labels]
    y.insert(damaged_at, 0)
    with zipfile.ZipFile(path, "w") as zf:
        for name, image in zip(names, images, strict=True):
            zf.writestr(f"cal/{name}", image)
        zf.writestr(
            "cal/labels.csv",
            "filename,label\n" + "".join(f"{n},{v}\n" for n, v in zip(names, y, strict=True)),
        )
    return path


RECIPE = {"size": [8, 8], "mode": "L", "scale": 1 / 255}


def halved_digit_pixels(bundle: DemoBundle, n: int) -> tuple[np.ndarray, np.ndarray]:
    digits = np.load(bundle.test_npz)
    return np.round(digits["input"][:n, 0] * 0.5 * 255).astype(np.uint8), digits["labels"][:n]


def test_an_image_zip_is_decoded_only_up_to_the_limit(bundle: DemoBundle, tmp_path: Path) -> None:
    pixels, labels = halved_digit_pixels(bundle, 20)
    path = digit_zip(tmp_path / "cal.zip", pixels, labels, damaged_at=12)
    dataset = Dataset(name="cal", kind="image_zip", artifact_sha256="0" * 64, preprocessing=RECIPE)
    arrays = load_dataset(path, dataset, tmp_path, limit=12)
    expected = pixels[:12, None].astype(np.float32) * np.float32(1 / 255)
    np.testing.assert_array_equal(arrays["input"], expected)
    np.testing.assert_array_equal(arrays["labels"], labels[:12])
    with pytest.raises(DatasetMismatchError, match=r"012\.png"):  # the damaged image is there
        load_dataset(path, dataset, tmp_path, limit=13)


@pytest.mark.parametrize("compressed", [False, True])
def test_an_npz_is_cut_as_a_memory_mapped_view(tmp_path: Path, compressed: bool) -> None:
    x = np.random.default_rng(0).standard_normal((50, 3, 4)).astype(np.float32)
    (np.savez_compressed if compressed else np.savez)(tmp_path / "d.npz", input=x, labels=np.arange(50))
    dataset = Dataset(name="d", kind="npz", artifact_sha256="1" * 64)
    arrays = load_dataset(tmp_path / "d.npz", dataset, tmp_path / "cache", limit=7)
    assert isinstance(arrays["input"], np.memmap) and arrays["input"].shape == (7, 3, 4)
    np.testing.assert_array_equal(arrays["input"], x[:7])
    np.testing.assert_array_equal(arrays["labels"], np.arange(7))


def test_an_image_zip_calibration_set_decodes_only_calibration_samples(
    api: FidelityApi, bundle: DemoBundle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """30 halved digits as PNGs, an undecodable one 17th: with calibration_samples=16 the job decodes 16
    images (the job's own dataset is an .npz), the damaged one is never reached, and the ranges equal
    numpy's on the first 16 digits."""
    pixels, labels = halved_digit_pixels(bundle, 30)
    path = digit_zip(tmp_path / "cal.zip", pixels, labels, damaged_at=16)
    with path.open("rb") as f:
        calibration = api.post(
            f"/projects/{api.project}/datasets",
            files={"file": ("cal.zip", f)},
            data={"preprocessing": json.dumps(RECIPE)},
        )["id"]
    decoded: list[int] = []
    preprocess = image_decode.preprocess_image

    def counted(data: IO[bytes], *args: Any) -> np.ndarray:
        decoded.append(1)
        return preprocess(data, *args)

    monkeypatch.setattr(image_decode, "preprocess_image", counted)
    job_id = api.fidelity(calibration_dataset_id=calibration, calibration_samples=16)
    assert len(decoded) == 16
    served = LayerProfileOut.model_validate(api.get(f"/jobs/{job_id}/fidelity/layers").json())
    assert served.error is None and served.calibration_samples == 16, served.notes
    assert not [note for note in served.notes if "calibration set" in note]
    used = pixels[:16, None].astype(np.float32) * np.float32(1 / 255)  # what the recipe makes of them
    x = np.load(bundle.test_npz)["input"][: served.n_samples]
    names = [layer.name for layer in served.layers]
    cal, ev = capture(bundle.golden_onnx, names, [used]), capture(bundle.golden_onnx, names, [x])
    outside = 0
    for layer in served.layers:
        assert layer.shift is not None
        low, high = cal[layer.name].min(), cal[layer.name].max()
        below, above = int((ev[layer.name] < low).sum()), int((ev[layer.name] > high).sum())
        assert (layer.shift.calibration_min, layer.shift.calibration_max) == (float(low), float(high))
        assert (layer.shift.calibration_below, layer.shift.calibration_above) == (below, above), layer.name
        outside += below + above > 0
    assert outside >= 3
