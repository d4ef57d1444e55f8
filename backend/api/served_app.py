"""The ASGI app as `kneeboard api` and `kneeboard up` serve it: the API with its reads gated to the
process's database pool (backend/api/request_slots.py). A factory, so that each uvicorn worker process
builds its own from the KNEEBOARD_* environment."""

from __future__ import annotations

from backend.api.app import create_app
from backend.api.request_slots import RequestSlots
from backend.settings import Settings, get_settings


def served_app(settings: Settings | None = None) -> RequestSlots:
    settings = settings or get_settings()
    return RequestSlots(create_app(settings), slots=settings.database_pool_size)
