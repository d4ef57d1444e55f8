"""Correcting a fidelity job's layer matching in the browser (issue 15), driven by drive_match_correction.mjs on
the demo project: the report lists the demo job's pairs (all by name) and its unmatched golden layers; pairing
the unmatched conv2 pre-activation with a compressed layer another golden layer still uses is refused; once
that layer is unmatched the re-run is allowed, both graphs side by side show the pending matching, and the
re-run is launched; lines join the linked boxes, and a layer paired by clicking in the two graphs shows as a
correction (refused when its target is taken, undone when paired back). Everything is then read back through the API: the launched job carries the source's
parameters plus the corrected `layer_name_map`, and its profile pairs the layers as the map says. The model
page's side-by-side mode for the demo job links the two graphs' nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.client import KneeboardClient
from tests.browser.support import DemoStack, driver_config, run_driver

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DRIVER = Path(__file__).with_name("drive_match_correction.mjs")


def test_correct_a_match_and_rerun_with_the_name_map(
    demo: DemoStack,
) -> None:
    node, chromium, base, proc, token = demo
    client = KneeboardClient(base, token=token)
    pid = next(p for p in client.projects() if p["name"] == "demo")["id"]
    source = client.http.get("/jobs", params={"project_id": pid, "kind": "fidelity"}).json()["items"][-1]
    profile = client.http.get(f"/jobs/{source['id']}/fidelity/layers").json()
    pairs = {row["name"]: row["compressed_name"] for row in profile["layers"]}
    # The demo pair: relu_1 (conv2's output) is matched by name; conv2's pre-activation tensor is not (the
    # int8 model does not re-quantize it). Same shape, so the corrected pair can be profiled.
    unmatch, pair_golden = "relu_1", "conv2d_1"
    target = pairs[unmatch]
    assert pair_golden in profile["unmatched_golden"], profile["unmatched_golden"]
    graph = client.http.get(f"/models/{source['params']['golden_model_id']}/graph").json()
    pick = next(n["id"] for n in graph["nodes"] if "logits" in n["aliases"])
    # The layer whose output relu_1 is (its canonical id, conv2): after the correction it is linked through
    # its pre-activation tensor.
    pending_pick = next(row["canonical_id"] for row in profile["layers"] if row["name"] == unmatch)
    assert pending_pick in {n["id"] for n in graph["nodes"]}
    # The output layer, paired by clicking in the graphs with the corrected layer's target, then back.
    pick_layer = next(row["name"] for row in profile["layers"] if row["canonical_id"] == pick)

    config = driver_config(base, chromium, "match_correction") | {
        "job": source["id"],
        "golden": source["params"]["golden_model_id"],
        "pairGolden": pair_golden,
        "target": target,
        "unmatch": unmatch,
        "pick": pick,
        "pendingPick": pending_pick,
        "pickLayer": pick_layer,
        "pickTarget": pairs[pick_layer],
    }
    seen = run_driver(node, DRIVER, config, proc, timeout=300)
    assert not seen["consoleErrors"], seen["consoleErrors"]

    # The page lists every profile row with its compressed layer and method, then the unmatched golden layers.
    listed = {golden: (compressed, method) for golden, compressed, method in seen["rows"]}
    for row in profile["layers"]:
        assert listed[row["name"]][0] == row["compressed_name"]
        assert listed[row["name"]][1].startswith(row["match_method"])
    for name in profile["unmatched_golden"]:
        assert listed[name] == ("not matched", "not matched")
    assert seen["launchDisabledAtFirst"]
    # Two golden layers on one compressed layer: refused, with the reason.
    assert target in seen["conflict"] and unmatch in seen["conflict"] and pair_golden in seen["conflict"]
    assert seen["launchDisabledOnConflict"] and not seen["launchDisabledWhenValid"]
    after = {golden: (compressed, method) for golden, compressed, method in seen["rowsAfter"]}
    assert after[pair_golden] == (target, "your correction") and after[unmatch][0] == "not matched"
    expected_map = {pair_golden: target, unmatch: ""}
    assert seen["nameMap"] == expected_map

    # Side by side with the pending matching: the corrected layer links to the compressed layer it now pairs
    # with, marked as a correction not run yet.
    selection = seen["pendingSelection"]
    assert pending_pick in selection and "↔" in selection and "edited" in selection, selection
    assert seen["pendingPanes"]["golden"]["selected"] == [pending_pick]
    assert len(seen["pendingPanes"]["compressed"]["linked"]) == 1
    # A line joins each linked pair of boxes; the selected pair's is the corrected one.
    pending_lines = seen["pendingLines"]
    linked_boxes = seen["pendingPanes"]["compressed"]["linked"]
    assert [(g, c) for g, c, selected in pending_lines if selected] == [(pending_pick, linked_boxes[0])]
    assert len({(g, c) for g, c, _ in pending_lines}) == len(pending_lines) >= 2, pending_lines

    # Pairing by clicking: the output layer with the corrected layer's target is refused (two golden layers on
    # one compressed layer) and shown as the user's correction; pairing it back with its own target undoes it.
    assert pick_layer in seen["clickPairText"] and target in seen["clickPairText"], seen["clickPairText"]
    assert target in seen["clickPairConflict"] and pick_layer in seen["clickPairConflict"]
    assert seen["clickPairRow"] == target
    assert pairs[pick_layer] in seen["clickBackText"]
    assert seen["nameMapAfterClicks"] == {pair_golden: target, unmatch: ""}

    # The launched job: the source's parameters plus the corrected map; its profile pairs as the map says.
    launched = client.http.get(f"/jobs/{seen['launchedJob']}").json()
    assert launched["kind"] == "fidelity"
    assert launched["params"]["layer_name_map"] == expected_map
    assert {k: v for k, v in launched["params"].items() if k != "layer_name_map"} == {
        k: v for k, v in source["params"].items() if k != "layer_name_map"
    }
    assert client.wait_job(launched["id"], timeout=240)["status"] == "succeeded"
    corrected = client.http.get(f"/jobs/{launched['id']}/fidelity/layers").json()
    rows = {row["name"]: row for row in corrected["layers"]}
    assert rows[pair_golden]["compressed_name"] == target
    assert rows[pair_golden]["match_method"] == "name_map"
    assert unmatch not in rows and unmatch in corrected["unmatched_golden"]
    for name, compressed in pairs.items():
        if name != unmatch:
            assert rows[name]["compressed_name"] == compressed

    # The model page's side-by-side mode (the stored matching): the output layer links to one compressed node,
    # and clicking that node selects it and links back.
    assert pick in seen["modelSelection"] and "↔" in seen["modelSelection"]
    assert "(name)" in seen["modelSelection"]
    linked = seen["modelPanes"]["compressed"]["linked"]
    assert len(linked) == 1
    assert seen["backPanes"]["compressed"]["selected"] == linked
    assert seen["backPanes"]["golden"]["linked"] == [pick]
    # Lines on the model page: the selected pair's, and none for boxes panned out of the golden canvas; Fit
    # brings them back.
    assert [(g, c) for g, c, selected in seen["modelLines"] if selected] == [(pick, linked[0])]
    assert len(seen["modelLines"]) >= 2, seen["modelLines"]
    assert seen["linesAfterPan"] == []
    assert sorted(seen["linesAfterFit"]) == sorted(seen["modelLines"])
    print(f"side by side: {seen['modelLinks']}")
