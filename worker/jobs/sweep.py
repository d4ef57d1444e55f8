"""Sweep jobs on the worker pool: one chunk per configuration (a point), merged into sweep_points rows.

Point 0 is always the golden model itself (fp32): the reference every compressed point's size and latency
are compared with, and a point of the frontier in its own right. Each point is evaluated on the dataset
(fidelity against the golden outputs, with labels when the dataset has them), costed (size, parameters
kept, MACs, BOPs), exported as ONNX (the simulated form and, where a runtime can run it, the real int8 /
fp16 form), and its runnable export timed on the worker that evaluated it.
"""

from __future__ import annotations

import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from backend.calibration_split import any_quantizes_activations
from backend.contracts import RESULT_SWEEP_SEARCH, SweepJobParams, device_queue
from backend.db.models import Job, JobResult, SweepPoint
from backend.storage import copy_file_to_staging
from backend.sweep_objectives import pack_points
from task_specs.metrics import TASK_PREFIX
from worker.fanout import ChunkResults
from worker.jobs.compressible import CalibrationRequest, open_prepared
from worker.jobs.sweep_sources import stored_scan
from worker.runtime import JobContext, ResultWriter, json_safe

GOLDEN_LABEL = "fp32"
OBJECTIVE_PATHS = {
    "kl_mean": ("fidelity", "kl_mean"),
    "js_mean": ("fidelity", "js_mean"),
    "top1_agreement": ("fidelity", "top1_agreement"),
    "sqnr_db": ("fidelity", "sqnr_db"),
    "cosine_mean": ("fidelity", "cosine_mean"),
    "accuracy": ("fidelity", "accuracy_compressed"),
    "accuracy_drop_pp": ("fidelity", "accuracy_drop_pp"),
    "ece": ("fidelity", "ece_compressed"),
    "f1_macro_vs_golden": ("fidelity", "f1_macro_vs_golden"),
    "f1_macro_drop_pp": ("fidelity", "f1_macro_drop_pp"),
    "borderline_agreement": ("fidelity", "borderline_agreement"),
    "size_bytes": ("cost", "size_bytes"),
    "compression_ratio": ("cost", "compression_ratio"),
    "params_kept": ("cost", "params_kept"),
    "macs": ("cost", "macs_effective"),
    "bops": ("cost", "bops_effective"),
}
"""The numbers of a point that become frontier objectives, by name → path in SweepPoint.to_dict()."""


@dataclass(frozen=True)
class _Loaded:
    params: SweepJobParams
    handle: Any  # CompressibleModel, prepared
    feeds: dict[str, np.ndarray]  # the model inputs, and the task's annotations when the sweep has a task
    labels: np.ndarray | None
    reference: Any  # GoldenReference
    calibration: Any  # Calibration
    source_sha256: str
    split: dict[str, Any] | None  # which samples calibrated (CalibrationSplit.to_dict), None: nothing is


