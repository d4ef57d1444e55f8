"""The language-model task (issue 31, next-token fidelity) on a causal character LM trained in the test on
bundled text (the Zen of Python, from the standard library's `this`) and its 4-bit copy, both run as ONNX:
every number equals torch's own log_softmax / kl_div / cross_entropy / topk computed in the test on the same
logits, masked padding included, and the trained golden model predicts the text far better than chance (so the
perplexities measure something)."""

from __future__ import annotations

import codecs
import math
import this
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from kneeboard_client.thresholds import Limit, check_limit, output_metrics
from worker.engine.compression import compress_module
from worker.engine.compression.configs import WeightQuant
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.formats.exporters import export_onnx
from worker.engine.jsonable import json_safe
from worker.engine.loaders.onnx_runner import load_onnx

TEXT = codecs.decode(this.s, "rot13")
CHARS = sorted(set(TEXT))
T = 32


class _CausalConvLM(torch.nn.Module):
    """Embedding, two causal convolutions (left padding: position t sees tokens up to t), a vocabulary head."""

    def __init__(self, vocabulary: int) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocabulary, 24)
        self.conv1 = torch.nn.Conv1d(24, 48, 4)
        self.conv2 = torch.nn.Conv1d(48, 48, 4)
        self.head = torch.nn.Conv1d(48, vocabulary, 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids).transpose(1, 2)
        x = torch.relu(self.conv1(F.pad(x, (3, 0))))
        x = torch.relu(self.conv2(F.pad(x, (3, 0))))
        return self.head(x).transpose(1, 2)  # (N, T, V)


