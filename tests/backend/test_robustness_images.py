"""The pictures of the robustness slices' worst samples (issue 13), through a fidelity job run in-process by
the real handlers on the demo's digits CNN over the real app, Postgres and a local artifact store: GET
/jobs/{id}/robustness/{slice}/{severity}/samples/{index}.png serves a PNG whose pixels (decoded by Pillow)
are the corrupted row re-made here with numpy, drawn on the clean row's range (also re-made here); it
answers 404 with the reason for what it does not hold, 503 for a damaged archive; each job has its own
archive (a rerun's is another), which deleting the job removes; a job that stops or fails after the
slices, or does not commit its results, leaves no archive in the store."""

from __future__ import annotations

import copy
import io
import json
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from celery.exceptions import SoftTimeLimitExceeded
from fastapi.testclient import TestClient
from PIL import Image
from sqlalchemy import select

from backend import job_lifecycle
from backend.api.app import create_app
from backend.api.result_schemas.robustness import RobustnessOut
from backend.array_png import array_thumbnail
from backend.contracts import RESULT_FIDELITY_ROBUSTNESS
from backend.db.models import JobResult
from backend.db.session import session_factory
from backend.errors import StorageError
from backend.robustness_images import JOB_MEMBER, PNG_MAX_SIDE, read_member, write_archive
from backend.settings import Settings
from backend.storage import LocalArtifactStore
from tests.backend.test_typed_results import extras
from tests.conftest import truncate_all
from tests.support.fidelity_api import FidelityApi
from tests.support.services import stack_settings
from worker.demo.models import DemoBundle, write_demo_bundle
from worker.engine.errors import JobCancelled
from worker.engine.robustness import SLICES
from worker.jobs.fidelity import FidelityHandler
from worker.runtime import execute_job

SAMPLES = 96
OPTIONS = {"slices": ["brightness", "contrast"], "severities": [1, 3], "max_samples": SAMPLES}


@pytest.fixture(scope="module")
def settings(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return stack_settings(pg_url, tmp_path_factory.mktemp("robustness_images"), "robustness-images")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> DemoBundle:
    return write_demo_bundle(tmp_path_factory.mktemp("robustness_images_demo"))


class Api(FidelityApi):
    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.http.request(method, f"/api/v1{path}", headers=self.headers, **kwargs)

    def store(self) -> LocalArtifactStore:
        return LocalArtifactStore(Path(self.settings.resolved_artifact_uri.removeprefix("file://")))

    def stored_files(self) -> set[Path]:
        return {p for p in self.store().root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def api(settings: Settings, pg_url: str, bundle: DemoBundle) -> Iterator[Api]:
    truncate_all(pg_url)
    with TestClient(create_app(settings, run_reaper=False)) as http:
        yield Api(http, settings, "pictures", bundle.golden_onnx, bundle.int8_onnx, bundle.test_npz)
    truncate_all(pg_url)


@pytest.fixture(scope="module")
def job(api: Api) -> str:
    return api.fidelity(layer_profile=False, robustness=OPTIONS)


def numpy_corrupted(name: str, severity: int, x: np.ndarray) -> np.ndarray:
    """Brightness (+ value · std) and contrast (mean + value · (x − mean)) of transforms.py, the statistics
    over the first SAMPLES rows (the job's max_samples), in float64, cast back to the data's dtype."""
    value = SLICES[name].values[severity - 1]
    data = x[:SAMPLES].astype(np.float64)
    mean, std = float(data.mean()), float(data.std())
    out = data + value * std if name == "brightness" else mean + value * (data - mean)
    return out.astype(x.dtype)


def decoded(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)))


