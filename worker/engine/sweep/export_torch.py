"""Export of a torch golden model compressed by a plan: the module is compressed in torch
(`compress_module`'s way: compressed weights written into a private copy, output transforms as forward
hooks) and that module is exported with torch.onnx.export (dynamo, falling back to the TorchScript
exporter, as `exporters.export_onnx`; one input, one output).

Exporting the compressed module, not compressing an export of the golden one, matters: the exporter
folds batch norms into the preceding convolutions, so the ONNX graph's weights are not the weights the
simulation quantized (`export_onnx.int8_weights` leaves such weights in float and says so)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from worker.engine.compression import Calibration, CompressibleModel, Config
from worker.engine.compression.model import Feeds, resolve
from worker.engine.errors import EngineError
from worker.engine.fidelity.compare import bind_inputs
from worker.engine.sweep.export_common import Builder

if TYPE_CHECKING:
    import onnx


def torch_builder(golden: CompressibleModel, calibration: Calibration | None, feeds: Feeds) -> Builder:
    """How to build the simulated ONNX graph of a plan for a torch golden model (one input, one
    output; others raise EngineError: export them to ONNX yourself and sweep the ONNX file)."""
    module = getattr(golden, "module", None)
    if golden.backend != "torch" or not isinstance(module, torch.nn.Module):
        raise EngineError(f"cannot export a {golden.backend} model to ONNX; export it yourself")
    if len(golden.inputs) != 1 or len(golden.outputs) > 1:
        raise EngineError(
            "exporting a torch model here supports one input and one output; "
            "export the model to ONNX yourself and sweep the ONNX file"
        )
    sample = np.asarray(next(iter(bind_inputs(feeds, golden.inputs).values())))[:2]
    input_name = golden.inputs[0].name
    output_name = golden.outputs[0].name if golden.outputs else "output"

    def build_torch(plan: Mapping[str, Config]) -> onnx.ModelProto:
        import onnx

        from worker.engine.formats.exporters import export_onnx
        from worker.engine.sweep.torch_copy import materialize, plain_module, private_copy

        outcome, chains = resolve(golden, plan, calibration)
        # a .pt2 golden model is an unflattened module: neither deep-copyable nor exportable as it is
        work = private_copy(module)
        materialize(work)
        work = plain_module(work)
        params = dict(work.named_parameters(remove_duplicate=False))
        with torch.no_grad():
            for key, value in outcome.tensors.items():
                params[key].copy_(value.to(params[key].dtype))
        for layer, per_key in chains.items():
            submodule = work.get_submodule(layer)
            submodule.register_forward_hook(_ExportableChains(per_key))
        with tempfile.TemporaryDirectory(prefix="kneeboard-sweep-") as tmp:
            try:
                path = export_onnx(work, sample, Path(tmp) / "model.onnx", input_name, output_name)
                return onnx.load(str(path))
            except Exception as exc:  # exporter failures share no base class
                raise EngineError(f"torch.onnx.export failed for this model: {exc}") from exc

    return build_torch


class _ExportableChains:
    """A forward hook applying a layer's output transforms (`layers.output_transforms`) with plain
    arithmetic the ONNX exporters translate: torch's fake-quant formula
    (clamp(round(x · (1/scale)) + zero, 0, qmax) − zero) · scale, the same op sequence the ONNX backend
    inserts (torch.fake_quantize_* itself cannot be traced by torch.export), and fp16 / bf16 casts."""

    def __init__(self, per_key: Mapping[str, list[tuple[str, Any]]]) -> None:
        self.per_key = dict(per_key)

    def __call__(self, _module: Any, _args: Any, output: Any) -> Any:
        from torch.utils import _pytree

        flat, spec = _pytree.tree_flatten(output)
        for key, chain in self.per_key.items():
            flat[int(key)] = self._apply(flat[int(key)], chain)
        return _pytree.tree_unflatten(flat, spec)

    @staticmethod
    def _apply(x: torch.Tensor, chain: list[tuple[str, Any]]) -> torch.Tensor:
        if not x.is_floating_point():
            return x
        for kind, value in chain:
            if kind == "cast":
                x = x.to(torch.float16 if value == "fp16" else torch.bfloat16).to(torch.float32)
                continue
            scale = torch.tensor(value.scale, dtype=torch.float32)
            inv = torch.tensor(1.0, dtype=torch.float32) / scale
            zero = torch.tensor(float(value.zero_point), dtype=torch.float32)
            q = torch.clamp(torch.round(x * inv) + zero, 0.0, float(value.qmax))
            x = (q - zero) * scale
        return x
