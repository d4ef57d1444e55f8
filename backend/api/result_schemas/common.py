"""What every typed result shares: the base model, the non-finite rule, compression configs, divergences.

The non-finite rule (docs/design-notes.md, "Typed results"): JSON has no NaN or ±inf, so the worker stores
every non-finite number as null. A null number means *undefined* (no samples, NaN, −inf), except where a
companion boolean ``<field>_infinite`` is true: then the value is +∞ (an SQNR whose error is exactly 0).
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)


class ResultModel(BaseModel):
    """A stored result document read back for the API.

    Tolerant both ways, so that no stored job ever becomes unreadable: fields an older worker did not write
    have defaults, and a field a newer worker writes before its schema exists is passed through (extra
    "allow") rather than dropped. tests/backend/test_typed_results.py checks on documents the real worker
    writes that nothing arrives as such an extra, i.e. that every field it writes is typed here.
    """

    # Every field is always in the response (a default stands in for what an older worker did not write),
    # so the OpenAPI marks them required and the generated TypeScript has no optional fields to guard.
    model_config = ConfigDict(extra="allow", json_schema_serialization_defaults_required=True)


class StoredShape(ResultModel):
    """A document whose fields depend on a tag (a config's type, a quantizer's method): each instance is
    served with the fields it was stored with, nothing added, so its schema marks the fields optional."""

    model_config = ConfigDict(extra="allow", json_schema_serialization_defaults_required=False)

    @model_serializer(mode="wrap")
    # No return annotation: pydantic would take it for the serialized schema (an untyped dict).
    def _as_stored(self, handler: SerializerFunctionWrapHandler):
        data = handler(self)
        keep = self.model_fields_set | set(self.model_extra or {})
        return {key: value for key, value in data.items() if key in keep}


class CompressionConfigOut(StoredShape):
    """A compression configuration as stored (worker/engine/compression/configs.py ``to_dict``): the
    ``type`` tag and the fields of that type (see the job kinds' params schemas for their meaning)."""

    type: str = Field(
        description="weight_quant, activation_quant, float_cast, quantize, magnitude_prune, channel_prune, "
        "nm_sparsity, low_rank, noise, schedule; mixed_precision for a sweep point made from a sensitivity scan's plan; "
        "search_step for a step of a sweep's accuracy-aware search; "
        "none for the uncompressed (golden) point of a sweep; unknown for a stored config without a tag."
    )
    bits: int | dict[str, int] | None = Field(
        default=None, description="Bit width; for mixed_precision, layer → bit width."
    )
    average_bits: float | None = Field(default=None, description="mixed_precision: the plan's average.")
    k: int | None = Field(
        default=None, description="search_step: the most sensitive rungs returned to the high config."
    )
    returned: bool | None = Field(
        default=None, description="search_step: the plan the search returned (the smallest that holds)."
    )
    low: str | None = Field(default=None, description="search_step: the low config's id.")
    high: str | None = Field(default=None, description="search_step: the high config's id ('float': none).")
    symmetric: bool | None = None
    per_channel: bool | None = None
    group_size: int | None = Field(
        default=None,
        description="weight_quant in groups: this many weights of an output channel share a scale.",
    )
    calibration: str | None = None
    percentile: float | None = None
    dtype: str | None = None
    weights: CompressionConfigOut | None = None
    activations: CompressionConfigOut | None = None
    sparsity: float | None = None
    norm: str | None = None
    rank_ratio: float | None = None
    n: int | None = Field(default=None, description="nm_sparsity: weights kept in every group of m.")
    m: int | None = Field(default=None, description="nm_sparsity: the group size along the input dimension.")
    seed: int | None = None
    stages: list[CompressionConfigOut] | None = None

    @model_validator(mode="before")
    @classmethod
    def _tagged(cls, data: Any) -> Any:
        if isinstance(data, dict) and "type" not in data:
            return {**data, "type": "unknown"}
        return data


class DivergenceOut(ResultModel):
    """How far a compressed model's primary output moved from the golden one (one sensitivity cell, a
    whole-model configuration, a measured plan)."""

    kl_mean: float | None = Field(default=None, description="KL(P‖Q) mean in nats; lower is better.")
    kl_max: float | None = None
    top1_agreement: float | None = Field(default=None, description="Share of samples with the golden top-1.")
    sqnr_db: float | None = Field(
        default=None, description="Output SQNR in dB; null when infinite (see sqnr_db_infinite) or undefined."
    )
    sqnr_db_infinite: bool = Field(default=False, description="True when the outputs are identical (+∞ dB).")
    mse: float | None = None
    n_samples: int = 0
    n_nonfinite: int = Field(default=0, description="Samples whose compressed output held NaN/Inf.")


class CalibrationSamplesOut(ResultModel):
    """Which samples calibrated an activation-quantized result's ranges, and which were evaluated
    (backend/calibration_split.py): a named calibration dataset, or the evaluation dataset's first samples
    held out; the two sets never overlap."""

    source: str = Field(
        default="", description="calibration_dataset or held_out (of the evaluation dataset)."
    )
    dataset_id: str | None = Field(default=None, description="The dataset the calibration samples come from.")
    start: int | None = Field(default=None, description="First calibration sample (index into that dataset).")
    stop: int | None = Field(default=None, description="One past the last calibration sample.")
    count: int | None = Field(default=None, description="Calibration samples (stop - start).")
    evaluation_dataset_id: str | None = None
    evaluation_start: int | None = Field(default=None, description="First evaluated sample.")
    evaluation_stop: int | None = Field(default=None, description="One past the last evaluated sample.")
    evaluation_count: int | None = None
    indices: list[int] | None = Field(
        default=None,
        description="The calibration samples' indices when they are not one range (a recovery job's seeded "
        "permutation split); null when start/stop say it.",
    )
    disjoint: bool | None = Field(
        default=None, description="True when no calibration sample was evaluated (always, for jobs)."
    )
    rule: str | None = Field(default=None, description="The split in words.")
