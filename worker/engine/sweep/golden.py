"""What a sweep point and its export share: the point's normalised configuration (`PointSpec`,
`point_spec`), the golden outputs replayed as a Runner (`GoldenReference`), the fidelity figures of a point
(`fidelity_summary`), the point itself (`SweepPoint`) and `json_safe`.

They live here, not in `points`, so that `export` (which needs them) and `points` (which calls
`export_point`) import each other's module without a cycle, and so that other engines (recovery) reuse
them without importing the whole evaluation.

The golden side of a comparison is a `GoldenReference`: the golden outputs over the dataset computed
once and replayed as a `Runner`, so a sweep runs the golden model once, not once per point, and a torch
model (whose compressed session reuses the golden module) can be compared with itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from worker.engine.compression import CompressibleModel, Config, config_from_dict
from worker.engine.compression.configs import STAGE_TYPES, Schedule
from worker.engine.compression.model import Feeds
from worker.engine.errors import EngineError
from worker.engine.fidelity.compare import FidelityReport, _run_batch, bind_inputs
from worker.engine.jsonable import json_safe
from worker.engine.types import TensorSpec

if TYPE_CHECKING:
    pass

ConfigOrPlan = Config | Mapping[str, Any] | None
"""A Config (every compressible layer), a plan {layer: Config or config dict}, a config dict (with
"type"), a MixedPrecisionPlan, or None / {} for the uncompressed golden model."""

IDENTITY_ID = "fp32"


def _as_config(value: Any) -> Config:
    if isinstance(value, (*STAGE_TYPES, Schedule)):
        return value
    if isinstance(value, Mapping):
        return config_from_dict(value)
    raise EngineError(f"expected a compression config, got {type(value).__name__}")


@dataclass(frozen=True)
class PointSpec:
    """A configuration normalised: the per-layer plan, and the uniform config when there is one."""

    id: str
    plan: dict[str, Config]
    uniform: Config | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "config": None if self.uniform is None else self.uniform.to_dict(),
            "plan": None
            if self.uniform is not None or not self.plan
            else {name: config.to_dict() for name, config in self.plan.items()},
        }


def point_spec(model: CompressibleModel, config_or_plan: Any) -> PointSpec:
    """Normalise anything `evaluate_point` accepts (see ConfigOrPlan) against the model's layers."""
    names = [layer.name for layer in model.layers()]
    value = config_or_plan
    if value is not None and hasattr(value, "plan") and callable(value.plan):
        value = value.plan()  # a MixedPrecisionPlan
    if value is None or (isinstance(value, Mapping) and not value):
        return PointSpec(IDENTITY_ID, {}, None)
    if isinstance(value, Mapping) and "type" not in value:
        plan = {str(name): _as_config(config) for name, config in value.items()}
        model.check_layers(list(plan))
        ids = {config.id for config in plan.values()}
        if len(ids) == 1 and set(plan) == set(names):
            config = next(iter(plan.values()))
            return PointSpec(config.id, plan, config)
        text = "|".join(f"{name}={plan[name].id}" for name in names if name in plan)
        return PointSpec("plan-" + hashlib.sha256(text.encode()).hexdigest()[:12], plan, None)
    config = _as_config(value)
    return PointSpec(config.id, dict.fromkeys(names, config), config)


# ---------------------------------------------------------------------------------------- golden side


