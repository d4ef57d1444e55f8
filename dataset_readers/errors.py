"""What a dataset reader raises on purpose. Each message is written for the user, in the words the upload
check and the jobs have always shown; the readers know no HTTP status and no job, so each edge maps them:
the API to its own errors (an upload check to InvalidUpload, a preview to Conflict / NotFound /
InvalidRequest), the jobs to the engine's DatasetMismatchError.

None of them derives from ValueError or OSError: ``archives.unreadable_zip`` turns those into "cannot be
read as a zip archive", and must let a reader's own refusal through unchanged.
"""

from __future__ import annotations


class DatasetReadError(Exception):
    """Root of the errors the dataset readers raise on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class DatasetFormatError(DatasetReadError):
    """The file is damaged, unsafe, or not a dataset of its kind. The archive rules (``archives``) raise it
    for every archive they check, zipped models included: the rules are the same for every upload."""


class NoSuchSample(DatasetReadError):
    """A row was asked for beyond the dataset's samples."""


class SampleTooLarge(DatasetReadError):
    """One sample is larger than a row read will copy out (a preview reads small samples only)."""


class UnknownDatasetKind(DatasetReadError):
    """No reader is registered for a dataset kind."""
