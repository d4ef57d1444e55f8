"""The in-process app fixtures the job tests share: module-scoped settings for the test Postgres and an
artifact folder of their own, and a TestClient of the real app (no reaper) on emptied tables. A test module
takes them with `settings, http = app_fixtures("its-name")`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.settings import Settings
from tests.conftest import truncate_all
from tests.support.services import stack_settings


def app_fixtures(name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(settings, http) fixtures; `name` labels the settings and their temporary folder."""

    @pytest.fixture(scope="module")
    def settings(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
        return stack_settings(pg_url, tmp_path_factory.mktemp(name.replace("-", "_")), name)

    @pytest.fixture
    def http(settings: Settings, pg_url: str) -> Iterator[TestClient]:
        truncate_all(pg_url)
        with TestClient(create_app(settings, run_reaper=False)) as client:
            yield client
        truncate_all(pg_url)

    return settings, http


def demo_bundle_fixtures(
    name: str,
) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    """(settings, http, bundle, api) fixtures (a test module binds all four names: pytest finds fixtures by
    name there): the app as `app_fixtures` makes it, the demo's digits CNN pair and test
    set written once per module, and a `FidelityApi` over them (a project named `name` holding the fp32 golden
    model, its int8 QDQ copy and the test set)."""
    from tests.support.fidelity_api import FidelityApi
    from worker.demo.models import DemoBundle, write_demo_bundle

    settings, http = app_fixtures(name)

    @pytest.fixture(scope="module")
    def bundle(tmp_path_factory: pytest.TempPathFactory) -> DemoBundle:
        return write_demo_bundle(tmp_path_factory.mktemp(f"{name.replace('-', '_')}_demo"))

    @pytest.fixture
    def api(settings: Settings, http: TestClient, bundle: DemoBundle) -> FidelityApi:
        return FidelityApi(http, settings, name, bundle.golden_onnx, bundle.int8_onnx, bundle.test_npz)

    return settings, http, bundle, api
