"""sweep objective tables: a sweep's objectives packed in one row for frontiers, and an index for the
fingerprint (count, max id) of a sweep's points

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 18:47:02.428136
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op


revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('sweep_objective_tables',
    sa.Column('job_id', sa.Uuid(), nullable=False),
    sa.Column('names', sa.JSON(), nullable=False),
    sa.Column('labels', sa.JSON(), nullable=False),
    sa.Column('point_indexes', sa.LargeBinary(), nullable=False),
    sa.Column('objective_values', sa.LargeBinary(), nullable=False),
    sa.Column('points_count', sa.Integer(), nullable=False),
    sa.Column('points_max_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_sweep_objective_tables_job_id_jobs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('job_id', name=op.f('pk_sweep_objective_tables'))
    )
    op.create_index('ix_sweep_points_job_id_id', 'sweep_points', ['job_id', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_sweep_points_job_id_id', table_name='sweep_points')
    op.drop_table('sweep_objective_tables')
