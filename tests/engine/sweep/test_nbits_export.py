"""Group-wise int4 on onnxruntime's real MatMulNBits kernels (issues 31 and 33): a sweep point
WeightQuant(4, group_size=32) of a small MLP / transformer-ish stack exports a MatMulNBits file that is smaller
than the int8 export, whose weights are those of an independent numpy RTN quantizer written here from ORT's
documented convention, whose outputs are x @ those weights, and whose KL to the golden model is close to the
simulation's; a Conv-only CNN says it has nothing to pack; bad block sizes fail at config validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from backend.compression_contracts import WeightQuantIn
from tests.support.sweep_exports import export_of, initializers, run_onnx
from worker.demo.models import export_onnx
from worker.engine.compression import WeightQuant, as_compressible, open_compressible
from worker.engine.compression.configs import CompressionConfigError, config_from_dict
from worker.engine.errors import EngineError
from worker.engine.sweep import evaluate_point, export_point
from worker.engine.sweep.export_nbits import NothingToQuantize, gemm_to_matmul, matmul_nbits

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _rtn_reference(w: np.ndarray, block: int, bits: int = 4) -> np.ndarray:
    """Symmetric blockwise round-to-nearest as onnxruntime documents it (MLAS `range2scale`, the
    quantizer's numpy twin `quant_slice_symmetric`): for each output column n and each run of `block`
    consecutive weights along K, the value of largest magnitude v (with its sign) maps to -2^(b-1):
    scale = v / -2^(b-1), q = clip(round(w / scale), -2^(b-1), 2^(b-1) - 1), dequantized q * scale.
    Written loop by loop in float64 (rounding half to even, as the kernels' nearbyint does)."""
    k, n = w.shape
    half = 2 ** (bits - 1)
    out = np.empty((k, n), dtype=np.float64)
    for col in range(n):
        for start in range(0, k, block):
            g = w[start : start + block, col].astype(np.float64)
            v = g[np.argmax(np.abs(g))]
            scale = np.float64(np.float32(v / -half))  # the scale is stored in float32
            q = np.zeros_like(g) if scale == 0 else np.clip(np.round(g / scale), -half, half - 1)
            out[start : start + block, col] = q * scale
    return out


def _unpack_int4(blob: np.ndarray, scales: np.ndarray, k: int, block: int) -> np.ndarray:
    """MatMulNBits' B input [N, K/block, block/2] (low nibble first), zero point 8 when none is given, and
    scales [N, K/block]: the dequantized [K, N] weight (the operator's documented layout)."""
    n = blob.shape[0]
    low, high = blob & 0x0F, blob >> 4
    q = np.stack([low, high], axis=-1).reshape(n, -1, block).astype(np.float64) - 8
    w = q * scales.reshape(n, -1, 1).astype(np.float64)
    return w.reshape(n, -1)[:, :k].T


def _matmul_graph(w: np.ndarray) -> onnx.ModelProto:
    k, n = w.shape
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, k])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, n])
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")],
        "g",
        [x],
        [y],
        [numpy_helper.from_array(w, "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_packed_weights_and_outputs_equal_a_numpy_rtn_reference(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((96, 40)).astype(np.float32)
    w[:8] *= 10  # an outlier run in the first block of every column, so blocks get different scales
    path = tmp_path / "proj.onnx"
    quantization = matmul_nbits(_matmul_graph(w), path, WeightQuant(4, group_size=32), [])
    assert quantization["weights"] == ["proj"] and quantization["left_float"] == []
    model = onnx.load(str(path))
    assert [n.op_type for n in model.graph.node] == ["MatMulNBits"]
    inits = initializers(path)
    blob, scales = inits["w_Q4"], inits["w_scales"]
    assert blob.dtype == np.uint8 and blob.shape == (40, 3, 16)  # N x K/32 blocks x 32 nibbles
    assert "w_zero_points" not in inits  # symmetric: the operator's default zero point 8
    want = _rtn_reference(w, 32)
    got = _unpack_int4(blob, scales, 96, 32)
    assert np.array_equal(got, want)  # every packed integer and scale as the reference
    assert np.abs(want - w).max() > 0  # it did quantize
    x = rng.standard_normal((16, 96)).astype(np.float32)
    out = run_onnx(path, x).astype(np.float64)
    ref = x.astype(np.float64) @ want
    assert np.abs(out - ref).max() <= 1e-4 * np.abs(ref).max()  # float32 accumulation only


def test_gemm_is_rewritten_as_the_same_matmul() -> None:
    rng = np.random.default_rng(1)
    b, c = rng.standard_normal((8, 32)).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8])
    node = helper.make_node("Gemm", ["x", "b", "c"], ["y"], transB=1, beta=0.5)
    inits = [numpy_helper.from_array(b, "b"), numpy_helper.from_array(c, "c")]
    model = helper.make_model(
        helper.make_graph([node], "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 17)]
    )
    data = rng.standard_normal((4, 32)).astype(np.float32)
    before = data @ b.T + 0.5 * c
    assert gemm_to_matmul(model) == ["gemm_0"]
    assert [n.op_type for n in model.graph.node] == ["MatMul", "Add"]
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert np.allclose(session.run(None, {"x": data})[0], before, atol=1e-5)


class _Block(torch.nn.Module):
    """Transformer-ish: a pre-norm MLP block with a residual, then a classifier head."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(64)
        self.up = torch.nn.Linear(64, 256)
        self.down = torch.nn.Linear(256, 64)
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))
        return self.head(x)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def test_a_sweep_point_runs_on_matmulnbits_and_stays_close_to_its_simulation(tmp_path: Path) -> None:
    torch.manual_seed(0)
    net = _Block().eval()
    x = np.random.default_rng(2).standard_normal((256, 64)).astype(np.float32)
    golden = as_compressible(net)
    int4 = evaluate_point(golden, {"x": x}, None, WeightQuant(4, group_size=32), export_dir=tmp_path / "4")
    int8 = evaluate_point(golden, {"x": x}, None, WeightQuant(8), export_dir=tmp_path / "8")
    assert int4.runtime["real_export"] == "real-matmulnbits" and int4.runtime["executable"]
    export = export_of(int4, "real-matmulnbits")
    path = tmp_path / "4" / export["file"]
    ops = [n.op_type for n in onnx.load(str(path)).graph.node]
    assert ops.count("MatMulNBits") == 3 and "Gemm" not in ops and "MatMul" not in ops
    assert export["quantization"]["left_float"] == [] and export["matches_simulation"] is False
    int8_file = tmp_path / "8" / export_of(int8, "real-int8-weights")["file"]
    assert path.stat().st_size < 0.7 * int8_file.stat().st_size  # 4.5 bits a weight against 8
    # KL of the real file against the golden model, with numpy; the simulation's own KL is close
    golden_logits = net(torch.from_numpy(x)).detach().numpy()
    lp, lq = _log_softmax(golden_logits), _log_softmax(run_onnx(path, x))
    kl_real = float(np.mean(np.sum(np.exp(lp) * (lp - lq), axis=1)))
    assert abs(kl_real - export["metrics"]["measured"]["kl_mean"]) <= 1e-6 * max(kl_real, 1e-9) + 1e-9
    kl_sim = int4.fidelity["kl_mean"]
    assert kl_real > 0 and kl_sim > 0
    assert 0.5 <= kl_real / kl_sim <= 2.0, (kl_real, kl_sim)  # ORT's [-8, 7] grid vs the simulation's [-7, 7]


def test_an_onnx_golden_model_asymmetric_groups_reproduce_the_simulation(tmp_path: Path) -> None:
    """Asymmetric blocks use the simulation's grid ([min(w, 0), max(w, 0)] over 15 steps, an integer zero
    point), so ORT's file gives the simulated KL; symmetric ones differ by the grid ([-8, 7] against [-7, 7])."""
    torch.manual_seed(0)
    net = _Block().eval()
    x = np.random.default_rng(2).standard_normal((256, 64)).astype(np.float32)
    golden = open_compressible(export_onnx(net, x[:2], tmp_path / "block.onnx"), "onnx")
    feeds = {golden.inputs[0].name: x}
    kl = {}
    for symmetric in (True, False):
        point = evaluate_point(
            golden,
            feeds,
            None,
            WeightQuant(4, symmetric, group_size=32),
            export_dir=tmp_path / str(symmetric),
        )
        export = export_of(point, "real-matmulnbits")
        assert len(export["quantization"]["weights"]) == 3 and export["quantization"]["left_float"] == []
        kl[symmetric] = (point.fidelity["kl_mean"], export["metrics"]["measured"]["kl_mean"])
    simulated, real = kl[False]
    assert abs(real - simulated) <= 1e-6 * simulated  # measured: equal to 16 digits
    simulated, real = kl[True]
    assert abs(real - simulated) > 1e-3 * simulated and 0.5 <= real / simulated <= 2.0


