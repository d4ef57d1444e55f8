"""The table of task metrics the API validates a sweep's launch against (task_specs/metrics.py) names numbers
the sweep really stores: a sweep point scored with task "ctc" (transcripts beside the frames) and one with task
"image" (targets beside the pictures) carry every listed metric of their task as a `task.<metric>` objective,
with the value of their task block, and a drop's direction is lower-is-better. The
models are small untrained networks under 3-bit weights: only the names and the plumbing are checked here (the
numbers are checked against jiwer and scikit-image in tests/engine/test_ctc_task.py and
test_image_output_task.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from task_specs.metrics import TASK_METRICS, direction, metric_names
from worker.engine.compression import WeightQuant, as_compressible
from worker.engine.fidelity.compare import FidelityParams
from worker.engine.sweep import evaluate_point
from worker.jobs.sweep import point_objectives

VOCAB = ["<blank>", "|", "a", "b", "c"]


class _Ctc(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv1d(4, 8, 3, padding=1)
        self.head = torch.nn.Conv1d(8, len(VOCAB), 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (N, T, F) -> (N, T, V)
        return self.head(torch.relu(self.conv1(x.transpose(1, 2)))).transpose(1, 2)


class _Image(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 1, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.conv2(torch.relu(self.conv1(x))))


def _point(
    module: torch.nn.Module, feeds: dict[str, np.ndarray], params: FidelityParams
) -> dict[str, object]:
    torch.manual_seed(0)
    for p in module.parameters():
        torch.nn.init.normal_(p, std=0.5)
    point = evaluate_point(
        as_compressible(module.eval()), feeds, None, WeightQuant(3), batch_size=8, fidelity_params=params
    )
    assert point.report is not None
    block = point.report.summary_dict()["outputs"][point.fidelity["primary_output"]]["task"]
    objectives = point_objectives(point.to_dict(), None, {})
    return {"block": block, "objectives": objectives}


@pytest.mark.parametrize("task", ["ctc", "image"])
def test_the_listed_task_metrics_are_the_numbers_a_sweep_stores(task: str) -> None:
    rng = np.random.default_rng(0)
    if task == "ctc":
        words = np.array(["ab c", "ca", "b ba", "c"] * 4)
        feeds = {"x": rng.normal(size=(16, 12, 4)).astype(np.float32), "transcripts": words}
        found = _point(
            _Ctc(), feeds, FidelityParams(batch_size=8, task="ctc", task_options={"vocabulary": VOCAB})
        )
    else:
        pictures = rng.uniform(0, 1, (16, 1, 12, 12)).astype(np.float32)
        feeds = {"x": pictures, "targets": np.clip(pictures * 0.9, 0, 1)}
        found = _point(_Image(), feeds, FidelityParams(batch_size=8, task="image"))
    block, objectives = found["block"], found["objectives"]
    assert isinstance(block, dict) and isinstance(objectives, dict)
    for name in metric_names(task):
        metric = name.removeprefix("task.")
        assert isinstance(block[metric], float), (name, block.get(metric))  # defined: annotations were read
        assert objectives[name] == pytest.approx(block[metric]), name
    # a drop or a WER is lower-is-better; an agreement with the golden model's pictures higher-is-better
    lower, higher = {
        "ctc": ("task.wer_delta", "task.exact_match_vs_golden"),
        "image": ("task.psnr_drop_db", "task.ssim_vs_golden"),
    }[task]
    assert direction(lower) == "min" and direction(higher) == "max"


def test_auto_offers_the_tasks_it_can_infer_and_an_unknown_task_none() -> None:
    assert set(metric_names("auto")) == {
        f"task.{m}" for t in ("classification", "image") for m in TASK_METRICS[t]
    }
    assert metric_names("embedding") == []
    assert direction("task.miou_vs_golden") == "max" and direction("task.cer_vs_golden") == "min"
