"""The embedded broker (backend/embedded_broker.py): a half-written message cannot crash a worker, and a
hammer of 8 producers × 250 messages against a real Celery worker loses nothing (issue 32)."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from queue import Empty
from typing import Any

import pytest
from kombu import Connection

from backend import embedded_broker
from backend.celery_config import celery_config
from backend.settings import Settings
from tests.support.broker_hammer import hammer

QUEUE = "q"


def _channel(folder: Path, broker: str) -> Iterator[Any]:
    options = {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "control_folder": str(folder / "c"),
    }
    with Connection(broker, transport_options=options) as conn:
        yield conn.default_channel


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path


def _half_written(folder: Path) -> Path:
    """A message file as kombu's producer leaves it between its open() and its write(): empty."""
    path = folder / f"{round(time.monotonic() * 1000)}_0f0f0f0f-0000-0000-0000-000000000000.{QUEUE}.msg"
    path.touch()
    return path


def test_kombus_own_transport_crashes_on_a_half_written_message(folder: Path) -> None:
    """The bug itself (kombu issue #1551), so that the next test can fail."""
    _half_written(folder)
    for channel in _channel(folder, "filesystem://"):
        with pytest.raises(json.JSONDecodeError):
            channel._get(QUEUE)


def test_a_half_written_message_is_skipped_then_delivered_once_whole(folder: Path) -> None:
    path = _half_written(folder)
    for channel in _channel(folder, "safefs://"):
        with pytest.raises(Empty):
            channel._get(QUEUE)
        assert path.exists(), "put back for a later poll, not lost"
        path.write_text(json.dumps({"body": "whole"}))  # the producer finishes writing
        assert channel._get(QUEUE) == {"body": "whole"}
        with pytest.raises(Empty):
            channel._get(QUEUE)


def test_a_message_unreadable_for_long_is_set_aside_with_an_error(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _half_written(folder)
    path.write_text("{not json")
    old = time.time() - embedded_broker.UNREADABLE_GIVE_UP_S - 1
    os.utime(path, (old, old))
    for channel in _channel(folder, "safefs://"):
        channel._put(QUEUE, {"body": "next"})
        with caplog.at_level(logging.ERROR, logger="backend.embedded_broker"):
            assert channel._get(QUEUE) == {"body": "next"}, "a bad file does not block the queue"
    assert (folder / embedded_broker.UNREADABLE / path.name).exists() and not path.exists()
    assert "unreadable" in caplog.text


def test_a_put_leaves_only_whole_message_files(folder: Path) -> None:
    for channel in _channel(folder, "safefs://"):
        for i in range(50):
            channel._put(QUEUE, {"i": i})
    messages = sorted(p for p in folder.iterdir() if p.name.endswith(f".{QUEUE}.msg"))
    assert len(messages) == 50 and all(json.loads(p.read_text())["i"] >= 0 for p in messages)
    assert not [p for p in folder.iterdir() if p.name.endswith(".writing")]


def test_the_embedded_settings_use_it(tmp_path: Path) -> None:
    config = celery_config(Settings(data_dir=tmp_path, seed_demo=False))
    assert config["broker_url"] == "safefs://"
    assert config["broker_transport_options"]["polling_interval"] == 0.1


@pytest.mark.slow
def test_hammer_8_producers_x_250_messages_while_a_celery_worker_drains(tmp_path: Path) -> None:
    """Every message consumed exactly once (none lost, none twice), and the worker never died."""
    result = hammer(tmp_path, "safefs://", producers=8, per_producer=250)
    assert not result.crashed, result.worker_log[-3000:]
    assert result.lost == 0 and result.duplicated == 0, (result.lost, result.duplicated)
    assert len(result.received) == result.sent == 2000
    print(f"hammer: {result.sent} messages in {result.seconds:.1f} s ({result.sent / result.seconds:.0f}/s)")
