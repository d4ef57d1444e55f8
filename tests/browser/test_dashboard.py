"""The built dashboard (frontend/dist) in headless Chromium against the embedded stack: a user's path from the
demo project through a model upload and a fidelity job to the report's rendered charts, then a sensitivity scan
launched from the page to its heatmap, a layer's channel importance and the compare page's profiles, then a sweep
launched from the page to its Pareto chart (frontier, knee), a clicked point's details and export, a bound, and
the compare page's frontier.

Needs `npm ci && npm run build` in frontend/ first (this test builds nothing), Node and Chromium. Without them
it is skipped, or fails when KNEEBOARD_REQUIRE_BROWSER=1 (CI). The browser is driven by drive_dashboard.mjs
with playwright-core from frontend/node_modules; screenshots land in test-artifacts/browser/.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.support import ADMIN_PASSWORD, ARTIFACTS, wait_for_demo
from tests.support.services import REPO_ROOT, Process

pytestmark = pytest.mark.browser

DRIVER = Path(__file__).with_name("drive_dashboard.mjs")


@pytest.fixture(scope="module")
def demo_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[], Path]]:
    """The demo's int8 ONNX model, written by `python -m worker.demo.seed --write-files` while the stack starts;
    calling the fixture's value waits for it."""
    folder = tmp_path_factory.mktemp("demo-files")
    proc = subprocess.Popen(
        [sys.executable, "-m", "worker.demo.seed", "--write-files", str(folder)],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def wait() -> Path:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err.decode(errors="replace")[-3000:]
        return folder / "digits_cnn_int8.onnx"

    try:
        yield wait
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _distinct_copy(model: Path) -> Path:
    """The same network under another sha256 (a doc string added), so that uploading it makes a new model."""
    import onnx

    proto = onnx.load(str(model))
    proto.doc_string = "browser-test copy"
    copy = model.with_name("browser_test_int8.onnx")
    onnx.save(proto, str(copy))
    return copy


def test_upload_launch_and_read_a_report_in_the_browser(
    tools: tuple[str, str], demo_model: Callable[[], Path], stack: tuple[str, Process, str]
) -> None:
    node, chromium = tools
    base, proc, token = stack
    demo_int8 = demo_model()  # the same bytes as the demo project's int8 model: the upload form says so
    model = _distinct_copy(demo_int8)
    wait_for_demo(base, proc, token)
    config = {
        "base": base,
        "duplicate": str(demo_int8),
        "model": str(model),
        "chromium": chromium,
        "artifacts": str(ARTIFACTS),
        "username": "admin",
        "password": ADMIN_PASSWORD,
    }
    result = subprocess.run(
        [node, str(DRIVER), json.dumps(config)], capture_output=True, text=True, timeout=210, cwd=REPO_ROOT
    )
    lines = result.stdout.strip().splitlines()
    assert lines, f"the driver printed nothing:\n{result.stderr[-4000:]}"
    seen: dict[str, Any] = json.loads(lines[-1])
    assert result.returncode == 0 and "error" not in seen, (
        f"{seen.get('error')}\nsteps: {seen['steps']}\n{result.stderr[-3000:]}\nAPI log:\n{proc.log()[-3000:]}"
    )

    # The demo dataset's preview: 8 digit thumbnails that the browser decoded, and each sample's array facts.
    preview = seen["datasetPreview"]
    assert preview["expanded"] == "true" and preview["naturalWidth"] > 0, preview
    assert preview["thumbnails"] == 8 and preview["arrays"] == 8, preview
    assert seen["reportThumbnails"] > 0  # the per-sample table shows the digits too
    assert seen["duplicateModelRows"] == 0  # the re-uploaded demo file made no second model
    assert seen["uploadedModelReady"] and seen["defaultTopK"] == "5"  # default from /job-kinds' schema
    assert seen["headlineCards"] >= 6 and seen["verdict"].startswith("Damage is")
    # Plotly drew the histogram (bars and the threshold line) and both reliability diagrams.
    hist = seen["histogram"]
    assert hist["mainSvg"] >= 1 and hist["bars"] >= 3 and hist["shapes"] >= 1 and hist["modebarPng"] == 1, (
        hist
    )
    for role, chart in seen["reliability"].items():
        assert chart["mainSvg"] >= 1 and chart["bars"] >= 1 and chart["scatterTraces"] >= 2, (role, chart)
    # The per-layer profile of the QDQ int8 model against its fp32 golden: SQNR traces (accumulated and local)
    # over the matched layers, the layer adding the most error marked, its table and its CSV.
    layers = seen["layerProfile"]
    assert layers["mainSvg"] >= 1 and layers["traces"] >= 2 and layers["points"] >= 4, layers
    assert layers["modebarPng"] == 1 and layers["cosineTraces"] >= 2, layers
    assert layers["tableRows"] >= 2 and layers["worstRows"] == 1 and layers["sortedFirstIsWorst"], layers
    assert layers["worst"].startswith("Adds the most error:") and "dB" in layers["worst"], layers
    header, *rows = layers["csv"]["lines"]
    assert layers["csv"]["filename"] == "per-layer-sqnr.csv", layers["csv"]
    assert header.startswith(
        "depth,depth_fraction,layer,name,compressed_name,op_type,accumulated_sqnr_db,local_sqnr_db"
    )
    # One name per layer: what the chart's ticks call a layer is what both tables call it (the demo's
    # profile rows are named after output tensors, relu / relu_1, and identified by module, conv1 / conv2).
    shift_names = [name.strip() for name in layers["shiftNames"]]
    assert shift_names and set(shift_names) <= set(layers["tableNames"]), layers
    assert set(layers["tickNames"]) == set(layers["tableNames"]), layers
    assert "relu_1" not in layers["tableNames"] and "conv2" in layers["tableNames"], layers
    assert len(rows) == layers["tableRows"], layers["csv"]
    # A clicked row is selected in the URL (a permalink) and marked on the histogram.
    selection = seen["selection"]
    assert (
        f"sample={selection['sampleIndex']}" in selection["url"]
        and selection["histogramShapes"] > hist["shapes"]
    )
    assert seen["flaggedFilter"]["rows"] == seen["flaggedFilter"]["badges"] > 0
    assert seen["csv"]["filename"].endswith(".csv") and seen["csv"]["head"] == "bin_lower,bin_upper,count"
    assert seen["compareRows"] >= 2 and seen["layerRows"] >= 3
    _assert_sensitivity(seen)
    _assert_sweep(seen)
    _assert_accounts(seen)
    assert not seen["consoleErrors"], seen["consoleErrors"]


def _assert_accounts(seen: dict[str, Any]) -> None:
    """Signing in, a personal API token made, used and revoked on the account page, the team's audit trail,
    and a session that ends: back to the sign-in page, then to the same permalink."""
    sign_in = seen["signIn"]
    assert sign_in["wrongPassword"] == "Wrong username or password.", sign_in
    assert sign_in["header"] == "admin" and "default" in sign_in["teams"], sign_in
    token = seen["apiToken"]
    assert token["warning"].startswith("Copy it now: it will not be shown again"), token
    assert token["secret"].startswith(token["prefix"]) and len(token["secret"]) > len(token["prefix"]), token
    assert token["meWithToken"] == {"status": 200, "username": "admin", "auth": "token"}, token
    assert not token["secretOnPageAfterDone"] and not token["secretOnPageAfterReload"], token
    assert token["lastUsed"] != "never" and token["statusAfterRevoke"] == "revoked", token
    # asked in the page's dialog (focus on the way out), not the browser's confirm(); "Keep it" kept it
    assert token["nativeDialogs"] == 0 and token["focusedOnOpen"] == "Keep it", token
    assert token["statusAfterKeep"] == "active" and "stops working at once" in token["askText"], token
    assert token["meAfterRevoke"] == 401, token
    audit = seen["audit"]
    assert audit["uploadedByAdmin"] >= 1 and audit["rows"] >= 2, audit
    assert audit["filtered"] == audit["filteredUploads"] >= 1, audit  # the action filter (in the URL)
    assert "action=model.uploaded" in audit["filterUrl"], audit
    assert "model browser-test int8" in audit["uploadedTargets"], audit  # the model this test uploaded
    expired = seen["sessionEnded"]
    assert expired["signInShown"] and expired["note"].startswith("Your session has ended"), expired
    assert expired["urlKept"] and expired["backOnTeamPage"], expired


# The demo's digits CNN: its compressible layers in depth order.
DEMO_LAYERS = ["conv1", "conv2", "fc"]
CONV2_CHANNELS = 16


def _assert_sensitivity(seen: dict[str, Any]) -> None:
    """The sensitivity scan launched from the form (W8, W4, noise-4 on 100 samples, all-but, 3 chunks)."""
    form = seen["sensitivityForm"]
    assert form["defaultPresets"] == ["W8", "W6", "W4", "noise-4"] and form["defaultBits"] == "6, 5", form
    assert form["json"] == [
        {"type": "weight_quant", "bits": 8},
        {"type": "weight_quant", "bits": 4},
        {"type": "noise", "bits": 4},
    ], form
    # Plotly drew one heatmap trace (an image, not a node per cell) with a row per layer, a column per config.
    heatmap = seen["heatmap"]
    assert heatmap["traceTypes"] == ["heatmap"] and heatmap["images"] == 1, heatmap
    assert heatmap["zRows"] == heatmap["dataRows"] == len(DEMO_LAYERS) and heatmap["zColumns"] == 3, heatmap
    assert heatmap["yLabels"] == DEMO_LAYERS and heatmap["columns"] == [
        "w8-sym-tensor",
        "w4-sym-tensor",
        "noise-w4",
    ]
    assert heatmap["modebarPng"] == 1, heatmap
    hover = heatmap["firstHover"]
    assert "<b>conv1</b>" in hover and "w8-sym-tensor" in hover, hover
    assert all(part in hover for part in ("KL mean:", "top-1 agreement:", "SQNR:")), hover
    assert seen["ranked"] == len(DEMO_LAYERS)
    # the form left the batch empty: the worker chose it (the digits CNN's activations are small: the cap)
    assert seen["sensitivityBatch"] == "64 samples per run (chosen for this model's activation size)", seen
    # Fanned out into 3 chunks, all done by the embedded stack's one worker on the first attempt.
    chunks = seen["chunks"]
    assert [c["status"] for c in chunks] == ["succeeded"] * 3, chunks
    assert all(c["worker"] not in ("", "—") and c["attempts"] == 1 for c in chunks), chunks
    assert seen["wholeModelRows"] == 3
    plans = seen["plans"]  # average bits 6 and 5 over W8/W4/noise-4: measured, no error
    assert len(plans) == 2 and all("nats" in p for p in plans), plans
    csv = seen["heatmapCsv"]
    assert csv["filename"] == "sensitivity-heatmap.csv", csv
    assert (
        csv["lines"][0] == "mode,layer,type,depth_index,depth_fraction,config,kl_mean,top1_agreement,sqnr_db"
    )
    assert len(csv["lines"]) == 1 + len(DEMO_LAYERS) * 3, csv
    # A click on the second row's cell selects conv2 (in the URL, outlined), which has 16 output channels.
    click = seen["layerClick"]
    assert click["layer"] == click["expected"] == "conv2" and "layer=conv2" in click["url"], click
    assert click["heading"].startswith("Layer conv2"), click
    assert click["bars"] == click["l2Bars"] == CONV2_CHANNELS and click["outlined"] >= 1, click
    assert seen["channelCsv"]["lines"][0] == "layer,method,rank,channel,score"
    assert len(seen["channelCsv"]["lines"]) == 1 + CONV2_CHANNELS
    all_but = seen["allBut"]
    assert "view=all_but" in all_but["url"] and all_but["zRows"] == len(DEMO_LAYERS), all_but
    assert all_but["hover"].startswith("all but <b>conv1</b>") and all_but["wholeModelRows"] == 3, all_but
    assert seen["sensitivityWhileOpened"] in ("queued", "running", "succeeded")
    # The compare page overlays the scan: one trace with a point per layer, a bar per layer type.
    profiles = seen["profiles"]
    assert "jobs=" in profiles["url"] and profiles["traces"] == 1 and profiles["points"] == len(DEMO_LAYERS)
    assert profiles["typeBars"] == 2, profiles  # Conv2d and Linear


SWEEP_DEFAULT_PRESETS = ["W8A8", "W8A16", "W4A8", "W8", "W4", "fp16", "prune 50 %", "low-rank 0.5"]


def _assert_sweep(seen: dict[str, Any]) -> None:
    """The sweep launched from the form: W8A8, W4A8 and fp16 on 100 samples, timed 3 times at batch 1 and 32."""
    form = seen["sweepForm"]
    assert form["defaultPresets"] == SWEEP_DEFAULT_PRESETS, form  # SweepJobParams' default configs
    assert form["defaultBatches"] == "1, 32" and form["latencyOn"] and form["exportOn"], form
    channel = {"type": "weight_quant", "per_channel": True}
    assert form["json"] == [
        {
            "type": "quantize",
            "weights": channel | {"bits": 8},
            "activations": {"type": "activation_quant", "bits": 8},
        },
        {
            "type": "quantize",
            "weights": channel | {"bits": 4},
            "activations": {"type": "activation_quant", "bits": 8},
        },
        {"type": "float_cast", "dtype": "fp16"},
    ], form
    n_points = len(form["json"]) + 1  # and fp32, point 0
    assert seen["sweepWhileOpened"] in ("queued", "running", "succeeded")
    # Plotly drew one marker per point in the DOM, the frontier as a line and the knee as a star.
    pareto = seen["pareto"]
    assert pareto["points"] == pareto["dataPoints"] == n_points, pareto
    assert pareto["frontierLine"] >= 1 and 2 <= pareto["frontierPoints"] <= n_points, pareto
    assert pareto["knee"] == 1 and pareto["frontierListed"] == pareto["frontierPoints"], pareto
    assert pareto["uids"][0] == "frontier" and "knee" in pareto["uids"], pareto
    # W4A8 has no runtime (4-bit weights): an open diamond; the others run in ONNX Runtime: circles.
    assert sorted(pareto["symbols"]) == ["circle", "diamond-open"], pareto
    assert {"Pareto frontier", "runs in a real runtime", "simulated only", "knee (best trade-off)"} <= set(
        pareto["legend"]
    ), pareto
    assert pareto["axes"] == ["log", "log"], pareto  # size × KL
    assert pareto["titles"][0].startswith("Size (bytes)") and pareto["titles"][1].startswith("KL mean"), (
        pareto
    )
    assert pareto["modebarPng"] == 1, pareto
    assert seen["sweepTableRows"] == n_points
    chunks = seen["sweepChunks"]
    assert [c["status"] for c in chunks] == ["succeeded"] * n_points and chunks[0]["point"] == "fp32", chunks
    csv = seen["paretoCsv"]
    assert csv["filename"] == "pareto-frontier.csv", csv
    assert csv["lines"][0].startswith(
        "job_id,index,label,description,runtime,real_export,export_available,on_frontier,knee,within_bounds,"
        "slower_than_fp32,kl_mean"
    ), csv
    assert len(csv["lines"]) == 1 + n_points, csv
    # A real mouse click on a point selects it (URL, table row) and opens its details; its export is a zip.
    click = seen["pointClick"]
    assert f"point={click['expectedIndex']}" in click["url"], click
    assert click["selectedRow"] == click["expectedIndex"], click
    assert click["heading"] == f"Point {click['expectedIndex']}: {click['expectedLabel']}", click
    assert click["expectedLabel"] == "w4-sym-channel+a8-minmax" and click["runtime"] == "simulated only", (
        click
    )
    # W4A8 has no real runtime form here: it is not timed, and its export is the simulated float file.
    assert click["latencyRows"] == 0 and "simulated-float" in click["manifestKind"], click
    export = click["export"]
    assert export["filename"].endswith(".zip") and export["zipMagic"] == "PK", export
    assert export["hasModel"] and export["hasManifest"] and export["bytes"] > 1000, export
    # Bounding the KL re-queried the frontier: points above it are faded, the frontier is among the rest.
    bounded = seen["bounded"]
    assert "maxkl=0.001" in bounded["url"] and bounded["faded"] >= 1, bounded
    assert bounded["points"] == n_points, bounded  # faded ones included
    assert bounded["frontierPoints"] < bounded["frontierBefore"], bounded
    assert bounded["listed"] == bounded["frontierPoints"], bounded
    # The compare page puts the sweep on one frontier with the same bound.
    compare = seen["sweepsCompare"]
    assert "sweeps=" in compare["url"] and "maxkl=0.001" in compare["url"], compare
    assert compare["points"] == n_points and compare["frontierLine"] >= 1, compare
