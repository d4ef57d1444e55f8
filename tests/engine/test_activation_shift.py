"""Activation-shift diagnostics of the per-layer profile on the real digits CNN: fp32 against its int8 QDQ
quantization, a 3-bit-weight copy of it and a copy whose conv1 activation quantizer has a 4x too narrow
range. Ranges, histograms, clipping and dead units are recomputed with plain numpy from activations that
the test captures itself (onnxruntime, graph optimizations off, the tensors added as graph outputs with
onnx.helper) and must agree exactly; the likely causes must name the damaged layer."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from worker.demo.models import DigitsCNN, DigitsSplit, export_onnx, quantize_onnx_int8
from worker.engine.layer_profile import LayerProfile, profile_layers
from worker.engine.layer_profile.shift import HISTOGRAM_BINS, HISTOGRAM_SAMPLE, RELU_FAMILY

INT8_RANGES = {"uint8": (0, 255), "int8": (-128, 127)}


@dataclass(frozen=True)
class Models:
    golden: Path
    int8: Path
    three_bit: Path
    clipped: Path


def _initializers(model: onnx.ModelProto) -> dict[str, onnx.TensorProto]:
    return {init.name: init for init in model.graph.initializer}


def three_bit_weights(src: Path, dst: Path) -> Path:
    """The int8 QDQ model with every int8 weight moved to a 3-bit grid (8 levels, step 32)."""
    model = onnx.load(str(src))
    inits = _initializers(model)
    for node in model.graph.node:
        if node.op_type == "DequantizeLinear" and node.input[0] in inits:
            weight = numpy_helper.to_array(inits[node.input[0]])
            if weight.dtype == np.int8 and weight.size > 16:
                coarse = (np.clip(np.round(weight / 32.0), -4, 3) * 32).astype(np.int8)
                inits[node.input[0]].CopyFrom(numpy_helper.from_array(coarse, node.input[0]))
    onnx.save(model, str(dst))
    return dst


def narrow_quantizer(src: Path, dst: Path, tensor: str, factor: float) -> Path:
    """The int8 QDQ model with the quantizer that re-quantizes `tensor` given a `factor` x smaller scale
    (its range shrinks by that factor, the same scale in its QuantizeLinear and DequantizeLinear)."""
    model = onnx.load(str(src))
    inits = _initializers(model)
    quantize = next(n for n in model.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == tensor)
    scale = numpy_helper.to_array(inits[quantize.input[1]])
    inits[quantize.input[1]].CopyFrom(
        numpy_helper.from_array((scale / factor).astype(scale.dtype), quantize.input[1])
    )
    onnx.save(model, str(dst))
    return dst


@pytest.fixture(scope="module")
def models(
    digits_cnn: DigitsCNN, digits_split: DigitsSplit, tmp_path_factory: pytest.TempPathFactory
) -> Models:
    folder = tmp_path_factory.mktemp("activation_shift")
    golden = export_onnx(digits_cnn, digits_split.x_test[:2], folder / "golden.onnx")
    int8 = quantize_onnx_int8(golden, folder / "int8.onnx", digits_split.x_train[:512])
    return Models(
        golden,
        int8,
        three_bit_weights(int8, folder / "w3.onnx"),
        narrow_quantizer(int8, folder / "clipped.onnx", "relu", 4.0),
    )


def capture(path: Path, names: list[str], batches: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The named tensors over all batches, from onnxruntime with graph optimizations off (the tensors
    added as graph outputs), concatenated on axis 0."""
    import onnxruntime as ort

    model = onnx.load(str(path))
    existing = {out.name for out in model.graph.output}
    model.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in names if n not in existing)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    wanted = [n for n in names if n != "input"]
    runs = [dict(zip(wanted, session.run(wanted, {"input": x}), strict=True)) | {"input": x} for x in batches]
    return {name: np.concatenate([run[name] for run in runs]) for name in names}


