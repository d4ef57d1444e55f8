"""The sampling noise of each run's headline numbers, so a trend can tell "worse than the last run" from
"another draw of the same noise".

A headline mean over n samples has a standard error: for the per-sample means (KL, cosine) the sample standard
deviation over √n, computed from the job's stored per-sample table (sample_divergences, primary output, finite
samples only: the rows the engine averaged); for shares (top-1 and top-k agreement) the binomial √(p(1−p)/n)
from the summary alone; for the top-1 accuracy drop the paired one, the standard error of
d_i = [golden right] − [compressed right] over labelled finite samples (both models see the same inputs, so
the two accuracies are correlated and their own standard errors would overstate the noise). SQNR is a ratio of
sums, 10·log10(Σs/Σe) over per-sample signal and error powers: its standard error is the delta method's,
(10/ln 10)·√((var s/S̄² + var e/Ē² − 2 cov(s,e)/(S̄Ē))/n), at job time only (s_i = e_i·10^(sqnr_i/10) is lost
where an error is exactly 0: None then). JS and the ECE shift (binned) have no per-sample column: None, and the
dashboard keeps fixed thresholds for them and says so.

The worker computes the table's three at job time (`spread_document`, numpy on the table it is about to store)
into the job result "fidelity.spread": measured on Postgres, the same from the stored table for 200 jobs of
10,000 samples reads 2 M rows, 3.1 s in two passes of SQL (1.1 s with Postgres's one-pass stddev_samp), against
one small document per job. Jobs from before that document fall back to the table: both passes in SQL (means,
then Σ(x − mean)²), portable to SQLite, over the (job, output) prefix of the table's index; never the one-pass
Σx² − (Σx)²/n, which cancels to noise when the cosine's spread is 1e-9 on a mean of 1.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sqlalchemy import Integer, case, cast, func, select, tuple_
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from backend.db.models import JobResult
from backend.db.models import SampleDivergence as SD

RESULT_FIDELITY_SPREAD = "fidelity.spread"
TABLE_METRICS = ("kl_mean_nats", "cosine_mean", "top1_accuracy_drop_pp", "sqnr_db")
SE_METRICS = (
    "kl_mean_nats",
    "cosine_mean",
    "top1_match",
    "topk_agreement",
    "top1_accuracy_drop_pp",
    "sqnr_db",
)


def binomial_se(share: Any, n: Any) -> float | None:
    """√(p(1−p)/n) for a share p of n samples; None without a share or samples."""
    if not isinstance(share, int | float) or not isinstance(n, int) or n <= 0 or not 0 <= share <= 1:
        return None
    return math.sqrt(float(share) * (1.0 - float(share)) / n)


def _sem(sum_sq_dev: float | None, n: int) -> float | None:
    """Sample standard deviation (n − 1) over √n; None below two values."""
    if sum_sq_dev is None or n < 2:
        return None
    return math.sqrt(max(float(sum_sq_dev), 0.0) / (n - 1) / n)


def _sem_of(values: np.ndarray) -> float | None:
    v = np.asarray(values, dtype=np.float64)
    return _sem(float(np.sum((v - v.mean()) ** 2)), int(v.size)) if v.size else None


def sqnr_se_db(error: np.ndarray, sqnr: np.ndarray) -> float | None:
    """Delta-method standard error (dB) of 10·log10(Σs/Σe) from per-sample error powers (or any multiple of
    them, e.g. the mse) and per-sample SQNR in dB; None when a signal cannot be recovered (an error of 0) or
    there is no error at all."""
    e, q = np.asarray(error, np.float64), np.asarray(sqnr, np.float64)
    if e.size < 2 or np.any(np.isnan(q)) or np.any(q == np.inf) or np.any(np.isnan(e)):
        return None
    sig = np.where(q == -np.inf, 0.0, e * np.power(10.0, np.where(np.isfinite(q), q, 0.0) / 10.0))
    s_mean, e_mean = float(sig.mean()), float(e.mean())
    if s_mean <= 0.0 or e_mean <= 0.0:
        return None
    cov = np.cov(sig, e, ddof=1)
    var_log = (cov[0, 0] / s_mean**2 + cov[1, 1] / e_mean**2 - 2 * cov[0, 1] / (s_mean * e_mean)) / e.size
    return float(10.0 / np.log(10.0) * np.sqrt(max(float(var_log), 0.0)))


def spread_document(table: Mapping[str, np.ndarray]) -> dict[str, float | None]:
    """The job-time "fidelity.spread" document: TABLE_METRICS standard errors from the engine's per-sample
    table of the primary output (the columns sample_rows stores), as table_standard_errors reads them back."""
    finite = np.asarray(table["finite"], dtype=bool)
    kl, cosine = np.asarray(table["kl"], np.float64), np.asarray(table["cosine"], np.float64)
    label, golden, compressed = (np.asarray(table[k]) for k in ("label", "golden_class", "compressed_class"))
    labelled = finite & (label >= 0) & (golden >= 0)
    paired = (golden[labelled] == label[labelled]).astype(np.float64) - (
        compressed[labelled] == label[labelled]
    )
    drop = _sem_of(paired)
    mse, sqnr = np.asarray(table["mse"], np.float64), np.asarray(table["sqnr_db"], np.float64)
    return {
        "kl_mean_nats": _sem_of(kl[finite & ~np.isnan(kl)]),
        "cosine_mean": _sem_of(cosine[finite & ~np.isnan(cosine)]),
        "top1_accuracy_drop_pp": None if drop is None else 100.0 * drop,
        "sqnr_db": sqnr_se_db(mse[finite], sqnr[finite]),
    }


def _paired_correct() -> ColumnElement[Any]:
    """[golden right] − [compressed right] for a labelled finite row, else NULL."""
    right_g = cast(SD.golden_class == SD.label, Integer)
    right_c = cast(SD.compressed_class == SD.label, Integer)
    return case(
        (SD.label.is_not(None) & SD.finite & SD.golden_class.is_not(None), right_g - right_c), else_=None
    )


def table_standard_errors(
    session: Session, outputs: Sequence[tuple[uuid.UUID, str]]
) -> dict[uuid.UUID, dict[str, float | None]]:
    """Standard errors of the mean KL and cosine and of the paired top-1 accuracy drop (in pp) from the stored
    per-sample table of each (job, primary output); jobs without rows are absent."""
    if not outputs:
        return {}
    columns = {"kl_mean_nats": SD.kl, "cosine_mean": SD.cosine, "top1_accuracy_drop_pp": _paired_correct()}
    where = tuple_(SD.job_id, SD.output_name).in_([(j, o) for j, o in outputs])
    means = (
        select(
            SD.job_id.label("job_id"),
            SD.output_name.label("output_name"),
            *(func.avg(expr).label(f"m_{k}") for k, expr in columns.items()),
            *(func.count(expr).label(f"n_{k}") for k, expr in columns.items()),
        )
        .where(where)
        .group_by(SD.job_id, SD.output_name)
        .subquery()
    )
    deviations = [
        func.sum((expr - means.c[f"m_{k}"]) * (expr - means.c[f"m_{k}"])).label(f"ss_{k}")
        for k, expr in columns.items()
    ]
    query = (
        select(means.c.job_id, *(means.c[f"n_{k}"] for k in columns), *deviations)
        .select_from(SD)
        .join(means, (SD.job_id == means.c.job_id) & (SD.output_name == means.c.output_name))
        .where(where)
        .group_by(means.c.job_id, *(means.c[f"n_{k}"] for k in columns))
    )
    result: dict[uuid.UUID, dict[str, float | None]] = {}
    for row in session.execute(query).mappings():
        errors = {k: _sem(row[f"ss_{k}"], int(row[f"n_{k}"])) for k in columns}
        drop = errors["top1_accuracy_drop_pp"]
        errors["top1_accuracy_drop_pp"] = None if drop is None else 100.0 * drop
        result[row["job_id"]] = errors
    return result


def summary_standard_errors(summary: dict[str, Any]) -> dict[str, float | None]:
    """Binomial standard errors of the primary output's top-1 and top-k agreement (over its finite samples)."""
    metrics: dict[str, Any] = (summary.get("outputs") or {}).get(summary.get("primary_output", ""), {}) or {}
    n = metrics.get("n_finite")
    return {k: binomial_se(metrics.get(k), n) for k in ("top1_match", "topk_agreement")}


def standard_errors(
    session: Session, summaries: Sequence[tuple[uuid.UUID, dict[str, Any]]]
) -> dict[uuid.UUID, dict[str, float | None]]:
    """Every SE_METRICS standard error of each job (None where the job has no spread for it): the job-time
    document where the job has one, else from its stored per-sample table."""
    ids = [job_id for job_id, _ in summaries]
    stored: dict[uuid.UUID, dict[str, Any]] = {}
    if ids:
        documents = select(JobResult.job_id, JobResult.payload).where(
            JobResult.job_id.in_(ids), JobResult.key == RESULT_FIDELITY_SPREAD
        )
        stored = {job_id: dict(payload) for job_id, payload in session.execute(documents).tuples()}
    older = [(job_id, str(s.get("primary_output", ""))) for job_id, s in summaries if job_id not in stored]
    from_table: dict[uuid.UUID, dict[str, Any]] = {**table_standard_errors(session, older), **stored}
    empty: dict[str, float | None] = dict.fromkeys(SE_METRICS)
    return {
        job_id: empty
        | {k: _number(from_table.get(job_id, {}).get(k)) for k in TABLE_METRICS}
        | summary_standard_errors(summary)
        for job_id, summary in summaries
    }


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None
