"""The frontier endpoint over 10,000 stored sweep points (the API in-process over its embedded SQLite),
against a plain query of the same points' numbers (the least any frontier must do)."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import numpy as np

from bench.common import best_of, report

N_POINTS = 10_000


def main() -> None:
    from fastapi.testclient import TestClient
    from sqlalchemy import select

    from backend.api.app import create_app
    from backend.db.migrations import upgrade_to_head
    from backend.db.models import Job, Project, SweepPoint
    from backend.db.session import session_factory
    from backend.settings import Settings
    from tests.support.accounts import account_in

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", seed_demo=False)
        settings.data_dir.mkdir()
        upgrade_to_head(settings.resolved_database_url)
        sessions = session_factory(settings.resolved_database_url)
        rng = np.random.default_rng(0)
        values = rng.random((N_POINTS, 4))
        account = account_in(settings.resolved_database_url, username="bench", team="bench")
        with sessions() as session:
            project = Project(name="bench", team_id=account.team_id)
            session.add(project)
            session.flush()
            job = Job(project_id=project.id, kind="sweep", params={}, status="succeeded", attempts=1)
            session.add(job)
            session.flush()
            job_id: uuid.UUID = job.id
            session.add_all(
                SweepPoint(
                    job_id=job_id,
                    index=i,
                    label=f"cfg-{i}",
                    config={"type": "weight_quant", "bits": 8},
                    objectives={
                        "kl_mean": k,
                        "size_bytes": s * 1e6,
                        "top1_agreement": t,
                        "latency_p50_ms_b1": p,
                    },
                    point={},
                )
                for i, (k, s, t, p) in enumerate(values.tolist())
            )
            session.commit()

        def plain_query() -> None:
            with sessions() as session:
                rows = session.execute(
                    select(SweepPoint.index, SweepPoint.objectives).where(SweepPoint.job_id == job_id)
                )
                assert len(rows.all()) == N_POINTS

        with TestClient(create_app(settings, run_reaper=False), headers=account.headers) as client:
            query = {
                "job_ids": [str(job_id)],
                "objective": ["kl_mean:min", "size_bytes:min", "top1_agreement:max"],
            }

            def frontier() -> None:
                response = client.get("/api/v1/sweep-frontier", params=query)
                assert response.status_code == 200, response.text

            def bounded() -> None:
                params = query | {"bound": ["kl_mean<=0.5", "latency_p50_ms_b1<=0.5"]}
                assert client.get("/api/v1/sweep-frontier", params=params).status_code == 200

            base = best_of(plain_query, repeats=5)
            print(f"frontier endpoint: {N_POINTS} stored sweep points, 3 objectives, embedded SQLite")
            report("plain query of the points' numbers", base, "baseline", base)
            report("GET /sweep-frontier", best_of(frontier, repeats=5), "baseline", base)
            report("GET /sweep-frontier with 2 bounds", best_of(bounded, repeats=5), "baseline", base)


if __name__ == "__main__":
    main()
