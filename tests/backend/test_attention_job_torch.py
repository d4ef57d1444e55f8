"""Attention-map fidelity in a fidelity job on a torch.export pair (.pt2), run in-process by the real
handlers over the real app and Postgres: the tiny encoder of tests/support/attention_torch.py against its
4-bit-rounded copy. The document is stored, listed in the diagnostics, served typed and its numbers equal
scipy's divergences of the numpy re-implementation's attention maps; the step reads the programs the job
loaded (no file loaded again). A TorchScript pair with attention leaves a document whose error says why,
once; a classifier ending in a softmax (TorchScript or .pt2) leaves none."""

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
from tests.backend.test_attention_job import stored
from tests.conftest import truncate_all
from tests.support.attention_torch import (
    SoftmaxCNN,
    export_encoder,
    numpy_attention,
    round_weights,
    sample_inputs,
    scipy_divergences,
    tiny_encoder,
)
from tests.support.fidelity_api import FidelityApi
from tests.support.services import stack_settings
from worker.engine.attention.torch_side import TORCHSCRIPT_NOTE
from worker.engine.formats.exporters import export_torch_program, export_torchscript

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


def _api(settings: Settings, pg_url: str, files: tuple[Path, Path, Path]) -> Iterator[FidelityApi]:
    truncate_all(pg_url)
    with TestClient(create_app(settings, run_reaper=False)) as http:
        yield FidelityApi(http, settings, "attention", *files)
    truncate_all(pg_url)


@pytest.fixture
def api(settings: Settings, pg_url: str, folder: Path) -> Iterator[FidelityApi]:
    yield from _api(
        settings, pg_url, (folder / "golden.pt2", folder / "compressed.pt2", folder / "tokens.npz")
    )


def test_a_pt2_pair_stores_the_document(
    api: FidelityApi, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_reload(*args: object, **kwargs: object) -> None:
        raise AssertionError("the attention step loaded a model file again")

    monkeypatch.setattr("worker.engine.attention.torch_side.load_model", no_reload)
    job_id = api.fidelity(layer_profile=False)
    assert "attention" in api.get(f"/jobs/{job_id}/fidelity").json()["diagnostics"]
    answer = api.get(f"/jobs/{job_id}/fidelity/attention")
    assert answer.status_code == 200, answer.text
    served = answer.json()
    document = stored(api.settings, job_id)
    assert document is not None and "error" not in document, document
    assert served == {"job_id": job_id, "error": None, **document}
    FidelityAttentionOut.model_validate(served)
    # The reference: every block's maps recomputed from the weights in float64 numpy, KL / JS from scipy.
    data = np.load(folder / "tokens.npz")
    x, mask = data["x"], data["attention_mask"]
    keep = mask != 0
    kl_ref, js_ref = scipy_divergences(
        numpy_attention(tiny_encoder(), x, mask),
        numpy_attention(round_weights(tiny_encoder()), x, mask),
        keep,
    )
    assert (served["heads"], len(served["layers"]), served["n_samples"]) == (4, 3, N_SAMPLES)
    assert served["mask_input"] == "attention_mask" and served["n_queries"] == int(keep.sum())
    # Measured as in tests/engine/test_attention_torch.py: torch's float32 maps within 5e-6 relative.
    np.testing.assert_allclose([layer["kl"] for layer in served["layers"]], kl_ref, rtol=5e-5)
    np.testing.assert_allclose([layer["js"] for layer in served["layers"]], js_ref, rtol=5e-5)


@pytest.fixture
def script_api(settings: Settings, pg_url: str, folder: Path) -> Iterator[FidelityApi]:
    x, mask = sample_inputs(2)
    for model, name in ((tiny_encoder(), "golden.pt"), (round_weights(tiny_encoder()), "compressed.pt")):
        with pytest.warns(torch.jit.TracerWarning):
            traced = torch.jit.trace(model, (torch.from_numpy(x), torch.from_numpy(mask)), check_trace=False)
        torch.jit.save(traced, str(folder / name))
    yield from _api(settings, pg_url, (folder / "golden.pt", folder / "compressed.pt", folder / "tokens.npz"))


def test_a_torchscript_pair_says_why_once(script_api: FidelityApi) -> None:
    job_id = script_api.fidelity(layer_profile=False)
    served = script_api.get(f"/jobs/{job_id}/fidelity/attention").json()
    assert served["layers"] == [] and served["error"] == f"both models: {TORCHSCRIPT_NOTE}"


@pytest.mark.parametrize("fmt", ["torchscript", "torch_export"])
def test_a_softmax_classifier_gets_no_document(
    settings: Settings, pg_url: str, tmp_path: Path, fmt: str
) -> None:
    """The digits CNN ending in torch.softmax: a softmax but no attention, so nothing is stored."""
    torch.manual_seed(0)
    model = SoftmaxCNN().eval()
    x = np.random.default_rng(0).random((6, 1, 8, 8), dtype=np.float32)
    np.savez(tmp_path / "digits.npz", input=x)
    export = export_torchscript if fmt == "torchscript" else export_torch_program
    suffix = ".pt" if fmt == "torchscript" else ".pt2"
    files = (
        export(model, x[:2], tmp_path / f"golden{suffix}"),
        export(model, x[:2], tmp_path / f"compressed{suffix}"),
    )
    for api in _api(settings, pg_url, (*files, tmp_path / "digits.npz")):
        job_id = api.fidelity(layer_profile=False)
        assert "attention" not in api.get(f"/jobs/{job_id}/fidelity").json()["diagnostics"]
        assert api.get(f"/jobs/{job_id}/fidelity/attention").status_code == 404
        assert stored(api.settings, job_id) is None
