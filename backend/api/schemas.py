"""Response and request bodies of the public API."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, Literal, TypeVar

from fastapi import Query
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, computed_field

from backend.api.recovery_schemas import RecoveryLineageOut
from backend.api.result_schemas.fidelity import ActivationShiftOut, FidelitySummaryOut, LikelyCauseOut


def _as_utc(value: datetime) -> datetime:
    # SQLite hands back naive datetimes; every timestamp we store is UTC.
    return value if value.tzinfo else value.replace(tzinfo=UTC)


UTCDateTime = Annotated[datetime, AfterValidator(_as_utc)]


class ORMModel(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class ProjectCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=10_000)
    team_id: uuid.UUID | None = Field(
        default=None,
        description="The team that will own the project (you must be a member or admin of it). May be left "
        "out when you are a member or admin of exactly one team.",
    )


class ProjectOut(ORMModel):
    id: uuid.UUID
    team_id: uuid.UUID
    name: str
    description: str
    created_at: UTCDateTime
    models_count: int = Field(default=0, description="Models in the project (uploaded and made by jobs).")
    datasets_count: int = Field(default=0, description="Datasets in the project.")
    jobs_count: int = Field(default=0, description="Jobs of the project, inspections included.")
    last_activity_at: UTCDateTime | None = Field(
        default=None,
        description="The latest of: the project's creation, an upload, a job launched, started or finished.",
    )


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


class ModelOut(ORMModel, Annotations):
    id: uuid.UUID
    project_id: uuid.UUID
    name: str
    filename: str
    format: str
    artifact_sha256: str
    size_bytes: int
    status: str = Field(description="inspecting, ready or invalid")
    error: str | None = Field(description="Why the model is invalid (the loader's message).")
    declared_input_shapes: dict[str, list[int]] | None
    inspection: dict[str, Any] | None = Field(
        description="Inputs, outputs, layers (type, parameters, MACs), totals. Filled by the inspect job."
    )
    created_at: UTCDateTime
    lineage: RecoveryLineageOut | None = Field(
        default=None,
        description="Where a model made by a job comes from (a recovery job: parent model, configuration, "
        "methods, dataset, job); null for uploads.",
    )
    duplicate_of: uuid.UUID | None = Field(
        default=None,
        description="Set (to this model's id) when an upload was the same file (sha256) with the same input "
        "shapes as this existing model of the project: the answer (200, not 201) is that model and nothing new "
        "was stored.",
    )


class ArrayOut(BaseModel):
    shape: list[int]
    dtype: str


class DatasetOut(ORMModel, Annotations):
    id: uuid.UUID
    project_id: uuid.UUID
    name: str
    filename: str
    kind: str
    artifact_sha256: str
    size_bytes: int
    n_samples: int
    arrays: dict[str, ArrayOut]
    has_labels: bool
    preprocessing: dict[str, Any] | None
    created_at: UTCDateTime
    duplicate_of: uuid.UUID | None = Field(
        default=None,
        description="Set (to this dataset's id) when an upload was the same file (sha256) with the same "
        "preprocessing as this existing dataset of the project: the answer (200, not 201) is that dataset and "
        "nothing new was stored.",
    )


class JobCreate(BaseModel):
    project_id: uuid.UUID
    kind: str = Field(description="Job kind, e.g. 'fidelity'.")
    params: dict[str, Any] = Field(
        default_factory=dict, description="Parameters of the kind (see /job-kinds)."
    )


class JobOut(ORMModel, Annotations):
    id: uuid.UUID
    project_id: uuid.UUID
    kind: str
    name: str = Field(default="", description="The name people gave the run; empty until they do.")
    created_by: uuid.UUID | None = Field(default=None, description="Who launched it (null: account deleted).")
    created_by_name: str | None = Field(
        default=None, description="The username of who launched it (null: account deleted)."
    )
    params: dict[str, Any]
    status: str = Field(description="queued, running, succeeded, failed or cancelled")
    progress: float = Field(description="Fraction done, 0 to 1.")
    progress_message: str
    error: str | None
    worker_id: str | None
    attempts: int
    created_at: UTCDateTime
    started_at: UTCDateTime | None
    finished_at: UTCDateTime | None
    heartbeat_at: UTCDateTime | None
    duration_s: float | None = Field(default=None, description="finished_at − started_at, seconds.")
    chunks_total: int | None = Field(
        default=None,
        description="Chunks the job fanned out into over the worker pool (GET /jobs/{id}/chunks); null for a "
        "job that runs in one piece.",
    )


class JobChunkOut(ORMModel):
    """One piece of a job that fanned out: which worker computed it, how often it was tried, and why it
    failed. Its spec says what the chunk covers (e.g. which layers)."""

    index: int
    status: str
    spec: dict[str, Any]
    worker_id: str | None
    attempts: int
    started_at: UTCDateTime | None
    finished_at: UTCDateTime | None
    error: str | None


T = TypeVar("T")

# Every paged list bounds its offset: Postgres's OFFSET is a bigint, so an unbounded one (2**63) was a 500.
# 2**31 - 1 (as the dataset preview) is far past any page a list holds and fits every database's integer.
MAX_OFFSET = 2**31 - 1
Offset = Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Items to skip (at most 2**31 - 1).")]


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int


class JobKindOut(BaseModel):
    kind: str
    description: str
    params_schema: dict[str, Any]


class SampleDivergenceOut(ORMModel):
    sample_index: int
    output_name: str
    kl: float | None = Field(description="KL(P‖Q) in nats, golden P to compressed Q; lower is better.")
    cosine: float | None
    mse: float | None
    sqnr_db: float | None = Field(
        description="Per-sample SQNR in dB; null when infinite (see sqnr_db_infinite) or undefined (a "
        "non-finite sample, or a golden output of all zeros: −∞)."
    )
    top1_match: bool | None
    golden_class: int | None
    compressed_class: int | None
    label: int | None
    flagged: bool
    finite: bool

    @computed_field(  # type: ignore[prop-decorator]
        description="True when the sample's outputs are identical (error exactly 0: +∞ dB)."
    )
    @property
    def sqnr_db_infinite(self) -> bool:
        # The table stores +∞ and −∞ SQNR as NULL like NaN; an exact sample is the finite one with MSE 0.
        return self.sqnr_db is None and self.finite and self.mse == 0.0


class FidelityReportOut(BaseModel):
    job_id: uuid.UUID
    golden_model_id: uuid.UUID
    compressed_model_id: uuid.UUID
    dataset_id: uuid.UUID
    summary: FidelitySummaryOut = Field(
        description="Per output name: the metrics; plus warnings and sample counts."
    )
    diagnostics: list[Literal["classes", "sequence", "robustness"]] = Field(
        default_factory=list,
        description="Which 'why it diverges' documents this job has: 'classes' (GET …/fidelity/classes, a "
        "classification output), 'sequence' (GET …/fidelity/sequence, an output shaped (N, T, D)) and "
        "'robustness' (GET …/robustness, a job run with robustness slices); the "
        "others answer 404, so a page asks only for these.",
    )


class LayerStatsOut(BaseModel):
    cosine_mean: float | None = Field(
        description="Mean per-sample cosine of the layer's outputs; higher is better. None when the tensor "
        "is not batch-first or holds NaN/Inf."
    )
    cosine_min: float | None
    sqnr_db: float | None = Field(
        description="10·log10(Σ golden² / Σ (golden − compressed)²) over the dataset; higher is better. "
        "None when infinite (see sqnr_db_infinite) or undefined."
    )
    sqnr_db_infinite: bool = Field(description="True when the outputs are identical (SQNR = +∞).")


class LayerFidelityOut(BaseModel):
    name: str = Field(description="The golden model's tensor (ONNX) or module path (torch.export).")
    compressed_name: str
    op_type: str
    depth: int = Field(description="Position in the golden model's topological order of matched layers.")
    depth_fraction: float = Field(description="depth / (layers − 1): 0 at the input, 1 at the output.")
    accumulated: LayerStatsOut = Field(
        description="The compressed network up to this layer vs the golden one: the error carried so far."
    )
    local: LayerStatsOut | None = Field(
        description="This compressed layer alone, fed the golden layer's inputs: the error it adds."
    )
    local_note: str | None = None
    qdq_err: LayerStatsOut | None = Field(
        default=None,
        description="The compressed model's own quantizer at this tensor (QDQ ONNX only): the tensor entering "
        "its QuantizeLinear vs the output of the DequantizeLinear that follows, in the compressed model's own "
        "run (onnxruntime's qdq_loss_debug calls it qdq_err). None when the tensor is not re-quantized.",
    )
    qdq_input: str | None = Field(
        default=None, description="The compressed model's tensor entering that QuantizeLinear."
    )
    canonical_id: str | None = Field(
        default=None,
        description="The layer's one identity (torch module path when the model records it, else the node "
        "name), as on the model page and in sensitivity scans; null in profiles stored before it existed.",
    )
    aliases: list[str] = Field(
        default_factory=list, description="Other names of the layer (tensor, ONNX node)."
    )
    match_method: str | None = Field(
        default=None,
        description="How the compressed layer was found: name_map, name, structure (graph alignment) or weights "
        "(weight similarity alone).",
    )
    match_confidence: float | None = Field(
        default=None, description="1 for names; the structural match score in [0, 1] otherwise."
    )
    shift: ActivationShiftOut | None = Field(
        default=None,
        description="Activation range, histograms, clipping, dead units; null in older profiles.",
    )


class KernelGapOut(BaseModel):
    """One model output: the profile's simulated quantization against the deployed runtime's int8 kernels."""

    output: str = Field(description="The golden model's output (also the profiled layer of that name).")
    compressed_output: str
    simulated_sqnr_db: float | None = Field(
        description="The profile's accumulated SQNR of the output layer: simulated quantization "
        "(quantize-dequantize in float, onnxruntime graph optimizations off). None when infinite or undefined."
    )
    simulated_sqnr_db_infinite: bool
    runtime_sqnr_db: float | None = Field(
        description="Output SQNR of the deployed runtime (onnxruntime's default optimizations: fused int8 "
        "kernels) over the same samples as the profile. None when infinite or undefined."
    )
    runtime_sqnr_db_infinite: bool
    gap_db: float | None = Field(
        description="simulated_sqnr_db − runtime_sqnr_db: positive when the runtime's kernels lose more than "
        "simulated quantization predicts. 0 when both are infinite; None when only one is, or undefined."
    )
    significant: bool = Field(
        description="gap_db > threshold_db and the runtime SQNR is below 60 dB (above it, gaps are float "
        "rounding). The profile's notes then say what it means and what to do (e.g. int8 kernels that "
        "saturate on x86-64 CPUs without VNNI: quantize with reduce_range=True or use U8U8)."
    )
    threshold_db: float
    note: str | None = Field(
        default=None,
        description="When significant: what the gap means and what to do (also among the profile's notes).",
    )


class LayerProfileOut(BaseModel):
    """Where in the network the compressed model starts to diverge."""

    job_id: uuid.UUID
    error: str | None = Field(
        default=None, description="Why no profile could be made (the output-level report still stands)."
    )
    n_samples: int = 0
    profile_batch_size: int = Field(
        default=0,
        description="The most samples the profile runs at once, chosen from the worker's memory budget "
        "(KNEEBOARD_PROFILE_MEMORY_BUDGET_MB) after a one-sample probe, independent of the job's batch_size "
        "(it may exceed the samples there are). 0 for profiles stored before it was recorded.",
    )
    layers: list[LayerFidelityOut] = Field(default_factory=list)
    unmatched_golden: list[str] = Field(default_factory=list)
    unmatched_compressed: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    likely_causes: list[LikelyCauseOut] = Field(
        default_factory=list,
        description="Likely causes of the divergence, most severe first (score = value / threshold); empty "
        "when no layer crosses a threshold, and in profiles stored before they existed.",
    )
    kernel_gap: list[KernelGapOut] | None = Field(
        default=None,
        description="ONNX pairs: at each model output that is a profiled layer, the profile's simulated SQNR "
        "against the SQNR the deployed runtime measured on the same samples. The profile runs "
        "quantization simulated in float; a significant gap means the runtime's int8 kernels lose more "
        "than the per-layer numbers show. None when not computed (other formats, or jobs run before it "
        "existed).",
    )


class NamedRef(BaseModel):
    id: uuid.UUID
    name: str | None = Field(description="None when the model or dataset was deleted since.")


class FidelityHeadline(BaseModel):
    """The primary output's key numbers, for comparing runs side by side."""

    output: str
    kl_mean_nats: float | None = Field(
        default=None, description="KL(P‖Q), golden P to compressed Q; lower is better."
    )
    js_mean_nats: float | None = Field(
        default=None, description="Jensen-Shannon divergence; lower is better."
    )
    top1_match: float | None = Field(default=None, description="Share of samples with the same top-1 class.")
    topk_agreement: float | None = None
    cosine_mean: float | None = None
    sqnr_db: float | None = Field(
        default=None, description="Higher is better; None when infinite or undefined."
    )
    top1_accuracy_drop_pp: float | None = Field(default=None, description="Needs labels; lower is better.")
    ece_shift: float | None = Field(default=None, description="ECE(compressed) − ECE(golden); needs labels.")
    concentration: str | None = Field(default=None, description="uniform or concentrated damage.")


class FidelityRunOut(BaseModel):
    job_id: uuid.UUID
    finished_at: UTCDateTime | None
    golden: NamedRef
    compressed: NamedRef
    dataset: NamedRef
    n_samples: int
    headline: FidelityHeadline


class FieldErrorOut(BaseModel):
    """One request field that failed validation."""

    type: str = Field(description="Pydantic's error type, e.g. less_than_equal or uuid_parsing.")
    loc: list[str | int] = Field(description="Where: the location (path, query, body) then the field's path.")
    msg: str
    ctx: dict[str, Any] | None = Field(
        default=None, description="The constraint that failed, e.g. {'le': 500} for an upper bound."
    )


class ErrorOut(BaseModel):
    """Every error response: a stable code and a message that says what went wrong and what to do."""

    error: str = Field(description="Stable code, e.g. not_found, conflict, invalid_request, invalid_upload.")
    detail: str = Field(description="For the user: what went wrong and what to do about it.")
    fields: list[FieldErrorOut] | None = Field(
        default=None, description="invalid_request from request validation: each field at fault."
    )
