"""What a fidelity job with a task stored and serves for "does the divergence predict the task?" (issue 30),
checked independently of the worker: the per-sample task values stored on the rows equal the engine's, the
served Spearman's rho and p-value equal scipy's on the stored rows, the scatter holds every stored sample,
and the per-sample rows come worst-first by a task metric. Used by tests/backend/test_task_jobs.py and
tests/backend/test_generation_job.py."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from scipy.stats import rankdata, spearmanr
from sqlalchemy import select

from backend.api.result_schemas.task_proxy import TaskProxyOut
from backend.db.models import SampleDivergence
from backend.db.session import session_factory
from tests.backend.test_typed_results import extras
from tests.support.fidelity_api import FidelityApi
from worker.engine.fidelity.compare import FidelityReport


def _stored_rows(api: FidelityApi, job_id: str) -> list[SampleDivergence]:
    with session_factory(api.settings.resolved_database_url)() as s:
        rows = s.scalars(
            select(SampleDivergence)
            .where(SampleDivergence.job_id == uuid.UUID(job_id))
            .order_by(SampleDivergence.sample_index)
        ).all()
        s.expunge_all()
    return list(rows)


def _divergence(row: SampleDivergence, proxy: str) -> float:
    """The row's divergence as the correlation ranks it: KL, or −SQNR (+∞ SQNR → −∞; NaN: undefined)."""
    if proxy == "kl":
        return np.nan if row.kl is None else row.kl
    if row.sqnr_db is None:
        return -np.inf if row.finite and row.mse == 0.0 else np.nan
    return -row.sqnr_db


def check_task_proxy(
    api: FidelityApi, job_id: str, report: FidelityReport, metrics: set[str]
) -> dict[str, Any]:
    """Every check above; returns the served document. `metrics`: the metrics the job must have."""
    assert "task" in api.get(f"/jobs/{job_id}/fidelity").json()["diagnostics"]
    answer = api.get(f"/jobs/{job_id}/fidelity/task")
    assert answer.status_code == 200, answer.text
    served = answer.json()
    assert list(extras(TaskProxyOut.model_validate(served))) == []
    assert {m["metric"] for m in served["metrics"]} == metrics

    rows = _stored_rows(api, job_id)
    assert len(rows) == report.n_samples == served["n_samples"]
    for key, values in report.task_per_sample.items():  # stored as the engine computed them
        stored = np.array([np.nan if r.task_values[key] is None else r.task_values[key] for r in rows])
        np.testing.assert_allclose(stored, np.asarray(values, dtype=np.float64), rtol=0, atol=1e-12)

    divergence = np.array([_divergence(r, served["proxy"]) for r in rows])
    assert served["proxy"] == ("kl" if np.isfinite(report.per_sample["kl"]).any() else "sqnr_db")
    for metric in served["metrics"]:
        name = metric["metric"]
        value = np.array([np.nan if r.task_values[name] is None else r.task_values[name] for r in rows])
        loss = -value if metric["higher_is_better"] else value
        keep = ~np.isnan(divergence) & np.isfinite(loss)
        assert metric["n"] == int(keep.sum()) and metric["n_excluded"] == len(rows) - int(keep.sum())
        if metric["spearman_rho"] is None:
            assert metric["undefined"], metric
            continue
        expected = spearmanr(divergence[keep], loss[keep])
        assert metric["spearman_rho"] == pytest.approx(float(expected.statistic), abs=1e-9), name
        assert metric["p_value"] == pytest.approx(float(expected.pvalue), rel=1e-6, abs=1e-12), name
        gaps = rankdata(loss[keep]) - rankdata(divergence[keep])
        first = metric["disagreements"][0]
        assert abs(first["rank_gap"]) == pytest.approx(float(np.abs(gaps).max()))
        assert first["value"] == pytest.approx(value[first["sample_index"]])

    points = {p["sample_index"]: p for p in served["points"]}
    assert sorted(points) == [r.sample_index for r in rows] and served["stride"] == 1
    for r in rows:
        assert points[r.sample_index]["values"] == r.task_values

    for metric in served["metrics"]:
        name = metric["metric"]
        page = api.get(f"/jobs/{job_id}/fidelity/task/samples?metric={name}&limit=1000")
        assert page.status_code == 200, page.text
        items = page.json()["items"]
        assert page.json()["total"] == len(rows) and len(items) == len(rows)
        values = [item["task_values"][name] for item in items]
        defined = [v for v in values if v is not None]
        assert values[: len(defined)] == defined  # undefined last
        assert defined == sorted(defined, reverse=not metric["higher_is_better"]), name  # worst first
    unknown = api.get(f"/jobs/{job_id}/fidelity/task/samples?metric=no_such_metric")
    assert unknown.status_code == 422, unknown.text
    assert all(metric["metric"] in unknown.text for metric in served["metrics"])  # names what the job has
    return served
