"""models, datasets, jobs: notes and tags; jobs: a name (renaming and annotating runs from the dashboard)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04 16:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _notes_and_tags(batch_op: object) -> None:
    add = batch_op.add_column  # type: ignore[attr-defined]
    add(sa.Column("notes", sa.Text(), server_default="", nullable=False))
    add(sa.Column("tags", sa.JSON(), server_default="[]", nullable=False))


def upgrade() -> None:
    for table in ("models", "datasets"):
        with op.batch_alter_table(table) as batch_op:
            _notes_and_tags(batch_op)
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.add_column(sa.Column("name", sa.String(length=200), server_default="", nullable=False))
        _notes_and_tags(batch_op)


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch_op:
        for column in ("tags", "notes", "name"):
            batch_op.drop_column(column)
    for table in ("datasets", "models"):
        with op.batch_alter_table(table) as batch_op:
            batch_op.drop_column("tags")
            batch_op.drop_column("notes")
