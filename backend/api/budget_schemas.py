"""Request and response bodies of fidelity budgets and their alerts (backend/api/routes/budgets.py)."""

from __future__ import annotations

import math
import uuid
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from backend.api.schemas import ORMModel, Page, UTCDateTime
from backend.budgets import BudgetScope


class BudgetRule(BaseModel):
    """One limit on a metric of the fidelity summary's primary output, as `kneeboard check --max/--min`."""

    metric: str = Field(
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9_.]+$",
        description="A metric of the summary's primary output: kl_mean (or kl_mean_nats), js_mean, top1_match, "
        "topk_agreement, cosine_mean, sqnr_db, mse_mean, top1_accuracy_drop_pp, ece_shift... A metric the "
        "summary lacks (e.g. an accuracy drop without labels) is not checked.",
    )
    bound: Literal["max", "min"] = Field(description="max: the metric must be at most value; min: at least.")
    value: float

    @field_validator("value")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value


class BudgetIn(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    scope: BudgetScope = Field(
        default=BudgetScope.all,
        description="Which compressed models the budget applies to: all of the project's, those with the tag "
        "scope_value, or the family of models whose name starts with scope_value.",
    )
    scope_value: str = Field(default="", max_length=200)
    rules: list[BudgetRule] = Field(min_length=1, max_length=50)

    @model_validator(mode="after")
    def _scope_value(self) -> BudgetIn:
        if self.scope == BudgetScope.all and self.scope_value:
            raise ValueError("scope_value: must be empty when scope is 'all'")
        if self.scope != BudgetScope.all and not self.scope_value.strip():
            raise ValueError(f"scope_value: a scope of {self.scope.value!r} needs a tag or a name prefix")
        return self


class BudgetOut(ORMModel):
    id: uuid.UUID
    project_id: uuid.UUID
    name: str
    scope: BudgetScope
    scope_value: str
    rules: list[BudgetRule]
    created_at: UTCDateTime


class BreachOut(BaseModel):
    metric: str
    bound: Literal["max", "min"]
    limit: float
    value: float | None = Field(
        description="The job's value; null when undefined or not finite (see message)."
    )
    message: str


class AlertOut(ORMModel):
    id: uuid.UUID
    project_id: uuid.UUID
    budget_id: uuid.UUID | None = Field(description="Null once the budget was deleted (budget_name remains).")
    budget_name: str
    job_id: uuid.UUID
    compressed_model_id: uuid.UUID | None = None
    compressed_model: str | None = Field(default=None, description="Its name; null when it was deleted.")
    breaches: list[BreachOut]
    created_at: UTCDateTime
    acknowledged_at: UTCDateTime | None
    delivery_state: Literal["none", "pending", "delivered", "failed"] = Field(
        description="The webhook delivery: none (no webhook configured), pending, delivered or failed."
    )
    delivery_attempts: int
    last_error: str | None
    delivered_at: UTCDateTime | None


class AlertPage(Page[AlertOut]):
    unacknowledged: int = Field(description="The project's alerts nobody has acknowledged yet (the badge).")
