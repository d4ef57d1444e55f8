"""Recovery of a compressed model: methods applied in order to a float copy of the golden model (a torch
module; for an ONNX golden model, its initializers rewritten: onnx_model.py),
the compressed model (that copy compressed by the unchanged plan) measured on a held-out split before any
method and after each one.

`recover(golden, config_or_plan, calibration_feeds, heldout_feeds, labels, methods)` → RecoveryOutcome:
the recovered float module, per-method details and the fidelity steps ("before", then one per method,
from `sweep.points.fidelity_summary`). `export_recovered` writes the runnable ONNX file of the outcome
(the sweep's `export_point` on the recovered model) and measures that file in onnxruntime against the
golden model.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from torch import nn

from worker.engine.compression import CompressibleModel
from worker.engine.compression.model import Feeds, first_sample
from worker.engine.compression.onnx_backend import OnnxCompressible
from worker.engine.fidelity.compare import bind_inputs
from worker.engine.recovery.adaround import AdaRoundParams, adaround
from worker.engine.recovery.bias_correction import correct_biases
from worker.engine.recovery.common import (
    Progress,
    RecoveryError,
    compressed_handle,
    execution_order,
    linear_layers,
    no_progress,
)
from worker.engine.recovery.distill import TrainingParams, TrainingStep, finetune
from worker.engine.recovery.equalization import equalize
from worker.engine.recovery.onnx_equalization import equalize_onnx
from worker.engine.recovery.onnx_model import ONNX_METHODS, OnnxRecovery, adaround_onnx, correct_biases_onnx
from worker.engine.recovery.onnx_smoothquant import smooth_onnx
from worker.engine.recovery.outcome import RecoveryOutcome, Step, measure
from worker.engine.recovery.smoothquant import SmoothQuantParams, smooth
from worker.engine.sweep.golden import GoldenReference, PointSpec, point_spec
from worker.engine.sweep.torch_copy import materialize, plain_module, private_copy

if TYPE_CHECKING:
    pass

METHODS = ("equalization", "smoothquant", "adaround", "bias_correction", "distill", "qat")
TRAINING = ("distill", "qat")
RESCALING = ("equalization", "smoothquant")
"""Methods that rescale weights while keeping the float function: they must run before the others."""
PARAMS: dict[str, type[AdaRoundParams] | type[TrainingParams] | type[SmoothQuantParams]] = {
    "adaround": AdaRoundParams,
    "smoothquant": SmoothQuantParams,
    "distill": TrainingParams,
    "qat": TrainingParams,
}


@dataclass(frozen=True)
class MethodSpec:
    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in METHODS:
            raise RecoveryError(f"unknown recovery method {self.name!r}; the methods are {list(METHODS)}")
        kind = PARAMS.get(self.name)
        allowed = set(kind.__dataclass_fields__) if kind is not None else set()
        unknown = sorted(set(self.params) - allowed)
        if unknown:
            raise RecoveryError(
                f"{self.name} has no parameter(s) {unknown}; its parameters are {sorted(allowed)}"
            )
        if kind is not None:
            self._typed(kind)

    def _typed(self, kind: type[Any]) -> Any:
        values = dict(self.params)
        for key, value in values.items():
            integer = isinstance(kind.__dataclass_fields__[key].default, int)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or (integer and not isinstance(value, int))
            ):
                raise RecoveryError(
                    f"{self.name}.{key} must be {'an integer' if integer else 'a number'}, got {value!r}"
                )
        return kind(**values)

    def adaround_params(self) -> AdaRoundParams:
        params: AdaRoundParams = self._typed(AdaRoundParams)
        return params

    def smoothquant_params(self) -> SmoothQuantParams:
        params: SmoothQuantParams = self._typed(SmoothQuantParams)
        return params

    def training_params(self) -> TrainingParams:
        params: TrainingParams = self._typed(TrainingParams)
        return params


def _python_module(golden: CompressibleModel) -> nn.Module:
    module = getattr(golden, "module", None)
    if (
        golden.backend != "torch"
        or not isinstance(module, nn.Module)
        or not getattr(golden, "hooks_supported", True)
    ):
        raise RecoveryError(
            "recovery runs on torch models whose layers are python modules (a .pt2 torch.export program or "
            f"an nn.Module); this is a {golden.backend} model"
            + (" run by the TorchScript interpreter" if golden.backend == "torch" else "")
        )
    return module


def recover(
    golden: CompressibleModel,
    config_or_plan: Any,
    calibration_feeds: Feeds,
    heldout_feeds: Feeds,
    labels: np.ndarray | None,
    methods: Sequence[MethodSpec],
    *,
    batch_size: int = 64,
    progress: Progress = no_progress,
    calibration_labels: np.ndarray | None = None,
) -> RecoveryOutcome:
    """Apply `methods` in order (see the module docstring). `labels` belong to the held-out split,
    `calibration_labels` to the calibration split (distill/qat's optional cross-entropy)."""
    if not methods:
        raise RecoveryError("give at least one recovery method")
    names_in_order = [method.name for method in methods]
    for index, name in enumerate(names_in_order):
        earlier = [other for other in names_in_order[:index] if other not in RESCALING]
        if name in RESCALING and earlier:
            raise RecoveryError(
                f"{name} must come first (before {earlier[0]}): it rescales weights, which would move "
                "AdaRound's weights off their grid and change what bias correction measured"
            )
    if isinstance(golden, OnnxCompressible):
        others = [method.name for method in methods if method.name not in ONNX_METHODS]
        if others:
            raise RecoveryError(
                f"{', '.join(others)} need(s) a torch golden model (.pt2): on an ONNX model recovery runs "
                f"{', '.join(ONNX_METHODS)} (distillation and QAT train a torch module)"
            )
    else:
        source = _python_module(golden)
    calib = bind_inputs(calibration_feeds, golden.inputs)
    heldout = bind_inputs(heldout_feeds, golden.inputs)
    golden.prepare(first_sample(calib))
    spec = point_spec(golden, config_or_plan)
    if not spec.plan:
        raise RecoveryError("the configuration compresses nothing: there is nothing to recover")
    if isinstance(golden, OnnxCompressible):
        return _recover_onnx(golden, spec, calib, heldout, labels, methods, batch_size, progress)
    names = [spec_.name for spec_ in golden.inputs]
    recovered = private_copy(source)
    materialize(recovered)  # a .pt2 program's layers become nn.Conv*/nn.Linear (same parameters)
    recovered = plain_module(recovered)
    order = execution_order(recovered, linear_layers(recovered, list(spec.plan)), calib)
    if not order:
        raise RecoveryError(
            "the configuration compresses no Conv or Linear layer: the methods have nothing to change"
        )
    reference = GoldenReference(golden, heldout, batch_size)

    samples: dict[str, list[Any]] = {}

    def evaluate() -> dict[str, Any]:
        return measure(
            reference,
            compressed_handle(recovered, names),
            spec.plan,
            calib,
            heldout,
            labels,
            batch_size,
            samples,
        )

    progress("before", 0, 1, "measuring the compressed model")
    steps = [Step("before", 0.0, evaluate(), {})]
    before_samples = dict(samples)
    # the float model the compressed one should match: the golden function, in the equalized
    # parametrisation once equalization ran (AdaRound then puts the quantized weights into `recovered`)
    float_model = private_copy(recovered)
    for method in methods:
        started = time.perf_counter()
        details: dict[str, Any]
        if method.name == "equalization":
            details = asdict(equalize(recovered))
            float_model = private_copy(recovered)
        elif method.name == "smoothquant":
            params_sq = method.smoothquant_params()
            details = asdict(smooth(recovered, order, calib, params_sq, batch_size=batch_size))
            float_model = private_copy(recovered)
        elif method.name == "bias_correction":
            details = asdict(
                correct_biases(
                    recovered,
                    names,
                    spec.plan,
                    order,
                    calib,
                    batch_size=batch_size,
                    reference=float_model,
                    progress=progress,
                )
            )
        elif method.name in TRAINING:
            details = _train(
                method, recovered, float_model, spec.plan, order, calib, calibration_labels, progress
            )
        else:
            params = method.adaround_params()
            details = asdict(
                adaround(recovered, spec.plan, order, calib, params, batch_size=batch_size, progress=progress)
            )
            details["params"] = asdict(params)
        seconds = time.perf_counter() - started
        progress(method.name, 1, 1, f"{method.name}: measuring on the held-out split")
        steps.append(Step(method.name, seconds, evaluate(), details))
    per_sample = {"before": before_samples, "after": dict(samples)}
    return RecoveryOutcome(recovered, spec.id, spec.to_dict(), steps, names, per_sample=per_sample)


def _recover_onnx(
    golden: OnnxCompressible,
    spec: PointSpec,
    calib: Feeds,
    heldout: Feeds,
    labels: np.ndarray | None,
    methods: Sequence[MethodSpec],
    batch_size: int,
    progress: Progress,
) -> RecoveryOutcome:
    """`recover` for an ONNX golden model (onnx_model.py, onnx_equalization.py, onnx_smoothquant.py): the
    training-free methods, on the inputs and plan `recover` prepared."""
    recovery = OnnxRecovery(golden)
    reference = GoldenReference(golden, heldout, batch_size)

    samples: dict[str, list[Any]] = {}

    def evaluate() -> dict[str, Any]:
        return measure(reference, recovery.handle(), spec.plan, calib, heldout, labels, batch_size, samples)

    progress("before", 0, 1, "measuring the compressed model")
    steps = [Step("before", 0.0, evaluate(), {})]
    before_samples = dict(samples)
    float_model = OnnxRecovery(golden)  # the float model the compressed one should match (before AdaRound)
    for method in methods:
        started = time.perf_counter()
        if method.name == "equalization":
            details = asdict(equalize_onnx(recovery))
            float_model = recovery.copy()  # the rescaled parametrisation is the float reference now
        elif method.name == "smoothquant":
            params_sq = method.smoothquant_params()
            details = asdict(smooth_onnx(recovery, spec.plan, calib, params_sq, batch_size=batch_size))
            float_model = recovery.copy()
        elif method.name == "bias_correction":
            details = asdict(
                correct_biases_onnx(
                    recovery, spec.plan, calib, float_model, batch_size=batch_size, progress=progress
                )
            )
        else:
            params = method.adaround_params()
            details = asdict(
                adaround_onnx(recovery, spec.plan, calib, params, batch_size=batch_size, progress=progress)
            )
            details["params"] = asdict(params)
        seconds = time.perf_counter() - started
        progress(method.name, 1, 1, f"{method.name}: measuring on the held-out split")
        steps.append(Step(method.name, seconds, evaluate(), details))
    names = [spec_.name for spec_ in golden.inputs]
    per_sample = {"before": before_samples, "after": dict(samples)}
    return RecoveryOutcome(
        recovery.model(), spec.id, spec.to_dict(), steps, names, golden.threads, per_sample
    )


def _train(
    method: MethodSpec,
    recovered: nn.Module,
    teacher: nn.Module,
    plan: Mapping[str, Any],
    order: Sequence[str],
    calib: Feeds,
    labels: np.ndarray | None,
    progress: Progress,
) -> dict[str, Any]:
    """distill / qat with the golden float model as teacher; each step reported through `progress` (the
    message carries the loss and the held-out KL: measured at this step, or the last one with its step, so
    that a dashboard polling every few seconds sees every measurement when a check takes longer than that)."""
    params = method.training_params()
    last: list[tuple[float, int]] = []

    def on_step(step: TrainingStep) -> None:
        if step.heldout_kl is not None:
            last[:] = [(step.heldout_kl, step.step)]
            kl = f", held-out KL {step.heldout_kl:.5g}"
        else:
            kl = "".join(f" (held-out KL {value:.5g} at step {at})" for value, at in last)
        progress(
            method.name,
            step.step,
            step.total,
            f"{method.name} step {step.step}/{step.total}: loss {step.loss:.5g}{kl}",
        )

    result = finetune(
        recovered, teacher, plan, order, calib, labels, params, qat=method.name == "qat", on_step=on_step
    )
    return asdict(result) | {"training_params": asdict(params)}
