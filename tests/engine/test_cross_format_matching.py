"""A torch.export golden model against an int8 QDQ ONNX model made from it (the usual path: export with torch's
dynamo exporter, quantize with onnxruntime): the profile pairs each torch module call with the ONNX tensor of
the same call without a name map, and the paired values are those of the tensors (torch forward hooks and
onnxruntime with numpy here, code the profile does not call)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

from tests.engine.test_layer_matching import activations
from tests.support.digits_layer_profile import batches
from worker.demo.models import DemoBundle, DigitsSplit
from worker.engine.layer_profile import profile_layers
from worker.engine.layer_profile.cross_format import cross_format_targets, torch_call_outputs

DQ = "_DequantizeLinear_Output"


def test_module_calls_name_their_last_fx_node(digits_bundle: DemoBundle) -> None:
    """conv1 -> relu -> conv2 -> relu (second call) -> flatten -> fc, read from the program's graph here by
    op: each call's last fx node, and the ONNX export's tensors carry those names (but the renamed output)."""
    program = torch.export.load(str(digits_bundle.golden_pt2))
    ops = [n for n in program.graph.nodes if n.op == "call_function"]
    conv = [n.name for n in ops if "conv2d" in str(n.target)]
    relu = [n.name for n in ops if "relu" in str(n.target)]
    linear = [n.name for n in ops if "linear" in str(n.target)]
    calls = torch_call_outputs(program, {"conv1", "conv2", "relu", "fc"})
    assert calls == {"conv1": conv[0], "relu": relu[0], "conv2": conv[1], "relu#2": relu[1], "fc": linear[0]}
    model = onnx.load(str(digits_bundle.golden_onnx))
    tensors = {out for node in model.graph.node for out in node.output}
    assert {conv[0], relu[0], conv[1], relu[1]} <= tensors
    outputs = [value.name for value in model.graph.output]
    targets = cross_format_targets(calls, [linear[0]], tensors, outputs)
    assert targets == {
        "conv1": conv[0],
        "relu": relu[0],
        "conv2": conv[1],
        "relu#2": relu[1],
        "fc": outputs[0],
    }


def test_torch_golden_against_onnx_int8_matches_by_module_call(
    digits_bundle: DemoBundle, digits_split: DigitsSplit
) -> None:
    x = digits_split.x_test[:64]
    profile = profile_layers(
        digits_bundle.golden_pt2, "torch_export", digits_bundle.int8_onnx, "onnx", batches(x, 32)
    )
    rows = {layer.name: layer for layer in profile.layers}
    # onnxruntime's quantizer fused each Conv with its ReLU: the Conv outputs (pre-activation) are gone from
    # the int8 model, so conv1 and conv2 stay unmatched rather than paired with post-ReLU tensors.
    assert set(rows) == {"relu", "relu#2", "fc"}, (sorted(rows), profile.notes)
    assert {"conv1", "conv2"} <= set(profile.unmatched_golden)
    assert all(rows[name].match_method == "module" for name in rows)
    assert rows["relu"].compressed_name == "relu" + DQ and rows["relu#2"].compressed_name == "relu_1" + DQ
    assert not any("only be matched through a name mapping" in note for note in profile.notes)

    # Independent values: the golden module outputs from forward hooks on the program's unflattened
    # module, the compressed tensors from onnxruntime (optimizations off, as QDQ runs simulated).
    program = torch.export.load(str(digits_bundle.golden_pt2))
    module = torch.export.unflatten(program)
    seen: dict[str, list[np.ndarray]] = {}
    for name in ("fc", "relu"):
        sub = module.get_submodule(name)
        sub.register_forward_hook(
            lambda _m, _i, out, n=name: seen.setdefault(n, []).append(out.numpy().copy())
        )
    with torch.no_grad():
        module(torch.from_numpy(x))
    golden = {"relu": seen["relu"][0], "relu#2": seen["relu"][1], "fc": seen["fc"][0]}
    names = [rows[name].compressed_name for name in golden]
    compressed = activations(digits_bundle.int8_onnx, {"input": x}, names)
    for name, tensor in zip(golden, names, strict=True):
        g = golden[name].astype(np.float64)
        c = compressed[tensor].astype(np.float64)
        expected = 10 * np.log10(np.sum(g**2) / np.sum((g - c) ** 2))
        assert rows[name].accumulated.sqnr_db == pytest.approx(expected, abs=1e-3), name
