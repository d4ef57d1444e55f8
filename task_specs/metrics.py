"""The task metrics a sweep's frontier can use as an axis or a bound, by task: the table the API validates a
sweep's `task.<metric>` names against, and the worker's sweep merge names its objectives by.

A sweep point's fidelity carries its task block's top-level numbers generically (`task_metrics`, see
`worker.engine.sweep.golden.fidelity_summary`), stored as objectives named `task.<metric>`; this table only
says which of them a launch may name for a task (the API imports no worker code, so it cannot ask the
adapters). A new task adds one line here; its numbers reach the frontier without it, but a launch that names
one of them is refused until it is listed.

Direction: one rule for the whole project (`task_specs.directions.higher_is_better`, kneeboard check's too):
a `_drop` is lower-is-better, and so are WER, CER, deltas and every name the rule does not know.
"""

from __future__ import annotations

import re
from typing import Literal

TaskName = Literal[
    "auto",
    "classification",
    "embedding",
    "regression",
    "image",
    "segmentation",
    "ctc",
    "detection",
    "language_model",
    "signal",
]
"""The tasks a fidelity job or a sweep names (the adapters' tasks and those of the per-output accumulators)."""
TaskOptions = dict[str, str | int | float | bool | list[str] | list[float] | None]
"""A task's options, flat: each task documents its keys and refuses unknown ones when the job starts."""

TASK_PREFIX = "task."

TASK_METRICS: dict[str, tuple[str, ...]] = {
    "classification": (
        "f1_macro_vs_golden",
        "borderline_agreement",
        "golden_f1_macro",
        "compressed_f1_macro",
        "f1_macro_drop_pp",
    ),
    "image": ("psnr_db_vs_golden", "ssim_vs_golden", "psnr_drop_db", "ssim_drop"),
    "segmentation": (
        "miou_vs_golden",
        "pixel_agreement",
        "boundary_f1_vs_golden",
        "miou_drop",
        "pixel_accuracy_drop",
        "boundary_f1_drop",
    ),
    "ctc": ("wer_vs_golden", "cer_vs_golden", "exact_match_vs_golden", "wer_delta", "cer_delta"),
    "detection": (
        "map_vs_golden",
        "map50_vs_golden",
        "golden_map",
        "golden_map50",
        "compressed_map",
        "compressed_map50",
        "map_drop",
        "map50_drop",
    ),
    "signal": ("snr_db_vs_golden", "si_sdr_db_vs_golden", "snr_drop_db", "si_sdr_drop_db"),
    "language_model": (
        "kl_mean",
        "kl_reverse_mean",
        "js_mean",
        "top1_agreement",
        "topk_overlap",
        "nll_delta",
        "ppl_golden",
        "ppl_compressed",
        "ppl_delta",
        # not the gen_* numbers of generated text: a sweep point does not generate (SweepJobParams refuses
        # generate_tokens), so they would never hold a number there
    ),
}
"""Task → the numeric top-level keys of its task block (`summary.outputs[primary].task`)."""

_AUTO = ("classification", "image")
"""The tasks `auto` can infer from the outputs' shapes (the adapters' tasks must be named)."""

_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,100}")


def metric_names(task: str) -> list[str]:
    """The objectives (`task.<metric>`) a sweep of `task` can name."""
    tasks = _AUTO if task == "auto" else (task,)
    return [TASK_PREFIX + m for t in tasks for m in TASK_METRICS.get(t, ())]


def direction(name: str) -> Literal["min", "max"]:
    """The better way of an objective, by the check's rule (`task.miou_drop` → min, `task.miou_vs_golden` → max)."""
    from task_specs.directions import higher_is_better  # the one rule (kneeboard check's too)

    return "max" if higher_is_better(name) else "min"


def directions() -> dict[str, dict[str, Literal["min", "max"]]]:
    """Task → {objective: direction}: what the dashboard offers once a task is chosen."""
    return {task: {name: direction(name) for name in metric_names(task)} for task in TASK_METRICS}


def foreign_task_metrics(task: str, specs: list[str]) -> list[str]:
    """The `task.<metric>` names in `specs` (`name:min`, `name<=value`...) that the task does not measure."""
    known = set(metric_names(task))
    names = [m[0] for spec in specs if (m := _NAME.match(spec))]
    return [n for n in names if n.startswith(TASK_PREFIX) and n not in known]
