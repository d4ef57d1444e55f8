"""One sample's task predictions for the sample inspector (worker/engine/tasks: `ShowsSamples`): a detector's
boxes of both models and the truth, or a speech model's transcripts."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import Field

from backend.api.result_schemas.common import ResultModel


class TaskBoxOut(ResultModel):
    box: list[float] = Field(description="[x1, y1, x2, y2] in the model input's pixels.")
    score: float | None = Field(default=None, description="The detection's score; null for a truth box.")
    label: int


class DetectionSampleOut(ResultModel):
    task: Literal["detection"] = "detection"
    job_id: uuid.UUID
    index: int
    image_size: list[float] | None = Field(
        default=None, description="[height, width] the boxes are in; null when the job could not tell."
    )
    picture: str | None = Field(
        default=None,
        description="The sample's input picture the boxes are drawn over: GET …/samples/{index}/input.png "
        "(a data: URL in an exported report); null where it cannot be shown.",
    )
    golden: list[TaskBoxOut] = Field(description="Highest score first, at most 100.")
    compressed: list[TaskBoxOut]
    truth: list[TaskBoxOut] | None = Field(default=None, description="Null without gt_boxes / gt_labels.")


class CtcSampleOut(ResultModel):
    task: Literal["ctc"] = "ctc"
    job_id: uuid.UUID
    index: int
    golden: str = Field(description="The golden model's greedy transcript.")
    compressed: str
    reference: str | None = Field(default=None, description="The dataset's transcript; null without one.")


TaskSampleOut = Annotated[DetectionSampleOut | CtcSampleOut, Field(discriminator="task")]