def quantizer_bounds(path: Path, dequantized: str) -> tuple[float, float, float, float] | None:
    """The representable range of the QuantizeLinear feeding the DequantizeLinear that outputs `dequantized`
    (per-tensor activations: scalar scale and zero point), in float64, and the thresholds beyond which a value
    saturates (half a step outside)."""
    model = onnx.load(str(path))
    producers = {out: node for node in model.graph.node for out in node.output}
    dq = producers.get(dequantized)
    if dq is None or dq.op_type != "DequantizeLinear":
        return None
    q = producers[dq.input[0]]
    inits = _initializers(model)
    scale = float(numpy_helper.to_array(inits[q.input[1]]))
    zero_point = numpy_helper.to_array(inits[q.input[2]])
    qmin, qmax = INT8_RANGES[str(zero_point.dtype)]
    zp = float(zero_point)
    return (qmin - zp) * scale, (qmax - zp) * scale, (qmin - zp - 0.5) * scale, (qmax - zp + 0.5) * scale


def split_like_profile(x: np.ndarray, profile: LayerProfile) -> list[np.ndarray]:
    """The profile's own batches (a one-sample probe, then profile_batch_size): same batches, same bits."""
    size = profile.profile_batch_size
    return [x[:1]] + [x[i : i + size] for i in range(1, len(x), size)]


def sampled(values: np.ndarray, batches: list[np.ndarray]) -> np.ndarray:
    """What the histogram counts: of each batch's values (flattened), every ceil(size / HISTOGRAM_SAMPLE)-th."""
    parts, start = [], 0
    for batch in batches:
        part = values[start : start + len(batch)].reshape(-1)
        parts.append(part[:: max(1, math.ceil(part.size / HISTOGRAM_SAMPLE))])
        start += len(batch)
    return np.concatenate(parts)


def one_batch(x: np.ndarray) -> Iterator[dict[str, np.ndarray]]:
    yield {"input": x}


def golden_clamp(path: Path, tensor: str) -> tuple[float, float]:
    """The clamp the golden node producing `tensor` applies itself: Relu [0, inf), Clip [min, max]."""
    model = onnx.load(str(path))
    node = next((n for n in model.graph.node if tensor in n.output), None)
    if node is None or node.op_type not in ("Relu", "Clip"):
        return -math.inf, math.inf
    if node.op_type == "Relu":
        return 0.0, math.inf
    tensors = {i.name: i for i in model.graph.initializer}
    tensors |= {c.output[0]: c.attribute[0].t for c in model.graph.node if c.op_type == "Constant"}

    def bound(i: int, default: float) -> float:
        return (
            float(numpy_helper.to_array(tensors[node.input[i]]))
            if len(node.input) > i and node.input[i]
            else default
        )

    return bound(1, -math.inf), bound(2, math.inf)