def _digest(feeds: Mapping[str, np.ndarray]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for name in sorted(feeds):
        array = np.ascontiguousarray(feeds[name])
        h.update(name.encode() + str((array.dtype.str, array.shape)).encode())
        h.update(array.tobytes())
    return h.hexdigest()


class GoldenReference:
    """Golden outputs over a dataset, computed once and replayed as a Runner to `compare_models`.

    Batches are looked up by a hash of their inputs, so `compare_models` must slice the same dataset
    with the same batch size; a batch it never saw is run on the golden model when that is safe
    (an ONNX golden model runs in its own session), else it raises EngineError.
    """

    def __init__(self, model: CompressibleModel, feeds: Feeds, batch_size: int = 64) -> None:
        self.model = model
        self.batch_size = batch_size
        bound = bind_inputs(feeds, model.inputs)
        n = len(next(iter(bound.values())))
        self._outputs: dict[str, dict[str, np.ndarray]] = {}
        for start in range(0, n, batch_size):
            batch = {name: array[start : start + batch_size] for name, array in bound.items()}
            self._outputs[_digest(batch)] = _run_batch(
                model, batch, len(next(iter(batch.values()))), "golden"
            )
        first = next(iter(self._outputs.values()))
        declared = {spec.name: spec for spec in model.outputs}
        self._output_specs = [
            TensorSpec(
                name, (None, *array.shape[1:]), declared[name].dtype if name in declared else array.dtype.name
            )
            for name, array in first.items()
        ]
        self._input_specs = [
            TensorSpec(s.name, (None, *s.shape[1:]) if s.shape else (), s.dtype) for s in model.inputs
        ]
        self.n_samples = n

    @property
    def inputs(self) -> list[TensorSpec]:
        return list(self._input_specs)

    @property
    def outputs(self) -> list[TensorSpec]:
        return list(self._output_specs)

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        found = self._outputs.get(_digest(feeds))
        if found is not None:
            return found
        if self.model.backend != "onnx":
            raise EngineError(
                "the golden reference has no outputs for this batch: compare with the batch size and "
                f"dataset it was built with (batch_size={self.batch_size})"
            )
        return self.model.run(feeds)


# ---------------------------------------------------------------------------------------------- point


def fidelity_summary(report: FidelityReport) -> dict[str, Any]:
    """The sweep's fidelity figures, taken from `FidelityReport.summary_dict()` (primary output)."""
    summary = report.summary_dict()
    out = summary["outputs"][report.primary_output]
    labels = out.get("labels") or {}
    calibration = labels.get("calibration") or {}
    task = out.get("task") or {}
    result: dict[str, Any] = {
        "primary_output": report.primary_output,
        "output_kind": out["kind"],
        "n_samples": report.n_samples,
        "kl_mean": out.get("kl_mean_nats"),
        "kl_mean_bits": out.get("kl_mean_bits"),
        "kl_max": out.get("kl_max_nats"),
        "kl_reverse_mean": out.get("kl_reverse_mean_nats"),
        "js_mean": out.get("js_mean_nats"),
        "top1_agreement": out.get("top1_match"),
        "sqnr_db": out.get("sqnr_db"),
        "sqnr_db_infinite": bool(out.get("sqnr_db_infinite")),
        "cosine_mean": out.get("cosine_mean"),
        "mse": out.get("mse"),
        "max_abs_err": out.get("max_abs_err"),
        "label_flips": (out.get("label_flips") or {}).get("count"),
        "accuracy_golden": labels.get("golden_top1_accuracy"),
        "accuracy_compressed": labels.get("compressed_top1_accuracy"),
        "accuracy_drop_pp": labels.get("top1_accuracy_drop_pp"),
        "ece_golden": (calibration.get("golden") or {}).get("ece"),
        "ece_compressed": (calibration.get("compressed") or {}).get("ece"),
        "f1_macro_vs_golden": task.get("f1_macro_vs_golden"),
        "f1_macro_drop_pp": task.get("f1_macro_drop_pp"),
        "borderline_agreement": task.get("borderline_agreement"),
        "task_metrics": task_metrics(task),
        "n_flagged": summary["per_sample_summary"]["n_flagged"],
        "warnings": list(summary["warnings"]),
    }
    return result


def task_metrics(task: dict[str, Any]) -> dict[str, float | None]:
    """The task block's top-level numbers by name, whatever the task (segmentation's miou_drop, ctc's
    wer_delta, image's psnr_drop_db...): nested documents, lists, strings and switches are left out, a
    missing figure (None) kept. A sweep stores each as the objective `task.<name>`."""
    return {
        key: None if value is None else float(value)
        for key, value in task.items()
        if value is None or (isinstance(value, int | float) and not isinstance(value, bool))
    }


def _null_notes(values: dict[str, Any], where: str, labelled: bool) -> list[str]:
    """Explain every None a figure holds (the JSON form never carries NaN)."""
    notes = []
    for key, value in values.items():
        if value is not None or key in ("warnings", "task_metrics"):
            continue
        if key == "sqnr_db" and values.get("sqnr_db_infinite"):
            notes.append(f"{where}.sqnr_db is None: infinite (the outputs are identical)")
        elif key.startswith(("accuracy", "ece")) and not labelled:
            notes.append(f"{where}.{key} is None: no labels")
        elif (
            key.startswith(("kl", "js", "top1", "label_flips"))
            and values.get("output_kind") != "classification"
        ):
            notes.append(f"{where}.{key} is None: the primary output is not a classification output")
        else:
            notes.append(f"{where}.{key} is None: not defined for this point (NaN or not computed)")
    return notes


@dataclass
class SweepPoint:
    """One evaluated configuration. `report` (the full FidelityReport) is not part of `to_dict()`."""

    spec: PointSpec
    fidelity: dict[str, Any]
    cost: dict[str, Any]
    runtime: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    exports: list[dict[str, Any]] = field(default_factory=list)
    report: FidelityReport | None = None

    @property
    def id(self) -> str:
        return self.spec.id

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (no NaN or inf: a missing figure is None and `notes` says why)::

        {"id": str, "config": config dict | None (uniform), "plan": {layer: config dict} | None (per layer),
         "fidelity": {primary_output, output_kind, n_samples, kl_mean (nats, KL(P‖Q)), kl_mean_bits,
                      kl_max, kl_reverse_mean, js_mean, top1_agreement, sqnr_db, sqnr_db_infinite,
                      cosine_mean, mse, max_abs_err, label_flips, accuracy_golden, accuracy_compressed,
                      accuracy_drop_pp (points), ece_golden, ece_compressed, f1_macro_vs_golden,
                      f1_macro_drop_pp, borderline_agreement, task_metrics ({name: number | None}, the
                      task block's top-level numbers), n_flagged, warnings},
         "cost": {size_bytes, size_bytes_fp32, size_bytes_sparse, compression_ratio, quant_param_bytes,
                  params_total, params_kept, params_nonzero, other_params, macs, macs_effective, bops,
                  bops_effective, bops_fp32, notes, layers: [{name, type, config, weight_bits,
                  activation_bits, params, params_kept, size_bytes, macs, macs_effective, bops,
                  bops_effective, tensors: [...]}]},
         "runtime": {executable, runtime, real_export, real_kinds, matches_simulation, runtime_note},
         "exports": [manifest, ...] (see export.export_point), "notes": [str]}
        """
        return json_safe(
            {
                **self.spec.to_dict(),
                "fidelity": self.fidelity,
                "cost": self.cost,
                "runtime": self.runtime,
                "exports": self.exports,
                "notes": list(self.notes),
            }
        )
