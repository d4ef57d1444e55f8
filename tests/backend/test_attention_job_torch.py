"""Attention-map fidelity in a fidelity job on a torch.export pair (.pt2), run in-process by the real
handlers over the real app and Postgres: the tiny encoder of tests/support/attention_torch.py against its
4-bit-rounded copy. The document is stored, listed in the diagnostics, served typed and equal to the
engine's result on the same arrays (whose numbers tests/engine/test_attention_torch.py checks against a
numpy re-implementation); a TorchScript pair with attention leaves a document whose error says why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from backend.api.app import create_app
from backend.api.result_schemas.attention import FidelityAttentionOut
from backend.settings import Settings
from tests.backend.test_attention_job import Api, stored
from tests.conftest import truncate_all
from tests.support.attention_torch import export_encoder, round_weights, sample_inputs, tiny_encoder
from tests.support.services import stack_settings
from worker.engine.attention import torch_attention_fidelity
from worker.engine.attention.torch_side import TORCHSCRIPT_NOTE
from worker.runtime import json_safe

N_SAMPLES = 9


@pytest.fixture(scope="module")
def settings(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return stack_settings(pg_url, tmp_path_factory.mktemp("attention_torch_job"), "attention-torch")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("attention_torch_models")
    x, mask = sample_inputs(N_SAMPLES, seed=3)
    np.savez(folder / "tokens.npz", x=x, attention_mask=mask)
    export_encoder(tiny_encoder(), folder / "golden.pt2")
    export_encoder(round_weights(tiny_encoder()), folder / "compressed.pt2")
    return folder


def _api(settings: Settings, pg_url: str, files: tuple[Path, Path, Path]) -> Iterator[Api]:
    truncate_all(pg_url)
    with TestClient(create_app(settings, run_reaper=False)) as http:
        yield Api(http, settings, files)
    truncate_all(pg_url)


@pytest.fixture
def api(settings: Settings, pg_url: str, folder: Path) -> Iterator[Api]:
    yield from _api(
        settings, pg_url, (folder / "golden.pt2", folder / "compressed.pt2", folder / "tokens.npz")
    )


def test_a_pt2_pair_stores_the_document(api: Api, folder: Path) -> None:
    job_id = api.fidelity()
    assert "attention" in api.get(f"/jobs/{job_id}/fidelity").json()["diagnostics"]
    answer = api.get(f"/jobs/{job_id}/fidelity/attention")
    assert answer.status_code == 200, answer.text
    served = answer.json()
    document = stored(api.settings, job_id)
    assert document is not None and "error" not in document, document
    assert served == {"job_id": job_id, "error": None, **document}
    FidelityAttentionOut.model_validate(served)
    expected = torch_attention_fidelity(
        folder / "golden.pt2", folder / "compressed.pt2", dict(np.load(folder / "tokens.npz"))
    ).document
    assert expected is not None
    assert (served["heads"], len(served["layers"]), served["n_samples"]) == (4, 3, N_SAMPLES)
    assert served["mask_input"] == "attention_mask" and served["n_queries"] == expected["n_queries"]
    for layer, want in zip(served["layers"], json_safe(expected)["layers"], strict=True):
        assert layer["golden_node"] == want["golden_node"]
        np.testing.assert_allclose(layer["kl"], want["kl"], rtol=1e-6)
        np.testing.assert_allclose(layer["js"], want["js"], rtol=1e-6)


@pytest.fixture
def script_api(settings: Settings, pg_url: str, folder: Path) -> Iterator[Api]:
    x, mask = sample_inputs(2)
    for model, name in ((tiny_encoder(), "golden.pt"), (round_weights(tiny_encoder()), "compressed.pt")):
        with pytest.warns(torch.jit.TracerWarning):
            traced = torch.jit.trace(model, (torch.from_numpy(x), torch.from_numpy(mask)), check_trace=False)
        torch.jit.save(traced, str(folder / name))
    yield from _api(settings, pg_url, (folder / "golden.pt", folder / "compressed.pt", folder / "tokens.npz"))


def test_a_torchscript_pair_says_why(script_api: Api) -> None:
    job_id = script_api.fidelity()
    served = script_api.get(f"/jobs/{job_id}/fidelity/attention").json()
    assert served["layers"] == [] and TORCHSCRIPT_NOTE in served["error"]
