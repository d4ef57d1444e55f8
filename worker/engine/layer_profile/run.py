"""profile_layers: open both models, match their layers, stream the profile's batches through them and
fold every comparison into running sums."""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Collection, Iterable, Mapping
from itertools import chain
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from worker.engine.errors import DatasetMismatchError, ModelLoadError
from worker.engine.layer_profile.accumulate import LayerPair, StatsAccumulator
from worker.engine.layer_profile.batching import DEFAULT_MEMORY_BUDGET_MB, Rebatcher, profile_batch_size
from worker.engine.layer_profile.calibration import CALIBRATION_SAMPLES, plan_calibration
from worker.engine.layer_profile.causes import likely_causes
from worker.engine.layer_profile.matching import MatchInfo, annotate, match_layers, matching_note
from worker.engine.layer_profile.onnx_local import OnnxLocal, failing_layer
from worker.engine.layer_profile.onnx_side import OnnxSide
from worker.engine.layer_profile.quantizer_range import activation_bounds, quantizer_range
from worker.engine.layer_profile.results import LayerFidelity, LayerProfile, LayerStats
from worker.engine.layer_profile.shift import RELU_FAMILY, ShiftAccumulator
from worker.engine.layer_profile.sides import Feeds, batch_size_of, stops_the_job
from worker.engine.layer_profile.torch_side import TorchLocal, TorchSide
from worker.engine.loaders import extract_onnx_zip
from worker.engine.types import ModelFormat

TORCHSCRIPT_NOTE = (
    "Per-layer profiles of TorchScript models are not supported: TorchScript modules do not run Python "
    "forward hooks. Export the model with torch.export (.pt2) or to ONNX to profile its layers."
)


def _open_side(
    path: Path, fmt: ModelFormat, workdir: Path, role: str, threads: int | None
) -> OnnxSide | TorchSide:
    """Load one model for capture (an onnx_zip is extracted into `workdir` first)."""
    if fmt == "onnx":
        return OnnxSide(Path(path), workdir, role, threads)
    if fmt == "onnx_zip":
        folder = workdir / f"{role}_zip"
        folder.mkdir()
        return OnnxSide(extract_onnx_zip(Path(path), folder), workdir, role, threads)
    if fmt == "torch_export":
        return TorchSide(Path(path), role, threads)
    raise ModelLoadError(f"Unknown model format {fmt!r} for a layer profile.")


def _make_local(
    golden: OnnxSide | TorchSide, compressed: OnnxSide | TorchSide, pairs: list[LayerPair], workdir: Path
) -> OnnxLocal | TorchLocal | None:
    """The local evaluator for these formats; pairs whose local value cannot be computed say why."""
    for pair in pairs:
        pair.local = StatsAccumulator()
    if isinstance(golden, TorchSide) and isinstance(compressed, TorchSide):
        return TorchLocal(golden, compressed, pairs)
    if not (isinstance(golden, OnnxSide) and isinstance(compressed, OnnxSide)):
        for pair in pairs:
            pair.drop_local("local values need both models in the same format (ONNX or torch.export)")
        return None
    try:
        local = OnnxLocal(compressed, pairs, workdir)
    except Exception as exc:  # onnx / onnxruntime refusing the extra model
        if stops_the_job(exc):
            raise
        for pair in pairs:
            pair.drop_local(f"onnxruntime could not build the local sub-graphs: {exc}")
        return None
    for pair in pairs:
        if pair.golden in local.plan.skipped:
            pair.drop_local(local.plan.skipped[pair.golden])
    return local


def _plan_qdq(compressed: OnnxSide | TorchSide, pairs: list[LayerPair]) -> None:
    """Give every pair whose compressed tensor is a DequantizeLinear output of a QuantizeLinear ->
    DequantizeLinear pair the tensor entering that QuantizeLinear (its own quantizer's error)."""
    if not isinstance(compressed, OnnxSide):
        return
    for pair in pairs:
        pair.qdq_input = compressed.quantizer_input(pair.compressed)
        if pair.qdq_input is not None:
            pair.qdq = StatsAccumulator()


