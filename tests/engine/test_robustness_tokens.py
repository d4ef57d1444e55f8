"""The token_replacement robustness slice (worker/engine/robustness/tokens.py): against a numpy
re-implementation from the same seeded block generators; padding (attention mask 0) and the detected
special ids ([CLS], [SEP]) never replaced; which arrays count as token ids. The MiniLM encoder (fp32 vs a
third party's int8 ONNX) runs the slice end to end, its MSE and cosine checked against onnxruntime
sessions of our own on the replaced ids."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from tests.support.pretrained_minilm import minilm_fp32_onnx, minilm_int8_onnx, tokenize
from worker.engine.fidelity.compare import FidelityParams, compare_models
from worker.engine.loaders import OnnxRunner, load_model
from worker.engine.robustness import SEVERITIES, SLICES, RobustnessParams, corrupt, evaluate_robustness
from worker.engine.robustness.tokens import is_token_ids, token_stats
from worker.engine.robustness.transforms import block_rng, block_rows

CLS, SEP, PAD = 101, 102, 0
SEED = 9


def sentences(n: int, length: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """BERT-like ids: [CLS] words [SEP] then padding, lengths varying; and their attention mask."""
    rng = np.random.default_rng(seed)
    ids = np.full((n, length), PAD, dtype=np.int64)
    mask = np.zeros((n, length), dtype=np.int64)
    for i in range(n):
        used = int(rng.integers(4, length + 1))
        ids[i, :used] = [CLS, *rng.integers(1000, 1400, size=used - 2), SEP]
        mask[i, :used] = 1
    return ids, mask


def test_specials_and_pool_are_found_from_the_data() -> None:
    ids, mask = sentences(300, 12)
    stats = token_stats(ids, mask, chunk=64)
    np.testing.assert_array_equal(stats.special, [CLS, SEP])
    expected = np.unique(ids[(mask == 1) & (ids != CLS) & (ids != SEP)])
    np.testing.assert_array_equal(stats.pool, expected)
    assert PAD not in stats.pool  # padding is never attended
    # Without a shared first or last id there are no specials.
    plain = np.random.default_rng(1).integers(5, 50, size=(40, 6))
    assert token_stats(plain, None).special.size == 0


def test_which_arrays_are_token_ids() -> None:
    ids = np.zeros((2, 5), dtype=np.int64)
    assert is_token_ids("input_ids", ids) and is_token_ids("tokens", ids.astype(np.int32))
    for name in ("attention_mask", "token_type_ids", "position_ids", "segment_ids"):
        assert not is_token_ids(name, ids)
    assert not is_token_ids("input_ids", ids.astype(np.float32)) and not is_token_ids("x", ids[:, :, None])


@pytest.mark.parametrize("severity", SEVERITIES)
def test_replacement_is_the_numpy_reimplementation(severity: int) -> None:
    length = 12
    rows = block_rows((2, length))
    n = rows + 50  # two blocks
    ids, mask = sentences(n, length, seed=2)
    stats = token_stats(ids, mask)
    indices = np.arange(rows - 100, n)  # straddles the block boundary
    ours = corrupt("token_replacement", severity, ids[indices], indices, stats, SEED, mask=mask[indices])

    rate = SLICES["token_replacement"].values[severity - 1]
    pool = np.unique(ids[(mask == 1) & (ids != CLS) & (ids != SEP)])
    expected = ids[indices].copy()
    for block in (0, 1):
        rng = block_rng(SEED, "token_replacement", severity, block)
        uniform = rng.random((rows, length))
        pick = rng.integers(0, len(pool), size=(rows, length))
        for out_row, index in enumerate(indices):
            if index // rows != block:
                continue
            r = index % rows
            for t in range(length):
                token = ids[index, t]
                if mask[index, t] == 1 and token not in (CLS, SEP) and uniform[r, t] < rate:
                    expected[out_row, t] = pool[pick[r, t]]
    np.testing.assert_array_equal(ours, expected)
    assert ours.dtype == ids.dtype

    sub_ids, sub_mask = ids[indices], mask[indices]
    np.testing.assert_array_equal(ours[sub_mask == 0], PAD)  # padding kept
    np.testing.assert_array_equal(ours[sub_ids == CLS], CLS)  # specials kept
    np.testing.assert_array_equal(ours[sub_ids == SEP], SEP)
    assert not np.isin(ours[(sub_ids != CLS) & (sub_ids != SEP)], [CLS, SEP]).any()  # never drawn
    eligible = (sub_mask == 1) & (sub_ids != CLS) & (sub_ids != SEP)
    changed = (ours != sub_ids)[eligible].mean()
    # 1 in 400 draws equals the original id; ~1400 eligible tokens: the share is within 3 std of the rate.
    assert changed == pytest.approx(rate * (1 - 1 / len(pool)), abs=3 * np.sqrt(rate / eligible.sum()))


def test_batches_do_not_change_a_samples_replacement() -> None:
    ids, mask = sentences(30, 10)
    stats = token_stats(ids, mask)
    idx = np.arange(30)
    whole = corrupt("token_replacement", 3, ids, idx, stats, SEED, mask=mask)
    pieces = np.concatenate(
        [corrupt("token_replacement", 3, ids[i : i + 7], idx[i : i + 7], stats, SEED, mask=mask[i : i + 7])
         for i in range(0, 30, 7)]
    )  # fmt: skip
    np.testing.assert_array_equal(whole, pieces)
    assert not np.array_equal(whole, ids)


SENTENCES = (
    "A man is playing a guitar on stage.",
    "The cat is sleeping on the sofa.",
    "The stock market fell sharply this morning.",
    "How do I reset my password?",
    "It is raining heavily in the city today.",
    "Quantized models run faster on phones.",
    "Compressing a network to int8 makes it quicker on mobile devices.",
    "A kitten naps on the couch.",
)


def _hidden(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0].astype(np.float64)


@pytest.mark.slow
def test_minilm_token_replacement(tmp_path_factory: pytest.TempPathFactory) -> None:
    fp32, int8 = minilm_fp32_onnx(tmp_path_factory.mktemp("minilm_tokens")), minilm_int8_onnx()
    feeds = tokenize(SENTENCES)
    golden, compressed = load_model(fp32, "onnx"), load_model(int8, "onnx")
    try:
        params = FidelityParams(batch_size=4)
        clean = compare_models(golden, compressed, feeds, None, params)
        kind = clean.outputs[clean.primary_output]["kind"]
        doc = evaluate_robustness(
            golden, compressed, feeds, None, params, clean.per_sample, kind,
            RobustnessParams(slices=("token_replacement", "gaussian_noise"), seed=SEED),
        )  # fmt: skip
    finally:
        for runner in (golden, compressed):
            if isinstance(runner, OnnxRunner):
                runner.close()
    assert doc["divergence"] == "mse" and doc["clean"]["kl_mean_nats"] is None  # hidden states: no KL
    assert [s["name"] for s in doc["skipped"]] == ["gaussian_noise"]  # ids and masks only: nothing float
    (tokens,) = doc["slices"]
    assert tokens["name"] == "token_replacement" and len(tokens["points"]) == 3
    stats = token_stats(feeds["input_ids"], feeds["attention_mask"])
    assert stats.special.size == 2  # [CLS] and [SEP]
    idx = np.arange(len(SENTENCES))
    for point in tokens["points"]:
        replaced = corrupt(
            "token_replacement",
            point["severity"],
            feeds["input_ids"],
            idx,
            stats,
            SEED,
            mask=feeds["attention_mask"],
        )
        assert not np.array_equal(replaced, feeds["input_ids"])
        g = _hidden(fp32, {**feeds, "input_ids": replaced}).reshape(len(idx), -1)
        c = _hidden(int8, {**feeds, "input_ids": replaced}).reshape(len(idx), -1)
        cosine = (g * c).sum(1) / (np.linalg.norm(g, axis=1) * np.linalg.norm(c, axis=1))
        assert point["cosine_mean"] == pytest.approx(cosine.mean(), abs=1e-6)
        assert point["mse_mean"] == pytest.approx(((g - c) ** 2).mean(1).mean(), rel=1e-4)
        assert point["kl_mean_nats"] is None and point["brittleness_ratio"] is not None
