"""Every task adapter, registered once (imported by `interface.adapter_for`). One line per task."""

from __future__ import annotations

from worker.engine.tasks.detection import DetectionTask
from worker.engine.tasks.interface import register

register("detection", DetectionTask)

__all__ = ["register"]
