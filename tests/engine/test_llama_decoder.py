"""The LLaMA-style decoder the LLM bench builds at 0.56 B parameters (tests/support/llama_decoder.py), here at a
tiny size: its ONNX export with a KV cache must give torch's logits, the engine's cached generation must give
the tokens of a plain torch loop without a cache (rotary positions read from `position_ids` both ways), and a
file over the protobuf limit must be written with external data that onnxruntime reads back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.numpy_helper
import pytest
import torch

from tests.support.llama_decoder import LlamaConfig, LlamaDecoder, export_with_cache, reference_greedy
from worker.engine.loaders.onnx_runner import load_onnx
from worker.engine.sweep.export_common import save_proto
from worker.engine.tasks.generation import GenerationConfig, generate

TINY = LlamaConfig(vocabulary=50, width=32, layers=2, heads=4, ffn=48)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[LlamaDecoder, Path]:
    model = LlamaDecoder(TINY, seed=3).eval()
    with torch.no_grad():  # larger weights than the 0.02 initialiser, so the argmax is not a near tie
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(10)
    return model, export_with_cache(model, tmp_path_factory.mktemp("llama") / "tiny.onnx")


def test_the_parameter_count_is_the_modules(tiny: tuple[LlamaDecoder, Path]) -> None:
    model, _ = tiny
    assert TINY.parameters == sum(p.numel() for p in model.parameters())


def test_the_cached_export_gives_torchs_logits(tiny: tuple[LlamaDecoder, Path]) -> None:
    model, path = tiny
    runner = load_onnx(path, 1)
    ids = np.random.default_rng(0).integers(0, TINY.vocabulary, size=(3, 9))
    past = {
        f"past_key_values.{i}.{part}": np.zeros((3, TINY.heads, 0, TINY.head_size), np.float32)
        for i in range(TINY.layers)
        for part in ("key", "value")
    }
    positions = np.broadcast_to(np.arange(9), (3, 9)).astype(np.int64)
    out = runner.run(
        {"input_ids": ids, "attention_mask": np.ones_like(ids), "position_ids": positions, **past}
    )
    with torch.inference_mode():
        expected = model(torch.from_numpy(ids)).numpy()
    np.testing.assert_allclose(out["logits"], expected, rtol=1e-4, atol=1e-4)


def test_cached_generation_gives_the_plain_torch_loops_tokens(tiny: tuple[LlamaDecoder, Path]) -> None:
    model, path = tiny
    rng = np.random.default_rng(1)
    prompts = [rng.integers(0, TINY.vocabulary, size=n) for n in (4, 7, 5)]  # left padding mixes lengths
    result = generate(load_onnx(path, 1), prompts, GenerationConfig(new_tokens=6, batch_size=3))
    assert result.cached
    expected = [reference_greedy(model, p.tolist(), 6) for p in prompts]
    assert [list(map(int, t)) for t in result.tokens] == expected


def test_a_file_over_the_limit_is_saved_with_external_data(
    tiny: tuple[LlamaDecoder, Path], tmp_path: Path
) -> None:
    _, path = tiny
    proto = onnx.load(str(path))
    before = [onnx.numpy_helper.to_array(t) for t in proto.graph.initializer]
    target = tmp_path / "big.onnx"
    save_proto(proto, target, limit_bytes=1000)  # the tiny file stands in for one over protobuf's 2 GB
    # the caller's graph keeps its weights (onnx.save moves them out of the message)
    after = [onnx.numpy_helper.to_array(t) for t in proto.graph.initializer]
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
    assert not any(t.external_data for t in proto.graph.initializer)
    data = tmp_path / "big.onnx.data"
    assert data.exists() and data.stat().st_size > 0.9 * TINY.parameters * 4
    assert target.stat().st_size < 100_000
    ids = np.zeros((1, 2), dtype=np.int64)
    feeds: dict[str, np.ndarray] = {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "position_ids": np.arange(2)[None],
        **{
            f"past_key_values.{i}.{part}": np.zeros((1, TINY.heads, 0, TINY.head_size), np.float32)
            for i in range(TINY.layers)
            for part in ("key", "value")
        },
    }
    np.testing.assert_array_equal(
        load_onnx(target, 1).run(feeds)["logits"], load_onnx(path, 1).run(feeds)["logits"]
    )


def test_a_batch_of_big_outputs_is_folded_in_slices_with_the_same_report(
    tiny: tuple[LlamaDecoder, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench_llm's logits (8 x 128 x 32 000 a batch) are folded a sample at a time to bound the float64 copies;
    here a tiny SLICE_BYTES forces the same on the tiny decoder: every figure and per-sample value is the one
    a whole-batch fold gives (up to float64 summation order)."""
    from worker.engine.fidelity import accumulators
    from worker.engine.fidelity.compare import FidelityParams, compare_models
    from worker.engine.tasks.generation.teacher_forced import teacher_forced

    model, path = tiny
    noisy = LlamaDecoder(TINY, seed=3).eval()
    with torch.no_grad():
        for p, q in zip(noisy.parameters(), model.parameters(), strict=True):
            p.copy_(q + 0.05 * torch.randn_like(q) * (q.dim() == 2))
    other = export_with_cache(noisy, path.with_name("noisy.onnx"))
    ids = np.random.default_rng(2).integers(0, TINY.vocabulary, size=(10, 9))
    mask = np.ones_like(ids)
    mask[3, :2] = 0  # a left-padded row: the mask must follow its sample into its slice
    arrays = {"input_ids": ids, "attention_mask": mask}
    params = FidelityParams(batch_size=4, task="language_model")

    def report() -> tuple[Any, dict[str, np.ndarray]]:
        out = compare_models(
            teacher_forced(load_onnx(path, 1)), teacher_forced(load_onnx(other, 1)), arrays, None, params
        )
        return out.summary_dict(), out.per_sample

    whole, whole_rows = report()
    monkeypatch.setattr(accumulators, "SLICE_BYTES", 9 * TINY.vocabulary * 8)  # one sample a fold
    sliced, sliced_rows = report()
    assert whole_rows.keys() == sliced_rows.keys()
    for key in whole_rows:
        np.testing.assert_allclose(sliced_rows[key], whole_rows[key], rtol=1e-12, equal_nan=True)
    assert _numbers(sliced) == pytest.approx(_numbers(whole), rel=1e-9, nan_ok=True)


def _numbers(doc: Any, prefix: str = "") -> dict[str, float]:
    """Every number of a JSON-like document by its path."""
    if isinstance(doc, dict):
        return {k: v for key, value in doc.items() for k, v in _numbers(value, f"{prefix}/{key}").items()}
    if isinstance(doc, list):
        return {k: v for i, value in enumerate(doc) for k, v in _numbers(value, f"{prefix}/{i}").items()}
    if isinstance(doc, bool) or not isinstance(doc, int | float):
        return {}
    return {prefix: float(doc)}
