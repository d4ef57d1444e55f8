"""The engine's exceptions. The worker maps them to a job's error message; their text is shown to users,
so each says what went wrong and what to do."""


class EngineError(Exception):
    """Root of every error the engine raises on purpose."""


class ModelLoadError(EngineError):
    """A model file could not be loaded by its runtime."""


class DatasetMismatchError(EngineError):
    """A dataset does not fit a model (names, shapes, dtypes, lengths)."""


class OutputMismatchError(EngineError):
    """Two models that are compared produce outputs that cannot be compared (names, shapes)."""


class JobCancelled(EngineError):
    """Raised from a progress callback to stop work that a user cancelled."""
