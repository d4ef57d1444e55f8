"""The segmentation task (worker/engine/tasks/segmentation.py, issue 30): a tiny segmentation CNN trained in
the test on synthetic pictures (bright squares = class 1, dimmer discs = class 2 on noise; class 3 never
occurs), exported to ONNX with a copy whose weights are rounded to 3 bits, compared by `compare_models` with
task "segmentation". IoU and pixel accuracy are checked against scikit-learn (`jaccard_score`,
`accuracy_score`) and boundary F1 against a reference built from scikit-image `find_boundaries` and scipy
`distance_transform_edt`, all on the two ONNX models' own outputs, computed here."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from scipy import ndimage
from skimage.segmentation import find_boundaries
from sklearn.metrics import accuracy_score, jaccard_score

from kneeboard_client.thresholds import Limit, check_limit, higher_is_better, output_metrics
from tests.support.segmentation import CLASSES, IGNORE, SIZE, trained_segmenter
from tests.support.segmentation import scenes as _scenes
from tests.support.task_views import png_pixels
from worker.engine.compression import compress_module
from worker.engine.compression.configs import WeightQuant
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.formats.exporters import export_onnx
from worker.engine.loaders.onnx_runner import OnnxRunner, load_onnx
from worker.engine.types import TensorSpec


@pytest.fixture(scope="module")
def onnx_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[OnnxRunner, OnnxRunner]:
    pictures, masks = _scenes(256, seed=1)
    model = trained_segmenter(pictures, masks)
    plan = {name: WeightQuant(3) for name in ("conv1", "conv2", "head")}
    compressed = compress_module(model.eval(), plan)[0].eval()
    folder: Path = tmp_path_factory.mktemp("segmentation")
    golden_path = export_onnx(model.eval(), pictures[:2], folder / "golden.onnx")
    compressed_path = export_onnx(compressed, pictures[:2], folder / "compressed.onnx")
    return load_onnx(golden_path, 1), load_onnx(compressed_path, 1)


# ----------------------------------------------------------------------------------------- the references


def _iou(truth: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Per-class IoU by scikit-learn over every labelled pixel (NaN: a class in neither)."""
    keep = truth.ravel() != IGNORE
    t, p = truth.ravel()[keep], pred.ravel()[keep]
    iou = jaccard_score(t, p, labels=list(range(CLASSES)), average=None, zero_division=0)
    return np.where(np.isin(np.arange(CLASSES), np.union1d(t, p)), iou, np.nan)


def _boundary_f1(truth: np.ndarray, pred: np.ndarray, tolerance: int, ignore: bool) -> np.ndarray:
    """Per-image boundary F1 from scikit-image boundaries and scipy's exact Euclidean distance transform."""
    cross = ndimage.generate_binary_structure(2, 1)
    out = []
    for t, p in zip(truth, pred, strict=True):
        near_void = ndimage.binary_dilation(t == IGNORE, cross) if ignore else np.zeros(t.shape, bool)
        t_edge = find_boundaries(t, connectivity=1, mode="thick") & ~near_void
        p_edge = find_boundaries(p, connectivity=1, mode="thick") & ~near_void
        if not t_edge.any() and not p_edge.any():
            out.append(1.0)
            continue
        if not t_edge.any() or not p_edge.any():
            out.append(0.0)
            continue
        precision = (ndimage.distance_transform_edt(~t_edge)[p_edge] <= tolerance).mean()
        recall = (ndimage.distance_transform_edt(~p_edge)[t_edge] <= tolerance).mean()
        out.append(0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall))
    return np.array(out)


def _nan_to_none(values: np.ndarray) -> list[object]:
    return [None if np.isnan(v) else pytest.approx(float(v), abs=1e-12) for v in values]


class LabelMaps:
    """The ONNX model with its logits decoded to label maps (N, H, W), as a model with an ArgMax would."""

    def __init__(self, runner: OnnxRunner) -> None:
        self.runner = runner
        self.inputs = runner.inputs
        self.outputs = [TensorSpec("labels", ("batch", SIZE, SIZE), "int64")]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"labels": self.runner.run(feeds)["logits"].argmax(1)}


