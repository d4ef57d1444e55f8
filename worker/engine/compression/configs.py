"""Compression configurations: small frozen dataclasses that validate themselves and travel as JSON.

Every config has a stable, human-readable `id` (used as the column key of a sensitivity matrix),
`to_dict()` (JSON-ready, with a "type" tag) and a `from_dict` inverse; `config_from_dict` dispatches on
the tag. Invalid values raise `CompressionConfigError` (an `EngineError` and a `ValueError`) whose text
names the class, the field and the allowed range.

What each config does to a layer is defined in `worker.engine.compression.ops` (tensors) and in the
backends (activations); the conventions are summarised here:

* WeightQuant: fake quantization of each weight tensor of the layer (biases stay float). Symmetric:
  restricted ("narrow") signed range q ∈ [−(2^(b−1)−1), 2^(b−1)−1], zero point 0,
  step Δ = max|w| / (2^(b−1)−1). Asymmetric: q ∈ [0, 2^b−1], range [min(w, 0), max(w, 0)],
  Δ = (max − min)/(2^b−1), integer zero point. Per channel: one Δ per output channel (rows of a
  Conv / Linear / RNN weight, rows of an Embedding table).
* ActivationQuant: asymmetric unsigned fake quantization of the layer's output(s), per tensor, with a
  range calibrated on the golden model's activations over the calibration set: "minmax" (observed range),
  "percentile" (the (100−p)th and p-th percentiles), "mse" (the clipping range minimising the
  quantization MSE over a histogram of the activations), "entropy" (TensorRT's KL threshold search over
  a symmetric histogram, `entropy_calibration`).
* FloatCast: round-trip cast (float32 → fp16/bf16 → float32) of the weights, biases and outputs.
* MagnitudePrune: zero the round(sparsity·n) smallest-|w| entries of each weight tensor (like
  torch.nn.utils.prune.l1_unstructured).
* ChannelPrune: zero the round(sparsity·C) output channels with the smallest L1/L2 norm (or Taylor /
  reconstruction importance on the calibration data, `importance`), and their bias entries, so that the channel's output is 0 (what removing it does when the next op maps 0 to 0).
* NMSparsity: keep the n largest |w| of every m consecutive input weights (2:4), `nm_sparsity`.
* LowRank: truncated SVD of each weight reshaped to out × (in·k…), keeping r = max(1, round(ratio·min(m,n)))
  singular values: the best rank-r approximation in Frobenius norm (Eckart–Young).
* NoiseInjection: add uniform noise U(−Δ/2, Δ/2), Δ = max|w| / (2^(b−1)−1) — exactly the step of the
  symmetric per-tensor WeightQuant(bits=b) — so the noise power Δ²/12 equals the power of the rounding
  error that b-bit quantization would add (clipping never happens for max-calibrated symmetric ranges).
  Seeded per tensor, so reruns and chunks of a sensitivity scan draw the same noise.
* Schedule: stages applied in order (e.g. prune then quantize); activation transforms are chained.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from worker.engine.compression.config_fields import (
    CompressionConfigError,
    check_bool,
    check_choice,
    check_float,
    check_int,
    fail,
    fields_of,
    num_text,
)
from worker.engine.compression.nm_sparsity import NMSparsity

__all__ = ["CompressionConfigError", "NMSparsity"]  # re-exported: callers catch it from here

CalibrationMethod = Literal["minmax", "percentile", "mse", "entropy"]
FloatDtype = Literal["fp16", "bf16"]
Norm = Literal["l1", "l2", "taylor", "reconstruction"]
DATA_NORMS = ("taylor", "reconstruction")
"""ChannelPrune criteria that need calibration data (compression/importance.py), not only the weights."""

DEFAULT_PERCENTILE = 99.99
MIN_GROUP_SIZE = 16
"""WeightQuant.group_size: a power of two ≥ 16, as MatMulNBits (the runtime form of group-wise weights) needs."""


@dataclass(frozen=True)
class WeightQuant:
    """Fake-quantize weights to `bits` (2..16), symmetric or asymmetric, per tensor or per channel, or in
    groups of `group_size` consecutive weights of each output channel (the layout of LLM 4-bit weights:
    GPTQ, AWQ, onnxruntime's MatMulNBits; `ops.fake_quant_weight_groups`)."""

    bits: int = 8
    symmetric: bool = True
    per_channel: bool = False
    group_size: int | None = None
    type: ClassVar[str] = "weight_quant"

    def __post_init__(self) -> None:
        check_int("WeightQuant", "bits", self.bits, 2, 16)
        check_bool("WeightQuant", "symmetric", self.symmetric)
        check_bool("WeightQuant", "per_channel", self.per_channel)
        if self.group_size is not None:
            check_int("WeightQuant", "group_size", self.group_size, MIN_GROUP_SIZE, 1 << 16)
            if self.group_size & (self.group_size - 1):
                raise fail(
                    "WeightQuant",
                    "group_size",
                    f"a power of two from {MIN_GROUP_SIZE} (the block sizes onnxruntime's MatMulNBits kernels "
                    "take: 16, 32, 64, 128...)",
                    self.group_size,
                )

    @property
    def id(self) -> str:
        if self.group_size is not None:
            return f"w{self.bits}-{'sym' if self.symmetric else 'asym'}-g{self.group_size}"
        return f"w{self.bits}-{'sym' if self.symmetric else 'asym'}-{'channel' if self.per_channel else 'tensor'}"

    def to_dict(self) -> dict[str, Any]:
        out = {
            "type": self.type,
            "bits": self.bits,
            "symmetric": self.symmetric,
            "per_channel": self.per_channel,
        }
        return out if self.group_size is None else out | {"group_size": self.group_size}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WeightQuant:
        return cls(**fields_of("WeightQuant", data, {"bits", "symmetric", "per_channel", "group_size"}))


@dataclass(frozen=True)
class ActivationQuant:
    """Fake-quantize a layer's output(s) to `bits` (4..16) with a calibrated range."""

    bits: int = 8
    calibration: CalibrationMethod = "minmax"
    percentile: float | None = None
    """Only for calibration="percentile": p in (50, 100]; defaults to 99.99."""
    type: ClassVar[str] = "activation_quant"

    def __post_init__(self) -> None:
        check_int("ActivationQuant", "bits", self.bits, 4, 16)
        check_choice(
            "ActivationQuant", "calibration", self.calibration, ("minmax", "percentile", "mse", "entropy")
        )
        if self.calibration == "percentile":
            if self.percentile is None:
                object.__setattr__(self, "percentile", DEFAULT_PERCENTILE)
            check_float("ActivationQuant", "percentile", self.percentile, 50.0, 100.0, low_open=True)
        elif self.percentile is not None:
            raise fail(
                "ActivationQuant", "percentile", 'null unless calibration is "percentile"', self.percentile
            )

    @property
    def id(self) -> str:
        if self.calibration == "percentile":
            assert self.percentile is not None
            return f"a{self.bits}-p{num_text(self.percentile)}"
        return f"a{self.bits}-{self.calibration}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "bits": self.bits,
            "calibration": self.calibration,
            "percentile": self.percentile,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ActivationQuant:
        return cls(**fields_of("ActivationQuant", data, {"bits", "calibration", "percentile"}))


@dataclass(frozen=True)
class FloatCast:
    """Round-trip cast of weights, biases and outputs through fp16 or bf16."""

    dtype: FloatDtype = "fp16"
    type: ClassVar[str] = "float_cast"

    def __post_init__(self) -> None:
        check_choice("FloatCast", "dtype", self.dtype, ("fp16", "bf16"))

    @property
    def id(self) -> str:
        return self.dtype

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "dtype": self.dtype}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FloatCast:
        return cls(**fields_of("FloatCast", data, {"dtype"}))


