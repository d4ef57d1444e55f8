"""Standard errors of the trend's headline numbers over the real API and Postgres, on real fidelity jobs: the
engine's comparison of two logit tables (with labels and a non-finite sample), its summary and per-sample
table stored as the worker stores them. Each standard error is checked against scipy on the values read back
from the stored table (scipy.stats.sem) or against the binomial distribution (scipy.stats.binom)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy import stats
from sqlalchemy import select

from backend.contracts import RESULT_FIDELITY_SUMMARY
from backend.db.models import Job, JobResult, SampleDivergence
from backend.db.session import session_factory
from backend.services.trend_spread import (
    RESULT_FIDELITY_SPREAD,
    SE_METRICS,
    spread_document,
    table_standard_errors,
)
from backend.settings import Settings
from tests.backend.test_trends import _model
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.types import TensorSpec
from worker.jobs.fidelity import sample_rows
from worker.runtime import json_safe

N, CLASSES = 400, 10


class TableRunner:
    """A model that answers sample i (its input holds i) with row i of a table of logits."""

    def __init__(self, logits: np.ndarray) -> None:
        self.logits = logits

    @property
    def inputs(self) -> list[TensorSpec]:
        return [TensorSpec("index", ("batch",), "int64")]

    @property
    def outputs(self) -> list[TensorSpec]:
        return [TensorSpec("logits", ("batch", CLASSES), "float32")]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"logits": self.logits[feeds["index"]]}


def _job(
    settings: Settings, project_id: str, golden_id: str, noise: float, seed: int, worker_document: bool
) -> str:
    """A succeeded fidelity job stored as the worker stores it; without the job-time spread document when
    `worker_document` is False (a job from before it: the API reads the stored table instead)."""
    rng = np.random.default_rng(seed)
    golden = rng.normal(0, 3, (N, CLASSES)).astype(np.float32)
    compressed = (golden + rng.normal(0, noise, golden.shape)).astype(np.float32)
    compressed[7] = np.nan  # one sample the engine leaves out of every mean
    labels = np.where(rng.random(N) < 0.8, golden.argmax(axis=1), rng.integers(0, CLASSES, N))
    report = compare_models(
        TableRunner(golden), TableRunner(compressed), {"index": np.arange(N, dtype=np.int64)}, labels,
        FidelityParams(batch_size=64, top_k=3),
    )  # fmt: skip
    with session_factory(settings.resolved_database_url)() as session:
        job = Job(
            project_id=uuid.UUID(project_id), kind="fidelity", status="succeeded", attempts=1,
            params={"golden_model_id": golden_id, "compressed_model_id": golden_id, "dataset_id": str(uuid.uuid4())},
        )  # fmt: skip
        session.add(job)
        session.flush()
        session.add(
            JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload=json_safe(report.summary_dict()))
        )
        session.add_all(
            SampleDivergence(**row) for row in sample_rows(job.id, report.primary_output, report.per_sample)
        )
        if worker_document:  # as FidelityHandler stores it
            document = json_safe(spread_document(report.per_sample))
            session.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_SPREAD, payload=document))
        session.commit()
        return str(job.id)


@pytest.fixture
def golden(settings: Settings, project: dict[str, Any]) -> str:
    with session_factory(settings.resolved_database_url)() as session:
        model_id = _model(session, uuid.UUID(project["id"]), "golden", [])
        session.commit()
    return str(model_id)


def check_sqnr(finite: list[SampleDivergence], headline: float, se: float | None, job_time: bool) -> None:
    """The dataset SQNR rebuilt from the stored rows (signal_i = error_i·10^(sqnr_i/10), error ∝ mse) equals the
    headline; its job-time standard error agrees with scipy's bootstrap of that statistic (an independent
    estimate: 10 % on a few hundred samples)."""
    error = np.array([r.mse for r in finite], dtype=np.float64)
    signal = error * 10 ** (np.array([r.sqnr_db for r in finite], dtype=np.float64) / 10)
    assert 10 * np.log10(signal.sum() / error.sum()) == pytest.approx(headline, rel=1e-9)
    if not job_time:
        assert se is None  # the stored table path has no SQNR spread
        return
    boot = stats.bootstrap(
        (signal, error), lambda s, e: 10 * np.log10(np.sum(s) / np.sum(e)), paired=True, vectorized=False,
        n_resamples=3000, method="percentile", rng=np.random.default_rng(0),
    )  # fmt: skip
    assert se == pytest.approx(boot.standard_error, rel=0.1)


def _stored(settings: Settings, job_id: str) -> list[SampleDivergence]:
    with session_factory(settings.resolved_database_url)() as session:
        rows = session.execute(select(SampleDivergence).where(SampleDivergence.job_id == uuid.UUID(job_id)))
        return list(rows.scalars())


def test_standard_errors_equal_scipy_on_the_stored_per_sample_values(
    client: TestClient, settings: Settings, project: dict[str, Any], golden: str
) -> None:
    runs = ((0.5, 1, True), (1e-4, 2, True), (0.5, 3, False), (1e-4, 4, False))
    jobs = [_job(settings, project["id"], golden, *run) for run in runs]
    body = client.get(f"/api/v1/projects/{project['id']}/trends", params={"golden_model_id": golden}).json()
    by_job = {p["job_id"]: p for p in body["points"]}
    assert set(by_job) == set(jobs)
    for job_id in jobs:
        point, rows = by_job[job_id], _stored(settings, job_id)
        se, head = point["standard_errors"], point["headline"]
        finite = [r for r in rows if r.finite]
        assert len(finite) == N - 1
        kl = np.array([r.kl for r in finite], dtype=np.float64)
        cosine = np.array([r.cosine for r in finite], dtype=np.float64)
        assert np.mean(kl) == pytest.approx(head["kl_mean_nats"], rel=1e-9)  # the rows the headline averaged
        assert se["kl_mean_nats"] == pytest.approx(stats.sem(kl), rel=1e-9)
        assert se["cosine_mean"] == pytest.approx(stats.sem(cosine), rel=1e-6)
        # the tiny-noise job's cosine spread is ~1e-9 on a mean of ~1: two-pass SQL keeps it
        assert se["cosine_mean"] > 0
        for share in ("top1_match", "topk_agreement"):
            binom = stats.binom(len(finite), head[share])
            assert se[share] == pytest.approx(binom.std() / len(finite), rel=1e-12)
        assert head["top1_match"] == pytest.approx(np.mean([r.top1_match for r in finite]), rel=1e-12)
        labelled = [r for r in finite if r.label is not None]
        d = np.array([(r.golden_class == r.label) - (r.compressed_class == r.label) for r in labelled], float)
        assert 100 * np.mean(d) == pytest.approx(head["top1_accuracy_drop_pp"], abs=1e-9)
        if np.all(d == 0):
            assert se["top1_accuracy_drop_pp"] == 0
        else:
            assert se["top1_accuracy_drop_pp"] == pytest.approx(100 * stats.sem(d), rel=1e-9)
        check_sqnr(finite, head["sqnr_db"], se["sqnr_db"], job_time=job_id in jobs[:2])
    for noisy, quiet in ((jobs[0], jobs[1]), (jobs[2], jobs[3])):
        noisy_se, quiet_se = by_job[noisy]["standard_errors"], by_job[quiet]["standard_errors"]
        # more noise in the model, more spread
        assert noisy_se["kl_mean_nats"] > 100 * quiet_se["kl_mean_nats"]
    # the job-time document and the stored table agree on the same job
    with session_factory(settings.resolved_database_url)() as session:
        ids = [uuid.UUID(j) for j in jobs[:2]]
        from_table = table_standard_errors(session, [(i, "logits") for i in ids])
        for stored_id in ids:
            stored = session.execute(
                select(JobResult.payload).where(
                    JobResult.job_id == stored_id, JobResult.key == RESULT_FIDELITY_SPREAD
                )
            ).scalar_one()
            assert stored.keys() == set(from_table[stored_id]) | {"sqnr_db"}  # SQNR: job time only
            for key, value in from_table[stored_id].items():
                assert stored[key] == pytest.approx(value, rel=1e-9)


def test_jobs_without_a_per_sample_table_have_no_spread(
    client: TestClient, settings: Settings, project: dict[str, Any], golden: str
) -> None:
    with session_factory(settings.resolved_database_url)() as session:
        job = Job(
            project_id=uuid.UUID(project["id"]), kind="fidelity", status="succeeded", attempts=1,
            params={"golden_model_id": golden, "compressed_model_id": golden, "dataset_id": str(uuid.uuid4())},
        )  # fmt: skip
        session.add(job)
        session.flush()
        summary = {"primary_output": "y", "outputs": {"y": {"top1_match": 0.9, "kl_mean_nats": 0.1}}}
        session.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_SUMMARY, payload=summary))
        session.commit()
    body = client.get(f"/api/v1/projects/{project['id']}/trends", params={"golden_model_id": golden}).json()
    assert body["points"][0]["standard_errors"] == dict.fromkeys(SE_METRICS)