# ---------------------------------------------------------------------------------------------- the tests


def test_iou_accuracy_and_boundary_f1_match_scikit_learn_and_scikit_image(
    onnx_models: tuple[OnnxRunner, OnnxRunner],
) -> None:
    golden, compressed = onnx_models
    pictures, masks = _scenes(40, seed=2)
    params = FidelityParams(batch_size=16, task="segmentation", task_options={"boundary_tolerance": 2})
    report = compare_models(golden, compressed, {"input": pictures, "masks": masks}, None, params)
    g = golden.run({"input": pictures})["logits"].argmax(1)
    c = compressed.run({"input": pictures})["logits"].argmax(1)
    task = report.summary_dict()["outputs"]["logits"]["task"]
    assert (task["name"], task["output"], task["output_form"], task["num_classes"]) == (
        "segmentation",
        "logits",
        "logits",
        CLASSES,
    )

    keep = masks.ravel() != IGNORE
    on_masks = task["against_masks"]
    for which, pred in (("golden", g), ("compressed", c)):
        iou = _iou(masks, pred)
        assert on_masks[which]["per_class_iou"] == _nan_to_none(iou)
        assert on_masks[which]["miou"] == pytest.approx(np.nanmean(iou), abs=1e-12)
        accuracy = accuracy_score(masks.ravel()[keep], pred.ravel()[keep])
        assert on_masks[which]["pixel_accuracy"] == pytest.approx(accuracy, abs=1e-12)
        bf1 = _boundary_f1(masks, pred, 2, ignore=True).mean()
        assert on_masks[which]["boundary_f1"] == pytest.approx(bf1, abs=1e-12)
    assert on_masks["n_ignored_pixels"] == int((~keep).sum())
    assert np.isnan(_iou(masks, g)[3])  # class 3 never occurs nor is predicted: IoU undefined, left out

    g_iou, c_iou = np.nanmean(_iou(masks, g)), np.nanmean(_iou(masks, c))
    assert task["miou_drop"] == pytest.approx(g_iou - c_iou, abs=1e-12)
    assert task["pixel_accuracy_drop"] == pytest.approx(
        accuracy_score(masks.ravel()[keep], g.ravel()[keep])
        - accuracy_score(masks.ravel()[keep], c.ravel()[keep]),
        abs=1e-12,
    )
    # The trained model segments (well above chance), and 3-bit weights cost IoU.
    assert g_iou > 0.7
    assert task["miou_drop"] > 0.005

    # Label-free: the compressed label maps against the golden ones.
    g_flat, c_flat = g.ravel(), c.ravel()
    vs_golden = jaccard_score(g_flat, c_flat, labels=list(range(CLASSES)), average=None, zero_division=0)
    vs_golden = np.where(np.isin(np.arange(CLASSES), np.union1d(g_flat, c_flat)), vs_golden, np.nan)
    assert task["against_golden"]["per_class_iou"] == _nan_to_none(vs_golden)
    assert task["miou_vs_golden"] == pytest.approx(np.nanmean(vs_golden), abs=1e-12)
    assert task["pixel_agreement"] == pytest.approx(accuracy_score(g_flat, c_flat), abs=1e-12)
    bf1_vs_golden = _boundary_f1(g, c, 2, ignore=False)
    assert task["boundary_f1_vs_golden"] == pytest.approx(bf1_vs_golden.mean(), abs=1e-12)
    assert 0 < task["pixel_agreement"] < 1  # the copy disagrees on some pixels: the checks can fail

    # Per image, in sample order: IoU over the classes either model predicts there.
    per_image = [
        jaccard_score(g[i].ravel(), c[i].ravel(), labels=np.union1d(g[i], c[i]).tolist(), average="macro")
        for i in range(len(g))
    ]
    assert np.allclose(report.task_per_sample["iou_vs_golden"], per_image, atol=1e-12)
    agreement = [accuracy_score(g[i].ravel(), c[i].ravel()) for i in range(len(g))]
    assert np.allclose(report.task_per_sample["pixel_agreement"], agreement, atol=1e-12)
    assert np.allclose(report.task_per_sample["boundary_f1_vs_golden"], bf1_vs_golden, atol=1e-12)

    # kneeboard check: the drop is worse as it rises, IoU against the golden worse as it falls.
    _, metrics = output_metrics(report.summary_dict(), None)
    assert not check_limit(metrics, Limit("miou_drop", "max", task["miou_drop"] / 2)).passed
    assert check_limit(metrics, Limit("miou_drop", "max", task["miou_drop"] * 2)).passed
    assert check_limit(metrics, Limit("miou_vs_golden", "min", task["miou_vs_golden"] - 0.01)).passed
    assert higher_is_better("task.miou_vs_golden") and higher_is_better("task.boundary_f1_vs_golden")
    assert not higher_is_better("task.miou_drop") and not higher_is_better("task.boundary_f1_drop")


