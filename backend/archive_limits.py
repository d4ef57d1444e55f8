"""The archive limits (dataset_readers.archives.ArchiveLimits) of a process's settings.

The rules live in dataset_readers, which reads no settings so that the engine side can import it without
the service; the API and the workers turn their settings (KNEEBOARD_ARCHIVE_*) into limits here.
"""

from __future__ import annotations

from backend.settings import Settings, get_settings
from dataset_readers.archives import ArchiveLimits


def archive_limits(settings: Settings | None = None) -> ArchiveLimits:
    """The limits of these settings; by default this process's (the API's and the workers' are the same)."""
    settings = settings or get_settings()
    return ArchiveLimits(
        max_members=settings.archive_max_members,
        max_uncompressed_bytes=settings.resolved_archive_max_uncompressed_bytes,
        max_expansion=settings.archive_max_expansion,
    )
