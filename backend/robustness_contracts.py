"""The fidelity job's optional robustness slices (seed 003): which corruptions, at which severities.
The names are the engine's (worker/engine/robustness/transforms.py SLICES); tests/worker keep them equal."""

from __future__ import annotations

import uuid
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

Severity = Literal[1, 2, 3]
RobustnessSlice = Literal[
    "gaussian_noise",
    "brightness",
    "contrast",
    "gaussian_blur",
    "occlusion",
    "jpeg",
    "token_replacement",
    "fgsm",
    "pgd",
]
ROBUSTNESS_SLICES: tuple[RobustnessSlice, ...] = get_args(RobustnessSlice)
"""Every slice, in the order the engine runs them (the Literal is the one list)."""


def _all_severities() -> list[Severity]:
    return [1, 2, 3]


class RobustnessOptions(BaseModel):
    """Also run both models on seeded, corrupted copies of the dataset and compare them there."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    slices: list[RobustnessSlice] = Field(
        default_factory=lambda: list(ROBUSTNESS_SLICES),
        max_length=len(ROBUSTNESS_SLICES),
        description="Corruptions to apply: gaussian_noise changes any float input; brightness, contrast, "
        "gaussian_blur, occlusion and jpeg (quality 90/50/20) need images; token_replacement needs token "
        "ids; fgsm and pgd (adversarial, L-inf) need a PyTorch golden model and a classification output. "
        "Slices that do not apply are skipped with a reason. Each slice costs one more forward pass of "
        "both models per severity; fgsm one more golden backward pass, pgd ten. May be empty when "
        "ood_dataset_id is given.",
    )
    severities: list[Severity] = Field(
        default_factory=_all_severities,
        min_length=1,
        max_length=3,
        description="1 mild, 2 moderate, 3 severe (the strength of each is listed in the result).",
    )
    seed: int = Field(default=0, ge=0, le=2**31 - 1, description="Seed of the random corruptions.")
    max_samples: int | None = Field(
        default=None, ge=1, le=10_000_000, description="Only the first this many samples (null: all)."
    )
    ood_dataset_id: uuid.UUID | None = Field(
        default=None,
        description="A second dataset of the project, out of distribution (e.g. photos from another "
        "camera): both models also run on it unchanged, and it is compared like a slice (metrics, "
        "brittleness ratio against the clean data, worst samples). Its arrays must fit the models' inputs; "
        "one that does not gets an error in the result and the slices stand. max_samples applies to it "
        "too. Costs one forward pass of both models over it.",
    )

    twin_model_id: uuid.UUID | None = Field(
        default=None,
        description="A PyTorch copy (.pt2 / TorchScript) of an ONNX golden model, for the fgsm and pgd "
        "slices: the attacks take input gradients from it, then the golden and compressed models run on "
        "the crafted inputs. It must reproduce the golden model (same top-1 on the first samples and "
        "outputs within 1e-3 of their range), else the attacks are skipped with the difference. Ignored "
        "when the golden model is itself PyTorch.",
    )

    @model_validator(mode="after")
    def _something_to_compare(self) -> RobustnessOptions:
        if not self.slices and self.ood_dataset_id is None:
            raise ValueError("robustness needs at least one slice or an ood_dataset_id")
        return self
