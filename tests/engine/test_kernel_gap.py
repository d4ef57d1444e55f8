"""kernel_gaps: the profile's simulated SQNR at each model output against the real runtime's.

Expectations are computed here, independently: SQNRs with numpy from arrays the tests build, and for the
real case from onnxruntime sessions of the demo bundle's int8 model with graph optimizations disabled
(simulated quantization) and at their default (fused int8 kernels). The gap is whatever this machine's
onnxruntime shows: about 17 dB on x86-64 CPUs without VNNI, about 0 with VNNI.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from worker.demo.models import DemoBundle
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.layer_profile import LayerFidelity, LayerStats, profile_layers
from worker.engine.layer_profile.kernel_gap import (
    DEFAULT_NOISE_FLOOR_DB,
    DEFAULT_THRESHOLD_DB,
    KernelGap,
    cpu_vnni,
    kernel_gap_note,
    kernel_gaps,
)
from worker.engine.loaders import load_model


def numpy_sqnr(golden: np.ndarray, compressed: np.ndarray) -> float:
    g, c = np.asarray(golden, dtype=np.float64), np.asarray(compressed, dtype=np.float64)
    return float(10 * np.log10(np.sum(g**2) / np.sum((g - c) ** 2)))


def layer(name: str, sqnr_db: float, compressed_name: str | None = None) -> LayerFidelity:
    return LayerFidelity(
        name=name,
        compressed_name=compressed_name or name,
        op_type="Gemm",
        depth=0,
        depth_fraction=1.0,
        accumulated=LayerStats(sqnr_db, None, None),
        local=None,
    )


def metrics(sqnr_db: float, compressed_output: str, n: int = 10, n_finite: int = 10) -> dict[str, Any]:
    """An output's metrics as FidelityReport.outputs holds them (JSON: +inf flagged, NaN as None)."""
    return {
        "compressed_output": compressed_output,
        "sqnr_db": sqnr_db if math.isfinite(sqnr_db) else None,
        "sqnr_db_infinite": sqnr_db == math.inf,
        "n_samples": n,
        "n_finite": n_finite,
    }


def test_gap_is_simulated_minus_runtime_sqnr_of_arrays() -> None:
    rng = np.random.default_rng(0)
    golden = rng.normal(size=(64, 10))
    simulated = golden + rng.normal(scale=0.01, size=golden.shape)  # ~40 dB
    runtime = golden + rng.normal(scale=0.06, size=golden.shape)  # ~24 dB
    close = golden + rng.normal(scale=0.011, size=golden.shape)  # within 1 dB of simulated
    sim_db, rt_db, close_db = (numpy_sqnr(golden, x) for x in (simulated, runtime, close))

    gaps = kernel_gaps(
        [layer("hidden", 50.0), layer("logits", sim_db), layer("aux", sim_db)],
        {"logits": metrics(rt_db, "logits"), "aux": metrics(close_db, "aux")},
    )
    assert [g.output for g in gaps] == ["logits", "aux"]
    worse, fine = gaps
    assert worse.simulated_sqnr_db == pytest.approx(sim_db) and worse.runtime_sqnr_db == pytest.approx(rt_db)
    assert worse.gap_db == pytest.approx(sim_db - rt_db) and worse.gap_db > DEFAULT_THRESHOLD_DB
    assert worse.significant
    assert fine.gap_db == pytest.approx(sim_db - close_db) and abs(fine.gap_db) < DEFAULT_THRESHOLD_DB
    assert not fine.significant
    doc = worse.to_dict()
    assert doc == {
        "output": "logits",
        "compressed_output": "logits",
        "simulated_sqnr_db": pytest.approx(sim_db),
        "simulated_sqnr_db_infinite": False,
        "runtime_sqnr_db": pytest.approx(rt_db),
        "runtime_sqnr_db_infinite": False,
        "gap_db": pytest.approx(sim_db - rt_db),
        "significant": True,
        "threshold_db": DEFAULT_THRESHOLD_DB,
    }


def test_threshold_and_noise_floor() -> None:
    def gap(sim: float, rt: float, **kw: float) -> KernelGap:
        return kernel_gaps([layer("y", sim)], {"y": metrics(rt, "y")}, **kw)[0]

    assert not gap(40.0, 37.5).significant  # 2.5 dB: under the default 3 dB
    assert gap(40.0, 37.5, threshold_db=2.0).significant
    assert not gap(30.0, 40.0).significant  # the runtime is better than simulated
    # Two float models above the noise floor differ by rounding order, however large the gap in dB.
    assert gap(140.0, 90.0).gap_db == pytest.approx(50.0)
    assert not gap(140.0, 90.0).significant
    assert gap(140.0, DEFAULT_NOISE_FLOOR_DB - 1).significant


