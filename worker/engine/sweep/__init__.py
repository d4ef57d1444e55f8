"""The engine of a compression sweep: evaluate whole-model configurations, cost them, export them, time them.

* `points.evaluate_point(golden, feeds, labels, config_or_plan, ...)` → `SweepPoint` (fidelity from
  `fidelity.compare_models`, cost from `cost.model_cost`, runtime form from `runtime.runtime_support`);
  `evaluate_points` runs several sharing the golden outputs, calibration and tensor cache.
* `cost`: size (bits per tensor + quantization parameters), parameters kept, MACs, BOPs.
* `runtime`: which points onnxruntime can execute (fp32, fp16, int8 weights, int8 dynamic, int8 QDQ)
  and which are simulated only.
* `export.export_point` → (ONNX file, manifest), simulated or real; `latency.measure_latency` /
  `compare_latency` → p50 / p90 per batch size.

Pure engine: no HTTP, SQL or Celery; the Pareto frontier of the resulting points is computed by the
core (`backend.pareto`) from `SweepPoint.to_dict()` figures.
"""

from __future__ import annotations

from worker.engine.sweep.cost import ModelCost, model_cost, storage_of
from worker.engine.sweep.export import MANIFEST_FORMAT, export_point
from worker.engine.sweep.golden import GoldenReference, PointSpec, SweepPoint, point_spec
from worker.engine.sweep.latency import compare_latency, measure_latency
from worker.engine.sweep.points import evaluate_point, evaluate_points
from worker.engine.sweep.runtime_forms import EXPORT_KINDS, ExportKind, RuntimeSupport, runtime_support

__all__ = [
    "EXPORT_KINDS",
    "MANIFEST_FORMAT",
    "ExportKind",
    "GoldenReference",
    "ModelCost",
    "PointSpec",
    "RuntimeSupport",
    "SweepPoint",
    "compare_latency",
    "evaluate_point",
    "evaluate_points",
    "export_point",
    "measure_latency",
    "model_cost",
    "point_spec",
    "runtime_support",
    "storage_of",
]
