"""The trend's standard errors of a real fidelity job: the demo's digits CNN (float ONNX) against its int8 QDQ
copy, run in-process by the real FidelityHandler over the real app and Postgres. The worker stores the
job-time spread document; the API serves it; each number equals scipy's on the per-sample values the job
stored (scipy.stats.sem) or the binomial distribution's (scipy.stats.binom)."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from scipy import stats
from sqlalchemy import select

from backend.db.models import JobResult, SampleDivergence
from backend.db.session import session_factory
from backend.services.trend_spread import RESULT_FIDELITY_SPREAD
from tests.backend.test_robustness_job import api, bundle, settings  # noqa: F401 (fixtures)
from tests.backend.test_trend_spread import check_sqnr
from tests.support.fidelity_api import FidelityApi


def test_a_real_jobs_standard_errors_equal_scipy(api: FidelityApi) -> None:  # noqa: F811
    job_id = api.fidelity()
    answer = api.get(f"/projects/{api.project}/trends?golden_model_id={api.golden}")
    assert answer.status_code == 200, answer.text
    (point,) = answer.json()["points"]
    se, head = point["standard_errors"], point["headline"]
    with session_factory(api.settings.resolved_database_url)() as s:
        rows = list(
            s.execute(select(SampleDivergence).where(SampleDivergence.job_id == uuid.UUID(job_id))).scalars()
        )
        document = s.execute(
            select(JobResult.payload).where(
                JobResult.job_id == uuid.UUID(job_id), JobResult.key == RESULT_FIDELITY_SPREAD
            )
        ).scalar_one()
    finite = [r for r in rows if r.finite]
    assert len(finite) > 50
    kl = np.array([r.kl for r in finite], dtype=np.float64)
    cosine = np.array([r.cosine for r in finite], dtype=np.float64)
    assert document["kl_mean_nats"] == se["kl_mean_nats"]  # served from the job-time document
    assert se["kl_mean_nats"] == pytest.approx(stats.sem(kl), rel=1e-9)
    assert se["cosine_mean"] == pytest.approx(stats.sem(cosine), rel=1e-6)
    n = len(finite)
    assert se["top1_match"] == pytest.approx(stats.binom(n, head["top1_match"]).std() / n, rel=1e-12)
    assert se["topk_agreement"] == pytest.approx(stats.binom(n, head["topk_agreement"]).std() / n, abs=1e-15)
    labelled = [r for r in finite if r.label is not None]
    assert labelled, "the demo digits carry labels"
    d = np.array([(r.golden_class == r.label) - (r.compressed_class == r.label) for r in labelled], float)
    assert 100 * np.mean(d) == pytest.approx(head["top1_accuracy_drop_pp"], abs=1e-9)
    expected = 100 * stats.sem(d) if np.any(d != d[0]) else 0.0
    assert se["top1_accuracy_drop_pp"] == pytest.approx(expected, rel=1e-9, abs=1e-15)
    check_sqnr(finite, head["sqnr_db"], se["sqnr_db"], job_time=True)
