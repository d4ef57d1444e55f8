"""A sweep that takes a task (issue 30): a tiny segmentation CNN trained here (tests/support/segmentation.py)
swept over weight bit widths with task "segmentation" and the dataset's masks beside the inputs. Each point's
fidelity carries the task block's numbers (`task_metrics`), the sweep's merge names them `task.<metric>`
objectives, and a Pareto frontier over `task.miou_drop` orders and filters the points by their measured drop
(the value `compare_models` gives for the same compressed model, recomputed here)."""

from __future__ import annotations

import numpy as np
import pytest

from backend.pareto import Bound, pareto_from_columns
from task_specs.metrics import direction, metric_names
from tests.support.segmentation import IGNORE, scenes, trained_segmenter
from worker.engine.compression import CompressibleModel, WeightQuant, as_compressible, compressed
from worker.engine.compression.model import Calibration
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.sweep import GoldenReference, SweepPoint, evaluate_points
from worker.jobs.sweep import point_objectives

BITS = (8, 4, 2)
PARAMS = FidelityParams(batch_size=32, task="segmentation", task_options={"ignore_index": IGNORE})


@pytest.fixture(scope="module")
def swept() -> tuple[CompressibleModel, dict[str, np.ndarray], list[SweepPoint]]:
    pictures, masks = scenes(256, seed=1)
    model = as_compressible(trained_segmenter(pictures, masks))
    test_pictures, test_masks = scenes(96, seed=2)
    feeds = {"x": test_pictures, "masks": test_masks}
    configs = [None, *(WeightQuant(bits, per_channel=True) for bits in BITS)]
    points = evaluate_points(model, feeds, None, configs, batch_size=32, fidelity_params=PARAMS)
    return model, feeds, points


def _objectives(points: list[SweepPoint]) -> list[dict[str, float | None]]:
    return [point_objectives(p.to_dict(), None, {}) for p in points]


def test_every_point_carries_the_task_block_numbers(
    swept: tuple[CompressibleModel, dict[str, np.ndarray], list[SweepPoint]],
) -> None:
    model, feeds, points = swept
    for point in points:
        assert point.report is not None
        block = point.report.summary_dict()["outputs"][point.fidelity["primary_output"]]["task"]
        assert block["name"] == "segmentation" and block["against_masks"] is not None
        metrics = point.fidelity["task_metrics"]
        assert (
            metrics["miou_drop"] == block["miou_drop"]
            and metrics["miou_vs_golden"] == block["miou_vs_golden"]
        )
        assert (
            "against_golden" not in metrics and "name" not in metrics
        )  # nested documents and strings left out
        objectives = point_objectives(point.to_dict(), None, {})
        assert set(metric_names("segmentation")) <= set(objectives)
        assert objectives["task.miou_drop"] == pytest.approx(block["miou_drop"])
    assert points[0].fidelity["task_metrics"]["miou_drop"] == 0.0  # the golden model against itself
    # the stored drop is the one a fresh comparison of the same compressed model measures
    reference = GoldenReference(model, feeds, 32)  # the golden outputs, before the weights are swapped
    calibration = Calibration(model, {"x": feeds["x"]}, 32)
    plan = {layer.name: WeightQuant(2, per_channel=True) for layer in model.layers()}
    with compressed(model, plan, calibration) as (runner, _):
        fresh = compare_models(reference, runner, feeds, None, PARAMS)
    task = fresh.summary_dict()["outputs"][fresh.primary_output]["task"]
    assert points[-1].fidelity["task_metrics"]["miou_drop"] == pytest.approx(task["miou_drop"], abs=1e-9)


def test_a_frontier_over_the_miou_drop_orders_and_bounds_the_points(
    swept: tuple[CompressibleModel, dict[str, np.ndarray], list[SweepPoint]],
) -> None:
    _, _, points = swept
    rows = _objectives(points)
    names = ["task.miou_drop", "size_bytes"]
    columns = {name: np.array([np.nan if r[name] is None else r[name] for r in rows]) for name in names}
    drops = columns["task.miou_drop"]
    assert direction("task.miou_drop") == "min" and direction("task.miou_vs_golden") == "max"
    assert drops[-1] > drops[1] + 0.01  # 2-bit weights cost mIoU against the masks; 8-bit ones hardly
    ids = list(range(len(points)))

    alone = pareto_from_columns(columns, ids, [("task.miou_drop", direction("task.miou_drop"))])
    assert set(alone.frontier) == set(np.flatnonzero(drops == drops.min()))

    both = pareto_from_columns(columns, ids, [("size_bytes", "min"), ("task.miou_drop", "min")])
    along = [drops[i] for i in both.frontier]  # in order of size: smaller models lose more mIoU
    assert along == sorted(along, reverse=True) and len(both.frontier) >= 2
    assert len(points) - 1 in both.frontier  # the smallest model is on it, with the largest drop

    limit = float((drops[-1] + drops[-2]) / 2)  # between the 2-bit point and the next worse-than-it drop
    assert drops[-1] > limit >= drops[-2]
    bounded = pareto_from_columns(
        columns,
        ids,
        [("size_bytes", "min"), ("task.miou_drop", "min")],
        [Bound("task.miou_drop", at_most=limit)],
    )
    assert len(points) - 1 not in bounded.frontier and bounded.filtered == int((drops > limit).sum()) >= 1
    assert all(drops[i] <= limit for i in bounded.frontier)
