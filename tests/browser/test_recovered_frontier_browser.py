"""Recovered points on a sweep's Pareto chart (issue 14), in headless Chromium on the embedded stack: a
.pt2 digits CNN trained here is swept (4- and 8-bit weights) and its 4-bit point recovered (SmoothQuant then
bias correction) through the real worker; the sweep page then draws the recovered model as a "recovered"
marker at the point's size and the recovery's held-out KL "after", dotted to the point it recovered, with
the methods and KL before → after in its hover. Opened by its permalink (?point=N, a reload), the point says it
was recovered (the server's record, issue 35) and offers "Recover again"; a QAT recovery launched from it
draws its loss curve live from the job's progress; each sampled loss and held-out KL equals the stored
curve's value at that step once the job ends. The project's jobs list names the first recovery (methods,
model, point) and its Results link opens the recovery page with the stored before/after; the recovered
model's page draws its graph (recorded when the job made it). A recovery launched from the golden model's
form (W8, AdaRound at 20 iterations) reaches the API with those settings and its page shows its steps.
Driven by drive_recovered_frontier.mjs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backend.client import KneeboardClient
from tests.browser.support import DemoStack, driver_config, run_driver
from worker.demo.models import export_torch_program, load_digits_split, train_digits_cnn
from worker.engine.inspection.graph import model_graph

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DRIVER = Path(__file__).with_name("drive_recovered_frontier.mjs")
W4 = {"type": "weight_quant", "bits": 4, "per_channel": True}
STEPS = 12_000  # QAT steps of the live run: ~440 steps/s here (2 cores), so about 14 polls of 2 s


def test_a_recovered_point_is_drawn_linked_to_its_sweep_point(demo: DemoStack, tmp_path: Path) -> None:
    node, chromium, base, proc, token = demo
    client = KneeboardClient(base, token=token)
    split = load_digits_split(seed=0)
    program = export_torch_program(train_digits_cnn(split, seed=0), split.x_test[:2], tmp_path / "cnn.pt2")
    np.savez(tmp_path / "digits.npz", x=split.x_test[:240], labels=split.y_test[:240])
    project = client.create_project("recovered frontier")
    model = client.upload_model(project["id"], program)
    dataset = client.upload_dataset(project["id"], tmp_path / "digits.npz")
    assert client.wait_model(model["id"], timeout=120)["status"] == "ready"

    sweep = client.create_job(
        project["id"],
        "sweep",
        {
            "model_id": model["id"],
            "dataset_id": dataset["id"],
            "configs": [W4, {"type": "weight_quant", "bits": 8}],
            "max_samples": 240,
            "latency": False,
            "export": False,
        },
    )
    assert client.wait_job(sweep["id"], timeout=300)["status"] == "succeeded"
    points = client.http.get(f"/jobs/{sweep['id']}/sweep/points").json()["items"]
    point = next(p for p in points if p["config"].get("bits") == 4)
    response = client.http.post(
        "/recovery-jobs",
        json={
            "project_id": project["id"],
            "params": {
                "golden_model_id": model["id"],
                "dataset_id": dataset["id"],
                "sweep_point_id": point["id"],
                "heldout_fraction": 0.5,
                "methods": [{"name": "smoothquant"}, {"name": "bias_correction"}],
            },
        },
    )
    assert response.status_code == 201, response.text
    recovery = response.json()
    assert client.wait_job(recovery["id"], timeout=300)["status"] == "succeeded"
    summary = client.http.get(f"/jobs/{recovery['id']}/recovery").json()
    assert summary["lineage"]["sweep_point_id"] == point["id"]

    seen = run_driver(
        node,
        DRIVER,
        driver_config(
            base,
            chromium,
            "recovered_frontier",
            sweep=sweep["id"],
            label=point["label"],
            steps=STEPS,
            index=point["index"],
            project=project["id"],
            recovery=recovery["id"],
            model=model["id"],
        ),
        proc,
        timeout=300,
    )
    assert seen["consoleErrors"] == []
    chart = seen["chart"]
    assert chart["axes"][0].startswith("Size") and chart["axes"][1].startswith("KL mean"), chart["axes"]
    # the recovered model: the point's size (same configuration), the recovery's held-out KL after
    size, kl_before = point["objectives"]["size_bytes"], point["objectives"]["kl_mean"]
    after = summary["after"]["kl_mean"]
    assert chart["drawnMarkers"] == 1 and chart["symbol"] == "diamond"
    assert chart["x"] == [size] and chart["y"] == pytest.approx([after], rel=1e-9)
    # dotted from the unrecovered point to it
    assert chart["links"]["x"] == [size, size, None] and chart["links"]["dash"] == "dot"
    assert chart["links"]["y"][0] == pytest.approx(kl_before, rel=1e-9)
    assert chart["links"]["y"][1] == pytest.approx(after, rel=1e-9)
    hover = chart["text"][0]
    assert "recovered" in hover and point["label"] in hover and "smoothquant → bias correction" in hover
    assert f"held-out split ({summary['n_heldout']} samples)" in hover
    assert "recovered" in chart["legend"]
    assert "Green diamonds: 1 recovered model" in seen["caption"]
    # the recovery did recover: its KL after is below its own "before" on the same held-out samples
    assert after < summary["before"]["kl_mean"]

    # the point by its permalink: recovered (the server's record), linked to the recovery, "Recover again"
    state = seen["pointState"]
    assert state["state"] == "succeeded" and "This point was recovered" in state["text"], state
    assert state["link"] == f"#/jobs/{recovery['id']}/recovery"
    assert state["buttons"] == ["Recover again"], state

    # the live curve: sampled while the QAT job trained, each value the stored curve's at that step
    live = seen["live"]
    assert live is not None and len(live["lossSteps"]) >= 3 and len(live["klSteps"]) >= 2, live
    assert "Sampled from the job's progress" in seen["liveCaption"]
    jobs = client.http.get("/jobs", params={"project_id": project["id"], "kind": "recovery"}).json()["items"]
    qat = next(j for j in jobs if [m["name"] for m in j["params"]["methods"]] == ["qat"])
    assert qat["params"]["methods"][0]["steps"] == STEPS and qat["params"]["methods"][0]["patience"] == 0
    assert client.wait_job(qat["id"], timeout=600)["status"] == "succeeded"
    stored = client.http.get(f"/jobs/{qat['id']}/recovery").json()["steps"][1]["details"]["curve"]
    by_step = {p["step"]: p for p in stored}
    for step, loss in zip(live["lossSteps"], live["loss"], strict=True):
        assert loss == pytest.approx(by_step[step]["loss"], rel=1e-4), (step, loss)  # the message's 5 digits
    for step, kl in zip(live["klSteps"], live["kl"], strict=True):
        assert kl == pytest.approx(by_step[step]["heldout_kl"], rel=1e-4), (step, kl)

    # The finished job's before/after: each held-out sample's KL before vs after, as the API stores them, with
    # the count of samples that improved; each golden layer's SQNR before and after, as its layer profiles.
    qat_summary = client.http.get(f"/jobs/{qat['id']}/recovery").json()
    samples = qat_summary["per_sample"]
    per_sample, per_layer = seen["beforeAfter"]["traces"]
    drawn = next(t for t in per_sample if t["name"] == "held-out samples")
    assert drawn["x"] == pytest.approx(samples["kl_before"]) and drawn["y"] == pytest.approx(
        samples["kl_after"]
    )
    improved = sum(a < b for a, b in zip(samples["kl_after"], samples["kl_before"], strict=True))
    assert (
        f"{improved} of {qat_summary['n_heldout']} held-out samples closer"
        in seen["beforeAfter"]["captions"][0]
    )
    metrics = {row[0]: row[1:] for row in seen["metrics"]}
    assert len(metrics) >= 12 and {"KL mean", "SQNR", "ECE (golden → this)"} <= set(metrics), metrics
    assert metrics["Top-1 agreement"] == [
        f"{qat_summary[side]['top1_agreement'] * 100:.2f} %" for side in ("before", "after")
    ]
    layers = client.http.get(f"/jobs/{qat['id']}/recovery/layers").json()
    lines = {t["name"]: t for t in per_layer}
    for side, name in (("before", "before recovery"), ("after", "after")):
        rows = layers[side]["layers"]
        assert len(rows) >= 3, layers[side]
        by_name = dict(zip(lines[name]["x"], lines[name]["y"], strict=True))
        assert [by_name[row["name"]] for row in rows] == pytest.approx(
            [row["accumulated"]["sqnr_db"] for row in rows]
        )

    # The jobs list names the first recovery and links its page, which shows the before/after it stored.
    what = seen["jobRow"]["what"]
    assert what.startswith("SmoothQuant scale migration → Bias correction on cnn"), what
    assert f"point {point['index']} of sweep {sweep['id'][:8]}" in what and "—" not in what, what
    page = seen["recoveryPage"]
    assert page["hash"] == f"#/jobs/{recovery['id']}/recovery"
    assert page["heading"] == f"Recovery of {model['name']}", page["heading"]
    assert "SmoothQuant scale migration → Bias correction" in page["facts"], page["facts"]
    rows = page["rows"]
    assert [r[0] for r in rows] == ["compressed (no recovery)", "smoothquant", "bias correction"], rows
    for row, step in zip(rows, summary["steps"], strict=True):
        assert row[3] == f"{step['fidelity']['top1_agreement'] * 100:.2f} %", (row, step["fidelity"])
        kl = float(row[1].removesuffix(" nats"))  # four significant digits
        assert kl == pytest.approx(step["fidelity"]["kl_mean"], rel=1e-3), (row, step["fidelity"])

    # The recovered model was inspected like an upload: its graph is the engine's graph of its file, and drawn.
    graph = client.http.get(f"/models/{summary['model_id']}/graph")
    assert graph.status_code == 200, graph.text
    recovered_file = tmp_path / "recovered.onnx"
    recovered_file.write_bytes(client.http.get(f"/jobs/{recovery['id']}/recovery/model").content)
    engine = model_graph(recovered_file, "onnx")
    assert [n["id"] for n in graph.json()["nodes"]] == [n.id for n in engine.nodes]
    drawn = seen["recoveredGraph"]
    assert drawn["errors"] == [] and drawn["nodes"], drawn
    assert set(drawn["nodes"]) <= {n.id for n in engine.nodes} | {
        g for n in engine.nodes for g in n.group_path
    }

    # The form on the golden model's page launched what it showed: W8 per channel, AdaRound at 20 iterations.
    launched = seen["formLaunch"]
    job_id = launched["hash"].removeprefix("#/jobs/").removesuffix("/recovery")
    job = client.http.get(f"/jobs/{job_id}").json()
    params = job["params"]
    assert job["status"] == "succeeded" and params["golden_model_id"] == model["id"], job
    config = params["config"]
    assert (config["type"], config["bits"], config["per_channel"]) == ("weight_quant", 8, True), config
    assert [m["name"] for m in params["methods"]] == ["equalization", "adaround", "bias_correction"]
    assert params["methods"][1]["iterations"] == 20
    assert launched["rows"] == ["compressed (no recovery)", "equalization", "adaround", "bias correction"]