class SweepHandler:
    def __init__(self) -> None:
        self._last: tuple[uuid.UUID, _Loaded] | None = None

    def _load(self, ctx: JobContext) -> _Loaded:
        if self._last is not None and self._last[0] == ctx.job_id:
            return self._last[1]
        self._last = None
        from worker.engine.compression.model import Calibration
        from worker.engine.sweep import GoldenReference

        params = SweepJobParams.model_validate(ctx.params)
        request = _calibration_request(ctx, params)
        prepared = open_prepared(
            ctx, params.model_id, params.dataset_id, params.max_samples, params.threads, request, params
        )
        handle, feeds = prepared.handle, prepared.feeds
        reference = GoldenReference(handle, feeds, params.batch_size)
        # the held-out or named calibration samples; a sweep that quantizes no activation calibrates nothing
        calibration = Calibration(handle, prepared.calibration_feeds or feeds, params.batch_size)
        if params.task != "auto":  # the task reads its annotations (masks, targets, transcripts) too
            feeds = feeds | prepared.annotations
        split = None if prepared.split is None else prepared.split.to_dict()
        loaded = _Loaded(
            params,
            handle,
            feeds,
            prepared.labels,
            reference,
            calibration,
            prepared.model.artifact_sha256,
            split,
        )
        self._last = (ctx.job_id, loaded)
        return loaded

    def plan(self, ctx: JobContext) -> list[dict[str, Any]]:
        from worker.engine.compression.configs import config_from_dict

        ctx.progress(0.0, "loading the model and the dataset")
        loaded = self._load(ctx)
        params = loaded.params
        points: list[dict[str, Any]] = [{"label": GOLDEN_LABEL, "config": None}]
        for config in params.configs:
            raw = config.model_dump(mode="json")
            points.append({"label": config_from_dict(raw).id, "config": raw})
        if params.mixed_precision is not None:
            points.extend(self._mixed_precision_points(ctx, loaded))
        if params.search is not None:  # last: its steps take the point indices from its own on
            from worker.jobs.sweep_search import search_spec

            points.append(search_spec())
        queue = (
            None if params.device is None else {"queue": device_queue(ctx.settings.queue_name, params.device)}
        )
        return [point | {"index": i} | (queue or {}) for i, point in enumerate(points)]

    def _mixed_precision_points(self, ctx: JobContext, loaded: _Loaded) -> list[dict[str, Any]]:
        from worker.engine.sensitivity.scan import plan_mixed_precision

        source = loaded.params.mixed_precision
        assert source is not None
        result = stored_scan(ctx, source.sensitivity_job_id, "to plan from")
        weights = sum(int(layer["weight_params"]) for layer in result.layers)
        points = []
        for bits in source.average_bits:
            plan = plan_mixed_precision(result, weights * bits / 8)
            points.append(
                {
                    "label": f"mixed-{bits:g}bit",
                    "plan": {layer: config.to_dict() for layer, config in plan.plan().items()},
                    "config": {"type": "mixed_precision", "average_bits": bits, "bits": plan.bits},
                }
            )
        return points

    def run_chunk(self, ctx: JobContext, spec: dict[str, Any]) -> dict[str, Any]:
        from worker.engine.compression.configs import config_from_dict
        from worker.engine.sweep import evaluate_point, measure_latency
        from worker.engine.sweep.deployed_fidelity import chosen_export, with_deployed_fidelity

        loaded = self._load(ctx)
        params = loaded.params
        if spec.get("kind") == "search":  # every step, in order, in this one chunk
            from worker.jobs.sweep_search import run_search

            return run_search(self, ctx, loaded, spec)
        if "plan" in spec:
            target: Any = {layer: config_from_dict(c) for layer, c in spec["plan"].items()}
        else:
            target = None if spec["config"] is None else config_from_dict(spec["config"])
        ctx.progress(0.0, f"evaluating {spec['label']}")
        with tempfile.TemporaryDirectory(prefix="kneeboard-sweep-") as tmp:
            point = evaluate_point(
                loaded.handle,
                loaded.feeds,
                loaded.labels,
                target,
                batch_size=params.batch_size,
                calibration=loaded.calibration,
                reference=loaded.reference,
                export_dir=Path(tmp) if params.export else None,
                fidelity_params=_fidelity_params(params),
            )
            doc: dict[str, Any] = json_safe(point.to_dict())
            doc["calibration"] = loaded.split if _calibrates(target) else None
            for manifest in doc.get("exports") or []:  # each file says which samples calibrated it
                manifest["calibration"] = doc["calibration"]
            if params.attribution and not isinstance(target, dict):
                doc["attribution"] = json_safe(self._attribution(ctx, loaded, target, doc, spec["label"]))
            # after the attribution (which splits the simulated figures): the frontier scores the file it times
            doc = with_deployed_fidelity(doc)
            export = chosen_export(doc.get("exports"))  # the file a user would deploy (deployed_fidelity)
            stored: dict[str, Any] | None = None
            if export is not None:
                path = Path(tmp) / export["file"]
                latency = None
                if params.latency and doc.get("runtime", {}).get("executable"):
                    ctx.progress(0.5, f"timing {spec['label']}")
                    latency = measure_latency(
                        path,
                        loaded.feeds,
                        batch_sizes=params.latency_batch_sizes,
                        repeats=params.latency_repeats,
                        threads=params.threads,
                    )
                memory = None
                if params.memory and doc.get("runtime", {}).get("executable"):
                    ctx.progress(0.75, f"measuring the run-time memory of {spec['label']}")
                    memory = _runtime_memory(path, loaded.feeds, params)
                staged = copy_file_to_staging(path, ctx.store)
                ctx.store.put(staged)
                stored = {
                    "sha256": staged.sha256,
                    "manifest": dict(export) | {"source_model_sha256": loaded.source_sha256},
                    "latency": json_safe(latency),
                    "memory": json_safe(memory),
                }
        return {"label": spec["label"], "config": spec["config"], "point": doc, "export": stored}

    @staticmethod
    def _attribution(ctx: JobContext, loaded: _Loaded, config: Any, doc: dict[str, Any], label: str) -> Any:
        """The point's cause attribution (None for a single technique): its sub-configurations compared
        with the same golden reference, between the evaluation and the timing of the point."""
        from worker.engine.sweep.attribution import attribute

        def progress(done: int, total: int) -> None:
            ctx.progress(0.25 * done / total, f"attributing {label}: {done} of {total} sub-configurations")

        return attribute(
            loaded.handle,
            loaded.feeds,
            loaded.labels,
            config,
            doc.get("fidelity") or {},
            reference=loaded.reference,
            calibration=loaded.calibration,
            params=_fidelity_params(loaded.params),
            on_progress=progress,
        )

    def merge(self, ctx: JobContext, chunks: ChunkResults) -> ResultWriter:
        from worker.jobs.sweep_search import search_rows, search_summary

        rows = []
        golden_latency: dict[int, float] = {}
        golden_memory: float | None = None
        results: list[tuple[int, dict[str, Any]]] = []
        search: dict[str, Any] | None = None
        for spec, result in chunks:
            if spec["label"] == GOLDEN_LABEL and result.get("export") and result["export"].get("latency"):
                for batch in result["export"]["latency"].get("batches", []):
                    golden_latency[int(batch["batch_size"])] = float(batch["p50_ms"])
            if spec["label"] == GOLDEN_LABEL and (result.get("export") or {}).get("memory"):
                golden_memory = float(result["export"]["memory"]["session_mib"])
            if spec.get("kind") == "search":  # one chunk, one point per measured step
                results += search_rows(int(spec["index"]), result)
                search = search_summary(int(spec["index"]), result)
            else:
                results.append((int(spec["index"]), result))
        slower = _slower_flags([result for _, result in results])
        for (index, result), flag in zip(results, slower, strict=True):
            export = result.get("export")
            objectives = point_objectives(
                result["point"],
                (export or {}).get("latency"),
                golden_latency,
                memory=(export or {}).get("memory"),
                golden_memory=golden_memory,
            )
            rows.append(
                {
                    "job_id": ctx.job_id,
                    "index": index,
                    "label": str(result["label"])[:500],
                    "config": result.get("config") or {"type": "none"},
                    "objectives": objectives,
                    "point": result["point"]
                    | {
                        "latency": None if export is None else export.get("latency"),
                        "memory": None if export is None else export.get("memory"),
                        "slower_than_bigger": flag,
                    },
                    "export_sha256": None if export is None else export["sha256"],
                    "export_manifest": None if export is None else export["manifest"],
                }
            )

        def write(session: Session) -> None:
            points = [SweepPoint(**row) for row in rows]
            session.add_all(points)
            pack_points(session, ctx.job_id, points)  # the frontier's packed table, built once here
            session.add(JobResult(job_id=ctx.job_id, key="sweep.summary", payload={"n_points": len(rows)}))
            if search is not None:
                session.add(JobResult(job_id=ctx.job_id, key=RESULT_SWEEP_SEARCH, payload=search))

        return write

    def on_failure(self, session: Session, ctx: JobContext, message: str) -> None:
        return None