@dataclass(frozen=True)
class Quantize:
    """Weights and/or activations quantized together (at least one of them)."""

    weights: WeightQuant | None = None
    activations: ActivationQuant | None = None
    type: ClassVar[str] = "quantize"

    def __post_init__(self) -> None:
        if self.weights is not None and not isinstance(self.weights, WeightQuant):
            raise fail("Quantize", "weights", "a WeightQuant or null", self.weights)
        if self.activations is not None and not isinstance(self.activations, ActivationQuant):
            raise fail("Quantize", "activations", "an ActivationQuant or null", self.activations)
        if self.weights is None and self.activations is None:
            raise CompressionConfigError("Quantize needs weights, activations or both; both are null")

    @property
    def id(self) -> str:
        return "+".join(part.id for part in (self.weights, self.activations) if part is not None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "weights": None if self.weights is None else self.weights.to_dict(),
            "activations": None if self.activations is None else self.activations.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Quantize:
        values = fields_of("Quantize", data, {"weights", "activations"})
        weights, activations = values.get("weights"), values.get("activations")
        return cls(
            weights=None if weights is None else WeightQuant.from_dict(weights),
            activations=None if activations is None else ActivationQuant.from_dict(activations),
        )


@dataclass(frozen=True)
class MagnitudePrune:
    """Unstructured pruning: zero the smallest-magnitude fraction `sparsity` (0..1) of each weight."""

    sparsity: float = 0.5
    type: ClassVar[str] = "magnitude_prune"

    def __post_init__(self) -> None:
        check_float("MagnitudePrune", "sparsity", self.sparsity, 0.0, 1.0)

    @property
    def id(self) -> str:
        return f"prune-u{num_text(self.sparsity)}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "sparsity": self.sparsity}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MagnitudePrune:
        return cls(**fields_of("MagnitudePrune", data, {"sparsity"}))


@dataclass(frozen=True)
class ChannelPrune:
    """Structured pruning of `sparsity` (0..1) of the output channels, the least important by `norm`: L1 or
    L2 norm of the weights, or "taylor" / "reconstruction" importance on the calibration data."""

    sparsity: float = 0.25
    norm: Norm = "l1"
    type: ClassVar[str] = "channel_prune"

    def __post_init__(self) -> None:
        check_float("ChannelPrune", "sparsity", self.sparsity, 0.0, 1.0)
        check_choice("ChannelPrune", "norm", self.norm, ("l1", "l2", *DATA_NORMS))

    @property
    def id(self) -> str:
        return f"prune-ch{num_text(self.sparsity)}-{self.norm}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "sparsity": self.sparsity, "norm": self.norm}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChannelPrune:
        return cls(**fields_of("ChannelPrune", data, {"sparsity", "norm"}))


@dataclass(frozen=True)
class LowRank:
    """Truncated SVD keeping `rank_ratio` (0 < r ≤ 1) of min(out, in·k…) singular values."""

    rank_ratio: float = 0.5
    type: ClassVar[str] = "low_rank"

    def __post_init__(self) -> None:
        check_float("LowRank", "rank_ratio", self.rank_ratio, 0.0, 1.0, low_open=True)

    @property
    def id(self) -> str:
        return f"lowrank-{num_text(self.rank_ratio)}"

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "rank_ratio": self.rank_ratio}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LowRank:
        return cls(**fields_of("LowRank", data, {"rank_ratio"}))