def test_each_worst_sample_has_its_corrupted_picture(api: Api, job: str, bundle: DemoBundle) -> None:
    served = api.call("GET", f"/jobs/{job}/robustness").json()
    typed = RobustnessOut.model_validate(served)
    assert not list(extras(typed))
    assert typed.images is not None and typed.images.count == 2 * 2 * 10 and typed.images.bytes > 0
    x = np.load(bundle.test_npz)["input"]
    for slice_doc in typed.slices:
        for point in slice_doc.points:
            corrupted = numpy_corrupted(slice_doc.name, point.severity, x)
            assert len(point.worst_samples) == 10 and all(w.image for w in point.worst_samples)
            for w in point.worst_samples[:3]:
                answer = api.call(
                    "GET",
                    f"/jobs/{job}/robustness/{slice_doc.name}/{point.severity}/samples/{w.sample_index}.png",
                )
                assert answer.status_code == 200 and answer.headers["content-type"] == "image/png"
                pixels = decoded(answer.content)
                row, clean = corrupted[w.sample_index], x[w.sample_index].astype(np.float64)
                lo, hi = float(clean.min()), float(clean.max())
                assert np.array_equal(
                    pixels, decoded(array_thumbnail(row, PNG_MAX_SIDE, value_range=(lo, hi)))
                )
                # Independently of array_thumbnail: 8x8 enlarged 16x, the clean range to 0..255, clipped.
                factor = PNG_MAX_SIDE // 8
                assert pixels.shape == (PNG_MAX_SIDE, PNG_MAX_SIDE)
                expected = np.round(np.clip((row[0].astype(np.float64) - lo) / (hi - lo), 0, 1) * 255)
                assert np.abs(pixels[::factor, ::factor].astype(int) - expected.astype(int)).max() <= 1
    brightness = typed.slices[0].points[-1].worst_samples[0].sample_index
    clean_png = api.call("GET", f"/jobs/{job}/samples/{brightness}/input.png")
    bright_png = api.call("GET", f"/jobs/{job}/robustness/brightness/3/samples/{brightness}.png")
    assert decoded(bright_png.content).mean() > decoded(clean_png.content).mean()  # the shift shows


def test_what_is_not_held_is_a_404_that_says_why(api: Api, job: str, settings: Settings) -> None:
    served = api.call("GET", f"/jobs/{job}/robustness").json()
    worst = {w["sample_index"] for w in served["slices"][0]["points"][0]["worst_samples"]}
    other = next(i for i in range(SAMPLES) if i not in worst)
    cases = {
        f"brightness/1/samples/{other}.png": "not among the worst samples",
        "brightness/2/samples/0.png": "no robustness slice 'brightness' at severity 2",
        "jpeg/1/samples/0.png": "no robustness slice 'jpeg'",
    }
    for path, message in cases.items():
        answer = api.call("GET", f"/jobs/{job}/robustness/{path}")
        assert answer.status_code == 404 and message in answer.json()["detail"], answer.text
    index = next(iter(worst))
    assert api.call("GET", f"/jobs/{job}/robustness/snow/1/samples/{index}.png").status_code == 422
    other_array = api.call("GET", f"/jobs/{job}/robustness/brightness/1/samples/{index}.png?array=mask")
    assert other_array.status_code == 404 and "'mask'" in other_array.json()["detail"]
    # A document stored before the pictures existed has no ``image`` and no ``images``.
    with session_factory(settings.resolved_database_url)() as s:
        row = s.execute(
            select(JobResult).where(
                JobResult.job_id == uuid.UUID(job), JobResult.key == RESULT_FIDELITY_ROBUSTNESS
            )
        ).scalar_one()
        saved = row.payload
        old = {k: v for k, v in copy.deepcopy(saved).items() if k != "images"}  # saved stays whole
        for slice_doc in old["slices"]:
            for point in slice_doc["points"]:
                point["worst_samples"] = [
                    {k: v for k, v in w.items() if k != "image"} for w in point["worst_samples"]
                ]
        row.payload = old
        s.commit()
        try:
            typed = RobustnessOut.model_validate(api.call("GET", f"/jobs/{job}/robustness").json())
            assert typed.images is None and not any(
                w.image for s_ in typed.slices for p in s_.points for w in p.worst_samples
            )
            answer = api.call("GET", f"/jobs/{job}/robustness/brightness/1/samples/{index}.png")
            assert answer.status_code == 404 and "relaunch" in answer.json()["detail"]
        finally:
            row.payload = saved
            s.commit()


