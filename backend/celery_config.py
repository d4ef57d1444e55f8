"""Celery configuration shared by the API (which only sends) and the workers (which consume).

Reliability choices (see docs/design-notes.md, "Job lifecycle"): tasks are acknowledged late and a worker prefetches one
message, so a message is never lost with a busy worker; the job row, its heartbeat and the API's reaper
decide what happens to a job whose worker died, whatever the broker does with the message.
"""

from __future__ import annotations

from typing import Any

from backend import embedded_broker
from backend.settings import Settings


def celery_config(settings: Settings) -> dict[str, Any]:
    config: dict[str, Any] = {
        "broker_url": settings.resolved_broker_url,
        "task_default_queue": settings.queue_name,
        "task_ignore_result": True,
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        # A task past the hard limit has its pool process killed (and replaced); the worker's main process
        # fails its job with the reason (worker/celery_app.py). Python code gets SoftTimeLimitExceeded
        # shortly before, to stop cleanly; code inside a runtime's C++ call only meets the hard limit.
        "task_time_limit": settings.task_time_limit_s,
        "task_soft_time_limit": settings.task_soft_time_limit_s,
        # A new pool process imports torch and onnxruntime before it reports for work (worker/celery_app.py):
        # seconds on a busy machine, longer than Celery's 4 s default, after which it would be killed and
        # replaced over and over, so that a worker whose pool process was killed would never work again.
        "worker_proc_alive_timeout": 120.0,
        "broker_connection_retry_on_startup": True,
        "task_serializer": "json",
        "accept_content": ["json"],
    }
    memory_limit_mb = settings.resolved_worker_memory_limit_mb
    if memory_limit_mb:
        # The address-space limit stops one runaway allocation; this recycles, after its task, a pool
        # process whose resident memory grew past half of it (fragmentation after a big model, leaks).
        config["worker_max_memory_per_child"] = memory_limit_mb * 1024 // 2
    if settings.uses_filesystem_broker:
        folder = settings.broker_folder
        folder.mkdir(parents=True, exist_ok=True)
        # kombu's filesystem transport with atomic writes and a reader a half-written message cannot crash
        # (backend/embedded_broker.py; docs/design-notes.md, "The embedded broker").
        embedded_broker.register()
        config["broker_url"] = f"{embedded_broker.SCHEME}://"
        config["broker_transport_options"] = {
            "data_folder_in": str(folder),
            "data_folder_out": str(folder),
            "control_folder": str(
                folder / "control"
            ),  # kombu's default is ./control, in the working directory
            "store_processed": False,
            # Idle workers look for new message files this often (kombu's default is 1 s, which a job that
            # fans out into many chunks pays once per chunk).
            "polling_interval": 0.1,
        }
        # The filesystem transport has no fanout exchange: no remote control, events or mingle.
        config["worker_enable_remote_control"] = False
    else:
        # Redis re-delivers an unacknowledged message after the visibility timeout: keep it above the task limit.
        config["broker_transport_options"] = {"visibility_timeout": settings.task_time_limit_s + 600}
    return config
