"""The model page's graph section in headless Chromium against the embedded stack (drive_graph.mjs): the demo
CNN coloured by a sensitivity scan of it (the hottest and coolest boxes are the scan's most and least sensitive
layers), a clicked layer's panel against the scan's numbers, a search by an ONNX alias, then a 500-layer model
built in the test: collapsed to a few boxes, expanded to all of them, and the frame times of a wheel zoom and
a drag pan measured (printed; only a sanity bound is asserted). Needs the built dashboard, Node and Chromium,
like test_dashboard.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backend.client import KneeboardClient
from tests.browser.support import DemoStack, driver_config, run_driver
from tests.support.deep_onnx import deep_chain_onnx

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DRIVER = Path(__file__).with_name("drive_graph.mjs")
HOT, COOL, NO_VALUE = "#b40426", "#3b4cc0", "#eef1f5"  # frontend/src/graph/metrics.ts ramp ends, GraphCanvas


def _count(text: str) -> float:
    """A count as formatCount writes it ("1.17 k")."""
    units = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
    value, _, unit = text.strip().partition(" ")
    return float(value) * units.get(unit, 1)


def _number(text: str) -> float:
    match = re.search(r"-?\d+(\.\d+)?(e-?\d+)?", text)
    assert match, text
    return float(match.group(0))


def test_graph_view_colours_picks_searches_and_scales(
    demo: DemoStack,
    tmp_path: Path,
) -> None:
    node, chromium, base, proc, token = demo
    client = KneeboardClient(base, token=token)
    pid = next(p for p in client.projects() if p["name"] == "demo")["id"]
    golden = next(m for m in client.http.get(f"/projects/{pid}/models").json() if "golden" in m["name"])
    dataset = client.http.get(f"/projects/{pid}/datasets").json()[0]
    configs = [{"type": "weight_quant", "bits": b} for b in (8, 4, 2)]
    scan = client.create_job(
        pid,
        "sensitivity",
        {
            "model_id": golden["id"],
            "dataset_id": dataset["id"],
            "max_samples": 60,
            "configs": configs,
            "chunks": 1,
        },
    )
    deep = client.upload_model(
        pid, deep_chain_onnx(tmp_path / "deep.onnx", blocks=250), name="deep chain (500)"
    )
    assert client.wait_job(scan["id"], timeout=240)["status"] == "succeeded"
    assert client.wait_model(deep["id"])["status"] == "ready"

    graph = client.http.get(f"/models/{golden['id']}/graph").json()
    report = client.http.get(f"/jobs/{scan['id']}/sensitivity").json()
    fc = next(n for n in graph["nodes"] if n["id"] == "fc")
    fidelity = client.http.get("/jobs", params={"project_id": pid, "kind": "fidelity"}).json()["items"][0]
    profile = client.http.get(f"/jobs/{fidelity['id']}/fidelity/layers").json()
    # The profile's accumulated SQNR per graph node, matched as the view does (golden side).
    names = {alias: n["id"] for n in graph["nodes"] for alias in n["aliases"]} | {
        n["id"]: n["id"] for n in graph["nodes"]
    }
    sqnr: dict[str, float] = {}
    for row in profile["layers"]:
        found = [names[k] for k in (row["canonical_id"], row["name"], *row["aliases"]) if k in names]
        if found and row["accumulated"]["sqnr_db"] is not None:
            sqnr[found[0]] = row["accumulated"]["sqnr_db"]
    assert len(sqnr) >= 3, profile["layers"]
    config = driver_config(base, chromium, "graph") | {
        "cnn": golden["id"],
        "scan": scan["id"],
        "fidelity": fidelity["id"],
        "sqnrPick": min(sqnr, key=sqnr.__getitem__),
        "deep": deep["id"],
        "pick": "conv2",
        "alias": fc["aliases"][0],
    }
    seen = run_driver(node, DRIVER, config, proc, timeout=300)
    assert not seen["consoleErrors"], seen["consoleErrors"]

    # The CNN is small: every node is drawn; by parameters the largest owner (fc) is hottest.
    assert seen["cnnBoxes"] == len(graph["nodes"])
    owners = {n["id"]: n["params"] for n in graph["nodes"] if n["params"]}
    assert seen["cnnParamsFills"][max(owners, key=owners.__getitem__)] == HOT
    assert seen["cnnParamsFills"][min(owners, key=owners.__getitem__)] == COOL

    # Coloured by the scan's first configuration: hottest = highest KL, coolest = lowest; others no value.
    columns = report["matrix"]["columns"]
    assert seen["configs"] == columns and seen["config"] == columns[0]
    kl = {row: report["matrix"]["kl_mean"][i][0] for i, row in enumerate(report["matrix"]["rows"])}
    assert set(kl) <= {n["id"] for n in graph["nodes"]}, "the scan's layer names are the graph's ids"
    assert seen["scanFills"][max(kl, key=kl.__getitem__)] == HOT
    assert seen["scanFills"][min(kl, key=kl.__getitem__)] == COOL
    assert all(seen["scanFills"][n] == NO_VALUE for n in seen["scanFills"] if n not in kl)
    assert "nats" in seen["legend"][1]

    # Coloured by the fidelity job's accumulated SQNR: lowest SQNR hottest, highest coolest; the clicked
    # (worst) layer's panel gives its SQNR and what it was matched to.
    worst = min(sqnr, key=sqnr.__getitem__)
    assert f"{sqnr[worst]:.1f} dB" in seen["fidelityPanel"], seen["fidelityPanel"]
    assert "Matched to" in seen["fidelityPanel"]
    assert seen["sqnrFills"][worst] == HOT
    assert seen["sqnrFills"][max(sqnr, key=sqnr.__getitem__)] == COOL
    assert _number(seen["sqnrLegend"][0]) == pytest.approx(min(sqnr.values()), abs=0.051)
    assert _number(seen["sqnrLegend"][1]) == pytest.approx(max(sqnr.values()), abs=0.051)

    # The clicked layer's panel: its id, parameters, its score and one row per configuration.
    panel = seen["panel"]
    conv2 = next(n for n in graph["nodes"] if n["id"] == "conv2")
    assert panel["title"] == "conv2"
    assert _count(panel["params"]) == pytest.approx(conv2["params"], rel=0.005)
    assert _number(panel["metric"]) == pytest.approx(kl["conv2"], rel=1e-3)
    assert len(panel["rows"]) == len(columns)
    assert panel["link"].startswith(f"#/jobs/{scan['id']}/sensitivity") and "layer=conv2" in panel["link"]
    assert seen["searched"] == "fc", f"searching {fc['aliases'][0]!r} should find fc"

    # The 500-layer model: one box for the repeated blocks, 502 when all is expanded.
    assert seen["deepCollapsed"] == 3, seen["deepStats"]
    assert seen["deepExpanded"] == 502
    for name in ("collapsedFrames", "expandedFrames"):
        frames = seen[name]
        print(
            f"500-layer graph, {name}: {frames['frames']} frames, mean {frames['meanMs']:.1f} ms, "
            f"p95 {frames['p95Ms']:.1f} ms, max {frames['maxMs']:.1f} ms"
        )
        assert frames["frames"] > 5 and frames["meanMs"] < 250
    print(f"expanding all 500 nodes (layout + render): {seen['expandMs']} ms")
