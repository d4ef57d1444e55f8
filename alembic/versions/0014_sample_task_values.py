"""sample task values: each per-sample row of a fidelity job with a task carries the task's per-sample values
(IoU, WER...), so the per-sample table can be sorted by them and the proxy scatter drawn (issue 30)

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07 11:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sample_divergences") as batch:
        batch.add_column(sa.Column("task_values", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sample_divergences") as batch:
        batch.drop_column("task_values")
