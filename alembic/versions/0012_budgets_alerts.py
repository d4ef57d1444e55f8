"""budgets and alerts: named fidelity budgets per project, the alerts their breaches raise (with webhook
delivery state), and jobs.budget_checked_at (each finished job is checked exactly once)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04 17:08:15.322295
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "budgets",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("scope_value", sa.String(length=200), nullable=False),
        sa.Column("rules", sa.JSON(), nullable=False),
        sa.Column("created_by", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"], ["users.id"], name=op.f("fk_budgets_created_by_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_budgets_project_id_projects"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_budgets")),
        sa.UniqueConstraint("project_id", "name", name=op.f("uq_budgets_project_id")),
    )
    with op.batch_alter_table("budgets", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_budgets_project_id"), ["project_id"], unique=False)

    op.create_table(
        "alerts",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("project_id", sa.Uuid(), nullable=False),
        sa.Column("budget_id", sa.Uuid(), nullable=True),
        sa.Column("budget_name", sa.String(length=200), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("breaches", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("acknowledged_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("acknowledged_by", sa.Uuid(), nullable=True),
        sa.Column("delivery_state", sa.String(length=16), nullable=False),
        sa.Column("delivery_attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["acknowledged_by"],
            ["users.id"],
            name=op.f("fk_alerts_acknowledged_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["budget_id"], ["budgets.id"], name=op.f("fk_alerts_budget_id_budgets"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_alerts_job_id_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_alerts_project_id_projects"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alerts")),
        sa.UniqueConstraint("budget_id", "job_id", name=op.f("uq_alerts_budget_id")),
    )
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.create_index("ix_alerts_delivery_due", ["delivery_state", "next_attempt_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_alerts_job_id"), ["job_id"], unique=False)
        batch_op.create_index("ix_alerts_project_created", ["project_id", "created_at"], unique=False)

    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("budget_checked_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index(batch_op.f("ix_jobs_budget_checked_at"), ["budget_checked_at"], unique=False)

    # Jobs that finished before budgets existed have nothing to be checked against: mark them checked, so the
    # first sweep after the upgrade does not walk the whole job history.
    op.execute(
        "UPDATE jobs SET budget_checked_at = finished_at "
        "WHERE status IN ('succeeded', 'failed', 'cancelled') AND finished_at IS NOT NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_jobs_budget_checked_at"))
        batch_op.drop_column("budget_checked_at")

    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index("ix_alerts_project_created")
        batch_op.drop_index(batch_op.f("ix_alerts_job_id"))
        batch_op.drop_index("ix_alerts_delivery_due")

    op.drop_table("alerts")
    with op.batch_alter_table("budgets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_budgets_project_id"))

    op.drop_table("budgets")
