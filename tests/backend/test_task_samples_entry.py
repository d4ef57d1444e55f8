"""One sample's stored task predictions read by JSON path, on Postgres and on SQLite (the embedded default):
the entry of that index, the detection's image size beside it, and a 404 that says how many were kept."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session

from backend.contracts import RESULT_FIDELITY_TASK_SAMPLES
from backend.db.models import JobResult
from backend.errors import NotFound
from backend.services.task_samples import task_sample_entry
from tests.support.jobs import queued_job


def test_one_sample_is_read_on_each_database(session_on_each_database: Session) -> None:
    session = session_on_each_database
    job = queued_job(session)
    samples = [
        {
            "golden": [{"box": [i, 0.5, i + 2.25, 3.0], "score": 0.9, "label": i % 3}],
            "compressed": [],
            "truth": None,
        }
        for i in range(12)
    ]
    document = {"task": "detection", "n_samples": 12, "image_size": [64.0, 48.0], "samples": samples}
    session.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_TASK_SAMPLES, payload=document))
    session.commit()

    for index in (0, 7, 11):
        assert task_sample_entry(session, job.id, index) == {
            "task": "detection",
            "image_size": [64.0, 48.0],
            **samples[index],
        }
    with pytest.raises(NotFound, match="first 12 samples"):
        task_sample_entry(session, job.id, 12)
    with pytest.raises(NotFound, match="kept no task predictions"):
        task_sample_entry(session, queued_job(session).id, 0)


def test_an_entry_that_names_its_task_is_read_alone_and_past_ones_still_say_how_many(
    session_on_each_database: Session,
) -> None:
    """Signal, image and segmentation entries carry their task and what their answer needs, so one JSON path
    answers (documents of pictures are megabytes, parsed once per path); a document-level key is not added."""
    session = session_on_each_database
    job = queued_job(session)
    samples = [{"task": "signal", "sample_rate": 8000, "shape": [4], "golden": f"g{i}"} for i in range(3)]
    document = {"task": "signal", "n_samples": 3, "sample_rate": 16000, "samples": samples}
    session.add(JobResult(job_id=job.id, key=RESULT_FIDELITY_TASK_SAMPLES, payload=document))
    session.commit()
    assert task_sample_entry(session, job.id, 2) == samples[2]
    with pytest.raises(NotFound, match="first 3 samples"):
        task_sample_entry(session, job.id, 3)
