"""A sensitivity scan ranked by a task metric (issue 30): the tiny segmentation CNN trained here
(tests/support/segmentation.py), exported to ONNX, scanned with task "segmentation" and rank_by "miou_drop".
Every cell's mIoU drop is checked against the drop computed independently (each layer compressed alone by the
engine's `compressed(...)`, both models' argmax scored against the masks with scikit-learn's confusion
matrix), and the ranking against the order of those drops."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.support.segmentation import IGNORE, segmentation_files, sklearn_miou
from worker.engine.compression import WeightQuant, as_compressible, compressed
from worker.engine.errors import EngineError
from worker.engine.fidelity.compare import FidelityParams
from worker.engine.sensitivity.scan import (
    SensitivityResult,
    TaskScoring,
    layer_sensitivity,
    merge_sensitivity,
)
from worker.engine.sensitivity.task_cells import WHOLE_MODEL_NOTE

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CONFIGS = [WeightQuant(2, per_channel=True), WeightQuant(3, per_channel=True)]
BATCH = 16


@pytest.fixture(scope="module")
def scanned(tmp_path_factory: pytest.TempPathFactory) -> tuple[SensitivityResult, dict[str, float], Path]:
    files = segmentation_files(tmp_path_factory.mktemp("seg"))
    model = as_compressible(onnx.load(files.golden))
    pictures, masks = files.test_pictures, files.test_masks
    scoring = TaskScoring(
        FidelityParams(batch_size=BATCH, task="segmentation", task_options={"ignore_index": IGNORE}),
        {"masks": masks},
    )
    result = layer_sensitivity(
        model, {"input": pictures}, CONFIGS, batch_size=BATCH, task=scoring, rank_by="miou_drop"
    )
    golden = model.run({"input": pictures})["logits"].argmax(1)
    reference: dict[str, float] = {}
    for config in CONFIGS:
        for layer in result.layer_names:
            with compressed(model, {layer: config}) as (runner, _):
                pred = runner.run({"input": pictures})["logits"].argmax(1)
            reference[f"{layer}|{config.id}"] = sklearn_miou(masks, golden) - sklearn_miou(masks, pred)
    return result, reference, files.golden


def test_cells_carry_the_miou_drop_and_the_ranking_follows_it(
    scanned: tuple[SensitivityResult, dict[str, float], Path],
) -> None:
    result, reference, _ = scanned
    assert result.ranking_metric == "task.miou_drop" and result.task == "segmentation"
    assert WHOLE_MODEL_NOTE in result.notes
    layers = result.layer_names
    assert layers == ["conv1", "conv2", "head"]
    for config in CONFIGS:
        for layer in layers:
            cell = result.cell(layer, config.id)
            assert cell.task_metrics["miou_drop"] == pytest.approx(
                reference[f"{layer}|{config.id}"], abs=1e-12
            )
            assert cell.divergence.sqnr_db is not None  # the primary output's numbers are still there
        drops = {layer: reference[f"{layer}|{config.id}"] for layer in layers}
        assert len(set(drops.values())) == len(layers)  # no tie: the order is decided by the drops
        assert result.ranking(config.id) == sorted(layers, key=lambda name: -drops[name])
    mean = {layer: np.mean([reference[f"{layer}|{c.id}"] for c in CONFIGS]) for layer in layers}
    assert result.ranking() == sorted(layers, key=lambda name: -mean[name])
    assert max(mean.values()) > 0.01  # 2-3 bit weights cost some layer real mIoU

    doc = result.to_dict()
    assert doc["ranking_metric"] == "task.miou_drop" and doc["rank_by"] == "miou_drop"
    # the proxy ranks otherwise here (SQNR puts head before conv1: 2-bit head moves the logits more than
    # 2-bit conv1 but costs less mIoU), so the ranking above is the task's, not the output divergence's
    by_sqnr = SensitivityResult.from_dict(doc | {"rank_by": None})
    assert by_sqnr.ranking_metric == "sqnr" and by_sqnr.ranking() != result.ranking()
    column = [c.id for c in CONFIGS].index(CONFIGS[0].id)
    grid = doc["matrix"]["task_metrics"]["miou_drop"]
    assert [row[column] for row in grid] == pytest.approx(
        [reference[f"{layer}|{CONFIGS[0].id}"] for layer in layers], abs=1e-12
    )


def test_a_higher_is_better_metric_ranks_the_lowest_first_and_documents_round_trip(
    scanned: tuple[SensitivityResult, dict[str, float], Path],
) -> None:
    result, _, _ = scanned
    doc = result.to_dict()
    again = SensitivityResult.from_dict(doc)
    assert again.to_dict() == doc
    # miou_vs_golden: higher is better, so the layer whose compression agrees least with the golden masks first
    by_agreement = SensitivityResult.from_dict(doc | {"rank_by": "miou_vs_golden"})
    values = {
        layer: by_agreement.cell(layer, CONFIGS[0].id).task_metrics["miou_vs_golden"]
        for layer in doc["computed_layers"]
    }
    assert by_agreement.ranking(CONFIGS[0].id) == sorted(values, key=lambda name: values[name])
    # a document written before task cells existed still loads, ranked by SQNR
    old = doc | {"cells": [{k: v for k, v in c.items() if k != "task_metrics"} for c in doc["cells"]]}
    for key in ("task", "rank_by"):
        old.pop(key)
    legacy = SensitivityResult.from_dict(old)
    assert legacy.ranking_metric == "sqnr" and all(not c.task_metrics for c in legacy.cells.values())


def test_chunks_with_task_cells_merge_to_the_full_scan(
    scanned: tuple[SensitivityResult, dict[str, float], Path],
) -> None:
    result, _, golden_path = scanned
    files_dir = golden_path.parent
    pictures, masks = np.load(files_dir / "scenes.npz")["input"], np.load(files_dir / "scenes.npz")["masks"]
    model = as_compressible(onnx.load(golden_path))
    scoring = TaskScoring(
        FidelityParams(batch_size=BATCH, task="segmentation", task_options={"ignore_index": IGNORE}),
        {"masks": masks},
    )
    chunks = [
        layer_sensitivity(
            model,
            {"input": pictures},
            CONFIGS,
            layers=part,
            batch_size=BATCH,
            task=scoring,
            rank_by="miou_drop",
        )
        for part in (["conv1"], ["conv2", "head"])
    ]
    merged = merge_sensitivity([c.to_dict() for c in chunks])
    assert merged.to_dict()["matrix"] == result.to_dict()["matrix"]
    assert merged.ranking() == result.ranking()
    with pytest.raises(EngineError, match="rank_by"):
        layer_sensitivity(model, {"input": pictures}, CONFIGS, rank_by="miou_drop")
