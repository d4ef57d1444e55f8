"""Response and request bodies of the public API, one module per area; other areas' bodies live beside them
(account_schemas, budget_schemas, result_schemas/, ...). ``from backend.api.schemas import X`` works for every
name as before the split."""

from backend.api.schemas.annotations import TAG_DESCRIPTION, Annotations, ResourceUpdate, Tag
from backend.api.schemas.common import MAX_OFFSET, Offset, ORMModel, Page, UTCDateTime
from backend.api.schemas.errors import ErrorOut, FieldErrorOut
from backend.api.schemas.fidelity import (
    FidelityHeadline,
    FidelityReportOut,
    FidelityRunOut,
    NamedRef,
    SampleDivergenceOut,
)
from backend.api.schemas.jobs import JobChunkOut, JobCreate, JobKindOut, JobOut
from backend.api.schemas.layer_profile import KernelGapOut, LayerFidelityOut, LayerProfileOut, LayerStatsOut
from backend.api.schemas.projects import ProjectCreate, ProjectOut
from backend.api.schemas.resources import ArrayOut, DatasetOut, ModelOut

__all__ = [
    "MAX_OFFSET",
    "TAG_DESCRIPTION",
    "Annotations",
    "ArrayOut",
    "DatasetOut",
    "ErrorOut",
    "FidelityHeadline",
    "FidelityReportOut",
    "FidelityRunOut",
    "FieldErrorOut",
    "JobChunkOut",
    "JobCreate",
    "JobKindOut",
    "JobOut",
    "KernelGapOut",
    "LayerFidelityOut",
    "LayerProfileOut",
    "LayerStatsOut",
    "ModelOut",
    "NamedRef",
    "ORMModel",
    "Offset",
    "Page",
    "ProjectCreate",
    "ProjectOut",
    "ResourceUpdate",
    "SampleDivergenceOut",
    "Tag",
    "UTCDateTime",
]