@dataclass(frozen=True)
class NoiseInjection:
    """Additive uniform weight noise with the power of symmetric per-tensor `bits`-bit quantization."""

    bits: int = 8
    seed: int = 0
    type: ClassVar[str] = "noise"

    def __post_init__(self) -> None:
        check_int("NoiseInjection", "bits", self.bits, 2, 16)
        check_int("NoiseInjection", "seed", self.seed, 0, 2**31 - 1)

    @property
    def id(self) -> str:
        return f"noise-w{self.bits}" + (f"-s{self.seed}" if self.seed else "")

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "bits": self.bits, "seed": self.seed}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NoiseInjection:
        return cls(**fields_of("NoiseInjection", data, {"bits", "seed"}))


Stage = (
    WeightQuant
    | ActivationQuant
    | FloatCast
    | Quantize
    | MagnitudePrune
    | ChannelPrune
    | NMSparsity
    | LowRank
    | NoiseInjection
)


@dataclass(frozen=True)
class Schedule:
    """An ordered list of compression stages (no nested schedules), e.g. prune → quantize."""

    stages: tuple[Stage, ...] = field(default_factory=tuple)
    type: ClassVar[str] = "schedule"

    def __post_init__(self) -> None:
        stages = tuple(self.stages)
        object.__setattr__(self, "stages", stages)
        if not stages:
            raise fail("Schedule", "stages", "a non-empty list of configs", list(stages))
        for index, stage in enumerate(stages):
            if not isinstance(stage, STAGE_TYPES):
                raise fail("Schedule", f"stages[{index}]", "a config other than a Schedule", stage)

    @property
    def id(self) -> str:
        return ">".join(stage.id for stage in self.stages)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "stages": [stage.to_dict() for stage in self.stages]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Schedule:
        values = fields_of("Schedule", data, {"stages"})
        stages = values.get("stages")
        if not isinstance(stages, list | tuple):
            raise fail("Schedule", "stages", "a list of configs", stages)
        parsed = [config_from_dict(stage) for stage in stages]
        nested = [i for i, stage in enumerate(parsed) if isinstance(stage, Schedule)]
        if nested:
            raise fail("Schedule", f"stages[{nested[0]}]", "a config other than a Schedule", "schedule")
        return cls(stages=tuple(s for s in parsed if not isinstance(s, Schedule)))