def test_a_wider_tolerance_forgives_more_and_label_map_outputs_score_the_same(
    onnx_models: tuple[OnnxRunner, OnnxRunner],
) -> None:
    golden, compressed = onnx_models
    pictures, masks = _scenes(12, seed=3)
    data = {"input": pictures, "masks": masks}
    tight = compare_models(
        golden, compressed, data, None,
        FidelityParams(batch_size=5, task="segmentation", task_options={"boundary_tolerance": 0}),
    )  # fmt: skip
    maps = compare_models(
        LabelMaps(golden), LabelMaps(compressed), data, None,
        FidelityParams(batch_size=5, task="segmentation", task_options={"boundary_tolerance": 0}),
    )  # fmt: skip
    g = golden.run({"input": pictures})["logits"].argmax(1)
    c = compressed.run({"input": pictures})["logits"].argmax(1)
    t_block = tight.outputs["logits"]["task"]
    m_block = maps.outputs["labels"]["task"]
    assert t_block["boundary_f1_vs_golden"] == pytest.approx(_boundary_f1(g, c, 0, ignore=False).mean())
    assert m_block["output_form"] == "labels"
    for key in ("miou_vs_golden", "pixel_agreement", "boundary_f1_vs_golden", "miou_drop"):
        assert m_block[key] == pytest.approx(t_block[key], abs=1e-12), key
    wide = compare_models(
        golden, compressed, data, None,
        FidelityParams(batch_size=5, task="segmentation", task_options={"boundary_tolerance": 3}),
    )  # fmt: skip
    assert wide.outputs["logits"]["task"]["boundary_f1_vs_golden"] > t_block["boundary_f1_vs_golden"]


def test_without_masks_only_the_label_free_scores_and_identical_models_agree_fully(
    onnx_models: tuple[OnnxRunner, OnnxRunner],
) -> None:
    golden, _ = onnx_models
    pictures, _ = _scenes(6, seed=4)
    report = compare_models(golden, golden, {"input": pictures}, None, FidelityParams(task="segmentation"))
    task = report.outputs["logits"]["task"]
    assert task["against_masks"] is None and task["miou_drop"] is None
    assert task["miou_vs_golden"] == 1.0 and task["pixel_agreement"] == 1.0
    assert task["boundary_f1_vs_golden"] == 1.0
    assert (task["ignore_index"], task["boundary_tolerance"]) == (IGNORE, 2)


