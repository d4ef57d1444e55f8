"""What each task needs from the models and the dataset, checked when a job is launched.

Pure Python (no numpy, no runtimes, no service): the API imports it to answer a wrong task mapping with a 422
that says what was expected, before any worker runs (`launch_problems`), and the engine's task adapters import
their option names from it, so the two sides cannot disagree on them. The adapters still check what only the
data shows (values, the shapes of a model whose outputs were not declared) at their first batch.
"""

from task_specs.launch import (
    TASK_OPTIONS,
    Declared,
    launch_problems,
)

__all__ = ["TASK_OPTIONS", "Declared", "launch_problems"]
