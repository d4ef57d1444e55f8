"""Compression simulation: apply quantization, pruning, low-rank and noise configs to layers of a golden
model and run the result, without producing a deployable artifact.

Entry points:

* configs (`configs`): WeightQuant, ActivationQuant, FloatCast, Quantize, MagnitudePrune, ChannelPrune,
  NMSparsity, LowRank, NoiseInjection, Schedule; `config_from_dict` reads them back from JSON.
* `as_compressible(model)` / `open_compressible(path, fmt)`: a `CompressibleModel` handle over an
  nn.Module, a torch.export program, a TorchScript module, a `TorchRunner` from `loaders.load_model`,
  or an ONNX model. `compressed(handle, plan, calibration)` lends a `Runner` of the model compressed by
  a plan {layer name: config}; `compress_module` / `compress_layer` return a compressed deep copy of an
  nn.Module and `compress_onnx` a compressed ModelProto.
* `importance.channel_importance`, `mixed_precision.plan_mixed_precision`; the sensitivity scan lives
  in `worker.engine.sensitivity.scan`.

Why ONNX models are edited at graph level rather than converted to torch (onnx2torch): onnx2torch
1.5.15 (the current release) cannot even be imported here — its node_converters package imports
torchvision unconditionally (nms.py, roialign.py), and torchvision must not be installed beside our
pinned torch; installed with --no-deps, `import onnx2torch` fails with ModuleNotFoundError. It also has
no converter for LSTM / GRU / RNN, which the product must handle, and converting would make the
"compressed ONNX model" a different program (torch kernels, not onnxruntime) from the golden one it is
compared with. Editing the graph keeps both sides on onnxruntime, and every config maps onto it:
weights are numpy arrays (initializers, or constant sub-graphs folded once with onnx's reference
evaluator) that the same torch tensor code in `ops` transforms, so a torch model and its ONNX export
get the same compressed weights; activation fake-quant and fp16/bf16 casts are a few standard ops
inserted after a layer's outputs. What graph editing cannot do is differentiate: the first-order
Taylor channel importance is torch-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worker.engine.compression.configs import (
    ActivationQuant,
    ChannelPrune,
    CompressionConfigError,
    Config,
    FloatCast,
    LowRank,
    MagnitudePrune,
    NMSparsity,
    NoiseInjection,
    Quantize,
    Schedule,
    WeightQuant,
    config_from_dict,
    weight_bits,
)
from worker.engine.compression.layers import CompressionOutcome, LayerSpec
from worker.engine.compression.model import (
    Calibration,
    CompressibleModel,
    Feeds,
    UnknownLayerError,
    compressed,
    first_sample,
    resolve,
)
from worker.engine.errors import EngineError, ModelLoadError
from worker.engine.types import ModelFormat

if TYPE_CHECKING:
    import onnx
    from torch import nn

__all__ = [
    "ActivationQuant",
    "Calibration",
    "ChannelPrune",
    "CompressibleModel",
    "CompressionConfigError",
    "CompressionOutcome",
    "Config",
    "FloatCast",
    "LayerSpec",
    "LowRank",
    "MagnitudePrune",
    "NMSparsity",
    "NoiseInjection",
    "Quantize",
    "Schedule",
    "UnknownLayerError",
    "WeightQuant",
    "as_compressible",
    "compress_layer",
    "compress_module",
    "compress_onnx",
    "compressed",
    "config_from_dict",
    "open_compressible",
    "weight_bits",
]


def as_compressible(model: Any, *, input_names: list[str] | None = None) -> CompressibleModel:
    """A handle over `model`: a CompressibleModel (returned as is), an nn.Module (deep-copied), a
    torch.export.ExportedProgram, a TorchScript module, a TorchRunner from `loaders.load_model`,
    or an onnx.ModelProto. An OnnxRunner does not keep its model: use `open_compressible`."""
    import torch

    from worker.engine.compression.torch_backend import TorchCompressible
    from worker.engine.loaders import OnnxRunner, TorchRunner

    if isinstance(model, CompressibleModel):
        return model
    if isinstance(model, torch.export.ExportedProgram):
        return TorchCompressible.from_program(model)
    if isinstance(model, torch.jit.ScriptModule):
        return TorchCompressible.from_script(model)
    if isinstance(model, torch.nn.Module):
        return TorchCompressible.from_module(model, input_names)
    if isinstance(model, TorchRunner):
        return TorchCompressible.from_runner(model)
    if isinstance(model, OnnxRunner):
        raise EngineError("an OnnxRunner does not keep its model file; use open_compressible(path, 'onnx')")
    try:
        import onnx
    except ImportError:  # pragma: no cover - onnx is a worker dependency
        onnx = None  # type: ignore[assignment]
    if onnx is not None and isinstance(model, onnx.ModelProto):
        from worker.engine.compression.onnx_backend import OnnxCompressible

        return OnnxCompressible(model)
    raise EngineError(f"cannot compress a {type(model).__name__}; expected a torch or ONNX model")


def open_compressible(
    path: Path, fmt: ModelFormat, *, intra_op_threads: int | None = None
) -> CompressibleModel:
    """Load a model file of any `ModelFormat` as a handle (ModelLoadError when it cannot be read).
    `intra_op_threads` sizes onnxruntime's thread pool (ONNX) or torch's (process-wide, torch formats)."""
    import tempfile

    from worker.engine.compression.onnx_backend import OnnxCompressible
    from worker.engine.loaders import extract_onnx_zip, load_model

    path = Path(path)
    if fmt == "onnx":
        return OnnxCompressible.from_path(path, intra_op_threads=intra_op_threads)
    if fmt == "onnx_zip":
        with tempfile.TemporaryDirectory(prefix="kneeboard-compress-") as tmp:
            return OnnxCompressible.from_path(
                extract_onnx_zip(path, Path(tmp)), intra_op_threads=intra_op_threads
            )
    if fmt in ("torch_export", "torchscript"):
        return as_compressible(load_model(path, fmt, intra_op_threads=intra_op_threads))
    raise ModelLoadError(
        f"Unknown model format {fmt!r}; expected onnx, onnx_zip, torch_export or torchscript."
    )


def compress_module(
    module: nn.Module,
    plan: Mapping[str, Config],
    calibration_feeds: Feeds | None = None,
    batch_size: int = 64,
) -> tuple[nn.Module, CompressionOutcome]:
    """A compressed deep copy of `module`: weights written, output transforms attached as forward hooks
    (activation ranges calibrated on `calibration_feeds`, needed for activation configs and to learn
    layer outputs). The original module is not changed."""
    from worker.engine.compression.torch_backend import TorchCompressible

    handle = TorchCompressible.from_module(module)
    if calibration_feeds is not None:
        handle.prepare(first_sample(calibration_feeds))
    calibration = (
        Calibration(handle, calibration_feeds, batch_size) if calibration_feeds is not None else None
    )
    outcome, chains = resolve(handle, plan, calibration)
    handle.write(outcome.tensors)  # on the handle's own deep copy, which is returned
    handle.attach(chains)
    return handle.module, outcome


def compress_layer(
    module: nn.Module, layer: str, config: Config, calibration_feeds: Feeds | None = None
) -> tuple[nn.Module, CompressionOutcome]:
    """`compress_module` with one layer."""
    return compress_module(module, {layer: config}, calibration_feeds)


def compress_onnx(
    model: onnx.ModelProto,
    plan: Mapping[str, Config],
    calibration_feeds: Feeds | None = None,
    batch_size: int = 64,
) -> tuple[onnx.ModelProto, CompressionOutcome]:
    """A compressed copy of an ONNX model (simulated: fake-quant ops stay float32)."""
    from worker.engine.compression.onnx_backend import OnnxCompressible

    handle = OnnxCompressible(model)
    calibration = (
        Calibration(handle, calibration_feeds, batch_size) if calibration_feeds is not None else None
    )
    outcome, chains = resolve(handle, plan, calibration)
    return handle.build(outcome.tensors, chains), outcome
