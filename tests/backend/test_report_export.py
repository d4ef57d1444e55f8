"""GET /api/v1/jobs/{id}/export.html (backend/api/routes/report_export.py): a finished job's report as one HTML
file. Over the real API and Postgres, with results stored as the workers store them (the fidelity engine's
report on small numpy models, a sensitivity document, sweep points): an attachment of type text/html whose
embedded document holds exactly what the API serves at each path the pages read, that references nothing
outside the file, and that nobody outside the job's team can download.

The page is the built dashboard's frontend/dist/offline.html (`npm run build`, which ./scripts/install.sh runs);
without it these tests are skipped, or fail when KNEEBOARD_REQUIRE_BROWSER=1 (CI)."""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from backend.api.app import create_app
from backend.api.routes.report_export import DATA_OPEN, OFFLINE_ROUTES, embed_json, fill_template
from backend.contracts import RESULT_FIDELITY_SUMMARY, RESULT_SENSITIVITY, RESULT_SENSITIVITY_PLANS
from backend.db.models import Job, JobResult
from backend.db.session import engine_for
from backend.settings import Settings
from tests.backend.test_diagnostics_api import _store
from tests.backend.test_diagnostics_api import report as report  # the module-scoped fixture
from tests.backend.test_sweep_api import _sweep
from tests.support.accounts import TestAccount, account_in
from tests.support.services import REPO_ROOT
from worker.engine.fidelity.compare import FidelityReport
from worker.runtime import json_safe

BUILT = REPO_ROOT / "frontend" / "dist" / "offline.html"


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    if not BUILT.is_file():
        reason = f"{BUILT} is missing: run `npm ci && npm run build` in frontend/"
        if os.environ.get("KNEEBOARD_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{reason} (KNEEBOARD_REQUIRE_BROWSER=1)")
        pytest.skip(reason)
    folder = tmp_path / "dist"
    folder.mkdir()
    shutil.copy(BUILT, folder / "offline.html")
    return folder


@pytest.fixture
def api(settings: Settings, account: TestAccount, dist: Path) -> Iterator[TestClient]:
    with TestClient(create_app(settings, run_reaper=False, frontend_dist=dist), headers=account.headers) as c:
        yield c


@pytest.fixture
def project_id(api: TestClient) -> str:
    response = api.post("/api/v1/projects", json={"name": f"p-{uuid.uuid4().hex[:6]}"})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