def _plan_shift(
    golden: OnnxSide | TorchSide, compressed: OnnxSide | TorchSide, pairs: list[LayerPair]
) -> None:
    """Give every pair its activation-shift accumulator: ReLU-family by the golden layer's op type, the
    quantizer's range when the compressed layer is a QDQ pair's output (after _plan_qdq)."""
    for pair in pairs:
        quantizer = None
        activation = (-math.inf, math.inf)
        if isinstance(compressed, OnnxSide) and pair.qdq_input is not None:
            quantize = compressed.quantize_node(pair.compressed)
            if quantize is not None:
                quantizer = quantizer_range(compressed.model, quantize, compressed.folder)
        if quantizer is not None and isinstance(golden, OnnxSide):
            node = golden.producers.get(pair.golden)
            activation = activation_bounds(golden.model, node[1] if node else None, golden.folder)
        pair.shift = ShiftAccumulator(golden.op_type(pair.golden) in RELU_FAMILY, quantizer, activation)


def _amplification(pair: LayerPair) -> float | None:
    """Accumulated error power / local error power; None without a local value or with a zero local
    error."""
    local = pair.local
    if local is None or local.problem is not None or local.sum_error == 0.0:
        return None
    return pair.accumulated.sum_error / local.sum_error


def _nbytes(values: Mapping[str, np.ndarray]) -> int:
    return sum(int(v.nbytes) for v in values.values())


MAX_LOCAL_RETRIES = 8
"""How many failing layers a batch may leave out of the local sub-graphs, one rebuild each, before every
remaining layer loses its local value."""


def _run_local(
    local: OnnxLocal | TorchLocal, pairs: list[LayerPair], feeds: Feeds, g: Mapping[str, np.ndarray]
) -> tuple[OnnxLocal | TorchLocal | None, dict[str, np.ndarray]]:
    """One batch's local values by golden name; returns the evaluator (None, having said why, if it
    failed) and the values. An ONNX sub-graph that fails is left out, with onnxruntime's message as that
    layer's note, and the others run again without it (onnxruntime names the failing node, whose name
    carries its layer's prefix); a failure that names no layer costs every layer its local value."""
    for _ in range(MAX_LOCAL_RETRIES + 1):
        try:
            return local, local.run(feeds, g)
        except Exception as exc:  # e.g. a golden tensor that the compressed sub-graph cannot take
            if stops_the_job(exc):
                raise
            failing = failing_layer(str(exc), local.pairs) if isinstance(local, OnnxLocal) else None
            if failing is None or not isinstance(local, OnnxLocal):
                error = exc
                break
            for pair in pairs:
                if pair.golden == failing:
                    pair.drop_local(f"its local sub-graph failed to run: {exc}")
            try:
                local = local.without([failing])
            except Exception as rebuild_error:
                if stops_the_job(rebuild_error):
                    raise
                error = rebuild_error
                break
    else:
        error = RuntimeError(f"more than {MAX_LOCAL_RETRIES} local sub-graphs failed")
    for pair in pairs:
        if pair.local is not None:
            pair.drop_local(f"the local sub-graphs failed to run: {error}")
    return None, {}


def _without_shape_mismatches(
    local: OnnxLocal, pairs: list[LayerPair], g: Mapping[str, np.ndarray], c: Mapping[str, np.ndarray]
) -> OnnxLocal | None:
    """The evaluator without the pairs whose golden and compressed tensors differ in shape (seen in the
    first batch): their golden values cannot stand in for the compressed tensors, and fed at a boundary
    they broke every sub-graph downstream (MiniLM vs a third party's int8 export: 22 such pairs left no
    layer a local value). Those layers are left out of the profile anyway (see _finish)."""
    mismatched = [p.golden for p in pairs if g[p.golden].shape != c[p.compressed].shape]
    if not mismatched:
        return local
    for pair in pairs:
        if pair.golden in mismatched and pair.local is not None:
            pair.drop_local("golden and compressed tensors differ in shape")
    try:
        return local.without(mismatched)
    except Exception as exc:  # onnxruntime refusing the rebuilt model
        if stops_the_job(exc):
            raise
        for pair in pairs:
            if pair.local is not None:
                pair.drop_local(f"onnxruntime could not build the local sub-graphs: {exc}")
        return None


def _captured_names(pairs: list[LayerPair]) -> tuple[set[str], set[str]]:
    """(golden, compressed) tensors the profile captures."""
    g_names = {p.golden for p in pairs}
    c_names = {p.compressed for p in pairs} | {p.qdq_input for p in pairs if p.qdq_input is not None}
    return g_names, c_names


def _narrow(golden: OnnxSide | TorchSide, compressed: OnnxSide | TorchSide, pairs: list[LayerPair]) -> None:
    """ONNX sides capture only the tensors the profile needs from now on (OnnxSide.narrow)."""
    for side, names in zip((golden, compressed), _captured_names(pairs), strict=True):
        if isinstance(side, OnnxSide):
            side.narrow(names)


