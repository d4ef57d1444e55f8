"""The split rule of backend/calibration_split.py on its boundaries (pure: no database, no model)."""

from __future__ import annotations

import pytest

from backend.calibration_split import CalibrationSplitError, any_quantizes_activations, plan_split


def _held_out(n: int, max_samples: int = 512, requested: int | None = None) -> tuple[int, int, int]:
    split = plan_split(
        evaluation_dataset_id="e",
        evaluation_samples=n,
        max_samples=max_samples,
        calibration_dataset_id=None,
        calibration_dataset_samples=None,
        calibration_samples=requested,
    )
    assert split.disjoint and split.source == "held_out"
    return split.calibration_stop, split.evaluation_start, split.evaluation_stop


def test_the_default_holds_out_a_quarter_at_most_128() -> None:
    assert _held_out(4) == (1, 1, 4)  # the smallest set that splits
    assert _held_out(360, 100) == (90, 90, 190)
    assert _held_out(511) == (127, 127, 511)
    assert _held_out(10_000) == (128, 128, 640)  # max_samples evaluated after the held-out ones
    assert _held_out(50, requested=49) == (49, 49, 50)
    for n, requested in ((3, None), (1, None), (50, 50), (50, 80)):
        with pytest.raises(CalibrationSplitError, match="too few to hold out"):
            _held_out(n, requested=requested)


def test_a_named_set_calibrates_and_the_first_samples_are_evaluated() -> None:
    def named(available: int, requested: int | None, same: bool = False, ident: str = "c") -> tuple[int, int]:
        split = plan_split(
            evaluation_dataset_id="e",
            evaluation_samples=300,
            max_samples=100,
            calibration_dataset_id=ident,
            calibration_dataset_samples=available,
            calibration_samples=requested,
            same_content=same,
        )
        assert split.disjoint and (split.evaluation_start, split.evaluation_stop) == (0, 100)
        return split.calibration_start, split.calibration_stop

    assert named(1000, None) == (0, 256) and named(40, None) == (0, 40) and named(40, 40) == (0, 40)
    with pytest.raises(CalibrationSplitError, match="has only 40 samples"):
        named(40, 41)
    for same, ident in ((True, "c"), (False, "e")):
        with pytest.raises(CalibrationSplitError, match="names the evaluation dataset itself"):
            named(1000, None, same, ident)


def test_which_configurations_quantize_activations() -> None:
    a8 = {"type": "activation_quant", "bits": 8}
    assert any_quantizes_activations([{"type": "weight_quant"}, {"type": "quantize", "activations": a8}])
    assert any_quantizes_activations([{"type": "schedule", "stages": [{"type": "magnitude_prune"}, a8]}])
    # channels ranked on samples calibrate too (issue 33); by the weights' norm they do not
    assert any_quantizes_activations([{"type": "channel_prune", "sparsity": 0.5, "norm": "reconstruction"}])
    assert not any_quantizes_activations([{"type": "channel_prune", "sparsity": 0.5, "norm": "l2"}])
    assert not any_quantizes_activations(
        [
            {"type": "quantize", "weights": {"type": "weight_quant"}, "activations": None},
            {"type": "float_cast"},
        ]
    )
