"""Sensitivity jobs on the worker pool: plan chunks of layers, scan each chunk, merge (a FanOutHandler).

Each chunk loads the golden model and the calibration set itself, so any worker can take any chunk; the
engine guarantees that merged chunks equal one full scan (same golden outputs, same activation ranges).
The plan step runs the golden model once and shares its outputs with the chunks through the artifact
store (deleted at the merge); chunks are contiguous runs of layers balanced by expected cost
(worker/jobs/sensitivity_chunks.py), sent largest first. The cheapest chunk also measures every configuration on
the whole model. The merge plans mixed precision at the
requested average bit-widths and measures each plan with all layers compressed together.

A scan with a task (or a rank_by) reads the task's annotations (masks, targets, transcripts) beside the
inputs, as a sweep does, and every cell runs the whole compressed model through the task
(worker/engine/sensitivity/task_cells.py): the chunk split charges every cell a whole-model pass. Its
mixed-precision plans still minimise KL (the allocator's additive per-layer cost).
"""

from __future__ import annotations

import json
import math
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from backend.calibration_split import any_quantizes_activations
from backend.contracts import (
    RESULT_SENSITIVITY,
    RESULT_SENSITIVITY_ALL_BUT,
    RESULT_SENSITIVITY_IMPORTANCE,
    RESULT_SENSITIVITY_PLANS,
    SensitivityJobParams,
)
from backend.db.models import JobResult
from worker.engine.errors import EngineError
from worker.engine.jsonable import json_safe
from worker.fanout import ChunkResults
from worker.jobs.compressible import CalibrationRequest, open_prepared
from worker.jobs.sensitivity_chunks import balanced_chunks
from worker.runtime import JobContext, ResultWriter

MAX_LAYERS_PER_CHUNK_DEFAULT = 4
MAX_CHUNKS_DEFAULT = 16


@dataclass(frozen=True)
class _Loaded:
    params: SensitivityJobParams
    handle: Any  # a CompressibleModel, prepared
    feeds: dict[str, np.ndarray]
    batch_size: int
    """params.batch_size, or the engine's choice for this model (the same on every worker)."""
    activation_feeds: dict[str, np.ndarray] | None  # calibrate activation ranges; disjoint from `feeds`
    split: dict[str, Any] | None  # which samples calibrated (CalibrationSplit.to_dict); None: nothing did
    scoring: Any  # a TaskScoring when the scan has a task (or a rank_by), else None