def test_infinite_and_undefined_sqnr() -> None:
    both_exact = kernel_gaps([layer("y", math.inf)], {"y": metrics(math.inf, "y")})[0]
    assert both_exact.gap_db == 0.0 and not both_exact.significant
    assert both_exact.to_dict()["simulated_sqnr_db_infinite"] and both_exact.to_dict()["gap_db"] == 0.0

    runtime_only = kernel_gaps([layer("y", math.inf)], {"y": metrics(30.0, "y")})[0]
    assert runtime_only.gap_db == math.inf and runtime_only.significant
    assert runtime_only.to_dict()["gap_db"] is None and runtime_only.to_dict()["simulated_sqnr_db"] is None
    assert "does not predict" in kernel_gap_note(runtime_only, 10)

    assert not kernel_gaps([layer("y", 40.0)], {"y": metrics(math.inf, "y")})[0].significant
    undefined = kernel_gaps([layer("y", math.nan)], {"y": metrics(20.0, "y")})[0]
    assert (
        math.isnan(undefined.gap_db) and not undefined.significant and undefined.to_dict()["gap_db"] is None
    )
    # Samples the runtime left out as non-finite: the two SQNRs are not over the same samples.
    partial = kernel_gaps([layer("y", 40.0)], {"y": metrics(20.0, "y", n=10, n_finite=9)})[0]
    assert math.isnan(partial.runtime_sqnr_db) and not partial.significant


def test_only_outputs_that_are_profiled_layers_on_both_sides() -> None:
    layers = [layer("a", 30.0), layer("b", 30.0, compressed_name="b_DequantizeLinear_Output")]
    runtime = {"a": metrics(10.0, "a"), "b": metrics(10.0, "b"), "c": metrics(10.0, "c")}
    assert [g.output for g in kernel_gaps(layers, runtime)] == ["a"]
    # Outputs matched by position: the layer must be the compressed model's output tensor.
    assert [
        g.compressed_output for g in kernel_gaps([layer("a", 30.0, "out")], {"a": metrics(5, "out")})
    ] == ["out"]
    assert kernel_gaps(layers, {}) == []


def test_cpu_vnni_from_cpuinfo_flags() -> None:
    assert cpu_vnni("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n") is False
    assert cpu_vnni("flags\t\t: sse2 avx2 avx512f avx512_vnni\n") is True
    assert cpu_vnni("flags\t\t: sse2 avx2 avx_vnni\n") is True
    assert cpu_vnni("Features\t: fp asimd asimddp\n") is None  # ARM
    assert cpu_vnni("") is None
    assert cpu_vnni() in (True, False, None)  # this machine's /proc/cpuinfo, whatever it holds


def test_note_says_what_the_gap_means_and_what_to_do() -> None:
    gap = kernel_gaps([layer("logits", 41.8)], {"logits": metrics(25.2, "logits")})[0]
    for vnni in (False, True, None):
        note = kernel_gap_note(gap, 360, vnni)
        assert "16.6 dB more than simulated quantization at output 'logits'" in note
        assert "25.2 dB" in note and "41.8 dB" in note and "360 samples" in note
        assert "reduce_range=True" in note and "U8U8" in note and "fuses ops differently" in note
    assert "no VNNI, so saturation is the likely cause" in kernel_gap_note(gap, 360, False)
    assert "has VNNI, so int8 saturation is unlikely" in kernel_gap_note(gap, 360, True)


# ---------------------------------------------------------------------------------------- real models


def ort_logits(path: Path, x: np.ndarray, optimize: bool) -> np.ndarray:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {session.get_inputs()[0].name: x})[0], dtype=np.float64)


def test_demo_int8_model_fused_kernels_against_simulated_quantization(digits_bundle: DemoBundle) -> None:
    """The demo bundle's QDQ int8 model: the profile (simulated) and the deployed runtime (default
    optimizations, as load_model runs it) on the same 200 samples, as the fidelity job pairs them."""
    x = np.load(digits_bundle.test_npz)["input"][:200]
    simulated_db = numpy_sqnr(
        ort_logits(digits_bundle.golden_onnx, x, optimize=False),
        ort_logits(digits_bundle.int8_onnx, x, optimize=False),
    )
    runtime_db = numpy_sqnr(
        ort_logits(digits_bundle.golden_onnx, x, optimize=True),
        ort_logits(digits_bundle.int8_onnx, x, optimize=True),
    )

    profile = profile_layers(
        digits_bundle.golden_onnx,
        "onnx",
        digits_bundle.int8_onnx,
        "onnx",
        ({"input": x[i : i + 64]} for i in range(0, len(x), 64)),
    )
    report = compare_models(
        load_model(digits_bundle.golden_onnx, "onnx"),
        load_model(digits_bundle.int8_onnx, "onnx"),
        {"input": x},
        None,
        FidelityParams(batch_size=64),
    )
    [gap] = kernel_gaps(profile.layers, report.outputs)
    assert gap.output == gap.compressed_output == "logits"
    assert gap.simulated_sqnr_db == pytest.approx(simulated_db, abs=0.01)
    assert gap.runtime_sqnr_db == pytest.approx(runtime_db, abs=0.01)
    assert gap.gap_db == pytest.approx(simulated_db - runtime_db, abs=0.02)
    assert gap.significant == (simulated_db - runtime_db > DEFAULT_THRESHOLD_DB)
    if gap.significant:
        assert f"{gap.gap_db:.1f} dB more than simulated quantization at output 'logits'" in kernel_gap_note(
            gap, profile.n_samples, cpu_vnni()
        )
