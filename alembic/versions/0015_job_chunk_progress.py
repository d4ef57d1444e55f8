"""job chunk progress: a running chunk's own fraction done, so a fan-out job's bar counts the cells and
points inside its chunks, not only whole chunks (a 1-chunk scan showed 0 % until it jumped to 100 %,
issue 35)

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07 20:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("job_chunks") as batch:
        batch.add_column(sa.Column("progress", sa.Float(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("job_chunks") as batch:
        batch.drop_column("progress")