def check_against_numpy(
    golden: Path, compressed: Path, x: np.ndarray, min_clipping: int = 3, dead_layers: int | None = 2
) -> LayerProfile:
    """Profile golden vs compressed and check every layer's shift against numpy on independent captures."""
    profile = profile_layers(golden, "onnx", compressed, "onnx", one_batch(x))
    assert profile.layers, profile.notes
    batches = split_like_profile(x, profile)
    g_acts = capture(golden, [layer.name for layer in profile.layers], batches)
    c_names = [layer.compressed_name for layer in profile.layers]
    c_names += [layer.qdq_input for layer in profile.layers if layer.qdq_input is not None]
    c_acts = capture(compressed, sorted(set(c_names)), batches)
    clipping_checked = dead_checked = 0
    for layer in profile.layers:
        shift = layer.shift
        assert shift is not None, layer.name
        g, c = g_acts[layer.name], c_acts[layer.compressed_name]
        assert shift.n_values == g.size
        assert (shift.golden_min, shift.golden_max) == (float(g.min()), float(g.max()))
        assert (shift.compressed_min, shift.compressed_max) == (float(c.min()), float(c.max()))

        hist = shift.histogram
        assert hist is not None
        first = g[:1]  # the profile's first batch: one sample
        assert (hist.lower, hist.upper) == (float(first.min()), float(first.max()))
        for values, counts, below, above in (
            (g, hist.golden, hist.golden_below, hist.golden_above),
            (c, hist.compressed, hist.compressed_below, hist.compressed_above),
        ):
            counted = sampled(values, batches)
            expected, _ = np.histogram(counted, bins=HISTOGRAM_BINS, range=(hist.lower, hist.upper))
            assert counts == expected.tolist(), layer.name
            assert (below, above) == (int((counted < hist.lower).sum()), int((counted > hist.upper).sum()))
            assert sum(counts) + below + above == counted.size == hist.n_counted

        bounds = quantizer_bounds(compressed, layer.compressed_name)
        if bounds is None:
            assert shift.clip_rate is None
        else:
            low, high, saturates_below, saturates_above = bounds
            # the side the golden layer clamps by itself (Relu, ReLU6 Clip) is not clipping
            act_min, act_max = golden_clamp(golden, layer.name)
            count_below, count_above = act_min < saturates_below, act_max > saturates_above
            assert layer.qdq_input is not None

            clipped, outside = (
                (int((v > saturates_above).sum()) if count_above else 0)
                + (int((v < saturates_below).sum()) if count_below else 0)
                for v in (c_acts[layer.qdq_input].astype(np.float64), g.astype(np.float64))
            )
            q_in = c_acts[layer.qdq_input]
            assert shift.clip_rate == clipped / q_in.size, layer.name
            assert shift.golden_outside_rate == outside / g.size, layer.name
            assert (shift.quantizer_min, shift.quantizer_max) == (low, high)
            clipping_checked += 1

        if layer.op_type in RELU_FAMILY:
            positive = g > 0
            assert shift.golden_positive == int(positive.sum())
            assert shift.dead_unit_rate == int((positive & (c == 0)).sum()) / int(positive.sum())
            axes = (0, *range(2, g.ndim))
            fires = positive.any(axis=axes)
            assert shift.active_channels == int(fires.sum())
            assert shift.dead_channels == int((fires & ~(c != 0).any(axis=axes)).sum())
            dead_checked += 1
        else:
            assert shift.dead_unit_rate is None

        # error amplification: the accumulated error power (numpy) over the local one (its SQNR)
        if layer.local is not None and math.isfinite(layer.local.sqnr_db):
            g64 = g.astype(np.float64)
            local_error = float(np.sum(g64**2)) / 10 ** (layer.local.sqnr_db / 10)
            accumulated_error = float(np.sum((g64 - c.astype(np.float64)) ** 2))
            assert shift.error_amplification == pytest.approx(accumulated_error / local_error, rel=1e-9)
    assert clipping_checked >= min_clipping and dead_checked == (dead_layers or dead_checked)
    return profile


def test_int8_shift_matches_numpy(models: Models, digits_split: DigitsSplit) -> None:
    profile = check_against_numpy(models.golden, models.int8, digits_split.x_test)
    doc = json.loads(json.dumps(profile.to_dict(), allow_nan=False))
    assert set(doc["layers"][0]["shift"]) >= {
        "histogram",
        "clip_rate",
        "dead_unit_rate",
        "error_amplification",
    }
    assert all(layer["shift"]["calibration_outside_rate"] is None for layer in doc["layers"])
    clipping = {c.layer for c in profile.likely_causes if c.kind == "clipping"}
    assert "relu" not in clipping, "the calibrated int8 conv1 quantizer should not clip"


