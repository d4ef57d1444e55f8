"""jobs: index on (project_id, created_at) for the job list, newest first

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03 19:50:00.000000
"""

from collections.abc import Sequence

from alembic import op


revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index('ix_jobs_project_created', 'jobs', ['project_id', 'created_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_jobs_project_created', table_name='jobs')
