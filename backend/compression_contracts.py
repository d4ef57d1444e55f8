"""Compression configurations as the API accepts them: typed, range-checked, documented in OpenAPI.

The worker's engine has its own dataclasses for the same configs (worker/engine/compression/configs.py)
with the same JSON shape (a "type" tag plus fields); the API checks a job's configs here so that a bad
value is a 422 naming the field and its range, before anything is queued, and the worker turns the
validated JSON into engine objects with `config_from_dict`. A test keeps the two in step.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class WeightQuantIn(_Config):
    """Fake-quantize the layer's weights (biases stay float)."""

    type: Literal["weight_quant"] = "weight_quant"
    bits: int = Field(default=8, ge=2, le=16)
    symmetric: bool = Field(default=True, description="Symmetric (zero point 0, narrow range) or asymmetric.")
    per_channel: bool = Field(default=False, description="One scale per output channel, else per tensor.")
    group_size: int | None = Field(
        default=None,
        ge=16,
        le=65536,
        description="Groups of this many consecutive weights of each output channel, each with its own scale "
        "(LLM-style 4-bit weights: 32, 64, 128): a power of two from 16, as onnxruntime's MatMulNBits kernels "
        "(the real 4- and 8-bit form of an ONNX model's MatMul/Gemm layers) need; null: per channel or per tensor.",
    )

    @model_validator(mode="after")
    def _group_size_power_of_two(self) -> WeightQuantIn:
        if self.group_size is not None and self.group_size & (self.group_size - 1):
            raise ValueError(
                f"group_size must be a power of two from 16 (MatMulNBits block sizes), got {self.group_size}"
            )
        return self


class ActivationQuantIn(_Config):
    """Fake-quantize the layer's outputs with a range calibrated on the calibration set."""

    type: Literal["activation_quant"] = "activation_quant"
    bits: int = Field(default=8, ge=4, le=16)
    calibration: Literal["minmax", "percentile", "mse", "entropy"] = Field(
        default="minmax",
        description="minmax: the observed range; percentile: the (100-p)th and p-th percentiles; mse: the "
        "clipping range with the least quantization MSE; entropy: TensorRT's KL threshold search (2048-bin "
        "symmetric histogram, 2^bits - 1 levels), as onnxruntime's Entropy calibrator.",
    )
    percentile: float | None = Field(
        default=None, gt=50, le=100, description='Only with calibration "percentile" (default 99.99).'
    )

    @model_validator(mode="after")
    def _percentile_only_when_used(self) -> ActivationQuantIn:
        if self.percentile is not None and self.calibration != "percentile":
            raise ValueError('percentile must be null unless calibration is "percentile"')
        return self


class FloatCastIn(_Config):
    """Round-trip cast of weights and outputs to a 16-bit float type."""

    type: Literal["float_cast"] = "float_cast"
    dtype: Literal["fp16", "bf16"] = "fp16"


class QuantizeIn(_Config):
    """Weights and activations quantized together (at least one)."""

    type: Literal["quantize"] = "quantize"
    weights: WeightQuantIn | None = None
    activations: ActivationQuantIn | None = None

    @model_validator(mode="after")
    def _something(self) -> QuantizeIn:
        if self.weights is None and self.activations is None:
            raise ValueError("quantize needs weights, activations or both")
        return self


class MagnitudePruneIn(_Config):
    """Unstructured pruning: zero the smallest-magnitude fraction of each weight."""

    type: Literal["magnitude_prune"] = "magnitude_prune"
    sparsity: float = Field(default=0.5, ge=0, le=1)


class ChannelPruneIn(_Config):
    """Structured pruning: zero whole output channels, the least important ones; a sweep's export then
    removes them from the graph."""

    type: Literal["channel_prune"] = "channel_prune"
    sparsity: float = Field(default=0.25, ge=0, le=1)
    norm: Literal["l1", "l2", "taylor", "reconstruction"] = Field(
        default="l1",
        description="How channels are ranked: l1 / l2 norm of their weights, or on the calibration data: "
        "taylor (second-order Taylor estimate of the KL, torch models only) or reconstruction (the KL with "
        "each channel zeroed alone: one run per channel).",
    )


class NMSparsityIn(_Config):
    """N:M semi-structured sparsity: keep the n largest of every m consecutive input weights (2:4). The
    file stays dense float32: the point is marked "needs sparse kernels" and claims no speed or size."""

    type: Literal["nm_sparsity"] = "nm_sparsity"
    n: int = Field(default=2, ge=1, le=15)
    m: int = Field(default=4, ge=2, le=16)

    @model_validator(mode="after")
    def _n_below_m(self) -> NMSparsityIn:
        if self.n >= self.m:
            raise ValueError(f"n must be less than m ({self.m})")
        return self


class LowRankIn(_Config):
    """Truncated SVD of each weight (out × in·k), keeping rank_ratio of its singular values."""

    type: Literal["low_rank"] = "low_rank"
    rank_ratio: float = Field(default=0.5, gt=0, le=1)


class NoiseIn(_Config):
    """Uniform noise with the power of b-bit symmetric quantization: "what if this tensor were b-bit"."""

    type: Literal["noise"] = "noise"
    bits: int = Field(default=8, ge=2, le=16)
    seed: int = Field(default=0, ge=0, le=2**31 - 1)


StageIn = Annotated[
    WeightQuantIn
    | ActivationQuantIn
    | FloatCastIn
    | QuantizeIn
    | MagnitudePruneIn
    | ChannelPruneIn
    | NMSparsityIn
    | LowRankIn
    | NoiseIn,
    Field(discriminator="type"),
]


class ScheduleIn(_Config):
    """Stages applied in order (e.g. prune, then quantize)."""

    type: Literal["schedule"] = "schedule"
    stages: list[StageIn] = Field(min_length=1, max_length=8)


CompressionConfigIn = Annotated[
    WeightQuantIn
    | ActivationQuantIn
    | FloatCastIn
    | QuantizeIn
    | MagnitudePruneIn
    | ChannelPruneIn
    | NMSparsityIn
    | LowRankIn
    | NoiseIn
    | ScheduleIn,
    Field(discriminator="type"),
]
