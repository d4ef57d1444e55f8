"""The embedded default: `kneeboard up` with no Postgres and no Redis (SQLite + filesystem broker), a real
Celery worker process, the demo project seeded; and the README's curl examples run against it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from backend.client import KneeboardClient
from tests.support.accounts import cli_token
from tests.support.embedded import children, embedded_instance, worker_pid
from tests.support.services import REPO_ROOT, Process

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Process]]:
    """`kneeboard up` in a fresh data dir (the first start: it creates the first admin)."""
    with embedded_instance(tmp_path_factory.mktemp("embedded")) as instance:
        yield instance


def test_first_start_creates_an_admin_who_can_sign_in(embedded: tuple[str, Path, Process]) -> None:
    base, data_dir, proc = embedded
    printed = re.search(r"Sign in at (\S+) as 'admin' with password (\S+),", proc.log())
    assert printed, proc.log()[-3000:]
    password = printed.group(2)
    assert (data_dir / "first-admin-password.txt").read_text().strip() == password
    assert httpx.get(base + "/api/v1/projects").status_code == 401  # nothing is open without signing in
    with httpx.Client(base_url=base) as browser:
        assert (
            browser.post("/api/v1/auth/login", json={"username": "admin", "password": "wrong"}).status_code
            == 401
        )
        me = browser.post("/api/v1/auth/login", json={"username": "admin", "password": password})
        assert me.status_code == 200, me.text
        assert me.json()["is_site_admin"] and [t["name"] for t in me.json()["teams"]] == ["default"]
        assert (
            "httponly" in me.headers["set-cookie"].lower()
            and "samesite=strict" in me.headers["set-cookie"].lower()
        )
        assert browser.get("/api/v1/auth/me").json()["auth"] == "session"
        assert browser.post("/api/v1/auth/logout").status_code == 204
        assert browser.get("/api/v1/auth/me").status_code == 401
    # The API listens on loopback only by default.
    assert "Uvicorn running on http://127.0.0.1:" in proc.log()


def _wait_for_demo(client: KneeboardClient, timeout: float = 300) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        demo = [p for p in client.projects() if p["name"] == "demo"]
        if demo:
            jobs = client.http.get("/jobs", params={"project_id": demo[0]["id"], "kind": "fidelity"}).json()[
                "items"
            ]
            if jobs and jobs[0]["status"] in ("succeeded", "failed", "cancelled"):
                return jobs[0]  # type: ignore[no-any-return]
        time.sleep(1)
    raise TimeoutError("the demo project was not seeded in time")


def test_embedded_start_seeds_a_demo_with_real_numbers(embedded: tuple[str, Path, Process]) -> None:
    base, data_dir, proc = embedded
    client = KneeboardClient(base, token=cli_token(data_dir, "test"))
    job = _wait_for_demo(client)
    assert job["status"] == "succeeded", f"{job}\n{proc.log()[-3000:]}"
    summary = client.fidelity(str(job["id"]))["summary"]
    metrics = summary["outputs"][summary["primary_output"]]
    assert summary["n_samples"] == 360  # 20% of scikit-learn's 1797 digits
    assert 0.9 <= metrics["top1_match"] <= 1.0 and metrics["kl_mean_nats"] > 0
    assert metrics["labels"]["golden_top1_accuracy"] > 0.9
    # Embedded means embedded: SQLite and the filesystem broker in the data dir, a worker process that ran it.
    assert (data_dir / "kneeboard.db").is_file() and (data_dir / "broker").is_dir()
    assert "ready." in proc.log() and "kneeboard.fidelity" in proc.log()
    demo = next(p for p in client.projects() if p["name"] == "demo")
    golden_id = client.job(str(job["id"]))["params"]["golden_model_id"]
    runs = client.http.get(
        f"/projects/{demo['id']}/fidelity-runs", params={"golden_model_id": golden_id}
    ).json()
    assert (
        runs["total"] == 1 and runs["items"][0]["headline"]["top1_match"] == metrics["top1_match"]
    )  # SQLite JSON filter
    page = httpx.get(base + "/")
    assert page.status_code == 200 and "Kneeboard" in page.text
    # The built app (scripts/install.sh builds it): index.html names its hashed bundle, served under /assets.
    bundle = re.search(r'src="(/assets/[^"]+\.js)"', page.text)
    assert bundle, f"no script bundle in the dashboard page: {page.text[:500]}"
    script = httpx.get(base + bundle.group(1))
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]


def _readme_api_blocks() -> str:
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Using the API", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, flags=re.S))


def test_readme_curl_examples_run(embedded: tuple[str, Path, Process], tmp_path: Path) -> None:
    base, data_dir, _proc = embedded
    script = _readme_api_blocks()
    assert "curl" in script and "/fidelity" in script
    (tmp_path / ".venv").symlink_to(REPO_ROOT / ".venv")
    result = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + script],
        cwd=tmp_path,
        env={**os.environ, "KB": base, "PYTHONPATH": str(REPO_ROOT), "KNEEBOARD_DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert '"status": "succeeded"' in result.stdout
    assert '"kl_mean_nats"' in result.stdout and '"sample_index"' in result.stdout
    assert "not a valid ONNX model" in result.stdout
    assert '"op_type":"Relu"' in result.stdout  # the per-layer profile
    # The robustness slices: both slices at both severities, a ratio each, and the worst sample's picture.
    slices = [json.loads(line) for line in result.stdout.splitlines() if line.startswith('{"slice":')]
    assert [s["slice"] for s in slices] == ["gaussian_noise", "brightness"]
    assert all(
        s["severity"] == [1, 3] and all(r is not None and r > 0 for r in s["brittleness"]) for s in slices
    )
    assert re.search(r"worst noisy sample: [1-9][0-9]* bytes of PNG", result.stdout)
    # The graph, budget and manage examples: a QDQ graph with quantized nodes, the budget, the tag, the relaunch.
    graph = next(line for line in result.stdout.splitlines() if line.startswith('{"nodes"'))
    assert '"quantized":["' in graph
    assert '{"budget":"int8 release","scope":"tag","scope_value":"int8","rules":2}' in result.stdout
    assert (
        '"tags":["int8"]' in result.stdout and '{"relaunched":"succeeded","kind":"fidelity"}' in result.stdout
    )
    # The sensitivity scan: its ranking names the three layers, and a measured mixed-precision plan.
    ranking = next(line for line in result.stdout.splitlines() if line.startswith('{"ranking"'))
    assert all(layer in ranking for layer in ("conv1", "conv2", "fc"))
    assert '"measured_kl":' in result.stdout and '"measured_kl":null' not in result.stdout
    # The sweep: five points, a frontier that keeps the golden model (KL 0), an int8 export, and the
    # schedule's attribution: prune alone is the prune point's KL, each leave-one-out the other stage alone.
    assert result.stdout.count('{"label":') == 5 and '"frontier":["fp32"' in result.stdout
    points = [json.loads(line) for line in result.stdout.splitlines() if line.startswith('{"label":')]
    split = json.loads(next(line for line in result.stdout.splitlines() if line.startswith('{"techniques":')))
    assert split["techniques"] == ["prune 50 %", "4-bit weights"]
    # The attribution splits the simulated figures; a point's KL is its deployed file's, run in onnxruntime,
    # which reproduces the simulated weights to float rounding (7e-8 relative seen on the 4-bit point).
    assert split["alone"] == pytest.approx([points[3]["kl"], points[2]["kl"]], rel=1e-5)
    assert split["leave_one_out"] == split["alone"][::-1]
    assert split["cumulative"][-1] == pytest.approx(points[4]["kl"], rel=1e-5)
    assert '"kind":"real-int8-weights"' in result.stdout


def test_a_killed_worker_is_restarted_and_no_child_stays_a_zombie(
    embedded: tuple[str, Path, Process],
) -> None:
    """Last in the module: it kills the instance's worker (issue 32: `up` used to leave it a defunct child
    and jobs waiting for ever, and the finished seeder a zombie until shutdown)."""
    base, _data_dir, up = embedded
    first = worker_pid(up)
    assert first is not None, children(up.popen.pid)
    os.killpg(first, 9)  # the worker and its pool processes
    killed = time.monotonic()
    while (now := worker_pid(up)) in (None, first):
        assert time.monotonic() - killed < 10, f"no new worker within 10 s:\n{up.log()[-3000:]}"
        time.sleep(0.2)
    print(f"new worker pid {now} {time.monotonic() - killed:.1f} s after the kill")
    assert f"worker (pid {first}) died: killed by signal SIGKILL; restarting it" in up.log()
    zombies = [c for c in children(up.popen.pid) if c[1] == "Z"]
    assert zombies == [], zombies
    assert httpx.get(base + "/api/v1/health").status_code == 200
