"""A recovery job's bar and message say the same count (worker/jobs/recovery_progress.py, issue 35)."""

from __future__ import annotations

import pytest

from worker.jobs.recovery_progress import counted_message, recovery_fraction


def test_each_stage_moves_through_its_share() -> None:
    # 5 stages (before, 2 methods, export, layers): AdaRound (position 2) with 2 of 8 layers done
    assert recovery_fraction(2, 5, 2, 8) == pytest.approx((2 + 2 / 8) / 5)
    assert recovery_fraction(0, 5, 0, 1) == 0.0
    assert recovery_fraction(1, 5, 3, 3) == pytest.approx(2 / 5)  # a stage done is where the next starts
    assert recovery_fraction(4, 5, 1, 1) == pytest.approx(0.99)  # the finish writes 1.0
    assert recovery_fraction(1, 5, 9, 4) == pytest.approx(2 / 5)  # never past its stage


def test_layer_methods_say_their_count_and_training_messages_stay_parsable() -> None:
    assert counted_message("adaround", 2, 8, "AdaRound: fc") == "AdaRound: fc, 2 of 8 layers done"
    assert counted_message("bias_correction", 0, 3, "bias correction: conv1") == (
        "bias correction: conv1, 0 of 3 layers done"
    )
    assert counted_message("adaround", 8, 8, "AdaRound done") == "AdaRound done"
    step = "distill step 3/100: loss 0.25, held-out KL 0.01"
    assert counted_message("distill", 3, 100, step) == step
