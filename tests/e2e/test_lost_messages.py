"""A queued job whose message the broker lost is sent again by the API's reaper and completes, on Postgres +
Redis and on the embedded mode (SQLite + the embedded broker): issue 32 found the embedded reaper failing
every round (SQLite's naive datetimes), so that no queued job was ever sent again there."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.e2e.conftest import Stack
from tests.support.services import REDIS_URL

pytestmark = pytest.mark.e2e

RESEND_S = 3.0


def _messages(stack: Stack) -> list[str]:
    """The job messages waiting in the stack's queue (message files, or Redis list entries)."""
    queue = stack.settings.queue_name
    if stack.settings.uses_filesystem_broker:
        return [p.read_text() for p in Path(stack.settings.broker_folder).glob(f"*.{queue}.msg")]
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    return [str(m) for key in client.scan_iter(match=f"{queue}*") for m in client.lrange(key, 0, -1)]


def _lose_messages(stack: Stack) -> int:
    """What a broker that lost its queue does: the stack's queued messages are gone."""
    queue = stack.settings.queue_name
    if stack.settings.uses_filesystem_broker:
        files = list(Path(stack.settings.broker_folder).glob(f"*.{queue}.msg"))
        for path in files:
            path.unlink()
        return len(files)
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{queue}*"))
    lost = sum(int(client.llen(key)) for key in keys)
    client.delete(*keys)
    return lost


def test_a_job_whose_message_was_lost_is_sent_again_and_completes(
    make_each_stack: Any, demo_files: Any
) -> None:
    stack: Stack = make_each_stack(queued_resend_s=RESEND_S, queued_resend_max_s=RESEND_S)
    worker = stack.add_worker("w1")
    c = stack.client
    project = c.create_project("lost")
    golden = c.upload_model(project["id"], demo_files.golden_onnx, name="golden")
    compressed = c.upload_model(project["id"], demo_files.int8_onnx, name="int8")
    dataset = c.upload_dataset(project["id"], demo_files.test_npz)
    for model in (golden, compressed):
        assert c.wait_model(model["id"], timeout=120)["status"] == "ready"
    worker.stop()  # no consumer: the job's message waits in the broker

    params = {
        "golden_model_id": golden["id"],
        "compressed_model_id": compressed["id"],
        "dataset_id": dataset["id"],
    }
    job = c.create_job(project["id"], "fidelity", params)
    deadline = time.monotonic() + 30
    while not [m for m in _messages(stack) if job["id"] in m]:
        assert time.monotonic() < deadline, "the job's message never reached the broker"
        time.sleep(0.1)
    assert _lose_messages(stack) >= 1
    lost_at = time.monotonic()
    assert _messages(stack) == []

    stack.add_worker("w2")
    done = c.wait_job(job["id"], timeout=180)
    assert done["status"] == "succeeded", done
    assert done["attempts"] == 1, "delivered once: only the re-sent message existed"
    assert "reaper: requeued or sent again" in stack.api.log()
    assert "reaper round failed" not in stack.api.log(), stack.api.log()[-3000:]
    print(f"lost message re-sent and job done {time.monotonic() - lost_at:.1f} s after the loss")
