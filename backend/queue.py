"""Enqueue jobs by task name. The API never imports worker code.

Also how the reaper notices that the broker lost its messages (`BrokerWatch`): Redis without persistence
forgets every queued message when it restarts, and nothing else would tell us.
"""

from __future__ import annotations

import logging
import uuid
from datetime import UTC, datetime
from functools import lru_cache

from celery import Celery
from kombu.exceptions import ConnectionError as KombuConnectionError
from kombu.exceptions import OperationalError as KombuOperationalError

from backend.celery_config import celery_config
from backend.contracts import CHUNK_TASK, MERGE_TASK, TASK_NAMES, JobKind
from backend.settings import Settings

log = logging.getLogger(__name__)


@lru_cache(maxsize=4)
def _client(settings: Settings) -> Celery:
    app = Celery("kneeboard-api")
    app.conf.update(celery_config(settings))
    return app


def enqueue_job(settings: Settings, kind: JobKind, job_id: uuid.UUID) -> None:
    """Send the job's task. Call only after the job row is committed, so a fast worker finds it."""
    _client(settings).send_task(TASK_NAMES[kind], args=[str(job_id)], queue=settings.queue_name)


def enqueue_chunk(settings: Settings, job_id: uuid.UUID, index: int, queue: str | None = None) -> None:
    """Send one chunk of a fan-out job (its row must be committed), to `queue` (a device's) or the pool's."""
    _client(settings).send_task(CHUNK_TASK, args=[str(job_id), index], queue=queue or settings.queue_name)


def enqueue_merge(settings: Settings, job_id: uuid.UUID) -> None:
    _client(settings).send_task(MERGE_TASK, args=[str(job_id)], queue=settings.queue_name)


def broker_error(error: BaseException) -> bool:
    """Whether `error` is the broker being unreachable (kombu's recoverable connection error, or the Redis
    client's, or a socket error; kombu's InconsistencyError: a Redis that restarted empty before the workers
    declared their queues again): the message was not sent, and the reaper's re-send will send it."""
    if isinstance(error, KombuOperationalError | KombuConnectionError | ConnectionError | TimeoutError):
        return True
    try:
        import redis.exceptions
    except ImportError:  # pragma: no cover - redis is installed with celery[redis]
        return False
    return isinstance(error, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError)


class BrokerWatch:
    """Notices that the broker lost its queued messages (a Redis that keeps nothing on disk restarted, or
    was flushed): a marker key, written once with the time it was written, is gone or was written anew.
    The reaper then re-sends every queued job and chunk sent before the new key, at once, instead of waiting
    for the backed-off re-send. Every API process watches; since they all read the same key, they all
    re-send what was sent before the same moment, and the compare-and-set on enqueued_at lets only the first
    one send each message. With Redis persistence (appendonly) the key and the messages survive a restart,
    and nothing is re-sent."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.key = f"kneeboard:broker-epoch:{settings.queue_name}"
        self.epoch: str | None = None

    def lost(self) -> datetime | None:
        """When the broker started afresh, if its data was lost since the last call; else None. Raises when
        the broker cannot be reached."""
        url = self.settings.resolved_broker_url
        if not url.startswith(("redis://", "rediss://", "unix://")):
            return None  # the filesystem transport keeps its messages as files
        import redis

        client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        try:
            client.set(self.key, f"{uuid.uuid4().hex} {datetime.now(UTC).isoformat()}", nx=True)
            raw = client.get(self.key)
        finally:
            client.close()
        epoch = raw.decode() if isinstance(raw, bytes) else str(raw)
        seen, self.epoch = self.epoch, epoch
        if seen is None or seen == epoch:
            return None
        log.warning("the broker lost its data (restarted without persistence?): re-sending queued work")
        try:
            return datetime.fromisoformat(epoch.split(" ", 1)[1])
        except (IndexError, ValueError):  # a key written otherwise: re-send everything sent until now
            return datetime.now(UTC)
