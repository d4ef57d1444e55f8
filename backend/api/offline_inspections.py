"""The sample inspector in an exported fidelity report (issue 17 file, issue 16 inspector): the worst samples
by KL, each answered in the file exactly as GET /jobs/{id}/samples/{index} answers it, with its picture as a
data: URL PNG (the same bytes GET .../input.png serves) instead of the API URL, since the file may load
nothing from outside itself.

Bounded: at most INSPECT_MAX samples, and their pictures together at most INSPECT_IMAGE_BYTES of PNG (a
picture past the budget is left out, its thumbnail null, and the document says how many were). Measured on
the demo's digits job: an 8×8 digit drawn at 256 px is ~0.75 kB of PNG; the 50 inspections add 99 kB to the
embedded document (50 kB of it pictures, base64), 220 kB in all. A 256 px photo can be ~200 kB of PNG (a
256×256 RGB bitmap is 197 kB before compression), so without the budget 50 photos could add ~13 MB.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy import select
from sqlalchemy.orm import Session

from backend.accounts import Caller
from backend.api.result_schemas.sample_inspector import SampleInspectionOut
from backend.api.result_schemas.task_samples import TaskSampleOut
from backend.api.routes.sample_inspector import INPUT_PNG_MAX_SIDE, inspection, with_input
from backend.api.routes.task_samples import sample_wav, task_sample
from backend.dataset_preview import sample_thumbnail
from backend.db.models import Job, SampleDivergence
from backend.errors import KneeboardError, NotFound
from backend.services.sample_inspector import input_summary, job_dataset_file, topk_index
from backend.services.task_samples import task_sample_entry
from backend.settings import Settings
from backend.storage import ArtifactStore

INSPECT_MAX = 50
"""Samples inspectable in the file: the largest KL first (ties by index), as the table's default order."""
INSPECT_IMAGE_BYTES = 2_000_000
"""PNG bytes of all embedded pictures together (≈2.7 MB once base64-encoded in the file)."""


@dataclass
class Inspections:
    responses: dict[str, Any] = field(default_factory=dict)  # API path -> the inspection, pictures inlined
    indices: list[int] = field(default_factory=list)
    pictures_left_out: int = 0


def worst_samples(session: Session, job_id: uuid.UUID, limit: int) -> list[int]:
    """The sample indices with the largest KL (primary output), ties by index; samples without a KL last."""
    rows = session.scalars(
        select(SampleDivergence.sample_index)
        .where(SampleDivergence.job_id == job_id)
        .order_by(SampleDivergence.kl.desc().nulls_last(), SampleDivergence.sample_index)
        .limit(limit)
    )
    return list(rows)


def _one(
    session: Session, store: ArtifactStore, settings: Settings, job_id: uuid.UUID, index: int, caller: Caller
) -> tuple[SampleInspectionOut, dict[str, bytes]]:
    """As the inspector route answers (read here, not in the render pool: the export is one request that
    already holds a worker thread), plus the PNG of each thumbnail URL, as the PNG route draws it."""
    out, dataset, path = inspection(session, store, job_id, index, caller)
    if dataset is None or path is None:
        return out, {}
    try:
        out = with_input(
            out, input_summary(path, dataset.kind, index, settings.image_max_pixels), dataset.kind
        )
    except KneeboardError as exc:
        return out.model_copy(update={"input_error": exc.message}), {}
    pictures: dict[str, bytes] = {}
    for a in out.input:
        if a.thumbnail is not None:
            array = None if dataset.kind != "npz" else a.name
            pictures[a.thumbnail] = sample_thumbnail(
                path, dataset.kind, index, array, INPUT_PNG_MAX_SIDE, settings.image_max_pixels
            )
    return out, pictures


def gather_inspections(
    session: Session, store: ArtifactStore, settings: Settings, job_id: uuid.UUID, caller: Caller
) -> Inspections:
    """The worst INSPECT_MAX samples' inspections keyed by API path; none for a job without stored top-k."""
    found = Inspections()
    if topk_index(session, job_id) is None:
        return found  # the file answers the inspector's 404 (frontend/src/offline/answer.ts)
    budget = INSPECT_IMAGE_BYTES
    for index in worst_samples(session, job_id, INSPECT_MAX):
        try:
            out, pictures = _one(session, store, settings, job_id, index, caller)
        except KneeboardError:
            continue
        body = out.model_dump(mode="json", by_alias=True)
        for a in body["input"]:
            png = pictures.get(a["thumbnail"]) if a["thumbnail"] else None
            if png is None:
                continue
            if len(png) > budget:
                a["thumbnail"] = None
                found.pictures_left_out += 1
                continue
            budget -= len(png)
            a["thumbnail"] = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        found.responses[f"/api/v1/jobs/{job_id}/samples/{index}"] = body
        found.indices.append(index)
    return found


def gather_task_samples(
    session: Session, store: ArtifactStore, settings: Settings, job_id: uuid.UUID, caller: Caller
) -> dict[str, Any]:
    """The task predictions (boxes, transcripts, label maps, pictures, waveforms) of the same samples as the
    inspections, keyed by API path; a detection's or segmentation's input picture and a signal's WAVs inlined
    as data: URLs within INSPECT_IMAGE_BYTES (else null); none for a job that kept none."""
    responses: dict[str, Any] = {}
    budget = INSPECT_IMAGE_BYTES
    source: tuple[str, Path] | None = None
    for index in worst_samples(session, job_id, INSPECT_MAX):
        try:
            entry = task_sample_entry(session, job_id, index)
        except NotFound:
            continue  # a job that kept none, or a sample past the kept ones
        body = TypeAdapter(TaskSampleOut).dump_python(task_sample(job_id, index, entry), mode="json")
        if body["task"] == "signal":
            for role, url in body["audio"].items():
                wav = None if url is None else sample_wav(session, job_id, index, role)
                if wav is None or len(wav) > budget:
                    body["audio"][role] = None
                else:
                    budget -= len(wav)
                    body["audio"][role] = "data:audio/wav;base64," + base64.b64encode(wav).decode("ascii")
        if body["task"] in ("detection", "segmentation"):
            png = None
            try:
                if source is None:
                    job = session.get_one(Job, job_id)
                    dataset, path, _ = job_dataset_file(session, store, job)
                    source = (
                        (dataset.kind, path) if dataset is not None and path is not None else ("", Path())
                    )
                if source[0]:
                    png = sample_thumbnail(
                        source[1], source[0], index, None, INPUT_PNG_MAX_SIDE, settings.image_max_pixels
                    )
            except KneeboardError:
                png = None
            if png is None or len(png) > budget:
                body["picture"] = None
            else:
                budget -= len(png)
                body["picture"] = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        responses[f"/api/v1/jobs/{job_id}/samples/{index}/task"] = body
    return responses