@pytest.fixture(scope="module")
def lm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    folder = tmp_path_factory.mktemp("lm")
    ids = np.array([CHARS.index(c) for c in TEXT], dtype=np.int64)
    torch.manual_seed(0)
    model = _CausalConvLM(len(CHARS))
    optimiser = torch.optim.Adam(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    for _ in range(300):
        starts = rng.integers(0, len(ids) - T - 1, 32)
        batch = torch.from_numpy(np.stack([ids[s : s + T + 1] for s in starts]))
        loss = F.cross_entropy(model(batch[:, :-1]).reshape(-1, len(CHARS)), batch[:, 1:].reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    copy = compress_module(model, {n: WeightQuant(4) for n in ("conv1", "conv2", "head")})[0].eval()
    windows = np.stack([ids[s : s + T] for s in range(0, 24 * 29, 29)])
    mask = np.ones_like(windows)
    mask[::3, -7:] = 0  # every third sequence ends in padding
    golden = export_onnx(model, windows[:2], folder / "golden.onnx", "input_ids", "logits")
    compressed = export_onnx(copy, windows[:2], folder / "compressed.onnx", "input_ids", "logits")
    return golden, compressed, windows, mask


def _run(lm: tuple[Path, Path, np.ndarray, np.ndarray], **options: Any) -> Any:
    golden, compressed, ids, mask = lm
    params = FidelityParams(batch_size=5, task="language_model", task_options=options)
    data = {"input_ids": ids, "attention_mask": mask}
    return compare_models(load_onnx(golden, 1), load_onnx(compressed, 1), data, None, params)


def _reference(lm: tuple[Path, Path, np.ndarray, np.ndarray], k: int) -> dict[str, Any]:
    """Everything from torch on the two models' logits for the whole set at once."""
    golden, compressed, ids, mask = lm
    feeds = {"input_ids": ids}
    g = torch.from_numpy(load_onnx(golden, 1).run(feeds)["logits"]).double()
    c = torch.from_numpy(load_onnx(compressed, 1).run(feeds)["logits"]).double()
    lp, lq = torch.log_softmax(g, -1), torch.log_softmax(c, -1)
    kl = F.kl_div(lq, lp, log_target=True, reduction="none").sum(-1)  # KL(P‖Q) per position
    reverse = F.kl_div(lp, lq, log_target=True, reduction="none").sum(-1)
    keep = torch.from_numpy(mask).bool()
    follows = keep[:, :-1] & keep[:, 1:]
    target = torch.from_numpy(ids[:, 1:])
    nll_g = F.cross_entropy(g[:, :-1].transpose(1, 2), target, reduction="none")
    nll_c = F.cross_entropy(c[:, :-1].transpose(1, 2), target, reduction="none")
    top_g, top_c = g.topk(k, -1).indices, c.topk(k, -1).indices
    overlap = (top_g.unsqueeze(-1) == top_c.unsqueeze(-2)).any(-1).sum(-1).double() / k
    agree = (g.argmax(-1) == c.argmax(-1)).double()
    return {
        "kl_mean": kl[keep].mean().item(),
        "kl_reverse_mean": reverse[keep].mean().item(),
        "top1_agreement": agree[keep].mean().item(),
        "topk_overlap": overlap[keep].mean().item(),
        "nll_golden": nll_g[follows].mean().item(),
        "nll_compressed": nll_c[follows].mean().item(),
        "ppl_golden": math.exp(nll_g[follows].mean().item()),
        "kl_by_position": (kl * keep).sum(0) / keep.sum(0),
        "per_sample_kl": (kl * keep).sum(1) / keep.sum(1),
        "per_sample_nll_g": (nll_g * follows).sum(1) / follows.sum(1),
        "n_tokens": int(keep.sum()),
        "n_next": int(follows.sum()),
    }


def test_next_token_fidelity_equals_torch_on_the_same_logits(
    lm: tuple[Path, Path, np.ndarray, np.ndarray],
) -> None:
    report = _run(lm, top_k=3)
    block = json_safe(report.summary_dict())["outputs"]["logits"]["task"]
    ref = _reference(lm, 3)
    for key in (
        "kl_mean",
        "kl_reverse_mean",
        "top1_agreement",
        "topk_overlap",
        "nll_golden",
        "nll_compressed",
    ):
        assert block[key] == pytest.approx(ref[key], rel=1e-9, abs=1e-12), key
    assert block["ppl_golden"] == pytest.approx(ref["ppl_golden"], rel=1e-9)
    assert block["nll_delta"] == pytest.approx(ref["nll_compressed"] - ref["nll_golden"], rel=1e-9)
    assert (block["n_tokens"], block["n_next_tokens"]) == (ref["n_tokens"], ref["n_next"])
    assert np.allclose(block["kl_by_position"], ref["kl_by_position"].numpy(), rtol=1e-9, atol=1e-12)
    assert np.allclose(report.task_per_sample["kl_mean"], ref["per_sample_kl"].numpy(), rtol=1e-9)
    assert np.allclose(report.task_per_sample["nll_golden"], ref["per_sample_nll_g"].numpy(), rtol=1e-9)
    # the golden model learnt the text: far better than a uniform guess over the characters
    assert block["ppl_golden"] < len(CHARS) / 4
    assert block["kl_mean"] > 0 and block["top1_agreement"] < 1  # 4 bits moved the distributions


def test_kneeboard_check_gates_on_the_perplexity_change(
    lm: tuple[Path, Path, np.ndarray, np.ndarray],
) -> None:
    summary = json_safe(_run(lm).summary_dict())
    _, metrics = output_metrics(summary, None)
    delta = metrics["task"]["ppl_delta"]
    assert check_limit(metrics, Limit("ppl_delta", "max", delta + 1e-6)).passed
    assert not check_limit(metrics, Limit("ppl_delta", "max", delta - 1e-6)).passed


def test_a_wrong_mapping_stops_the_job_saying_why(lm: tuple[Path, Path, np.ndarray, np.ndarray]) -> None:
    golden, compressed, ids, _ = lm
    params = FidelityParams(task="language_model", task_options={"input_ids": "tokens"})
    with pytest.raises(DatasetMismatchError, match="reads the token ids from the dataset array 'tokens'"):
        compare_models(load_onnx(golden, 1), load_onnx(compressed, 1), {"input_ids": ids}, None, params)
    params = FidelityParams(task="language_model", task_options={"output": "hidden"})
    with pytest.raises(OutputMismatchError, match="no output 'hidden'"):
        compare_models(load_onnx(golden, 1), load_onnx(compressed, 1), {"input_ids": ids}, None, params)