def _process(
    golden: OnnxSide | TorchSide,
    compressed: OnnxSide | TorchSide,
    pairs: list[LayerPair],
    local: OnnxLocal | TorchLocal | None,
    batches: Rebatcher,
    budget_mb: float,
    on_progress: Callable[[int], None] | None,
) -> int:
    """Run every profile batch through both models (and the local evaluator), folding it into the pairs'
    sums. The first batch (one sample) measures the bytes per sample that size the later batches."""
    g_names, c_names = _captured_names(pairs)
    fixed = golden.fixed_batch or compressed.fixed_batch
    done = 0
    for feeds in batches:
        n = batch_size_of(feeds)
        g = golden.capture(feeds, g_names)
        c = compressed.capture(feeds, c_names)
        values: dict[str, np.ndarray] = {}
        if done == 0 and isinstance(local, OnnxLocal):
            local = _without_shape_mismatches(local, pairs, g, c)
        if local is not None:
            local, values = _run_local(local, pairs, feeds, g)
        held = _nbytes(g) + _nbytes(c) + _nbytes(values)
        for pair in pairs:
            qdq_input = c[pair.qdq_input] if pair.qdq is not None and pair.qdq_input is not None else None
            pair.fold(g[pair.golden], c[pair.compressed], values.get(pair.golden), qdq_input, n)
        if isinstance(golden, TorchSide):
            held += golden.inputs_nbytes()
        del g, c, values
        if done == 0:
            batches.size = profile_batch_size(held / n, budget_mb, fixed)
        done += n
        if on_progress is not None:
            on_progress(done)
    return done


def _local_result(pair: LayerPair) -> tuple[LayerStats | None, str | None]:
    """The pair's local totals and note; None with the reason when they could not be computed."""
    if pair.local is None:
        return None, pair.local_note
    if pair.local.problem is not None:
        return None, f"local output {pair.local.problem}"
    return pair.local.result(), pair.local_note


def _finish(pairs: list[LayerPair], notes: list[str]) -> list[LayerFidelity]:
    """Turn the pairs into results; layers with shape problems are dropped with a note."""
    kept = []
    for pair in pairs:
        if pair.accumulated.problem is not None:
            notes.append(f"Layer {pair.golden!r} left out: {pair.accumulated.problem}.")
        else:
            kept.append(pair)
    not_batch_first = [pair.golden for pair in kept if not pair.accumulated.batch_first]
    if not_batch_first:
        notes.append(
            f"No cosine for {', '.join(not_batch_first)}: their tensors do not have the batch on axis 0."
        )
    last = max(len(kept) - 1, 1)
    layers = []
    for depth, pair in enumerate(kept):
        local, note = _local_result(pair)
        qdq = pair.qdq.result() if pair.qdq is not None and pair.qdq.problem is None else None
        layers.append(
            LayerFidelity(
                pair.golden,
                pair.compressed,
                pair.op_type,
                depth,
                depth / last,
                pair.accumulated.result(),
                local,
                note,
                qdq,
                pair.qdq_input if qdq is not None else None,
                shift=None if pair.shift is None else pair.shift.result(_amplification(pair)),
            )
        )
    missing = [layer.name for layer in layers if layer.local is None]
    if missing:
        notes.append(f"No local value for {len(missing)} layer(s) ({', '.join(missing)}); see local_note.")
    return layers


def _outputs(side: OnnxSide | TorchSide) -> set[str]:
    """The model's output tensors among its layer candidates (ONNX; a torch model's are module calls)."""
    return {o.name for o in side.model.graph.output} if isinstance(side, OnnxSide) else set()


def architecture_note(
    layers: list[LayerFidelity], golden_inner: Collection[str], compressed_inner: int
) -> str | None:
    """Why the profile does not apply, when no inner layer of the golden model (none but its outputs) has a
    counterpart in the compressed one: a distilled student of another design, say. None otherwise."""
    if not golden_inner or any(layer.name in golden_inner for layer in layers):
        return None
    names = ", ".join(layer.name for layer in layers)
    compared = f"only the model outputs ({names}) are compared" if layers else "nothing is compared"
    return (
        f"The per-layer profile does not apply to these two models: none of the golden model's "
        f"{len(golden_inner)} inner layers has a counterpart among the compressed model's {compressed_inner} "
        f"({compared}). They have different architectures, as a distilled student of another design has; a "
        "per-layer comparison needs the layers two models share. The output-level report (every output "
        "metric, per sample) is complete. If the models do share layers under other names, pair them with "
        "layer_name_map."
    )


