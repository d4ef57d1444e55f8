"""The demo project's ids and a small sensitivity scan, sweep and recovery of its golden model, run to the end
through the API, so that every page of the dashboard has something to show (tests/browser/test_layout.py and
tests/browser/test_phone_pages.py)."""

from __future__ import annotations

from backend.client import KneeboardClient


def demo_pages_ids(client: KneeboardClient) -> dict[str, str]:
    """The demo's ids, and a small sensitivity scan, sweep and recovery of its golden model (run to the end)."""
    project = next(p for p in client.projects() if p["name"] == "demo")
    pid = project["id"]
    fidelity = client.http.get("/jobs", params={"project_id": pid, "kind": "fidelity"}).json()["items"][0]
    models = client.http.get(f"/projects/{pid}/models").json()
    golden = next(m for m in models if "golden" in m["name"])
    dataset = client.http.get(f"/projects/{pid}/datasets").json()[0]
    common = {"model_id": golden["id"], "dataset_id": dataset["id"], "max_samples": 60}
    scan = client.create_job(
        pid,
        "sensitivity",
        common
        | {
            "configs": [{"type": "weight_quant", "bits": 8}, {"type": "weight_quant", "bits": 4}],
            "chunks": 1,
        },
    )
    sweep = client.create_job(
        pid,
        "sweep",
        common
        | {
            "configs": [{"type": "weight_quant", "bits": 8}, {"type": "magnitude_prune", "sparsity": 0.5}],
            "latency_batch_sizes": [1],
            "latency_repeats": 3,
        },
    )
    # a recovery of the golden model's 4-bit copy (bias correction runs on ONNX, training-free): its results page
    recovery_params = {
        "golden_model_id": golden["id"],
        "dataset_id": dataset["id"],
        "config": {"type": "weight_quant", "bits": 4},
        "methods": [{"name": "bias_correction"}],
        "max_samples": 60,
    }
    # recovery jobs have their own route (their source is checked there)
    created = client.http.post("/recovery-jobs", json={"project_id": pid, "params": recovery_params})
    assert created.status_code in (200, 201), created.text
    recovery = created.json()
    for job in (scan, sweep, recovery):
        done = client.wait_job(job["id"], timeout=240)
        assert done["status"] == "succeeded", done
    team = client.http.get("/auth/me").json()["teams"][0]["id"]
    return {
        "project": pid,
        "model": golden["id"],
        "report": fidelity["id"],
        "sensitivity": scan["id"],
        "sweep": sweep["id"],
        "recovery": recovery["id"],
        "team": team,
    }
