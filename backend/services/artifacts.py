"""Moving staged uploads into the store and the database together, and releasing them again.

Order matters so that a failure leaves nothing behind: the file is validated while still private
(staging), then stored, then the rows are committed; if the commit fails, a file that this upload added
is removed again.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from backend.contracts import RESULT_FIDELITY_ROBUSTNESS
from backend.db.models import Artifact, Dataset, JobResult, Model, SweepPoint
from backend.storage import ArtifactStore, StagedFile


def persist(
    session: Session, store: ArtifactStore, staged: StagedFile, add_rows: Callable[[Session], None]
) -> None:
    """Store the staged file and commit the rows that reference it, all or nothing."""
    added_file = store.put(staged)
    try:
        if session.get(Artifact, staged.sha256) is None:
            session.add(Artifact(sha256=staged.sha256, size_bytes=staged.size_bytes))
            session.flush()
        add_rows(session)
        session.commit()
    except BaseException:
        session.rollback()
        if added_file and not _is_referenced(session, staged.sha256):
            with contextlib.suppress(Exception):
                store.delete(staged.sha256)
        raise


def _is_referenced(session: Session, sha256: str) -> bool:
    models = session.execute(select(func.count()).where(Model.artifact_sha256 == sha256)).scalar_one()
    datasets = session.execute(select(func.count()).where(Dataset.artifact_sha256 == sha256)).scalar_one()
    exports = session.execute(select(func.count()).where(SweepPoint.export_sha256 == sha256)).scalar_one()
    pictures = session.execute(
        select(func.count()).where(JobResult.key == RESULT_FIDELITY_ROBUSTNESS, _pictures_sha256() == sha256)
    ).scalar_one()
    return bool(models or datasets or exports or pictures)


def _pictures_sha256() -> Any:
    """The robustness document's picture archive (backend/robustness_images.py), as a SQL expression."""
    return JobResult.payload["images"]["sha256"].as_string()


def job_artifacts(session: Session, job_id: uuid.UUID) -> set[str]:
    """The artifacts a job made: its sweep's exported models and its robustness pictures (release them
    once the job is deleted)."""
    exports = session.scalars(select(SweepPoint.export_sha256).where(SweepPoint.job_id == job_id))
    pictures = session.scalars(
        select(_pictures_sha256()).where(
            JobResult.job_id == job_id, JobResult.key == RESULT_FIDELITY_ROBUSTNESS
        )
    )
    return {sha for sha in [*exports, *pictures] if sha is not None}


def release(session: Session, store: ArtifactStore, sha256: str) -> None:
    """Drop the artifact's row and file when nothing references it any more. Call after the commit
    that removed the last reference."""
    if _is_referenced(session, sha256):
        return
    artifact = session.get(Artifact, sha256)
    if artifact is not None:
        session.delete(artifact)
        session.commit()
    store.delete(sha256)
