"""Typed response of GET /jobs/{job_id}/robustness: the fidelity job's robustness slices (issue 13, seed
003), as the worker stores them (worker/engine/robustness/run.py). Null numbers follow the non-finite rule
of common.py: undefined (no finite sample; no labels for accuracies; a clean divergence of 0 for the
brittleness ratio)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import Field

from backend.api.result_schemas.common import ResultModel


class RobustnessMetricsOut(ResultModel):
    n_samples: int = 0
    n_finite: int = Field(default=0, description="Samples whose outputs are finite in both models.")
    kl_mean_nats: float | None = Field(
        default=None,
        description="Mean KL(golden ‖ compressed) in nats; null for a non-classification output.",
    )
    mse_mean: float | None = Field(default=None, description="Mean squared error between the two outputs.")
    cosine_mean: float | None = Field(
        default=None,
        description="Mean cosine similarity of the two outputs, each sample flattened (served for every "
        "output kind: the similarity measure of hidden states and embeddings, which have no KL).",
    )
    top1_agreement: float | None = Field(default=None, description="Share of samples both models agree on.")
    golden_accuracy: float | None = Field(default=None, description="Null without labels.")
    compressed_accuracy: float | None = Field(default=None, description="Null without labels.")


class WorstSampleOut(ResultModel):
    sample_index: int = Field(description="Index of the (uncorrupted) sample in the dataset.")
    divergence: float = Field(description="Its KL (nats), or MSE when the document's divergence is mse.")
    golden_class: int | None = None
    compressed_class: int | None = None
    label: int | None = None
    image: bool = Field(
        default=False,
        description="Whether its corrupted input is served as a picture: GET "
        "/jobs/{job_id}/robustness/{slice}/{severity}/samples/{sample_index}.png (image inputs only; false "
        "in documents stored before the pictures existed, and for the out-of-distribution dataset).",
    )


class RobustnessPointOut(RobustnessMetricsOut):
    severity: int = Field(description="1 mild, 2 moderate, 3 severe.")
    severity_name: str = ""
    value: float = Field(description="The slice's strength at this severity (see the slice's parameter).")
    brittleness_ratio: float | None = Field(
        default=None,
        description="Divergence on this slice / divergence on clean data; null when the clean one is 0.",
    )
    worst_samples: list[WorstSampleOut] = Field(
        default_factory=list, description="The 10 samples of highest divergence here, worst first."
    )
    warnings: list[str] = Field(default_factory=list)


class RobustnessSliceOut(ResultModel):
    name: str
    parameter: str = Field(default="", description="What each severity's value measures.")
    target: Literal["float", "image", "tokens", "gradient"] = Field(
        default="image",
        description="What the slice changes: any float input (noise), images (brightness, contrast, blur, "
        "occlusion, jpeg), token ids (token_replacement), or float inputs moved along the golden model's "
        "input gradient (fgsm, pgd: adversarial, crafted against the golden model).",
    )
    points: list[RobustnessPointOut] = Field(default_factory=list, description="By increasing severity.")


class SkippedSliceOut(ResultModel):
    name: str
    reason: str


class OodOut(RobustnessMetricsOut):
    dataset_id: uuid.UUID
    dataset_name: str | None = Field(default=None, description="Null when the dataset could not be read.")
    error: str | None = Field(
        default=None,
        description="Why the out-of-distribution dataset could not be compared (e.g. its arrays do not fit "
        "the models); the metrics are then empty and the slices stand.",
    )
    brittleness_ratio: float | None = Field(
        default=None,
        description="Divergence on this dataset / divergence on the clean data; null when the clean one is 0.",
    )
    worst_samples: list[WorstSampleOut] = Field(
        default_factory=list,
        description="The 10 samples of highest divergence here, worst first; sample_index is the row of the "
        "out-of-distribution dataset.",
    )
    warnings: list[str] = Field(default_factory=list)


class TwinCheckOut(ResultModel):
    """How the PyTorch twin of an ONNX golden model matched it before the attacks used it."""

    samples: int = Field(description="The first this many samples were compared.")
    max_abs_diff_share: float | None = Field(
        default=None, description="max |twin − golden| of the primary output / the golden output's range."
    )
    top1_agreement: float | None = None


class RobustnessImagesOut(ResultModel):
    """The archive of the worst samples' corrupted inputs (PNGs) in the artifact store."""

    sha256: str = Field(description="The archive's artifact.")
    count: int = Field(description="Pictures in it (one per worst sample and image array).")
    bytes: int = Field(description="Its size in bytes.")


class RobustnessOut(ResultModel):
    job_id: uuid.UUID
    error: str | None = Field(
        default=None,
        description="Why the slices could not be run (the clean report is complete); the rest is then empty.",
    )
    primary_output: str = ""
    n_samples: int = 0
    divergence: Literal["kl", "mse"] = Field(
        default="kl", description="What the brittleness ratio and worst samples rank by."
    )
    seed: int = 0
    clean: RobustnessMetricsOut = Field(
        default_factory=RobustnessMetricsOut, description="The same metrics on the uncorrupted samples."
    )
    slices: list[RobustnessSliceOut] = Field(default_factory=list)
    skipped: list[SkippedSliceOut] = Field(
        default_factory=list,
        description="Asked-for slices that do not apply to this dataset or model pair, and why (e.g. fgsm "
        "and pgd with an ONNX golden model).",
    )
    ood: OodOut | None = Field(
        default=None, description="The out-of-distribution dataset, when the job names one."
    )
    twin: TwinCheckOut | None = Field(
        default=None,
        description="The PyTorch twin's check, when fgsm/pgd were crafted on a twin of an ONNX golden model "
        "(a twin that failed it leaves the attacks in skipped with the figures in the reason).",
    )
    images: RobustnessImagesOut | None = Field(
        default=None,
        description="The stored pictures of the worst samples' corrupted inputs; null when none was drawn "
        "(no image input, or a document stored before they existed).",
    )
