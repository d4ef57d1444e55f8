"""The Python client moved to the kneeboard_client package (installable without the server); this name is
kept for the demo seeder, benchmarks and tests that import it from here."""

from kneeboard_client.client import FINAL, ApiError, KneeboardClient

__all__ = ["FINAL", "ApiError", "KneeboardClient"]
