"""The frontier over packed objective tables and its cache, over the real API and Postgres: the points' JSON
is read once per sweep, a repeated frontier reads neither the points nor the table, a change of the points
(a re-run replaces them) is seen at once, and every answer matches a brute-force non-dominated filter."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, event, select

from backend import sweep_objectives
from backend.db.models import Job, SweepObjectiveTable, SweepPoint
from backend.db.session import engine_for, session_factory
from backend.settings import Settings

OBJECTIVES = ["kl_mean:min", "size_bytes:min"]


def _store_points(settings: Settings, job_id: uuid.UUID, values: np.ndarray) -> None:
    with session_factory(settings.resolved_database_url)() as session:
        session.execute(delete(SweepPoint).where(SweepPoint.job_id == job_id))
        session.add_all(
            SweepPoint(
                job_id=job_id,
                index=i,
                label=f"cfg-{i}",
                config={},
                objectives={"kl_mean": None if math.isnan(k) else k, "size_bytes": s},
                point={},
            )
            for i, (k, s) in enumerate(values.tolist())
        )
        session.commit()


def _sweep(settings: Settings, project_id: str, values: np.ndarray) -> uuid.UUID:
    with session_factory(settings.resolved_database_url)() as session:
        job = Job(project_id=uuid.UUID(project_id), kind="sweep", params={}, status="succeeded", attempts=1)
        session.add(job)
        session.commit()
        job_id = job.id
    _store_points(settings, job_id, values)
    return job_id


def _brute_force(values: np.ndarray) -> set[int]:
    finite = np.flatnonzero(np.isfinite(values).all(axis=1))
    x = values[finite]
    dominated = (
        (x[:, None, :] <= x[None, :, :]).all(axis=2) & (x[:, None, :] < x[None, :, :]).any(axis=2)
    ).any(axis=0)
    return {int(i) for i in finite[~dominated]}


@pytest.fixture
def statements(settings: Settings) -> Iterator[list[str]]:
    """The SQL the API sends, as it sends it."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    engine = engine_for(settings.resolved_database_url)
    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


def _frontier(client: TestClient, job_id: uuid.UUID, objectives: list[str] = OBJECTIVES) -> set[int]:
    response = client.get(
        "/api/v1/sweep-frontier", params={"job_ids": [str(job_id)], "objective": objectives}
    )
    assert response.status_code == 200, response.text
    return {point["index"] for point in response.json()["frontier"]}


def test_points_are_read_once_and_a_repeated_frontier_reads_nothing_of_them(
    client: TestClient, project: dict[str, Any], settings: Settings, statements: list[str]
) -> None:
    rng = np.random.default_rng(3)
    values = rng.random((300, 2))
    values[7, 0] = np.nan  # a point without a KL is excluded, not on the frontier
    job_id = _sweep(settings, project["id"], values)

    def reads(table_column: str) -> int:
        return sum(table_column in s for s in statements)

    assert _frontier(client, job_id) == _brute_force(values)
    assert reads("sweep_points.objectives") == 1
    with session_factory(settings.resolved_database_url)() as session:
        stored = session.get_one(SweepObjectiveTable, job_id)
    assert stored.points_count == 300
    packed = np.frombuffer(stored.objective_values).reshape(300, 2)
    np.testing.assert_array_equal(packed[:, stored.names.index("size_bytes")], values[:, 1])

    statements.clear()
    assert _frontier(client, job_id) == _brute_force(values)
    assert reads("sweep_points.objectives") == 0 and reads("sweep_objective_tables") == 0

    # Other objectives of the same sweep: from the process's unpacked table, reading nothing.
    statements.clear()
    flipped = values * np.array([1.0, -1.0])
    assert _frontier(client, job_id, ["kl_mean:min", "size_bytes:max"]) == _brute_force(flipped)
    assert reads("sweep_points.objectives") == 0 and reads("sweep_objective_tables") == 0

    # Another process (its caches empty): the stored table, not the points.
    sweep_objectives._TABLES.clear()
    statements.clear()
    assert _frontier(client, job_id, ["kl_mean:max", "size_bytes:min"]) == _brute_force(
        -values * np.array([1.0, -1.0])
    )
    assert reads("sweep_points.objectives") == 0 and reads("sweep_objective_tables") == 1


def test_changed_points_change_the_frontier_at_once(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    rng = np.random.default_rng(5)
    before, after = rng.random((200, 2)), rng.random((150, 2))
    job_id = _sweep(settings, project["id"], before)
    assert _frontier(client, job_id) == _brute_force(before)
    _store_points(settings, job_id, after)  # what a re-run does: its points replaced
    assert _frontier(client, job_id) == _brute_force(after)
    with session_factory(settings.resolved_database_url)() as session:
        stored = session.scalars(
            select(SweepObjectiveTable).where(SweepObjectiveTable.job_id == job_id)
        ).one()
    assert stored.points_count == 150


def test_a_deleted_sweep_takes_its_table_along(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    job_id = _sweep(settings, project["id"], np.random.default_rng(1).random((20, 2)))
    _frontier(client, job_id)
    assert client.delete(f"/api/v1/jobs/{job_id}").status_code == 204
    with session_factory(settings.resolved_database_url)() as session:
        assert session.get(SweepObjectiveTable, job_id) is None
    response = client.get(
        "/api/v1/sweep-frontier", params={"job_ids": [str(job_id)], "objective": OBJECTIVES}
    )
    assert response.status_code == 404


def test_a_sweep_packed_at_merge_is_never_read_point_by_point(
    client: TestClient, project: dict[str, Any], settings: Settings, statements: list[str]
) -> None:
    """The sweep's merge writes its points and packs them in one transaction (worker/jobs/sweep.py), so
    even the first frontier reads the packed row, not the points' JSON; sweeps stored before (the tests
    above) are still packed on their first read."""
    values = np.random.default_rng(9).random((120, 2))
    job_id = _sweep(settings, project["id"], np.zeros((0, 2)))
    with session_factory(settings.resolved_database_url)() as session:
        points = [
            SweepPoint(
                job_id=job_id,
                index=i,
                label=f"cfg-{i}",
                config={},
                objectives={"kl_mean": k, "size_bytes": s},
                point={},
            )
            for i, (k, s) in enumerate(values.tolist())
        ]
        session.add_all(reversed(points))  # written in any order: packed by index
        sweep_objectives.pack_points(session, job_id, points)
        session.commit()
    statements.clear()
    assert _frontier(client, job_id) == _brute_force(values)
    assert sum("sweep_points.objectives" in s for s in statements) == 0
    assert sum("sweep_objective_tables" in s for s in statements) == 1
