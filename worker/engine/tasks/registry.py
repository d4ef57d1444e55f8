"""Every task adapter, registered once (imported by `interface.adapter_for`). One line per task."""

from __future__ import annotations

from worker.engine.tasks.ctc import CtcTask
from worker.engine.tasks.detection import DetectionTask
from worker.engine.tasks.interface import register
from worker.engine.tasks.language_model import LanguageModelTask
from worker.engine.tasks.segmentation import SegmentationTask
from worker.engine.tasks.signal import SignalTask

register("segmentation", SegmentationTask)
register("ctc", CtcTask)
register("language_model", LanguageModelTask)
register("detection", DetectionTask)
register("signal", SignalTask)

__all__ = ["register"]
