"""Pictures of the robustness slices' worst samples (issue 13): each corrupted input row the engine hands
over (worker/engine/robustness/worst_inputs.py) is drawn as a PNG at once, and the job's PNGs are stored
as one archive in the artifact store (backend/robustness_images.py) by the job's result writer, in the
transaction that commits the document naming it (worker/jobs/fidelity.py): a job that stops before (a
cancellation, the soft time limit, a later step that fails) stores nothing, and one whose commit does
not happen (taken from it, cancelled while it wrote) releases the archive again.

The archive holds the job's id and attempt (JOB_MEMBER), so it is never shared: not between a job and
its rerun (same seeded corruptions, same PNGs), whose deletion would otherwise release a file the rerun
has put but not committed yet, and not between two attempts of one job, where the attempt that does not
commit releases its archive.

A corrupted row is drawn on its clean row's value range (its finite min and max), the range the sample
inspector's clean picture is min-max scaled to, so a brightness or contrast change shows (min-max scaling
the corrupted row itself would undo it). For an .npz dataset the clean picture is drawn from the same
row on the same scale, so an unchanged row shows the same picture (only its size differs: at most
PNG_MAX_SIDE = 128 px here, 256 px for the clean one). For an image-zip dataset the clean picture is the
original file (image_zip_thumbnail), while the corrupted one is drawn from the resized, normalised tensor
the models received, so even an unchanged row differs from it by the resizing and the mode conversion.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import event
from sqlalchemy.orm import Session, SessionTransaction

from backend.array_png import array_thumbnail
from backend.errors import Conflict
from backend.robustness_images import JOB_MEMBER, PNG_MAX_SIDE, member_name, write_archive
from backend.services.artifacts import release
from backend.storage import copy_file_to_staging
from worker.runtime import JobContext, raise_if_stopping

logger = logging.getLogger(__name__)


def clean_range(row: np.ndarray) -> tuple[float, float] | None:
    """The finite min and max of a clean row; None when it has no spread (then the corrupted row is
    min-max scaled on its own)."""
    values = np.asarray(row, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0 or values.max() <= values.min():
        return None
    return float(values.min()), float(values.max())


class WorstPictures:
    """The sink of evaluate_robustness' worst inputs: PNG bytes by archive member, kept in memory (a few
    kB to 35 kB each, 240 per image array at most: 8 image slices x 3 severities x 10) until `store`."""

    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.arrays = arrays
        self.pngs: list[tuple[str, bytes]] = []

    def keep(self, name: str, severity: int, index: int, rows: dict[str, np.ndarray]) -> bool:
        """Draw the sample's corrupted image rows; whether any could be drawn."""
        drawn = False
        for array, row in sorted(rows.items()):
            try:
                png = array_thumbnail(row, PNG_MAX_SIDE, value_range=clean_range(self.arrays[array][index]))
            except Conflict:  # a shape the dashboard does not draw (4 channels, a side under 4 px)
                continue
            self.pngs.append((member_name(name, severity, index, array), png))
            drawn = True
        return drawn

    def store(self, ctx: JobContext, session: Session, document: dict[str, Any]) -> dict[str, Any] | None:
        """Store the PNGs as one archive, from the job's result writer (`session`: the transaction that
        commits `document`); the document's ``images`` ({sha256, count, bytes}), or None when there is
        none. A store that fails leaves the figures without pictures (every ``image`` false)."""
        if not self.pngs:
            return None
        job = json.dumps({"job": str(ctx.job_id), "attempt": ctx.attempt}).encode()
        try:
            with tempfile.TemporaryDirectory(prefix="kneeboard-robustness-") as tmp:
                path = Path(tmp) / "worst-inputs.zip"
                write_archive([*self.pngs, (JOB_MEMBER, job)], path)
                staged = copy_file_to_staging(path, ctx.store)
                ctx.store.put(staged)
        except Exception as exc:  # the pictures are extra: the slices' figures stand without them
            raise_if_stopping(exc)
            logger.warning("the robustness pictures could not be stored: %s", exc)
            for slice_doc in document["slices"]:
                for point in slice_doc["points"]:
                    for worst in point["worst_samples"]:
                        worst["image"] = False
            return None
        release_unless_committed(ctx, session, staged.sha256)
        return {"sha256": staged.sha256, "count": len(self.pngs), "bytes": staged.size_bytes}


def release_unless_committed(ctx: JobContext, session: Session, sha256: str) -> None:
    """Release the artifact once the session's transaction ends without a commit: write_and_finish found
    the job no longer ours ("skipped": cancelled or deleted while it wrote, taken by another attempt) and
    rolled back, or the commit failed (a replay puts the archive again). Checked in a session of its
    own, so the release happens only when no committed row names the artifact."""
    committed, done = False, False

    def on_commit(_: Session) -> None:
        nonlocal committed
        committed = True

    def on_end(_: Session, transaction: SessionTransaction) -> None:
        nonlocal done
        if done or transaction.parent is not None:  # a savepoint ends: the job's transaction goes on
            return
        done = True
        if committed:
            return
        try:
            with ctx.sessions() as other:
                release(other, ctx.store, sha256)
        except Exception as exc:  # the database went away with the commit: the archive stays (a leak)
            logger.warning(
                "the robustness pictures %s of job %s were not released: %s", sha256, ctx.job_id, exc
            )

    event.listen(session, "after_commit", on_commit)
    event.listen(session, "after_transaction_end", on_end)
