"""The embedded mode's broker: kombu's filesystem transport, made safe against half-written messages.

kombu's filesystem transport creates a message file, then locks and writes it; its reader lists the
folder, moves a file away and parses it, without taking the lock. A reader that moves a file between the
writer's ``open`` and its ``write`` reads nothing and raises ``JSONDecodeError`` out of ``_get``, which
kills a Celery worker ("Unrecoverable error"), and the message is lost as well (the writer goes on writing
into the moved file). That is kombu issue #1551 (https://github.com/celery/kombu/issues/1551, open), and
what stranded the embedded mode in issue 32.

Here a producer writes the message under a name the readers ignore, then renames it into place
(``os.replace``, atomic on one file system): a reader sees whole messages or none. A reader claims a file
by renaming it into a claimed folder beside the queue (atomic too: of several consumers exactly one wins);
a file it cannot parse (only a producer of the unfixed transport, or a damaged disk, can leave one) is not
fatal: a young one is put back for a later poll (its writer may still be writing), one that stays
unreadable for UNREADABLE_GIVE_UP_S is set aside in ``unreadable/`` with an error logged.

Delivery is once per message while consumers live: a consumer killed between claiming a file and
deleting it (microseconds) loses that message, as kombu's own transport does. Jobs do not depend on it:
the job row is the truth and the API's reaper sends a job or chunk whose message went missing again
(docs/design-notes.md, "The embedded broker").

Registered as kombu's ``safefs://`` transport (backend.celery_config uses it for the embedded broker).
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem, virtual
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

log = logging.getLogger(__name__)

SCHEME = "safefs"
CLAIMED = ".claimed"
UNREADABLE = "unreadable"
UNREADABLE_GIVE_UP_S = 60.0
"""A message file still unreadable this long after it was last written is set aside, not retried."""


class Channel(filesystem.Channel):
    """kombu's filesystem channel with an atomic put and a reader that never raises on a bad file."""

    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> Any:  # type: ignore[override]  # kombu's stubs disagree
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"  # kombu's order and format
        folder = str(self.data_folder_out)
        # A leading dot: `name.partition('.')[2]` is then never "<queue>.msg", so no reader takes it.
        partial = os.path.join(folder, f".{uuid.uuid4().hex}.writing")
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, os.path.join(folder, name))
        except OSError as exc:
            raise ChannelError(f"Cannot add message {name!r} to {folder!r}") from exc

    def _get(self, queue: Any, timeout: Any = None) -> Any:
        wanted = f"{queue}.msg"
        folder = str(self.data_folder_in)
        claimed = os.path.join(folder, CLAIMED)
        os.makedirs(claimed, exist_ok=True)
        for filename in sorted(os.listdir(folder)):
            if filename.partition(".")[2] != wanted:
                continue
            mine = os.path.join(claimed, filename)
            try:
                os.rename(os.path.join(folder, filename), mine)
            except OSError:  # another consumer took it first
                continue
            try:
                with open(mine, "rb") as f:
                    payload = f.read()
                message = loads(bytes_to_str(payload))
            except (OSError, ValueError) as exc:
                self._unreadable(folder, filename, mine, exc)
                continue
            os.remove(mine)
            return message
        raise Empty()

    def _unreadable(self, folder: str, filename: str, path: str, exc: Exception) -> None:
        """Put a message file back for a later poll, or, once it has stayed unreadable too long, aside."""
        try:
            age = time.time() - os.stat(path).st_mtime
            if age < UNREADABLE_GIVE_UP_S:
                os.rename(path, os.path.join(folder, filename))
                return
            aside = os.path.join(folder, UNREADABLE)
            os.makedirs(aside, exist_ok=True)
            os.rename(path, os.path.join(aside, filename))
            log.error(
                "broker: message %s unreadable for %.0f s (%s: %s): moved to %s",
                filename, age, type(exc).__name__, exc, aside,
            )  # fmt: skip
        except OSError:  # gone meanwhile: nothing to keep
            pass


class Transport(filesystem.Transport):
    Channel = Channel
    global_state = virtual.BrokerState()
    driver_type = SCHEME
    driver_name = SCHEME


def register() -> None:
    """Make ``safefs://`` resolve to this transport in this process (idempotent)."""
    TRANSPORT_ALIASES[SCHEME] = f"{__name__}:Transport"


register()