class SensitivityHandler:
    """Keeps the last job's loaded model and calibration set, so a worker that takes several chunks of
    one job loads them once (the handle is never changed by a scan: every evaluation starts from the
    golden weights)."""

    def __init__(self) -> None:
        self._last: tuple[uuid.UUID, _Loaded] | None = None
        self._golden: tuple[str, Any] | None = None  # (artifact sha256, Golden) of the last job

    def _load(self, ctx: JobContext) -> _Loaded:
        if self._last is not None and self._last[0] == ctx.job_id:
            return self._last[1]
        self._last = None  # let the previous job's model go before loading this one
        self._golden = None
        params = SensitivityJobParams.model_validate(ctx.params)
        from worker.engine.sensitivity.scan import scan_batch_size

        configs = [c.model_dump(mode="json") for c in params.configs]
        request = (
            CalibrationRequest(params.calibration_dataset_id, params.calibration_samples)
            if any_quantizes_activations(configs)
            else None
        )
        prepared = open_prepared(
            ctx, params.model_id, params.dataset_id, params.max_samples, params.threads, request
        )
        batch = params.batch_size or scan_batch_size(prepared.handle)
        split = None if prepared.split is None else prepared.split.to_dict()
        scoring = None
        if params.task_cells:  # the task reads its annotations (masks, targets, transcripts) too
            from worker.engine.fidelity.compare import FidelityParams
            from worker.engine.sensitivity.scan import TaskScoring

            fidelity = FidelityParams(
                batch_size=batch,
                task=params.task,
                task_options=dict(params.task_options),
                image_data_range=params.image_data_range,
            )
            scoring = TaskScoring(fidelity, prepared.annotations, prepared.labels)
        loaded = _Loaded(
            params, prepared.handle, prepared.feeds, batch, prepared.calibration_feeds, split, scoring
        )
        self._last = (ctx.job_id, loaded)
        return loaded

    def plan(self, ctx: JobContext) -> list[dict[str, Any]]:
        ctx.progress(0.0, "loading the model and the calibration set")
        loaded = self._load(ctx)
        params, handle = loaded.params, loaded.handle
        names = [layer.name for layer in handle.layers()]
        if params.layers is not None:
            handle.check_layers(params.layers)
            names = [name for name in names if name in set(params.layers)]
        if not names:
            raise EngineError(
                "the model has no compressible layers (Conv, Linear, Embedding, recurrent, attention)"
            )
        if params.screening is not None:
            return self._screening_plan(ctx, loaded, names)
        n_chunks = params.chunks or min(
            MAX_CHUNKS_DEFAULT, math.ceil(len(names) / MAX_LAYERS_PER_CHUNK_DEFAULT)
        )
        n_chunks = min(n_chunks, len(names))
        # "only" cells of an ONNX model run their suffix; "all but" cells, torch models' cells and every cell
        # scored on a task the whole model
        from worker.engine.compression.onnx_backend import OnnxCompressible

        split = isinstance(handle, OnnxCompressible) and not params.task_cells
        n_configs = len(params.configs)
        whole_cells = (0 if split else n_configs) + (n_configs if params.all_but else 0)
        parts = balanced_chunks(names, handle.layers(), n_chunks, n_configs if split else 0, whole_cells)
        golden = self._share_golden(ctx, loaded)
        # the whole-model cells (one full pass per configuration) go to the cheapest chunk
        whole = min(range(len(parts)), key=lambda i: parts[i].cost) if params.whole_model else -1
        # a task chunk also runs the golden model once for every output the task decodes
        golden_pass = 1.0 if params.task_cells else 0.0
        return [
            {
                "layers": part.layers,
                "whole_model": i == whole,
                "golden": golden,
                "cost": round(part.cost + golden_pass + (len(params.configs) if i == whole else 0), 3),
            }
            for i, part in enumerate(parts)
        ]

    def _screening_plan(self, ctx: JobContext, loaded: _Loaded, names: list[str]) -> list[dict[str, Any]]:
        """A screened scan is one chunk: the estimate needs every layer, and its exact cells (top_k +
        control) are chosen from it. Cost: one probe pass per config, the exact cells at half a pass each,
        the whole-model cells."""
        from worker.engine.compression.onnx_backend import OnnxCompressible

        params = loaded.params
        screening = params.screening
        assert screening is not None
        if not isinstance(loaded.handle, OnnxCompressible):
            raise EngineError("screening estimates layers of ONNX models only; scan this model exactly")
        n_configs = len(params.configs)
        exact = min(len(names), screening.top_k + screening.control)
        cost = n_configs * (1 + 0.5 * exact) + (n_configs if params.whole_model else 0)
        golden = self._share_golden(ctx, loaded)
        return [
            {
                "layers": names,
                "screening": True,
                "whole_model": params.whole_model,
                "golden": golden,
                "cost": round(cost, 3),
            }
        ]

    def _share_golden(self, ctx: JobContext, loaded: _Loaded) -> str:
        """Run the golden model once over the calibration set and put its primary outputs in the artifact
        store, so chunks do not each repeat the pass (it was 11 % of a ResNet-18 scan's time with 6
        chunks). The job id is in the file, so two jobs never share (and delete) one artifact."""
        from backend.storage import copy_file_to_staging
        from worker.engine.compression.divergence import golden_outputs

        ctx.progress(0.0, "running the golden model over the calibration set")
        golden = golden_outputs(loaded.handle, loaded.feeds, loaded.batch_size)
        with tempfile.TemporaryDirectory(prefix="kneeboard-golden-") as tmp:
            path = Path(tmp) / "golden.npz"
            meta = json.dumps(
                {
                    "job": str(ctx.job_id),
                    "output": golden.output,
                    "kind": golden.kind,
                    "batch_size": golden.batch_size,
                }
            )
            np.savez(path, meta=np.array(meta), outputs=np.concatenate(golden.outputs))
            staged = copy_file_to_staging(path, ctx.store)
            ctx.store.put(staged)
        self._golden = (staged.sha256, golden)
        return staged.sha256

    def _load_golden(self, ctx: JobContext, sha256: str | None) -> Any:
        """The golden outputs the plan step shared, or None (an older plan, or the artifact is gone: the
        scan then computes them itself)."""
        from backend.errors import StorageError
        from worker.engine.compression.divergence import golden_from_outputs

        if sha256 is None:
            return None
        if self._golden is not None and self._golden[0] == sha256:
            return self._golden[1]
        try:
            with np.load(ctx.store.local_path(sha256)) as data:
                meta = json.loads(str(data["meta"]))
                outputs = data["outputs"]
        except (StorageError, OSError, KeyError, ValueError):
            return None
        if meta.get("job") != str(ctx.job_id):
            return None
        size = int(meta["batch_size"])
        batches = [outputs[start : start + size] for start in range(0, len(outputs), size)]
        golden = golden_from_outputs(meta["output"], meta["kind"], size, batches)
        self._golden = (sha256, golden)
        return golden

    def run_chunk(self, ctx: JobContext, spec: dict[str, Any]) -> dict[str, Any]:
        from worker.engine.sensitivity.scan import layer_sensitivity

        loaded = self._load(ctx)
        params, handle, feeds = loaded.params, loaded.handle, loaded.feeds
        layers = list(spec["layers"])
        configs = [c.model_dump(mode="json") for c in params.configs]
        steps = len(layers) * len(params.configs) * (2 if params.all_but else 1)
        done = [0]

        def progress(_done: int, _total: int) -> None:
            done[0] += 1
            ctx.progress(done[0] / max(steps, 1), f"{done[0]} of {steps} cells")

        reference = self._load_golden(ctx, spec.get("golden"))
        if spec.get("screening") and params.screening is not None:
            return self._screen(ctx, loaded, reference, layers)
        only = layer_sensitivity(
            handle,
            feeds,
            configs,
            layers=layers,
            mode="only",
            batch_size=loaded.batch_size,
            whole_model=params.whole_model and bool(spec.get("whole_model")),
            on_progress=progress,
            reference=reference,
            activation_feeds=loaded.activation_feeds,
            task=loaded.scoring,
            rank_by=params.rank_by,
        )
        result: dict[str, Any] = {"only": only.to_dict(), "calibration": loaded.split}
        if params.all_but:
            result["all_but"] = layer_sensitivity(
                handle,
                feeds,
                configs,
                layers=layers,
                mode="all_but",
                batch_size=loaded.batch_size,
                on_progress=progress,
                reference=reference,
                activation_feeds=loaded.activation_feeds,
                task=loaded.scoring,
                rank_by=params.rank_by,
            ).to_dict()
        result["importance"] = self._importance(loaded, layers)
        return result

    def _screen(self, ctx: JobContext, loaded: _Loaded, reference: Any, layers: list[str]) -> dict[str, Any]:
        from worker.engine.sensitivity.screening import screen_layers

        params = loaded.params
        screening = params.screening
        assert screening is not None
        ctx.progress(0.0, "estimating every layer (one probe pass per configuration)")
        steps = min(len(layers), screening.top_k + screening.control) * len(params.configs)
        done = [0]

        def progress(_done: int, _total: int) -> None:
            done[0] += 1
            ctx.progress(done[0] / max(steps, 1), f"{done[0]} of {steps} exact cells")

        only = screen_layers(
            loaded.handle,
            loaded.feeds,
            [c.model_dump(mode="json") for c in params.configs],
            top_k=screening.top_k,
            control=screening.control,
            seed=screening.seed,
            batch_size=loaded.batch_size,
            on_progress=progress,
            reference=reference,
            activation_feeds=loaded.activation_feeds,
            whole_model=params.whole_model,
        )
        return {
            "only": only.to_dict(),
            "calibration": loaded.split,
            "importance": self._importance(loaded, layers),
        }

    def _importance(self, loaded: _Loaded, layers: list[str]) -> dict[str, dict[str, Any]]:
        from worker.engine.sensitivity.scan import channel_importance

        importance: dict[str, dict[str, Any]] = {}
        for layer in layers:
            for method in loaded.params.importance_methods:
                try:
                    scores = channel_importance(loaded.handle, layer, method, loaded.feeds)
                except EngineError as exc:  # e.g. a method this backend cannot compute
                    importance.setdefault(layer, {})[method] = {"error": str(exc)}
                    continue
                importance.setdefault(layer, {})[method] = scores.to_dict()
        return importance

    def merge(self, ctx: JobContext, chunks: ChunkResults) -> ResultWriter:
        from worker.engine.sensitivity.scan import measure_plan, merge_sensitivity, plan_mixed_precision

        params = SensitivityJobParams.model_validate(ctx.params)
        for sha256 in {spec["golden"] for spec, _ in chunks if spec.get("golden")}:
            ctx.store.delete(sha256)  # every chunk is done with the shared golden outputs
        only = merge_sensitivity([result["only"] for _, result in chunks])
        all_but = merge_sensitivity([result["all_but"] for _, result in chunks]) if params.all_but else None
        importance: dict[str, Any] = {}
        for _, result in chunks:
            importance |= result.get("importance", {})
        plans = self._plans(ctx, params, only, plan_mixed_precision, measure_plan)
        if params.rank_by is not None and params.mixed_precision_bits:
            only.notes.append(
                f"mixed-precision plans minimise the cells' KL, not {params.rank_by} (the ranking's metric)"
            )
        # which samples calibrated the activation-quantized cells and plans (the same on every chunk)
        split = next((result.get("calibration") for _, result in chunks), None)
        documents = {
            RESULT_SENSITIVITY: only.to_dict() | {"calibration": split},
            RESULT_SENSITIVITY_PLANS: {"plans": plans, "calibration": split},
            RESULT_SENSITIVITY_IMPORTANCE: {"layers": importance},
        }
        if all_but is not None:
            documents[RESULT_SENSITIVITY_ALL_BUT] = all_but.to_dict() | {"calibration": split}

        def write(session: Session) -> None:
            for key, payload in documents.items():
                session.add(JobResult(job_id=ctx.job_id, key=key, payload=json_safe(payload)))

        return write

    def on_failure(self, session: Session, ctx: JobContext, message: str) -> None:
        return None

    def _plans(
        self, ctx: JobContext, params: SensitivityJobParams, only: Any, plan_fn: Any, measure_fn: Any
    ) -> list[dict[str, Any]]:
        """Mixed-precision plans at each requested average bit-width, each measured for real."""
        from worker.engine.compression.configs import weight_bits

        options = [c for c in only.configs if weight_bits(c) is not None]
        if not params.mixed_precision_bits:
            return []
        if len({weight_bits(c) for c in options}) < 2 or only.output_kind != "classification":
            reason = (
                "mixed precision needs at least two bit-width configurations"
                if len({weight_bits(c) for c in options}) < 2
                else "mixed precision minimises KL and needs a classification output"
            )
            return [{"average_bits": bits, "error": reason} for bits in params.mixed_precision_bits]
        weights = sum(int(layer["weight_params"]) for layer in only.layers)
        plans: list[dict[str, Any]] = []
        for k, bits in enumerate(params.mixed_precision_bits):
            ctx.progress(k / len(params.mixed_precision_bits), f"mixed precision at {bits:g} bits on average")
            budget = weights * bits / 8
            try:
                plan = plan_fn(only, budget)
            except EngineError as exc:
                plans.append({"average_bits": bits, "budget_bytes": budget, "error": str(exc)})
                continue
            loaded = self._load(ctx)
            measured = measure_fn(
                loaded.handle,
                loaded.feeds,
                plan,
                batch_size=loaded.batch_size,
                activation_feeds=loaded.activation_feeds,
            )
            plans.append(
                {
                    "average_bits": bits,
                    "budget_bytes": budget,
                    **plan.to_dict(),
                    "measurement": measured.to_dict(),
                }
            )
        return plans
