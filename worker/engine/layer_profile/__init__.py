"""Per-layer fidelity profile: where in the network a compressed model starts to diverge from its golden one.

Both models run on the same samples, in the profile's own batches (batching.py: sized from a memory
budget by a one-sample probe, independent of the caller's batches); the intermediate activations of each
batch are captured, matched by layer name, folded into running sums in float64 blocks and dropped, so
memory holds one profile batch's activations at a time and never grows with the dataset.

For every matched layer up to three comparisons are made (as `worker.engine.metrics.numerical` defines
them: SQNR over all elements of the dataset, cosine per sample, mean and min):

- accumulated: the compressed network up to this layer vs the golden one, both fed the same input. It
  carries the error of every layer before it.
- local: this compressed layer alone, fed the golden network's inputs to that layer, vs the golden
  layer's output. Only the error this layer adds shows here, so a layer that adds error stands out from
  the layers that merely carry it.
- qdq_err (QDQ ONNX): the compressed model's own quantizer at this tensor, the tensor entering its
  QuantizeLinear vs the DequantizeLinear output, both from the compressed model's own run (as
  onnxruntime's qdq_loss_debug computes it).

Modules: results.py (what is reported), accumulate.py (running sums), sides.py (the model interface),
onnx_side.py / onnx_local.py (ONNX capture and local sub-graphs; onnxruntime runs with graph optimizations
disabled, as qdq_loss_debug does, so a QDQ model runs as simulated quantization), torch_side.py
(torch.export capture through forward hooks), matching.py (which layers pair up), shift.py and
quantizer_range.py (activation shift, clipping), calibration.py (calibration vs evaluation range, when a
calibration set is given), causes.py (likely causes), batching.py and run.py.

- ONNX vs torch.export: layers are matched only through `name_map`; local values are not computed.
- TorchScript: not supported (TorchScript modules do not run Python forward hooks); the profile is empty
  and says so in its notes.

Cosine needs the batch on axis 0; a layer whose tensor is not batch-first (its first axis differs from
the batch size on some batch) reports SQNR only. A layer whose golden and compressed shapes differ is
dropped with a note. NaN/Inf in an activation make that layer's values undefined (reported as None).
"""

from worker.engine.layer_profile.batching import DEFAULT_MEMORY_BUDGET_MB
from worker.engine.layer_profile.matching import DEQUANT_OUTPUT_SUFFIXES
from worker.engine.layer_profile.results import LayerFidelity, LayerProfile, LayerStats
from worker.engine.layer_profile.run import TORCHSCRIPT_NOTE, profile_layers
from worker.engine.layer_profile.sides import INPUT_OP_TYPE

__all__ = [
    "DEFAULT_MEMORY_BUDGET_MB",
    "DEQUANT_OUTPUT_SUFFIXES",
    "INPUT_OP_TYPE",
    "TORCHSCRIPT_NOTE",
    "LayerFidelity",
    "LayerProfile",
    "LayerStats",
    "profile_layers",
]
