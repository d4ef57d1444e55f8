"""Per-layer sensitivity scans: compress one layer (or all but one) at a time and measure the divergence.

- `scan`: `layer_sensitivity`, the scan itself, and how it picks its batch;
- `plans`: which cells a scan runs, and their costs for the fan-out;
- `result`: the scan's result document; `merge`: joining the chunks of a fanned-out scan;
- `suffix`, `suffix_onnx`, `suffix_weight_probe`: the prefix reuse — each cell runs only the suffix of the
  ONNX graph after its layer, from the golden prefix's activations computed once per batch.
"""