def test_a_conv_only_model_has_nothing_to_pack_and_falls_back_to_the_float_file(tmp_path: Path) -> None:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU(), torch.nn.Conv2d(16, 4, 3)).eval()
    x = np.random.default_rng(3).standard_normal((8, 3, 10, 10)).astype(np.float32)
    golden = as_compressible(net)
    point = evaluate_point(golden, {"x": x}, None, WeightQuant(4, group_size=16), export_dir=tmp_path)
    assert [e["kind"] for e in point.exports] == ["simulated-float"]
    assert point.runtime["real_export"] == "simulated-float" and point.runtime["executable"]
    assert "no MatMul/Gemm layers to quantize" in point.runtime["runtime_note"]
    assert any("no MatMul/Gemm layers to quantize" in note for note in point.notes)
    with pytest.raises(NothingToQuantize, match=r"no MatMul/Gemm layers to quantize.*Conv"):
        export_point(golden, WeightQuant(4, group_size=16), tmp_path, kind="real", eval_feeds={"x": x})


@pytest.mark.parametrize("size", [8, 24, 48, 100])
def test_a_block_size_matmulnbits_cannot_take_fails_at_validation(size: int) -> None:
    with pytest.raises(CompressionConfigError, match="group_size must be"):
        WeightQuant(4, group_size=size)
    with pytest.raises(CompressionConfigError, match="group_size"):
        config_from_dict({"type": "weight_quant", "bits": 4, "group_size": size})
    with pytest.raises(ValueError, match="group_size"):
        WeightQuantIn(bits=4, group_size=size)
    assert WeightQuant(4, group_size=128).group_size == 128


