"""Which workers are alive: each worker's main process writes its row every few seconds (worker/celery_app.py),
so GET /api/v1/health can say when no worker is running."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from backend.db.models.base import Base, TZDateTime


class WorkerHeartbeat(Base):
    """One Celery worker (its node name, e.g. kneeboard@host) and when its main process was last seen."""

    __tablename__ = "worker_heartbeats"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(TZDateTime)
    seen_at: Mapped[datetime] = mapped_column(TZDateTime)
