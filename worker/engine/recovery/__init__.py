"""Accuracy recovery after compression: cross-layer equalization, SmoothQuant scale migration, AdaRound,
bias correction and the training-based distillation fine-tuning and QAT (distill.py) applied in order to a float copy of a torch
golden model (`runner.recover`), the compressed model measured on a held-out split before and after each
method, and the result exported as the sweeps export their points (`runner.export_recovered`). Pure
engine: no HTTP, SQL or Celery."""

from __future__ import annotations

from worker.engine.recovery.adaround import AdaRoundParams, AdaRoundResult, adaround
from worker.engine.recovery.bias_correction import BiasCorrectionResult, correct_biases
from worker.engine.recovery.common import RecoveryError
from worker.engine.recovery.distill import (
    TrainingParams,
    TrainingResult,
    TrainingStep,
    finetune,
    temperature_kl,
)
from worker.engine.recovery.equalization import EqualizationResult, equalize
from worker.engine.recovery.export import export_recovered, export_unrecovered, measure_export
from worker.engine.recovery.outcome import RecoveryOutcome
from worker.engine.recovery.runner import METHODS, MethodSpec, recover
from worker.engine.recovery.smoothquant import SmoothQuantParams, SmoothQuantResult, smooth

__all__ = [
    "METHODS",
    "AdaRoundParams",
    "AdaRoundResult",
    "BiasCorrectionResult",
    "EqualizationResult",
    "MethodSpec",
    "RecoveryError",
    "RecoveryOutcome",
    "SmoothQuantParams",
    "SmoothQuantResult",
    "TrainingParams",
    "TrainingResult",
    "TrainingStep",
    "adaround",
    "correct_biases",
    "equalize",
    "export_recovered",
    "export_unrecovered",
    "finetune",
    "measure_export",
    "recover",
    "smooth",
    "temperature_kl",
]
