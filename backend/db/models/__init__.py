"""ORM tables (SQLAlchemy 2, typed), one module per area. Alembic migrations are the only way these tables get
created; tests/backend/test_migrations.py fails when the two drift apart.

Importing this package imports every area, so ``Base.metadata`` holds every table (Alembic's env and the
migration test read it) and ``from backend.db.models import X`` works for any table as before the split.
"""

from backend.db.models.accounts import ApiToken, AuditEvent, LoginThrottle, Team, TeamMembership, User
from backend.db.models.base import NAMING, Base, TZDateTime, utcnow
from backend.db.models.budgets import Alert, Budget
from backend.db.models.jobs import Job, JobChunk, JobResult, JobStatus
from backend.db.models.resources import Artifact, Dataset, Model, ModelStatus, Project
from backend.db.models.results import SampleDivergence, SweepObjectiveTable, SweepPoint
from backend.db.models.workers import WorkerHeartbeat

__all__ = [
    "NAMING",
    "Alert",
    "ApiToken",
    "Artifact",
    "AuditEvent",
    "Base",
    "Budget",
    "Dataset",
    "Job",
    "JobChunk",
    "JobResult",
    "JobStatus",
    "LoginThrottle",
    "Model",
    "ModelStatus",
    "Project",
    "SampleDivergence",
    "SweepObjectiveTable",
    "SweepPoint",
    "TZDateTime",
    "Team",
    "TeamMembership",
    "User",
    "WorkerHeartbeat",
    "utcnow",
]
