"""Launch-time checks of a task's mapping: each wrong mapping is named in words that say what was expected,
and a right one passes (so the checks are not vacuous)."""

from __future__ import annotations

from task_specs import Declared, launch_problems

SEG_OUT = [Declared("aux", ("batch", 10), "float32"), Declared("logits", ("batch", 4, 32, 32), "float32")]
MASKS = {"masks": Declared("masks", (50, 32, 32), "<u1"), "input": Declared("input", (50, 3, 32, 32), "<f4")}
VOCAB = ["_", "a", "b", "|"]
CTC_OUT = [Declared("frames", ("batch", 40, 4), "float32")]


def test_a_right_mapping_passes() -> None:
    assert launch_problems("segmentation", {"output": "logits", "ignore_index": 255}, SEG_OUT, MASKS) == []
    assert launch_problems("segmentation", {}, SEG_OUT, MASKS) == []  # the first output of a fitting rank
    assert launch_problems("ctc", {"vocabulary": VOCAB}, CTC_OUT, {}) == []
    assert launch_problems("classification", {}, SEG_OUT, {}) == []


def test_unknown_options_are_named_with_the_known_ones() -> None:
    (problem,) = launch_problems("segmentation", {"iou": 0.5}, SEG_OUT, MASKS)
    assert "no option 'iou'" in problem and "output, ignore_index, boundary_tolerance" in problem
    (problem,) = launch_problems("classification", {"output": "x"}, SEG_OUT, {})
    assert "takes no options" in problem


def test_a_missing_or_misshaped_output_is_named() -> None:
    (problem,) = launch_problems("segmentation", {"output": "boxes"}, SEG_OUT, MASKS)
    assert "no output 'boxes'" in problem and "'logits' (batch, 4, 32, 32)" in problem
    (problem,) = launch_problems("segmentation", {"output": "aux"}, SEG_OUT, MASKS)
    assert "output 'aux' is (batch, 10) float32" in problem
    (problem,) = launch_problems("ctc", {"vocabulary": VOCAB}, SEG_OUT, {})
    assert "needs an output shaped (N, T, V)" in problem


def test_float_frames_are_not_label_maps_nor_integer_maps_frames() -> None:
    """Both are rank 3 with the batch: the type tells a CTC model's frame logits from a segmenter's labels."""
    (problem,) = launch_problems("segmentation", {}, CTC_OUT, {})
    assert "(N, H, W) integer label maps" in problem
    labels = [Declared("labels", ("batch", 32, 32), "int64")]
    assert launch_problems("segmentation", {}, labels, {}) == []
    (problem,) = launch_problems("ctc", {"vocabulary": VOCAB}, labels, {})
    assert "float frame logits" in problem


def test_annotations_that_do_not_fit_are_named() -> None:
    small = {"masks": Declared("masks", (50, 16, 16), "<u1")}
    (problem,) = launch_problems("segmentation", {}, SEG_OUT, small)
    assert "masks of 16 x 16" in problem and "gives 32 x 32" in problem
    floats = {"masks": Declared("masks", (50, 32, 32), "<f4")}
    (problem,) = launch_problems("segmentation", {}, SEG_OUT, floats)
    assert "integer class indices" in problem
    numbers = {"transcripts": Declared("transcripts", (50,), "<i8")}
    (problem,) = launch_problems("ctc", {"vocabulary": VOCAB}, CTC_OUT, numbers)
    assert "needs strings" in problem


def test_a_vocabulary_that_does_not_fit_the_output_is_named() -> None:
    (problem,) = launch_problems("ctc", {"vocabulary": VOCAB[:3]}, CTC_OUT, {})
    assert "scores 4 tokens but the vocabulary lists 3" in problem
    assert "needs the option 'vocabulary'" in launch_problems("ctc", {}, CTC_OUT, {})[0]
    assert (
        "blank 9 is not a token id"
        in launch_problems("ctc", {"vocabulary": VOCAB, "blank": 9}, CTC_OUT, {})[0]
    )


def test_outputs_not_known_yet_leave_only_the_option_checks() -> None:
    assert launch_problems("segmentation", {"output": "anything"}, None, {}) == []
    assert "must be an integer" in launch_problems("segmentation", {"ignore_index": -1}, None, {})[0]


def test_detection_output_names_and_truth_arrays_are_checked() -> None:
    outputs = [Declared("boxes", ("batch", 100, 4), "float32"), Declared("scores", ("batch", 100), "float32")]
    truth = {
        "gt_boxes": Declared("gt_boxes", (8, 5, 4), "<f4"),
        "gt_labels": Declared("gt_labels", (8, 5), "<i8"),
    }
    assert (
        launch_problems("detection", {"boxes_output": "boxes", "scores_output": "scores"}, outputs, truth)
        == []
    )
    (problem,) = launch_problems("detection", {"boxes_output": "dets"}, outputs, truth)
    assert "boxes_output 'dets' is not an output" in problem and "'boxes' (batch, 100, 4)" in problem
    (problem,) = launch_problems("detection", {}, outputs, {"gt_boxes": truth["gt_boxes"]})
    assert "both gt_boxes (N, M, 4) and gt_labels" in problem
    bad = truth | {"gt_labels": Declared("gt_labels", (8, 6), "<i8")}
    assert "it needs (8, 5), one per box" in launch_problems("detection", {}, outputs, bad)[0]
    assert "format must be" in launch_problems("detection", {"format": "ssd"}, outputs, truth)[0]


def test_signal_outputs_and_clean_references_are_checked() -> None:
    audio = [Declared("audio", ("batch", 1, 256), "float32")]
    clean = {"clean": Declared("clean", (8, 1, 256), "<f4")}
    assert launch_problems("signal", {}, audio, clean) == []
    short = {"clean": Declared("clean", (8, 1, 100), "<f4")}
    assert (
        "holds (1, 100) a sample; output 'audio' gives (1, 256)"
        in launch_problems("signal", {}, audio, short)[0]
    )
    (problem,) = launch_problems("signal", {}, [Declared("ids", ("batch", 256), "int64")], {})
    assert "float signals" in problem