def _slower_flags(results: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """Per point: the bigger point (by exported file size) it is slower than beyond noise, or None
    (`latency_flags.slower_than_bigger`; points without a timed export are never flagged)."""
    from worker.engine.sweep.latency_flags import slower_than_bigger

    points = []
    for result in results:
        export = result.get("export") or {}
        manifest = export.get("manifest") or {}
        points.append(
            {
                "label": result["label"],
                "file_size_bytes": manifest.get("file_size_bytes"),
                "latency": export.get("latency"),
            }
        )
    return [json_safe(flag) for flag in slower_than_bigger(points)]


def _calibration_request(ctx: JobContext, params: SweepJobParams) -> CalibrationRequest | None:
    """A request for disjoint calibration samples when any configuration (the sweep's own, or those of the
    sensitivity job its mixed-precision plans come from) quantizes activations; None otherwise."""
    configs = [c.model_dump(mode="json") for c in params.configs]
    if params.mixed_precision is not None:
        with ctx.sessions() as session:
            source = session.get(Job, params.mixed_precision.sensitivity_job_id)
            configs += list((source.params if source is not None else {}).get("configs") or [])
    if params.search is not None:
        configs += [
            c.model_dump(mode="json") for c in (params.search.low, params.search.high) if c is not None
        ]
    if not any_quantizes_activations(configs):
        return None
    return CalibrationRequest(params.calibration_dataset_id, params.calibration_samples)


def _calibrates(target: Any) -> bool:
    """Whether a point (a config, a layer → config plan, or None for fp32) quantizes activations, or ranks
    channels on the calibration samples (channel_prune by taylor / reconstruction importance)."""
    from worker.engine.compression.configs import DATA_NORMS, ChannelPrune, needs_activation_stats, stages_of

    if target is None:
        return False
    configs = target.values() if isinstance(target, dict) else [target]
    return any(
        needs_activation_stats(config) is not None
        or any(isinstance(s, ChannelPrune) and s.norm in DATA_NORMS for s in stages_of(config))
        for config in configs
    )


def _fidelity_params(params: SweepJobParams) -> Any:
    """How every point (and its export, and its attribution) is compared: the sweep's task and options."""
    from worker.engine.fidelity.compare import FidelityParams

    return FidelityParams(
        batch_size=params.batch_size,
        task=params.task,
        task_options=dict(params.task_options),
        image_data_range=params.image_data_range,
    )


def point_objectives(
    point: dict[str, Any],
    latency: dict[str, Any] | None,
    golden_latency: dict[int, float],
    *,
    memory: dict[str, Any] | None = None,
    golden_memory: float | None = None,
) -> dict[str, float | None]:
    """A point's objectives: fidelity ones (and task.*) from the file the latency and memory come from when it
    was measured, else the simulation's (`deployed_fidelity`)."""
    from worker.engine.sweep.deployed_fidelity import deployed_fidelity

    sections = {"fidelity": deployed_fidelity(point).fidelity, "cost": point.get("cost") or {}}
    values: dict[str, float | None] = {}
    for name, (section, key) in OBJECTIVE_PATHS.items():
        value = sections[section].get(key)
        values[name] = float(value) if isinstance(value, int | float) else None
    for name, value in (sections["fidelity"].get("task_metrics") or {}).items():
        values[TASK_PREFIX + name] = float(value) if isinstance(value, int | float) else None
    for batch in (latency or {}).get("batches", []):
        size = int(batch["batch_size"])
        values[f"latency_p50_ms_b{size}"] = float(batch["p50_ms"])
        values[f"latency_p90_ms_b{size}"] = float(batch["p90_ms"])
        if size in golden_latency and golden_latency[size] > 0:
            values[f"latency_ratio_b{size}"] = float(batch["p50_ms"]) / golden_latency[size]
    if memory is not None:  # runtime_memory.measure_runtime_memory of the chosen export
        values["runtime_memory_mib"] = float(memory["session_mib"])
        values["peak_rss_mib"] = float(memory["peak_rss_mib"])
        if golden_memory is not None and golden_memory > 0:
            values["runtime_memory_ratio"] = float(memory["session_mib"]) / golden_memory
    return values


def _runtime_memory(path: Path, feeds: dict[str, np.ndarray], params: SweepJobParams) -> dict[str, Any]:
    """The peak memory of an onnxruntime session running the export, at the first timed batch size, in a
    child process (worker/engine/sweep/runtime_memory.py)."""
    from worker.engine.sweep.runtime_memory import measure_runtime_memory

    # 120 s, and 0.5 s more per MiB of file: a 64 MiB MatMul model loaded in 0.35 s on the busy machine, so
    # this leaves room for a slow disk and a loaded host without letting a hung child hold the chunk for long
    timeout_s = 120.0 + 0.5 * path.stat().st_size / 2**20
    return measure_runtime_memory(
        path,
        batch_size=params.latency_batch_sizes[0],
        sample=feeds,
        threads=params.threads,
        timeout_s=timeout_s,
    )