Config = Stage | Schedule

STAGE_TYPES = (
    WeightQuant,
    ActivationQuant,
    FloatCast,
    Quantize,
    MagnitudePrune,
    ChannelPrune,
    NMSparsity,
    LowRank,
    NoiseInjection,
)
CONFIG_TYPES: dict[str, Any] = {cls.type: cls for cls in (*STAGE_TYPES, Schedule)}


def config_from_dict(data: Mapping[str, Any]) -> Config:
    """The config a `to_dict()` result describes; raises CompressionConfigError for anything else."""
    if not isinstance(data, Mapping):
        raise CompressionConfigError(f"a compression config must be an object, got {data!r}")
    kind = data.get("type")
    cls = CONFIG_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise CompressionConfigError(f"config.type must be one of {sorted(CONFIG_TYPES)}, got {kind!r}")
    result: Config = cls.from_dict(data)
    return result


def stages_of(config: Config) -> tuple[Stage, ...]:
    """The stages a config applies, in order (a single config is a one-stage schedule)."""
    return config.stages if isinstance(config, Schedule) else (config,)


def weight_bits(config: Config) -> int | None:
    """The weight bit width a config stores weights with, when it is a pure bit-width choice
    (WeightQuant, Quantize with weights, NoiseInjection as its simulation); None otherwise."""
    if isinstance(config, WeightQuant | NoiseInjection):
        return config.bits
    if isinstance(config, Quantize) and config.weights is not None:
        return config.weights.bits
    if isinstance(config, FloatCast):
        return 16
    return None


def needs_activation_stats(config: Config) -> CalibrationMethod | None:
    """The strongest activation calibration any stage needs: "minmax" needs a min/max pass only,
    "percentile"/"mse" a histogram as well; None when no stage quantizes activations."""
    needed: CalibrationMethod | None = None
    for stage in stages_of(config):
        act = stage if isinstance(stage, ActivationQuant) else getattr(stage, "activations", None)
        if isinstance(act, ActivationQuant):
            if act.calibration != "minmax":
                return act.calibration
            needed = "minmax"
    return needed