def test_wrong_masks_unknown_options_and_non_segmentation_outputs_are_refused(
    onnx_models: tuple[OnnxRunner, OnnxRunner],
) -> None:
    golden, compressed = onnx_models
    pictures, masks = _scenes(8, seed=5)

    def run(data: dict[str, np.ndarray], **options: object) -> None:
        compare_models(
            golden, compressed, data, None, FidelityParams(task="segmentation", task_options=options)
        )

    with pytest.raises(DatasetMismatchError, match=r"'masks' has shape \(8, 20, 20\).*needs label maps"):
        run({"input": pictures, "masks": masks[:, :20, :20]})
    with pytest.raises(DatasetMismatchError, match=r"holds class 7 .* has 4 classes"):
        run({"input": pictures, "masks": np.where(masks == 2, 7, masks)})
    with pytest.raises(DatasetMismatchError, match="integer class indices"):
        run({"input": pictures, "masks": masks.astype(np.float32)})
    with pytest.raises(
        OutputMismatchError, match=r"no option 'tolerance'.*output, ignore_index, boundary_tolerance"
    ):
        run({"input": pictures}, tolerance=2)
    with pytest.raises(OutputMismatchError, match="no output 'mask'"):
        run({"input": pictures}, output="mask")
    with pytest.raises(OutputMismatchError, match="'boundary_tolerance' must be an integer"):
        run({"input": pictures}, boundary_tolerance=1.5)

    class Flat:
        def __init__(self) -> None:
            self.inputs = golden.inputs
            self.outputs = [TensorSpec("scores", ("batch", CLASSES), "float32")]

        def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {"scores": golden.run(feeds)["logits"].mean(axis=(2, 3))}

    with pytest.raises(OutputMismatchError, match="found no segmentation output"):
        compare_models(Flat(), Flat(), {"input": pictures}, None, FidelityParams(task="segmentation"))


def test_the_inspector_views_decode_to_exactly_both_argmax_maps_and_the_masks(
    onnx_models: tuple[OnnxRunner, OnnxRunner],
) -> None:
    """The kept label maps are lossless: Pillow decodes each stored PNG to numpy's argmax of the ONNX logits
    (and to the dataset's mask, ignore pixels included); the per-sample scores are the table's."""
    golden, compressed = onnx_models
    pictures, masks = _scenes(20, seed=5)
    params = FidelityParams(batch_size=8, task="segmentation")
    report = compare_models(golden, compressed, {"input": pictures, "masks": masks}, None, params)
    views = report.task_samples
    assert views is not None and views["task"] == "segmentation" and views["n_samples"] == 20
    assert views["image_size"] == [SIZE, SIZE] and views["ignore_index"] == IGNORE
    g = golden.run({"input": pictures})["logits"].argmax(1)
    c = compressed.run({"input": pictures})["logits"].argmax(1)
    assert (g != c).any()  # the 3-bit copy disagrees somewhere, so a swap of the two maps would fail
    for i, view in enumerate(views["samples"]):
        assert np.array_equal(png_pixels(view["golden"]), g[i])
        assert np.array_equal(png_pixels(view["compressed"]), c[i])
        assert np.array_equal(png_pixels(view["truth"]), masks[i])
        assert view["pixel_agreement"] == pytest.approx((g[i] == c[i]).mean(), abs=1e-12)
    without = compare_models(golden, compressed, {"input": pictures[:3]}, None, params).task_samples
    assert without is not None and [v["truth"] for v in without["samples"]] == [None] * 3


def test_views_stop_at_their_cap_and_class_ids_above_255_stay_exact() -> None:
    from worker.engine.tasks.segmentation import SEGMENTATION_VIEWS_MAX
    from worker.engine.tasks.view_encoding import label_map_png

    wide = np.array([[0, 300], [65535, 7]])
    assert np.array_equal(png_pixels(label_map_png(wide)), wide)  # 16-bit PNG past 255 classes

    class Maps:
        def __init__(self) -> None:
            self.inputs = [TensorSpec("x", ("batch", 8, 8), "float32")]
            self.outputs = [TensorSpec("labels", ("batch", 8, 8), "int64")]

        def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {"labels": (feeds["x"] > 0).astype(np.int64)}

    x = np.random.default_rng(0).standard_normal((SEGMENTATION_VIEWS_MAX + 30, 8, 8)).astype(np.float32)
    views = compare_models(Maps(), Maps(), {"x": x}, None, FidelityParams(task="segmentation")).task_samples
    assert views is not None and views["n_samples"] == SEGMENTATION_VIEWS_MAX
    assert np.array_equal(png_pixels(views["samples"][-1]["golden"]), x[SEGMENTATION_VIEWS_MAX - 1] > 0)
    params = FidelityParams(
        task="segmentation"
    )  # robustness chunks and sweep points store none: none are made
    assert compare_models(Maps(), Maps(), {"x": x}, None, params, sample_views=False).task_samples is None
