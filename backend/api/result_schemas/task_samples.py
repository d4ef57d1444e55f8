"""One sample's task predictions for the sample inspector (worker/engine/tasks: `ShowsSamples`): a detector's
boxes of both models and the truth, a speech model's transcripts, a segmenter's label maps, an image output's
pictures and their difference, or a signal's waveforms to play (backend/task_views.py shapes the last three)."""

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


class SegmentationClassOut(ResultModel):
    label: int
    colour: str = Field(description="#rrggbb: the class's colour in the three maps (the PASCAL VOC palette).")
    golden_pixels: int
    compressed_pixels: int
    truth_pixels: int | None = None


class SegmentationSampleOut(ResultModel):
    task: Literal["segmentation"] = "segmentation"
    job_id: uuid.UUID
    index: int
    image_size: list[int] = Field(description="[height, width] of the label maps.")
    picture: str | None = Field(
        default=None,
        description="The sample's input picture the maps are drawn over: GET …/samples/{index}/input.png "
        "(a data: URL in an exported report).",
    )
    golden: str = Field(description="data: URL of a palette PNG whose pixel values are the class ids.")
    compressed: str
    truth: str | None = Field(default=None, description="The dataset's mask (ignore_index transparent).")
    disagreement: str = Field(description="data: URL of a PNG, opaque where the two models' classes differ.")
    ignore_index: int | None = None
    classes: list[SegmentationClassOut]
    classes_clipped: bool = Field(description="A class id above 255 is drawn with class 255's colour.")
    n_pixels: int
    disagreeing_pixels: int
    iou_vs_golden: float | None = None
    pixel_agreement: float | None = None


class ImageOutputSampleOut(ResultModel):
    task: Literal["image"] = "image"
    job_id: uuid.UUID
    index: int
    output: str
    data_range: float
    image_size: list[int] = Field(description="[height, width] of the pictures.")
    golden: str = Field(description="data: URL of an 8-bit PNG drawn over value_range.")
    compressed: str
    difference: str = Field(
        description="|golden − compressed| (largest over channels) × difference_gain, black 0, white "
        "(value_range span) / difference_gain or more."
    )
    value_range: list[float] = Field(description="[low, high]: the values drawn black and white.")
    difference_gain: int
    layout: str = Field(description="grey, rgb, or which channel was drawn.")
    max_abs_difference: float
    clipped: int = Field(description="Compressed values outside value_range, drawn at its ends.")
    nonfinite: int = Field(
        description="NaN/inf values in either output (NaN drawn black, its difference white)."
    )
    psnr_db: float | None = Field(
        default=None, description="Against the golden picture; null when identical."
    )
    ssim: float | None = None


class SignalAudioOut(ResultModel):
    golden: str | None = None
    compressed: str | None = None
    clean: str | None = None


class SignalOutlineOut(ResultModel):
    golden: list[list[float]] | None = None
    compressed: list[list[float]] | None = None
    clean: list[list[float]] | None = None


class SignalSampleOut(ResultModel):
    task: Literal["signal"] = "signal"
    job_id: uuid.UUID
    index: int
    sample_rate: int = Field(description="Hz the WAVs play at (the job's task option sample_rate).")
    shape: list[int] = Field(description="The output's per-sample shape, (T,) or (C, T).")
    duration_s: float
    gain: float = Field(description="Applied to all three WAVs: 1, or 1 / the largest |value| when above 1.")
    audio: SignalAudioOut = Field(
        description="GET …/samples/{index}/task/audio/{which}: 16-bit PCM WAVs (data: URLs in an exported "
        "report, null where past its byte budget); null without that waveform."
    )
    outline: SignalOutlineOut = Field(description="[min, max] per column of the channel-averaged waveform.")
    nonfinite: dict[str, int] = Field(description="Per waveform, values that were NaN/inf when stored.")
    snr_db_vs_golden: float | None = None
    si_sdr_db_vs_golden: float | None = None
    si_sdr_db_golden: float | None = None
    si_sdr_db_compressed: float | None = None


TaskSampleOut = Annotated[
    DetectionSampleOut | CtcSampleOut | SegmentationSampleOut | ImageOutputSampleOut | SignalSampleOut,
    Field(discriminator="task"),
]
