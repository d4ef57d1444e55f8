"""Typed dependencies shared by the routes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from backend.db.session import session_factory
from backend.settings import Settings
from backend.storage import ArtifactStore


def get_app_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_session(request: Request) -> Iterator[Session]:
    settings: Settings = request.app.state.settings
    with session_factory(settings.resolved_database_url)() as session:
        yield session


def get_store(request: Request) -> ArtifactStore:
    store: ArtifactStore = request.app.state.store
    return store


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
SessionDep = Annotated[Session, Depends(get_session)]
StoreDep = Annotated[ArtifactStore, Depends(get_store)]