def profile_layers(
    golden_path: Path,
    golden_fmt: ModelFormat,
    compressed_path: Path,
    compressed_fmt: ModelFormat,
    feeds_batches: Iterable[Mapping[str, np.ndarray]],
    *,
    name_map: Mapping[str, str] | None = None,
    on_progress: Callable[[int], None] | None = None,
    memory_budget_mb: float = DEFAULT_MEMORY_BUDGET_MB,
    intra_op_threads: int | None = None,
    calibration_batches: Iterable[Mapping[str, np.ndarray]] | None = None,
    calibration_samples: int = CALIBRATION_SAMPLES,
    on_calibration_progress: Callable[[int], None] | None = None,
) -> LayerProfile:
    """Profile the accumulated, local and own-quantizer fidelity of every matched layer over the samples.

    feeds_batches yields dicts of input arrays (batch on axis 0), bound to the models' input names (a model
    whose names differ takes them by position); they are re-cut into the profile's own batches, sized so
    that one batch's captured tensors fit `memory_budget_mb` (see batching.py). on_progress(samples done)
    is called after each profile batch and may raise JobCancelled, which propagates. `intra_op_threads`
    sizes the runtimes' intra-op thread pools. Raises ModelLoadError, DatasetMismatchError (e.g. no
    samples) or EngineError when a model fails to run.

    calibration_batches (optional, batches like feeds_batches): the set the compressed model was calibrated
    on. The golden model first runs over its first `calibration_samples` samples (on_calibration_progress
    (samples done) after each batch) and every layer's shift then reports the share of evaluation values
    outside the range seen there (calibration.py). A calibration set the golden model cannot run leaves a
    note; the rest of the profile stands.
    """
    if "torchscript" in (golden_fmt, compressed_fmt):
        return LayerProfile(layers=[], notes=[TORCHSCRIPT_NOTE])
    if memory_budget_mb <= 0:
        raise ValueError(f"memory_budget_mb must be positive, got {memory_budget_mb}")
    batches = iter(feeds_batches)
    first = next((feeds for feeds in batches if batch_size_of(feeds) > 0), None)
    if first is None:
        raise DatasetMismatchError("the dataset has no samples")
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kneeboard-layers-") as tmp:
        workdir = Path(tmp)
        golden = _open_side(golden_path, golden_fmt, workdir, "golden", intra_op_threads)
        compressed = _open_side(compressed_path, compressed_fmt, workdir, "compressed", intra_op_threads)
        fixed = golden.fixed_batch or compressed.fixed_batch
        rebatched = Rebatcher(chain([first], batches), fixed or 1)
        probe = Rebatcher([first], fixed or 1)
        for side in (golden, compressed):
            if isinstance(side, TorchSide):
                side.capture(next(iter(probe)), None)  # discovers the leaf-module calls
        notes.append(matching_note(golden, compressed))
        details: dict[str, MatchInfo] = {}
        pairs = match_layers(golden, compressed, name_map or {}, notes, details)
        local = _make_local(golden, compressed, pairs, workdir)
        _plan_qdq(compressed, pairs)
        _plan_shift(golden, compressed, pairs)
        _narrow(golden, compressed, pairs)
        n_calibration = None
        if calibration_batches is not None:
            n_calibration = plan_calibration(
                golden, pairs, calibration_batches, calibration_samples, memory_budget_mb, golden.fixed_batch,
                notes, on_calibration_progress,
            )  # fmt: skip
        with threadpool_limits(limits=1, user_api="blas"):  # numpy's dot products: see sample_sums
            n = _process(golden, compressed, pairs, local, rebatched, memory_budget_mb, on_progress)
    matched_g = {p.golden for p in pairs}
    matched_c = {p.compressed for p in pairs}
    layers = annotate(_finish(pairs, notes), details)
    unmatched_g = [name for name in golden.candidates if name not in matched_g]
    inner = {
        side.role: [n for n in side.candidates if n not in _outputs(side)] for side in (golden, compressed)
    }
    why_not = architecture_note(layers, inner["golden"], len(inner["compressed"]))
    return LayerProfile(
        likely_causes=likely_causes(layers, n_calibration),
        layers=layers,
        unmatched_golden=unmatched_g,
        unmatched_compressed=[name for name in compressed.candidates if name not in matched_c],
        notes=notes,
        not_applicable=why_not,
        n_samples=n,
        profile_batch_size=rebatched.size,
        calibration_samples=n_calibration,
    )
