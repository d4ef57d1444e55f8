"""Robustness slices and out-of-distribution data in the browser (issue 13, seed 003): on the demo project, a
fidelity job launched from the form with robustness checked and a second dataset (the demo digits inverted)
chosen as out-of-distribution data runs on the real worker; the report shows every slice x severity in its
ratio table, the corrupted input of a clicked worst sample (the API's picture, loaded) beside its clean one,
and the out-of-distribution panel with the API's numbers and worst samples, the first of which, clicked,
shows that row of the out-of-distribution dataset (the dataset preview's thumbnail, loaded).

Uses the embedded stack and its demo project (tests/browser/test_dashboard.py's fixtures); driven by
drive_robustness.mjs.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from kneeboard_client import KneeboardClient
from tests.browser.support import DemoStack, driver_config, run_driver
from worker.demo.models import write_demo_bundle

pytestmark = pytest.mark.browser

DRIVER = Path(__file__).with_name("drive_robustness.mjs")


def number(text: str) -> float:
    """A figure as the dashboard prints it: '0.01234', '1.2e-4', '98.61 %'."""
    return float(text.removesuffix(" %")) / 100 if text.endswith(" %") else float(text)


def test_robustness_with_ood_data_from_the_form_to_the_report(demo: DemoStack, tmp_path: Path) -> None:
    node, chromium, base, proc, token = demo
    client = KneeboardClient(base, token=token)
    project = next(p for p in client.projects() if p["name"] == "demo")
    pid = project["id"]
    demo_job = client.http.get("/jobs", params={"project_id": pid, "kind": "fidelity"}).json()["items"][0]
    digits = np.load(write_demo_bundle(tmp_path / "bundle").test_npz)
    np.savez(tmp_path / "inverted digits.npz", input=1.0 - digits["input"], labels=digits["labels"])
    ood = client.upload_dataset(pid, tmp_path / "inverted digits.npz", name="inverted digits")
    params = demo_job["params"]
    ids = {
        "project": pid,
        "golden": params["golden_model_id"],
        "compressed": params["compressed_model_id"],
        "dataset": params["dataset_id"],
        "ood": ood["id"],
    }
    seen = run_driver(node, DRIVER, driver_config(base, chromium, "robustness", ids=ids), proc, timeout=360)
    assert seen["consoleErrors"] == []
    assert seen["oodBeforeCheck"] == 0  # the select appears with the checkbox
    assert any(o.startswith("inverted digits") for o in seen["oodOptions"])
    clean_name = client.dataset(params["dataset_id"])["name"]
    assert not any(o.startswith(f"{clean_name} (") for o in seen["oodOptions"])  # not the job's own dataset

    # The slices the form offered for the digits (pictures; a PyTorch golden model: the attacks too), the
    # choice sent as made, and only those slices x severities run.
    chosen = [s for s in seen["offeredSlices"] if s.strip() != "JPEG"]
    assert "JPEG" in [s.strip() for s in seen["offeredSlices"]] and "Token replacement" in seen["notOffered"]
    sent = seen["launchedRobustness"]
    assert (
        sent["severities"] == [1, 2] and "jpeg" not in sent["slices"] and len(sent["slices"]) == len(chosen)
    )
    served = client.http.get(f"/jobs/{seen['jobId']}/robustness").json()
    ran = {p["severity"] for s in served["slices"] for p in s["points"]}
    assert ran == {1, 2} and "jpeg" not in {s["name"] for s in served["slices"]}
    assert served["error"] is None and served["ood"]["error"] is None
    assert seen["ratioRows"] == sum(len(s["points"]) for s in served["slices"]) > 0
    name, severity = seen["worstPoint"].split(":")
    point = next(
        p
        for s in served["slices"]
        if s["name"] == name
        for p in s["points"]
        if str(p["severity"]) == severity
    )
    first = point["worst_samples"][0]
    assert seen["worstPicked"] == f"#{first['sample_index']}" and first["image"] is True
    assert seen["pickedPressed"] == "true"
    picture = f"/api/v1/jobs/{seen['jobId']}/robustness/{name}/{severity}/samples/{first['sample_index']}.png"
    assert seen["corruptedSrc"] == picture
    assert seen["corruptedWidth"] > 0 and seen["cleanWidth"] > 0  # both pictures loaded in the page
    png = client.http.get(picture.removeprefix("/api/v1"))
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    golden, compressed = first["golden_class"], first["compressed_class"]
    assert seen["previewCaptions"][1].endswith(
        f"golden {golden}, compressed {compressed}" + (" (they disagree)" if golden != compressed else "")
    )
    found, clean = served["ood"], served["clean"]
    assert seen["oodHeading"] == "Out-of-distribution data: inverted digits"
    rows = seen["oodMetrics"]
    assert rows["Samples"] == [str(clean["n_samples"]), str(found["n_samples"])]
    kl = rows["Mean KL (nats)"]
    assert number(kl[0]) == pytest.approx(clean["kl_mean_nats"], rel=1e-3)
    assert number(kl[1]) == pytest.approx(found["kl_mean_nats"], rel=1e-3)
    for label, key in (("Top-1 agreement", "top1_agreement"), ("Golden accuracy", "golden_accuracy")):
        assert number(rows[label][1]) == pytest.approx(found[key], abs=6e-4)
    ratio = seen["oodText"].split("Brittleness ratio: ")[1].split("×")[0]
    assert number(ratio) == pytest.approx(found["brittleness_ratio"], rel=5e-3)  # 3 digits shown
    assert seen["oodWorst"] == [f"#{w['sample_index']}" for w in found["worst_samples"]]
    # The first out-of-distribution worst sample, clicked: the row of that dataset, drawn by the API.
    top = found["worst_samples"][0]
    assert seen["oodPressed"] == "true"
    thumbnail = f"/api/v1/datasets/{ood['id']}/samples/{top['sample_index']}/thumbnail.png"
    assert seen["oodSrc"] == thumbnail
    assert seen["oodWidth"] > 0  # loaded in the page
    assert seen["oodPreviewHeading"] == f"Row #{top['sample_index']} of inverted digits"
    png = client.http.get(thumbnail.removeprefix("/api/v1"))
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    # The picture is that row of the uploaded dataset: its pixels follow the inverted digit's, independently
    # min-max scaled here (the thumbnail route scales each sample to 0..255 and enlarges it nearest-neighbour).
    drawn = np.asarray(Image.open(io.BytesIO(png.content)).convert("L"), dtype=np.float64)
    row = (1.0 - digits["input"][top["sample_index"]]).reshape(8, 8)
    expected = (row - row.min()) / (row.max() - row.min()) * 255
    scale = drawn.shape[0] // 8
    assert np.abs(drawn[scale // 2 :: scale, scale // 2 :: scale] - expected).max() <= 1.0
    golden, compressed = top["golden_class"], top["compressed_class"]
    assert seen["oodCaption"] == f"golden {golden}, compressed {compressed}" + (
        " (they disagree)" if golden != compressed else ""
    )
