"""Pure-numpy fidelity metrics (float64 accumulation, no torch).

- `distributions`: KL (both directions), JS, cross-entropy, entropy, total variation, per sample in nats.
- `agreement`: top-1 match, top-k agreement and overlap, label flips, nearest-neighbour agreement.
- `calibration`: streaming reliability bins, ECE, MCE.
- `numerical`: MSE, MAE, max |a − b|, cosine, SQNR, R², per sample and as streaming totals.

These modules are the project's metric definitions: each states its formulas and conventions.
"""

from worker.engine.metrics import agreement, calibration, distributions, numerical

__all__ = ["agreement", "calibration", "distributions", "numerical"]
