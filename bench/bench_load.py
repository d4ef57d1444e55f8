"""The API under 50 concurrent clients: requests/s, p50, p95 and errors per endpoint, and each endpoint's p95
against /health's p95 under the same load (goal: at most 3x for every results endpoint, no errors).

A private Postgres database (the tests' server, 127.0.0.1:5432) holds a project with 200 jobs, a fidelity
job with 100,000 per-sample rows, a sweep of 10,000 points and a sensitivity scan (60 layers x 6
configurations, with every cell's record), inserted with COPY. The API runs as the deployment runs it
(`kneeboard api`: KNEEBOARD_API_PROCESSES uvicorn processes, default from the CPU count) in a subprocess; a
bounded asyncio client (httpx, 50 coroutines, each taking the endpoints in turn) loads it for --duration
seconds after a short warm-up (which builds each sweep's packed objectives once, as the first frontier does).

    .venv/bin/python -m bench.bench_load [--duration 30] [--clients 50] [--processes N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

N_SAMPLES = 100_000
N_POINTS = 10_000
N_JOBS = 200
PAGE = 50


@dataclass(frozen=True)
class Seeded:
    headers: dict[str, str]
    project_id: uuid.UUID
    fidelity_id: uuid.UUID
    sweep_id: uuid.UUID
    sensitivity_id: uuid.UUID


def _fidelity_summary(rng: np.random.Generator) -> dict[str, Any]:
    metrics = {
        "kl_mean_nats": float(rng.random()),
        "js_mean_nats": float(rng.random()),
        "top1_match": 0.97,
        "topk_agreement": 0.99,
        "cosine_mean": 0.995,
        "sqnr_db": 31.5,
        "labels": {"top1_accuracy_drop_pp": 0.4, "calibration": {"ece_shift": 0.01}},
        "kl_histogram": {"edges": rng.random(51).tolist(), "counts": rng.integers(0, 9999, 50).tolist()},
    }
    return {
        "primary_output": "logits",
        "n_samples": N_SAMPLES,
        "outputs": {"logits": metrics},
        "per_sample_summary": {"concentration": {"verdict": "spread"}},
    }


def _sensitivity_doc(rng: np.random.Generator, n_layers: int = 60, n_configs: int = 6) -> dict[str, Any]:
    rows = [f"features.{i}.conv" for i in range(n_layers)]
    columns = [f"w{b}-sym-channel" for b in (8, 6, 5, 4, 3, 2)][:n_configs]
    kl = rng.random((n_layers, n_configs)).tolist()
    return {
        "mode": "only",
        "primary_output": "logits",
        "output_kind": "classifier",
        "n_samples": 256,
        "ranking_metric": "kl",
        "configs": [{"id": c, "config": {"type": "weight_quant"}, "weight_bits": 8} for c in columns],
        "layers": [
            {
                "name": name,
                "type": "Conv2d",
                "params": 9408,
                "weight_params": 9408,
                "macs": 118013952,
                "depth_index": i,
                "depth_fraction": i / (n_layers - 1),
                "shared_with": [],
                "notes": [],
            }
            for i, name in enumerate(rows)
        ],
        "matrix": {"rows": rows, "columns": columns, "kl_mean": kl, "sqnr_db": kl, "top1_agreement": kl},
        "ranking": {"overall": rows, "by_config": {c: rows for c in columns}},
        "whole_model": {c: {"kl_mean": 0.1, "sqnr_db": 20.0} for c in columns},
        "cells": [
            {
                "layer": r,
                "config": c,
                "kl_mean": 0.1,
                "sqnr_db": 20.0,
                "top1_agreement": 0.99,
                "extra": [0.5] * 40,
            }
            for r in rows
            for c in columns
        ],
        "notes": [],
    }


def _objectives(rng: np.random.Generator) -> dict[str, float | None]:
    """The names and number of values the worker stores for a point (worker/jobs/sweep.py)."""
    names = ["kl_mean", "js_mean", "top1_agreement", "sqnr_db", "cosine_mean", "accuracy", "accuracy_drop_pp"]
    names += ["ece", "size_bytes", "compression_ratio", "params_kept", "macs", "bops"]
    names += [f"latency_{q}_ms_b{b}" for b in (1, 8) for q in ("p50", "p90")] + ["latency_ratio_b1"]
    return {name: float(v) for name, v in zip(names, rng.random(len(names)), strict=True)}


def seed(url: str) -> Seeded:
    from sqlalchemy.engine import make_url

    from backend.contracts import RESULT_FIDELITY_SUMMARY, RESULT_SENSITIVITY
    from backend.db.models import Job, JobResult, Project
    from backend.db.session import session_factory
    from tests.support.accounts import account_in

    rng = np.random.default_rng(0)
    account = account_in(url, username="bench", team="bench")
    refs = {
        k: str(uuid.uuid4()) for k in ("golden_model_id", "compressed_model_id", "model_id", "dataset_id")
    }
    with session_factory(url)() as session:
        project = Project(name="bench", team_id=account.team_id)
        session.add(project)
        session.flush()

        def job(kind: str) -> Job:
            row = Job(project_id=project.id, kind=kind, params=refs, status="succeeded", attempts=1)
            session.add(row)
            return row

        for i in range(N_JOBS):
            job(("fidelity", "sweep", "sensitivity")[i % 3])
        fidelity, sweep, sensitivity = job("fidelity"), job("sweep"), job("sensitivity")
        session.flush()
        session.add(
            JobResult(job_id=fidelity.id, key=RESULT_FIDELITY_SUMMARY, payload=_fidelity_summary(rng))
        )
        session.add(JobResult(job_id=sensitivity.id, key=RESULT_SENSITIVITY, payload=_sensitivity_doc(rng)))
        session.commit()
        seeded = Seeded(account.headers, project.id, fidelity.id, sweep.id, sensitivity.id)

    import psycopg

    plain = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    kl = rng.exponential(0.05, N_SAMPLES)
    with psycopg.connect(plain) as conn, conn.cursor() as cur:
        columns = "job_id, output_name, sample_index, kl, cosine, mse, sqnr_db, top1_match, golden_class, "
        columns += "compressed_class, label, flagged, finite"
        with cur.copy(f"COPY sample_divergences ({columns}) FROM STDIN") as copy:
            for i in range(N_SAMPLES):
                k = float(kl[i])
                copy.write_row(
                    (seeded.fidelity_id, "logits", i, k, 1 - k, k / 3, 30 - k, k < 0.1, i % 10, i % 10, i % 10,
                     k > 0.2, True)
                )  # fmt: skip
        with cur.copy(
            "COPY sweep_points (job_id, index, label, config, objectives, point) FROM STDIN"
        ) as copy:
            for i in range(N_POINTS):
                objectives = _objectives(rng)
                point = {
                    "fidelity": objectives,
                    "runtime": {"executable": True, "real_export": "real-int8-qdq"},
                }
                copy.write_row(
                    (seeded.sweep_id, i, f"cfg-{i}", json.dumps({"type": "weight_quant", "bits": 8}),
                     json.dumps(objectives), json.dumps(point))
                )  # fmt: skip
        conn.commit()
        cur.execute("ANALYZE")
    return seeded


Request = tuple[str, str, dict[str, Any]]


def endpoints(s: Seeded) -> dict[str, Callable[[random.Random], Request]]:
    """Each endpoint as a function of a random source → (name, path, query)."""
    return {
        "/health": lambda _: ("/health", "/api/v1/health", {}),
        "job list": lambda _: ("job list", "/api/v1/jobs", {"project_id": str(s.project_id), "limit": PAGE}),
        "fidelity summary": lambda _: ("fidelity summary", f"/api/v1/jobs/{s.fidelity_id}/fidelity", {}),
        "per-sample page": lambda r: (
            "per-sample page",
            f"/api/v1/jobs/{s.fidelity_id}/fidelity/samples",
            {"sort": "kl", "order": "desc", "limit": PAGE, "offset": PAGE * r.randrange(N_SAMPLES // PAGE)},
        ),
        "sensitivity result": lambda _: (
            "sensitivity result",
            f"/api/v1/jobs/{s.sensitivity_id}/sensitivity",
            {},
        ),
        "Pareto frontier": lambda r: (
            "Pareto frontier",
            "/api/v1/sweep-frontier",
            {
                "job_ids": str(s.sweep_id),
                "objective": ["kl_mean:min", "size_bytes:min", "top1_agreement:max"],
                "bound": r.choice([[], ["latency_p50_ms_b1<=0.5"], ["top1_agreement>=0.2"]]),
            },
        ),
    }


async def load(
    base: str, s: Seeded, clients: int, duration_s: float
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, int], float]:
    import httpx

    latencies: dict[str, list[float]] = defaultdict(list)
    alone: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    reasons: dict[str, int] = defaultdict(int)  # what each failed request answered, printed after the table
    kinds = list(endpoints(s).values())
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base, headers=s.headers, timeout=30.0, limits=limits) as http:

        async def client(number: int, stop_at: float, record: bool) -> None:
            rng = random.Random(number)
            turn = number
            while time.monotonic() < stop_at:
                name, path, query = kinds[turn % len(kinds)](rng)
                turn += 1
                start = time.perf_counter()
                why = ""
                try:
                    response = await http.get(path, params=query)
                    if response.status_code != 200:
                        why = f"{response.status_code} {response.text[:160]}"
                except httpx.HTTPError as exc:
                    why = f"{type(exc).__name__} {exc}"[:160]
                if record:
                    latencies[name].append(time.perf_counter() - start)
                    errors[name] += 1 if why else 0
                    if why:
                        reasons[f"{name}: {why}"] += 1

        # Unloaded: one client, each endpoint in turn (what a request costs alone, and the warm-up that
        # builds each sweep's packed objectives and each cached order once per process).
        for _ in range(10):
            for make in kinds:
                name, path, query = make(random.Random(0))
                start = time.perf_counter()
                await http.get(path, params=query)
                alone[name].append(time.perf_counter() - start)
        warm_until = time.monotonic() + min(5.0, duration_s / 4)
        await asyncio.gather(*(client(i, warm_until, False) for i in range(clients)))
        start = time.monotonic()
        await asyncio.gather(*(client(i, start + duration_s, True) for i in range(clients)))
        elapsed = time.monotonic() - start
        for reason, count in sorted(reasons.items()):
            print(f"error x{count}: {reason}")
        return latencies, alone, errors, elapsed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of measured load")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument(
        "--processes", type=int, default=None, help="API processes (default: the deployment's)"
    )
    args = parser.parse_args(argv)

    from backend.db.migrations import upgrade_to_head
    from backend.settings import Settings
    from tests.support.services import REDIS_URL, private_postgres_database, start_api

    with private_postgres_database() as url, tempfile.TemporaryDirectory() as tmp:
        upgrade_to_head(url)
        started = time.monotonic()
        seeded = seed(url)
        seeding = time.monotonic() - started
        settings = Settings(
            data_dir=Path(tmp) / "data",
            database_url=url,
            broker_url=REDIS_URL,
            artifact_uri=(Path(tmp) / "artifacts").as_uri(),
            seed_demo=False,
            api_processes=args.processes,
        )
        api, base = start_api(settings, Path(tmp) / "api.log")
        try:
            latencies, alone, errors, elapsed = asyncio.run(load(base, seeded, args.clients, args.duration))
        finally:
            api.stop()
    print(
        f"API under load: {args.clients} clients for {elapsed:.0f} s, {settings.resolved_api_processes} API "
        f"processes x pool {settings.database_pool_size}, Postgres with {N_POINTS} sweep points and "
        f"{N_SAMPLES} per-sample rows (seeded in {seeding:.0f} s)"
    )
    health_p95 = float(np.percentile(latencies["/health"], 95))
    for name in endpoints(seeded):
        times = np.array(latencies[name])
        p50, p95 = np.percentile(times, 50), np.percentile(times, 95)
        print(
            f"{name:<20} {len(times) / elapsed:7.1f} req/s   p50 {p50 * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms"
            f"   errors {errors[name]:3d}   p95 {p95 / health_p95:5.2f}x /health"
            f"   (alone: p50 {np.percentile(alone[name], 50) * 1000:6.1f} ms)"
        )


if __name__ == "__main__":
    main()
