"""Pictures of the robustness slices' worst samples (issue 13): each corrupted input row the engine hands
over (worker/engine/robustness/worst_inputs.py) is drawn as a PNG at once, and the job's PNGs are stored
as one archive in the artifact store (backend/robustness_images.py) when the slices are done.

A corrupted row is drawn on its clean row's value range (its finite min and max), the range the sample
inspector's clean picture is min-max scaled to: an unchanged picture comes out identical, and a
brightness or contrast change shows (min-max scaling the corrupted row itself would undo it).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from backend.dataset_preview import array_thumbnail
from backend.errors import Conflict
from backend.robustness_images import PNG_MAX_SIDE, member_name, write_archive
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
    kB each, at most 270 per job) until `store`."""

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

    def store(self, ctx: JobContext, document: dict[str, Any]) -> dict[str, Any] | None:
        """Store the PNGs as one archive; the document's ``images`` ({sha256, count, bytes}), or None when
        there is none. A store that fails leaves the figures without pictures (every ``image`` false)."""
        if not self.pngs:
            return None
        try:
            with tempfile.TemporaryDirectory(prefix="kneeboard-robustness-") as tmp:
                path = Path(tmp) / "worst-inputs.zip"
                write_archive(self.pngs, path)
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
        return {"sha256": staged.sha256, "count": len(self.pngs), "bytes": staged.size_bytes}
