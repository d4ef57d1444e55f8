"""One settings class for every process (API, worker, CLI), read from KNEEBOARD_* environment variables.

The defaults are the embedded mode: SQLite, a filesystem broker and a local artifact directory under
``data_dir``, so nothing but Python is needed. Deployment sets the database, broker and artifact URLs.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KNEEBOARD_", extra="ignore", frozen=True)

    data_dir: Path = Field(
        default=Path(".kneeboard"),
        description="Where the embedded mode keeps its SQLite file, broker queue and artifacts.",
    )
    database_url: str = Field(
        default="",
        description="SQLAlchemy URL, e.g. postgresql+psycopg://postgres@db/kneeboard. "
        "Empty: SQLite file in data_dir.",
    )
    broker_url: str = Field(
        default="",
        description="Celery broker URL, e.g. redis://redis:6379/0. Empty: kombu's filesystem transport in data_dir.",
    )
    artifact_uri: str = Field(
        default="",
        description="Where uploads are stored: file:///path or s3://bucket/prefix. Empty: data_dir/artifacts.",
    )
    s3_endpoint_url: str | None = Field(
        default=None,
        description="Endpoint of an S3-compatible store (MinIO, Ceph...). Credentials come from the usual AWS_* variables.",
    )
    queue_name: str = Field(
        default="kneeboard", description="Celery queue that API enqueues on and workers consume."
    )
    max_upload_bytes: int = Field(default=2 * 1024**3, gt=0, description="Largest accepted upload, in bytes.")
    max_body_bytes: int = Field(
        default=1024**2,
        gt=0,
        description="Largest accepted request body other than an upload (JSON), in bytes: a larger one is "
        "refused (413) before it is read.",
    )
    heartbeat_interval_s: float = Field(
        default=5.0, gt=0, description="How often a running job proves it is alive."
    )
    heartbeat_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="A running job silent for longer than this is taken as lost by the reaper.",
    )
    reaper_interval_s: float = Field(default=10.0, gt=0, description="How often the API looks for lost jobs.")
    # Riding out database and broker blips (docs/design-notes.md, "Blips") ------------------------------
    queued_resend_s: float = Field(
        default=30.0,
        gt=0,
        description="A job or chunk still queued this long after its message was sent gets it sent again (the "
        "message may have been lost); the wait doubles with each re-send of the same work, up to "
        "KNEEBOARD_QUEUED_RESEND_MAX_S. Duplicates are harmless (the claim is a compare-and-set).",
    )
    queued_resend_max_s: float = Field(
        default=900.0,
        gt=0,
        description="Longest wait between two re-sends of a message for work that is still queued.",
    )
    db_retry_s: float = Field(
        default=60.0,
        ge=0,
        description="A worker's claim, heartbeat or result write that fails because the database is "
        "unreachable is retried with backoff for this long before its message goes back to the queue.",
    )
    chunk_wait_s: float = Field(
        default=1800.0,
        gt=0,
        description="A chunk of a job that fans out (sensitivity, sweep) that no worker has taken this long "
        "fails its job, e.g. a sweep routed to a device that no worker serves.",
    )
    max_attempts: int = Field(
        default=2,
        ge=1,
        description="Deliveries of a job before a lost worker makes it fail instead of retrying.",
    )
    task_time_limit_s: int = Field(default=6 * 3600, gt=0, description="Hard limit for one task on a worker.")
    worker_concurrency: int = Field(
        default=1,
        ge=1,
        description="Pool processes of a worker started by `kneeboard up` or `kneeboard worker`.",
    )
    # Hostile input: archives and runaway models ----------------------------------------------------
    archive_max_members: int = Field(
        default=200_000,
        gt=0,
        description="Most members an uploaded zip archive (or .npz, .pt2, .pt) may hold.",
    )
    archive_max_uncompressed_bytes: int | None = Field(
        default=None,
        gt=0,
        description="Most bytes an uploaded archive may expand to, all members together. "
        "Empty: four times KNEEBOARD_MAX_UPLOAD_BYTES.",
    )
    archive_max_expansion: float = Field(
        default=200.0,
        gt=1,
        description="An archive, or a member of it, that expands more than this many times its compressed "
        "size is refused as a zip bomb (only when it expands to more than 64 MiB).",
    )
    worker_memory_limit_mb: int | None = Field(
        default=None,
        ge=0,
        description="Address-space limit (RLIMIT_AS) of each worker pool process, in MiB: a model that "
        "allocates more fails its job instead of the machine. 0: no limit. Empty: three quarters of the "
        "machine's memory.",
    )
    # API processes and database connections -------------------------------------------------------
    api_processes: int | None = Field(
        default=None,
        ge=1,
        description="API worker processes (uvicorn workers) of `kneeboard api` and `kneeboard up`. Empty: the "
        "CPU count, at most 4, with Postgres; always 1 with the embedded SQLite database.",
    )
    database_pool_size: int = Field(
        default=10,
        ge=1,
        description="Database connections each process (API process, worker) may hold, no overflow: size it "
        "so that API processes × pool size + the workers' connections ≤ Postgres max_connections.",
    )
    profile_memory_budget_mb: float = Field(
        default=384.0,
        gt=0,
        description="Memory for one batch of a fidelity job's per-layer profile, in MiB: the profile runs as "
        "many samples at once as fit (it holds every layer of both models for each), whatever the job's "
        "batch_size. The default keeps a pool process under 1.5 GB on EfficientNet-Lite0 at 224 px.",
    )
    host: str = Field(default="127.0.0.1", description="Address the API binds to.")
    port: int = Field(default=8000, description="Port the API binds to.")
    seed_demo: bool = Field(default=True, description="`kneeboard up` seeds the demo project on first start.")
    # Accounts ---------------------------------------------------------------------------------------
    first_admin: str = Field(
        default="admin", description="Username of the site admin that the first start creates."
    )
    first_admin_password: str = Field(
        default="",
        description="Their password; empty: a random one, printed once by `kneeboard up` and kept in "
        "data_dir/first-admin-password.txt until changed.",
    )
    first_team: str = Field(
        default="default", description="The first admin's team, owner of the demo project."
    )
    team_creation: Literal["everyone", "site_admins"] = Field(
        default="everyone",
        description="Who may create a team (and become its admin): every signed-in account, or site admins only.",
    )
    session_ttl_h: float = Field(
        default=12.0, gt=0, description="How long a dashboard sign-in lasts, in hours."
    )
    cookie_secure: bool = Field(
        default=False, description="Send the session cookie over HTTPS only (set it when serving over HTTPS)."
    )
    # Hardening: sign-in throttle, password hashing, image decoding, upload staging --------------------
    login_free_attempts: int = Field(
        default=5,
        ge=1,
        description="Sign-in attempts an account may fail before each further one waits (429, Retry-After).",
    )
    login_free_attempts_per_address: int = Field(
        default=20,
        ge=1,
        description="The same for one client address (more: several people may share one address).",
    )
    login_delay_s: float = Field(
        default=1.0, gt=0, description="Wait after the free attempts; it doubles with every further failure."
    )
    login_max_delay_s: float = Field(
        default=900.0, gt=0, description="Longest wait between sign-in attempts of one account or address."
    )
    login_forget_s: float = Field(
        default=3600.0,
        gt=0,
        description="Failures older than this (counted from the last one) are forgotten.",
    )
    login_tarpit_s: float = Field(
        default=1.0,
        ge=0,
        description="A throttled attempt is answered 429 after this long at most (an idle wait, no thread), so "
        "a client that ignores Retry-After sends about one request a second per connection.",
    )
    password_hash_workers: int = Field(
        default=2,
        ge=1,
        description="Password hashes (Argon2id, 64 MiB each) each API process computes at once.",
    )
    password_hash_queue: int = Field(
        default=8,
        ge=0,
        description="Sign-ins that may wait for a hashing worker; beyond that they are answered 503 at once.",
    )
    image_max_pixels: int = Field(
        default=25_000_000,
        gt=0,
        description="Largest image (width × height) a zip of images may hold: checked at upload and before "
        "every preview decode (a 25-megapixel RGBA image decodes to 100 MB).",
    )
    preview_renders: int = Field(
        default=2,
        ge=1,
        description="Image decodes (thumbnails, sample statistics) each API process runs at once; more wait.",
    )
    upload_max_life_s: float = Field(
        default=6 * 3600.0,
        gt=0,
        description="An upload still streaming after this long is cut off; staging files not written for "
        "this long belong to no live upload and are deleted at API start and every staging_sweep_interval_s.",
    )
    staging_sweep_interval_s: float = Field(
        default=600.0, gt=0, description="How often the API deletes abandoned staging files."
    )
    # Fidelity budgets and alerts (backend/budgets.py, backend/webhook.py) ------------------------------
    budget_check_interval_s: float = Field(
        default=5.0,
        gt=0,
        description="How often the API checks newly finished jobs against their project's fidelity budgets "
        "and sends due alert webhooks.",
    )
    alert_webhook_url: str = Field(
        default="",
        description="Where every new alert is POSTed as JSON (empty: alerts are only stored and shown). The "
        "body is signed: header X-Kneeboard-Signature: sha256=HMAC-SHA256(secret, body) in hex.",
    )
    alert_webhook_secret: str = Field(
        default="", description="The HMAC key that signs alert webhooks (KNEEBOARD_ALERT_WEBHOOK_URL)."
    )
    alert_webhook_max_attempts: int = Field(
        default=5, ge=1, description="Tries of an alert webhook before its delivery is marked failed."
    )
    alert_webhook_backoff_s: float = Field(
        default=10.0,
        gt=0,
        description="Wait before the first retry of an alert webhook; doubles with each further try.",
    )
    alert_webhook_timeout_s: float = Field(
        default=10.0, gt=0, description="How long one alert webhook request may take."
    )

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.heartbeat_timeout_s <= self.heartbeat_interval_s:
            raise ValueError(
                "KNEEBOARD_HEARTBEAT_TIMEOUT_S must be larger than KNEEBOARD_HEARTBEAT_INTERVAL_S"
            )
        return self

    # Resolved values -------------------------------------------------------------------------
    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'kneeboard.db').resolve()}"

    @property
    def uses_sqlite(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")

    @property
    def resolved_api_processes(self) -> int:
        """One process over SQLite (one writer at a time anyway); else the setting, or the CPU count up to 4
        (each process parses and serialises JSON under its own GIL; 4 × a pool of 10 = 40 connections)."""
        if self.uses_sqlite:
            return 1
        return self.api_processes or max(1, min(os.cpu_count() or 1, 4))

    @property
    def resolved_broker_url(self) -> str:
        return self.broker_url or "filesystem://"

    @property
    def uses_filesystem_broker(self) -> bool:
        return self.resolved_broker_url.startswith("filesystem://")

    @property
    def broker_folder(self) -> Path:
        return (self.data_dir / "broker").resolve()

    @property
    def resolved_archive_max_uncompressed_bytes(self) -> int:
        return self.archive_max_uncompressed_bytes or 4 * self.max_upload_bytes

    @property
    def task_soft_time_limit_s(self) -> float:
        """Python code in a task gets SoftTimeLimitExceeded this long before the hard kill, to stop cleanly."""
        return self.task_time_limit_s - min(60.0, self.task_time_limit_s / 10)

    @property
    def resolved_worker_memory_limit_mb(self) -> int:
        """The pool processes' address-space limit in MiB; 0 for none."""
        if self.worker_memory_limit_mb is not None:
            return self.worker_memory_limit_mb
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # not a POSIX system that reports its memory
            return 0
        return max(0, total * 3 // 4 >> 20)

    @property
    def first_admin_password_file(self) -> Path:
        """Where `kneeboard up` keeps a generated first password until it is changed."""
        return self.data_dir / "first-admin-password.txt"

    @property
    def resolved_artifact_uri(self) -> str:
        return self.artifact_uri or (self.data_dir / "artifacts").resolve().as_uri()


@lru_cache
def get_settings() -> Settings:
    return Settings()
