"""Names, notes and tags people add to models, datasets and jobs, and the PATCH body that changes them."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# A tag: a short label without spaces or quotes, so that it reads the same in a URL, a JSON list and a CSV.
Tag = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.:/+=@-]+$")]
TAG_DESCRIPTION = "Short labels (letters, digits and _ . : / + = @ -; at most 40 characters), at most 20."


class Annotations(BaseModel):
    """Notes and tags people add to models, datasets and jobs."""

    notes: str = Field(default="", description="Free text.")
    tags: list[str] = Field(default=[], description=TAG_DESCRIPTION)


class ResourceUpdate(BaseModel):
    """A change to a model, dataset or job: only the fields sent are changed."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, min_length=1, max_length=200, description="A new display name.")
    notes: str | None = Field(default=None, max_length=10_000, description="Replaces the notes.")
    tags: list[Tag] | None = Field(
        default=None, max_length=20, description="Replaces the tags. " + TAG_DESCRIPTION
    )
