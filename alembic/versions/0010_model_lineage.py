"""models: lineage (where a model made by a job comes from: parent model, configuration, methods, job)

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03 22:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = '0010'
down_revision: str | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('models') as batch_op:
        batch_op.add_column(sa.Column('lineage', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('models') as batch_op:
        batch_op.drop_column('lineage')
