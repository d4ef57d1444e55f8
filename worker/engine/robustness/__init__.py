"""Robustness slices (seed 003): golden and compressed models on seeded, corrupted copies of the dataset
(noise, brightness, contrast, blur, occlusion, JPEG, token replacement) and on adversarial inputs crafted
against a PyTorch golden model (FGSM, PGD), at three severities, and the brittleness ratio; plus a
second, out-of-distribution dataset compared the same way."""

from worker.engine.robustness.ood import evaluate_ood
from worker.engine.robustness.run import RobustnessParams, evaluate_robustness, point_metrics
from worker.engine.robustness.tokens import TokenStats, token_stats
from worker.engine.robustness.transforms import SEVERITIES, SLICES, ArrayStats, array_stats, corrupt

__all__ = [
    "SEVERITIES",
    "SLICES",
    "ArrayStats",
    "RobustnessParams",
    "TokenStats",
    "array_stats",
    "corrupt",
    "evaluate_ood",
    "evaluate_robustness",
    "point_metrics",
    "token_stats",
]
