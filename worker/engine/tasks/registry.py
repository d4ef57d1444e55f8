"""Every task adapter, registered once (imported by `interface.adapter_for`). One line per task."""

from __future__ import annotations

from worker.engine.tasks.interface import register

__all__ = ["register"]