def test_three_bit_weights_shift_matches_numpy(models: Models, digits_split: DigitsSplit) -> None:
    int8 = profile_layers(models.golden, "onnx", models.int8, "onnx", one_batch(digits_split.x_test))
    profile = check_against_numpy(models.golden, models.three_bit, digits_split.x_test)
    dead = {layer.name: layer.shift.dead_unit_rate for layer in profile.layers if layer.shift is not None}
    dead8 = {layer.name: layer.shift.dead_unit_rate for layer in int8.layers if layer.shift is not None}
    assert dead["relu_1"] is not None and dead8["relu_1"] is not None
    assert dead["relu_1"] > dead8["relu_1"], "coarser weights should zero more golden-positive units"
    assert profile.likely_causes, "3-bit weights should cross some threshold"
    for cause in profile.likely_causes:
        assert cause.score >= 1 and cause.layer in {layer.name for layer in profile.layers}
    assert [c.score for c in profile.likely_causes] == sorted(
        (c.score for c in profile.likely_causes), reverse=True
    )


def test_causes_name_the_clipped_layer(models: Models, digits_split: DigitsSplit) -> None:
    profile = check_against_numpy(models.golden, models.clipped, digits_split.x_test)
    top = profile.likely_causes[0]
    assert (top.kind, top.layer) == ("clipping", "relu")
    relu = next(layer for layer in profile.layers if layer.name == "relu")
    assert relu.shift is not None and top.value == relu.shift.clip_rate
    assert top.value > 0.01 and f"{100 * top.value:.1f} %" in top.message
    assert top.label in top.message and top.numbers["clip_rate"] == top.value


def test_error_growth_is_the_carried_error_over_the_previous_layer() -> None:
    """A layer that receives an error at 40 dB and, adding little itself (local 40 dB), leaves 20 dB has
    grown it (0.01 − 0.0001) / 0.0001 = 99x; one whose error is its own is not named."""
    from worker.engine.layer_profile.causes import likely_causes
    from worker.engine.layer_profile.results import LayerFidelity, LayerStats

    def layer(name: str, depth: int, accumulated: float, local: float) -> LayerFidelity:
        stats = LayerStats(accumulated, None, None)
        return LayerFidelity(name, name, "Conv", depth, depth / 2, stats, LayerStats(local, None, None))

    layers = [layer("a", 0, 40.0, 40.0), layer("b", 1, 20.0, 40.0), layer("c", 2, 10.0, 10.5)]
    causes = likely_causes(layers)
    growth = [c for c in causes if c.kind == "error_growth"]
    assert [(c.layer, c.to_layer) for c in growth] == [("a", "b")]
    assert growth[0].value == pytest.approx((0.01 - 0.0001) / 0.0001, rel=1e-12)
    assert "99.0x" in growth[0].message
    local = {c.layer for c in causes if c.kind == "local_error"}
    assert local == {"c"}  # 10.5 dB alone is below 20 dB; a and b add 40 dB


def test_saturation_leaves_out_the_layers_own_clamp_and_is_exact_at_the_thresholds() -> None:
    """A uint8 quantizer over [0, 6] (ReLU6's range): values above 6 + half a step saturate unless the golden
    layer is a Clip at 6 (onnxruntime's quantizer dropped it: the clamp is the activation's); float32 values
    one ulp either side of the float64 threshold are counted as float64 would."""
    from worker.engine.layer_profile.shift import QuantizerRange

    scale = np.float64(np.float32(6 / 255))
    zero = np.float64(0)
    q = QuantizerRange(np.float64(0) * scale, 255 * scale, scale, zero, 0, 255, None)
    threshold = (255 - zero + 0.5) * scale
    near = np.float32(threshold)
    edge = np.array(
        [np.nextafter(near, np.float32(-1)), near, np.nextafter(near, np.float32(10))], np.float32
    )
    values = np.concatenate([edge, np.array([-1.0, 0.0, 3.0, 7.0, 9.0], np.float32)])
    expected_above = int((values.astype(np.float64) > threshold).sum())
    expected_below = int((values.astype(np.float64) < -0.5 * scale).sum())
    assert q.outside(values) == expected_above + expected_below
    assert q.outside(values, 0.0, np.inf) == expected_above  # Relu: the low side is its own
    assert q.outside(values, 0.0, 6.0) == 0  # ReLU6 at the quantizer's range: nothing is clipping
    assert q.outside(values.astype(np.float64), 0.0, np.inf) == expected_above