def test_embedding_tables_pack_only_when_asked_and_shape_gathers_never(tmp_path: Path) -> None:
    """Gather(table, ids) → MatMul, plus a Gather of a constant int64 shape vector: with embeddings=True the
    table becomes GatherBlockQuantized (rows in blocks of 32, the reference's symmetric RTN along each row),
    the shape Gather stays untouched; without it the table is listed as left float."""
    rng = np.random.default_rng(6)
    table = rng.standard_normal((50, 64)).astype(np.float32)
    w = rng.standard_normal((64, 8)).astype(np.float32)
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [None])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8])
    n = helper.make_tensor_value_info("n", TensorProto.INT64, [])
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["e"], name="embed"),
        helper.make_node("MatMul", ["e", "w"], ["y"], name="proj"),
        helper.make_node("Gather", ["shape", "zero"], ["n"], name="dim"),
    ]
    inits = [
        numpy_helper.from_array(table, "table"),
        numpy_helper.from_array(w, "w"),
        numpy_helper.from_array(np.array([7, 9], dtype=np.int64), "shape"),
        numpy_helper.from_array(np.array(1, dtype=np.int64), "zero"),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "g", [ids], [y, n], inits), opset_imports=[helper.make_opsetid("", 17)]
    )
    plain = matmul_nbits(model, tmp_path / "p.onnx", WeightQuant(4, group_size=32), [])
    assert plain["embeddings"] == [] and plain["left_float"] == [
        "embed (Gather): an embedding table; packed only with embeddings=True"
    ]
    packed = matmul_nbits(model, tmp_path / "e.onnx", WeightQuant(4, group_size=32), [], embeddings=True)
    assert packed["embeddings"] == ["embed"] and packed["weights"] == ["proj"] and packed["left_float"] == []
    ops = [node.op_type for node in onnx.load(str(tmp_path / "e.onnx")).graph.node]
    assert ops == ["GatherBlockQuantized", "MatMulNBits", "Gather"]
    import onnxruntime as ort

    session = ort.InferenceSession(str(tmp_path / "e.onnx"), providers=["CPUExecutionProvider"])
    chosen = np.array([3, 0, 49], dtype=np.int64)
    out, count = session.run(None, {"ids": chosen})
    rows = _rtn_reference(table.T, 32).T[chosen]  # blocks along each row: the reference on the transpose
    want = rows @ _rtn_reference(w, 32)
    assert int(count) == 9 and np.abs(out - want).max() <= 1e-4 * np.abs(want).max()


def test_hqq_packs_too_and_other_widths_say_why(tmp_path: Path) -> None:
    w = np.random.default_rng(4).standard_normal((64, 16)).astype(np.float32)
    notes: list[str] = []
    quantization = matmul_nbits(
        _matmul_graph(w), tmp_path / "h.onnx", WeightQuant(4, group_size=32), notes, algorithm="hqq"
    )
    assert quantization["algorithm"].startswith("HQQ") and quantization["weights"] == ["proj"]
    x = np.random.default_rng(5).standard_normal((4, 64)).astype(np.float32)
    err = np.abs(run_onnx(tmp_path / "h.onnx", x) - x @ w).max()
    assert 0 < err < 0.5 * np.abs(x @ w).max()
    with pytest.raises(EngineError, match="4 or 8 bits"):
        matmul_nbits(_matmul_graph(w), tmp_path / "b.onnx", WeightQuant(3, group_size=32), [])
