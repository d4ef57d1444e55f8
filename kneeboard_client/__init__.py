"""Kneeboard's Python client (typed, thin over httpx) and `kneeboard check`, installable without the server:
`pip install ./kneeboard_client`."""

from kneeboard_client.client import FINAL, ApiError, KneeboardClient
from kneeboard_client.errors import CheckError

__all__ = ["FINAL", "ApiError", "CheckError", "KneeboardClient"]