def test_each_job_has_its_own_archive_and_deleting_one_keeps_the_others(api: Api) -> None:
    """A rerun draws the same pictures (seeded corruptions) into an archive of its own, which names its job:
    deleting the first job, even while a rerun has put its archive but not committed yet, cannot remove
    the rerun's pictures (issue: the shared archive was released under a rerun)."""
    options = OPTIONS | {"severities": [3]}
    first, second = (
        api.fidelity(layer_profile=False, robustness=options),
        api.fidelity(layer_profile=False, robustness=options),
    )
    shas = [api.call("GET", f"/jobs/{j}/robustness").json()["images"]["sha256"] for j in (first, second)]
    assert shas[0] != shas[1]
    store = api.store()
    members = []
    for job_id, sha in zip((first, second), shas, strict=True):
        with zipfile.ZipFile(store.local_path(sha)) as archive:
            assert json.loads(archive.read(JOB_MEMBER))["job"] == job_id
            members.append({n: archive.read(n) for n in archive.namelist() if n != JOB_MEMBER})
    assert members[0] == members[1] and len(members[0]) == 2 * 10  # the same pictures, stored twice
    assert api.call("DELETE", f"/jobs/{first}").status_code == 204
    assert not store.exists(shas[0]) and store.exists(shas[1])
    index = api.call("GET", f"/jobs/{second}/robustness").json()["slices"][0]["points"][0]["worst_samples"][0]
    picture = api.call("GET", f"/jobs/{second}/robustness/brightness/3/samples/{index['sample_index']}.png")
    assert picture.status_code == 200
    assert api.call("DELETE", f"/jobs/{second}").status_code == 204
    assert not store.exists(shas[1])


def _cancel_job(api: Api, job_id: str) -> None:
    """Cancel the job in the database as its user would, without the worker noticing before it writes."""
    with session_factory(api.settings.resolved_database_url)() as s:
        assert job_lifecycle.cancel(s, uuid.UUID(job_id))


@pytest.mark.parametrize(
    "stop, outcome",
    [
        (RuntimeError("the layer profile crashed"), "failed"),
        (SoftTimeLimitExceeded(), "failed"),
        (JobCancelled("the job was cancelled"), "cancelled"),
        (None, "skipped"),  # cancelled while the results are written: write_and_finish finds it not ours
    ],
)
def test_a_job_that_does_not_commit_leaves_no_archive(
    api: Api, monkeypatch: pytest.MonkeyPatch, stop: BaseException | None, outcome: str
) -> None:
    """The steps after the slices (here the layer profile, the last one) fail, hit the time limit, are
    cancelled, or the job is cancelled once they are done: the store holds no archive of the job."""
    before = api.stored_files()
    job_id = api.submit(layer_profile=False, robustness=OPTIONS | {"severities": [3]})
    reached: list[bool] = []

    def after_the_slices(*args: object, **kwargs: object) -> None:
        reached.append(True)
        if stop is not None:
            raise stop
        _cancel_job(api, job_id)

    monkeypatch.setattr("worker.jobs.fidelity.layer_profile_results", after_the_slices)
    assert execute_job(job_id, FidelityHandler(), api.settings) == outcome
    assert reached == [True]
    assert api.stored_files() == before
    with session_factory(api.settings.resolved_database_url)() as s:
        assert s.scalars(select(JobResult).where(JobResult.job_id == uuid.UUID(job_id))).all() == []


def test_a_damaged_archive_is_a_storage_error(api: Api, job: str, tmp_path: Path) -> None:
    """A truncated archive, or a picture whose bytes changed (its CRC fails), answers 503 with the reason,
    not a 500; read_member says the same of any file that is not a ZIP."""
    served = api.call("GET", f"/jobs/{job}/robustness").json()
    index = served["slices"][0]["points"][0]["worst_samples"][0]["sample_index"]
    path = api.store().local_path(served["images"]["sha256"])
    url = f"/jobs/{job}/robustness/brightness/1/samples/{index}.png"
    whole = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(f"brightness/1/{index}/input.png")
    flipped = bytearray(whole)
    flipped[info.header_offset + 30 + len(info.filename) + 40] ^= 0xFF  # a byte of the PNG's data
    try:
        for damaged in (whole[: len(whole) // 2], bytes(flipped)):
            path.write_bytes(damaged)
            answer = api.call("GET", url)
            assert answer.status_code == 503, answer.text
            assert "cannot be read" in answer.json()["detail"] and "relaunch" in answer.json()["detail"]
    finally:
        path.write_bytes(whole)
    assert api.call("GET", url).status_code == 200
    not_zip = tmp_path / "not.zip"
    not_zip.write_bytes(b"\x89PNG not an archive")
    with pytest.raises(StorageError, match="BadZipFile"):
        read_member(not_zip, "brightness", 1, 0, None)
    write_archive([("brightness/1/0/input.png", b"png")], not_zip)
    not_zip.write_bytes(not_zip.read_bytes()[:-30])  # the end of the central directory cut off
    with pytest.raises(StorageError, match="BadZipFile"):
        read_member(not_zip, "brightness", 1, 0, None)