class _Page(HTMLParser):
    """Every element's attributes, the text of each <script> by its type and id, and the <style> texts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.attrs: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self._open: tuple[str, dict[str, str | None]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._open = (tag, dict(attrs))
            self._text: list[str] = []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._open is not None and tag == self._open[0]:
            if tag == "script":
                self.scripts.append((self._open[1], "".join(self._text)))
            else:
                self.styles.append("".join(self._text))
            self._open = None


def _download(api: TestClient, job_id: str, kind: str) -> tuple[_Page, dict[str, Any]]:
    response = api.get(f"/api/v1/jobs/{job_id}/export.html")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["content-disposition"] == f'attachment; filename="kneeboard-{kind}-{job_id}.html"'
    page = _Page()
    page.feed(response.text)
    page.close()
    documents = [text for attrs, text in page.scripts if attrs.get("id") == "kb-report"]
    assert len(documents) == 1
    doc: dict[str, Any] = json.loads(documents[0])
    assert doc["kind"] == kind and doc["job_id"] == job_id
    _assert_self_contained(page)
    return page, doc


EXTERNAL = re.compile(r"^\s*(https?:|//|ftp:)", re.IGNORECASE)


def _assert_self_contained(page: _Page) -> None:
    """No element loads or links anything but the file itself (data: URLs and fragments), every script is
    inline, and no style imports or loads a URL."""
    for tag, attrs in page.attrs:
        for name in ("src", "href", "action", "srcset", "poster", "data"):
            value = attrs.get(name)
            if value is not None:
                assert not EXTERNAL.match(value), (tag, name, value)
                assert value.startswith(("data:", "#")), f"<{tag} {name}={value!r}> points outside the file"
    scripts = [attrs for tag, attrs in page.attrs if tag == "script"]
    assert scripts and all("src" not in s for s in scripts), scripts
    assert any(s.get("type") == "module" for s in scripts)
    for css in page.styles:
        assert "@import" not in css
        for url in re.findall(r"url\(\s*['\"]?([^'\")]*)", css):
            assert url.startswith(("data:", "#")), url


def test_fidelity_export_holds_what_the_api_serves(
    api: TestClient,
    settings: Settings,
    project_id: str,
    report: FidelityReport,
) -> None:
    job_id = str(_store(settings, project_id, report))
    with Session(engine_for(settings.resolved_database_url)) as s:
        job = s.get(Job, uuid.UUID(job_id))
        assert job is not None
        summary = s.query(JobResult).filter_by(job_id=job.id, key=RESULT_FIDELITY_SUMMARY).one()
        summary.payload = json_safe(report.summary_dict())  # as the worker stores it
        s.commit()
    _, doc = _download(api, job_id, "fidelity")
    base = f"/api/v1/jobs/{job_id}"
    expected = {
        base,
        f"{base}/chunks",
        f"/api/v1/projects/{project_id}",
        f"/api/v1/projects/{project_id}/models",
        f"/api/v1/projects/{project_id}/datasets",
        f"{base}/fidelity",
        f"{base}/fidelity/classes",
        f"{base}/fidelity/sequence",
    }
    assert set(doc["responses"]) == expected
    for path, embedded in doc["responses"].items():
        served = api.get(path)
        assert served.status_code == 200, (path, served.text)
        assert embedded == served.json(), path
    # No layer profile was stored: the file answers that path as the API does.
    served = api.get(f"{base}/fidelity/layers")
    assert served.status_code == 404
    assert doc["errors"] == {f"{base}/fidelity/layers": {"status": 404, "detail": served.json()["detail"]}}
    # Every per-sample row (fewer than the cap), in sample order, as the API pages them.
    samples = doc["samples"][report.primary_output]
    page = api.get(f"{base}/fidelity/samples", params={"sort": "sample_index", "order": "asc", "limit": 1000})
    assert samples["total"] == page.json()["total"] == len(report.per_sample["kl"])
    assert samples["rows"] == page.json()["items"]
    # The headline numbers are the engine's.
    metrics = doc["responses"][f"{base}/fidelity"]["summary"]["outputs"][report.primary_output]
    assert metrics["kl_mean_nats"] == pytest.approx(float(report.per_sample["kl"].mean()), rel=1e-9)


def test_sensitivity_export(api: TestClient, settings: Settings, project_id: str) -> None:
    scan = {
        "mode": "only",
        "configs": [{"id": "w8", "config": {"type": "weight_quant", "bits": 8}, "weight_bits": 8}],
        "layers": [
            {
                "name": n,
                **{"type": "Linear", "params": 10, "weight_params": 8, "macs": 8, "depth_index": i},
                **{"depth_fraction": i / 2, "shared_with": [], "notes": []},
            }
            for i, n in enumerate(("fc1", "fc2"))
        ],
        "primary_output": "logits",
        "output_kind": "classification",
        "n_samples": 4,
        "ranking_metric": "kl",
        "matrix": {
            "rows": ["fc1", "fc2"],
            "columns": ["w8"],
            "kl_mean": [[0.5], [0.1]],
            "top1_agreement": [[0.9], [1.0]],
            "sqnr_db": [[20.0], [None]],
        },
        "ranking": {"overall": ["fc1", "fc2"], "by_config": {"w8": ["fc1", "fc2"]}},
        "whole_model": {"w8": {"kl_mean": 0.7, "top1_agreement": 0.9}},
        "notes": [],
    }
    with Session(engine_for(settings.resolved_database_url)) as s:
        job = Job(
            project_id=uuid.UUID(project_id),
            kind="sensitivity",
            params={"model_id": str(uuid.uuid4()), "dataset_id": str(uuid.uuid4())},
            status="succeeded",
            attempts=1,
        )
        s.add(job)
        s.flush()
        s.add(JobResult(job_id=job.id, key=RESULT_SENSITIVITY, payload=scan))
        s.add(
            JobResult(job_id=job.id, key=RESULT_SENSITIVITY_PLANS, payload={"plans": [{"average_bits": 8.0}]})
        )
        s.commit()
        job_id = str(job.id)
    _, doc = _download(api, job_id, "sensitivity")
    base = f"/api/v1/jobs/{job_id}/sensitivity"
    for path in (base, f"{base}/plans"):
        assert doc["responses"][path] == api.get(path).json(), path
    assert doc["responses"][base]["matrix"]["rows"] == ["fc1", "fc2"]
    served = api.get(f"{base}/all-but")
    assert served.status_code == 404 and doc["errors"][f"{base}/all-but"]["detail"] == served.json()["detail"]
    assert doc["channels"] == {}  # the scan stored no channel importance


def test_sweep_export_holds_every_unbounded_frontier(
    api: TestClient, settings: Settings, project_id: str
) -> None:
    points: list[dict[str, float | None]] = [
        {"kl_mean": 0.1, "size_bytes": 400.0, "top1_agreement": 0.99},
        {"kl_mean": 0.3, "size_bytes": 200.0, "top1_agreement": 0.97},
        {"kl_mean": 0.2, "size_bytes": 500.0, "top1_agreement": None},
        {"kl_mean": 0.9, "size_bytes": 100.0, "top1_agreement": 0.80},
    ]
    job_id = _sweep(settings, project_id, points)
    _, doc = _download(api, job_id, "sweep")
    path = f"/api/v1/jobs/{job_id}/sweep/points"
    served = api.get(path, params={"details": True, "limit": 1000}).json()
    assert doc["responses"][path] == served and served["total"] == len(points)
    names = ["kl_mean", "size_bytes", "top1_agreement"]
    # Each objective alone and each ordered pair, in both directions each.
    assert len(doc["frontiers"]) == len(names) * 2 + len(names) * (len(names) - 1) * 4
    # Stored compact (the points by id), they expand to exactly what the frontier route serves.
    by_id = {p["id"]: p for p in served["items"]}
    assert all("frontier_ids" in f and "frontier" not in f for f in doc["frontiers"].values())
    for objective in (
        ["size_bytes:min", "kl_mean:min"],
        ["top1_agreement:max"],
        ["kl_mean:max", "size_bytes:min"],
    ):
        frontier = api.get("/api/v1/sweep-frontier", params={"job_ids": [job_id], "objective": objective})
        assert frontier.status_code == 200, frontier.text
        stored = dict(doc["frontiers"][",".join(objective)])
        ids = stored.pop("frontier_ids")
        keys = ("id", "job_id", "index", "label", "objectives")
        points = [{k: by_id[i][k] for k in keys} | {"knee": i == stored["knee"]} for i in ids]
        assert stored | {"frontier": points} == frontier.json()
    pareto = doc["frontiers"]["size_bytes:min,kl_mean:min"]["frontier_ids"]
    assert [by_id[i]["index"] for i in pareto] == [3, 1, 0]  # 2 is dominated by 0 (bigger and worse)


def test_other_teams_unfinished_jobs_and_other_kinds(
    api: TestClient, settings: Settings, project_id: str
) -> None:
    job_id = _sweep(settings, project_id, [{"kl_mean": 0.1}], status="running")
    response = api.get(f"/api/v1/jobs/{job_id}/export.html")
    assert response.status_code == 409 and "running" in response.json()["detail"]
    with Session(engine_for(settings.resolved_database_url)) as s:
        job = s.get(Job, uuid.UUID(job_id))
        assert job is not None
        job.status, job.kind = "succeeded", "recovery"
        s.commit()
    response = api.get(f"/api/v1/jobs/{job_id}/export.html")
    assert response.status_code == 422 and "recovery" in response.json()["detail"]
    finished = _sweep(settings, project_id, [{"kl_mean": 0.1}])
    other = account_in(settings.resolved_database_url, username="outsider", team="others")
    response = api.get(f"/api/v1/jobs/{finished}/export.html", headers=other.headers)
    assert response.status_code == 404
    assert api.get(f"/api/v1/jobs/{uuid.uuid4()}/export.html").status_code == 404


def test_without_the_built_page_the_answer_says_how_to_build_it(
    settings: Settings, account: TestAccount, tmp_path: Path
) -> None:
    with TestClient(
        create_app(settings, run_reaper=False, frontend_dist=tmp_path), headers=account.headers
    ) as c:
        project = c.post("/api/v1/projects", json={"name": "p"}).json()["id"]
        job_id = _sweep(settings, project, [{"kl_mean": 0.1}])
        response = c.get(f"/api/v1/jobs/{job_id}/export.html")
    assert response.status_code == 503 and "npm run build" in response.json()["detail"]


def test_embedded_text_cannot_close_its_element() -> None:
    hostile = {"label": "</script><script>alert(1)</script><!-- & \u2028", "n": 1}
    html = fill_template(f"<html><body>{DATA_OPEN}null</script><p>after</p></body></html>", hostile)
    page = _Page()
    page.feed(html)
    page.close()
    assert [t for a, t in page.scripts if a.get("id") == "kb-report"] == [embed_json(hostile)]
    assert json.loads(embed_json(hostile)) == hostile
    assert len(page.scripts) == 1 and "<" not in embed_json(hostile)


def test_every_job_route_says_how_the_file_answers_it(settings: Settings) -> None:
    """A new GET under /jobs/{job_id} that a page reads must be embedded (or answered) in the exported file."""
    prefix = "/api/v1/jobs/{job_id}"
    spec = create_app(settings, run_reaper=False).openapi()
    routes = {p[len(prefix) :] for p, ops in spec["paths"].items() if p.startswith(prefix) and "get" in ops}
    assert routes and not routes - set(OFFLINE_ROUTES), (
        f"say in report_export.OFFLINE_ROUTES how an exported report answers {sorted(routes - set(OFFLINE_ROUTES))}"
    )
