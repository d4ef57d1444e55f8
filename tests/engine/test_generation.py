"""Generation by a causal LM (issue 31, "Generated text"): a tiny GPT trained in the test on numpy's docstrings,
exported to ONNX with and without a KV cache (the Hugging Face exporters' layout). The cached loop must give
token for token what the full-recompute loop gives, and both what a plain torch loop gives on the trained
module; seeded sampling must equal inverse-CDF sampling done in torch with the same uniform draws."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.engine.tiny_decoder import (
    TinyDecoder,
    char_tokenizer,
    corpus,
    export,
    quantized,
    reference_greedy,
    train,
)
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.loaders.onnx_runner import load_onnx
from worker.engine.tasks.generation import GenerationConfig, decoder_layout, generate, read_prompts
from worker.engine.tasks.generation.choose import uniforms
from worker.engine.types import TensorSpec

NEW = 12


@pytest.fixture(scope="module")
def lm(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("gen")
    text = corpus()
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text], dtype=np.int64)
    model = train(ids, len(chars))
    starts = range(0, 3000, 500)
    prompts = [ids[s : s + 5 + 2 * k] for k, s in enumerate(starts)]  # lengths 5, 7, ..., 15
    return {
        "model": model,
        "chars": chars,
        "prompts": prompts,
        "cached": export(model, folder / "cached.onnx", cache=True),
        "plain": export(model, folder / "plain.onnx", cache=False),
    }


def test_the_cache_gives_the_plain_loops_tokens_and_the_torch_loops(lm: dict[str, Any]) -> None:
    prompts = lm["prompts"]
    config = GenerationConfig(new_tokens=NEW, batch_size=4)
    with_cache = generate(load_onnx(lm["cached"], 1), prompts, config)
    without = generate(load_onnx(lm["plain"], 1), prompts, config)
    assert with_cache.cached and not without.cached
    # prefill + one call per further token, for each of the two batches (left padding mixes lengths)
    assert with_cache.model_calls == without.model_calls == 2 * NEW
    reference = [reference_greedy(lm["model"], p, NEW) for p in prompts]
    assert [t.tolist() for t in with_cache.tokens] == reference
    assert [t.tolist() for t in without.tokens] == reference
    # the cached model run without its cache (an empty past every step) agrees too
    forced = generate(load_onnx(lm["cached"], 1), prompts, GenerationConfig(new_tokens=NEW, use_cache=False))
    assert not forced.cached and [t.tolist() for t in forced.tokens] == reference
    # the model learnt something: its continuations are not one repeated character
    assert len({token for row in reference for token in row}) > 5


def _torch_sampled(model: TinyDecoder, prompt: np.ndarray, draws: np.ndarray) -> list[int]:
    """Inverse-CDF sampling in torch: the first token whose cumulative probability exceeds the draw."""
    tokens = [int(t) for t in prompt]
    with torch.inference_mode():
        for u in draws:
            probs = torch.softmax(model(torch.tensor([tokens]))[0, -1].double(), -1)
            cdf = torch.cumsum(probs, 0)
            tokens.append(
                int(
                    torch.searchsorted(cdf / cdf[-1], torch.tensor(float(u), dtype=torch.float64), right=True)
                )
            )
    return tokens[len(prompt) :]


def test_seeded_sampling_draws_the_same_numbers_whatever_the_batch(lm: dict[str, Any]) -> None:
    prompts = lm["prompts"]
    runner = load_onnx(lm["cached"], 1)
    one = generate(runner, prompts, GenerationConfig(new_tokens=NEW, sampling="seeded", seed=7, batch_size=1))
    many = generate(
        runner, prompts, GenerationConfig(new_tokens=NEW, sampling="seeded", seed=7, batch_size=6)
    )
    plain = generate(
        load_onnx(lm["plain"], 1), prompts, GenerationConfig(new_tokens=NEW, sampling="seeded", seed=7)
    )
    draws = uniforms(7, range(len(prompts)), NEW)
    reference = [_torch_sampled(lm["model"], p, d) for p, d in zip(prompts, draws, strict=True)]
    assert [t.tolist() for t in one.tokens] == reference
    assert [t.tolist() for t in many.tokens] == reference
    assert [t.tolist() for t in plain.tokens] == reference
    other = generate(runner, prompts, GenerationConfig(new_tokens=NEW, sampling="seeded", seed=8))
    assert [t.tolist() for t in other.tokens] != reference
    greedy = [reference_greedy(lm["model"], p, NEW) for p in prompts]
    assert reference != greedy  # sampling is not argmax in disguise


def test_generation_stops_at_the_end_of_sequence_token(lm: dict[str, Any]) -> None:
    prompts = lm["prompts"][:2]
    greedy = [reference_greedy(lm["model"], p, NEW) for p in prompts]
    eos = greedy[0][3]
    cut = [g[: g.index(eos)] if eos in g else g for g in greedy]
    for path in (lm["cached"], lm["plain"]):
        out = generate(load_onnx(path, 1), prompts, GenerationConfig(new_tokens=NEW, eos_token_id=eos))
        assert [t.tolist() for t in out.tokens] == cut
        assert out.stopped_at_eos == [eos in g for g in greedy]


def test_the_layout_is_read_from_the_export(lm: dict[str, Any]) -> None:
    runner = load_onnx(lm["cached"], 1)
    layout = decoder_layout(runner.inputs, runner.outputs)
    assert (layout.attention_mask, layout.position_ids, layout.logits) == (
        "attention_mask",
        "position_ids",
        "logits",
    )
    assert [(s.past, s.present, s.sequence_axis) for s in layout.cache][:2] == [
        ("past_key_values.0.key", "present.0.key", 2),
        ("past_key_values.0.value", "present.0.value", 2),
    ]
    assert layout.cache[0].empty_shape(3) == (3, 2, 0, 16)
    assert not decoder_layout(load_onnx(lm["plain"], 1).inputs, runner.outputs[:1]).has_cache


def test_a_cached_export_is_compared_teacher_forced_with_its_cache_inputs_filled_in(
    lm: dict[str, Any],
) -> None:
    from worker.engine.tasks.generation.teacher_forced import TeacherForced, teacher_forced

    runner = teacher_forced(load_onnx(lm["cached"], 1))
    assert isinstance(runner, TeacherForced)
    assert [s.name for s in runner.inputs] == ["input_ids", "attention_mask"]
    assert [s.name for s in runner.outputs] == ["logits"]
    ids = np.stack([p[:5] for p in lm["prompts"]])
    with torch.inference_mode():
        expected = lm["model"](torch.from_numpy(ids)).numpy()
    logits = runner.run({"input_ids": ids, "attention_mask": np.ones_like(ids)})["logits"]
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)
    assert teacher_forced(_FixedWindow()).__class__ is _FixedWindow  # nothing to fill in: the runner itself


def test_a_cached_export_runs_as_it_is_on_the_arrays_a_sweep_adds(lm: dict[str, Any]) -> None:
    """A sweep runs its compressible model unwrapped: the positions and an empty cache become per-sample arrays
    that batches slice, and the cached export on them gives the torch model's logits (left padding included)."""
    from worker.engine.tasks.generation.teacher_forced import teacher_forced_arrays

    runner = load_onnx(lm["cached"], 1)
    ids = np.stack([p[:7] for p in lm["prompts"][1:]])  # 5 prompts of 7 or more tokens
    mask = np.ones_like(ids)
    mask[0, :2] = 0  # a left-padded row: its positions start at its first real token
    made = teacher_forced_arrays(runner.inputs, runner.outputs, {"input_ids": ids, "attention_mask": mask})
    assert made["position_ids"][0].tolist() == [1, 1, 0, 1, 2, 3, 4]
    past = [name for name in made if name.startswith("past_key_values.")]
    assert past and all(made[name].shape[0] == len(ids) and 0 in made[name].shape for name in past)
    half = {name: a[3:] for name, a in made.items()}  # a batch of the last rows, as the comparison slices
    logits = runner.run({"input_ids": ids[3:], "attention_mask": mask[3:]} | half)["logits"]
    with torch.inference_mode():
        expected = lm["model"](torch.from_numpy(ids[3:])).numpy()
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-4)
    plain = load_onnx(lm["plain"], 1)
    assert set(teacher_forced_arrays(plain.inputs, plain.outputs, {"input_ids": ids})) <= {"position_ids"}
    assert teacher_forced_arrays(_FixedWindow().inputs, _FixedWindow().outputs, {"input_ids": ids}) == {}


def test_prompts_are_read_from_left_or_right_padding() -> None:
    ids = np.array([[0, 0, 5, 6], [0, 7, 8, 9]])
    prompts, side = read_prompts(ids, np.array([[0, 0, 1, 1], [0, 1, 1, 1]]))
    assert side == "left" and [p.tolist() for p in prompts] == [[5, 6], [7, 8, 9]]
    prompts, side = read_prompts(ids, np.array([[1, 1, 0, 0], [1, 1, 1, 1]]))
    assert side == "right" and [p.tolist() for p in prompts] == [[0, 0], [0, 7, 8, 9]]
    with pytest.raises(DatasetMismatchError, match="prompt 1 is empty"):
        read_prompts(ids, np.array([[1, 1, 1, 1], [0, 0, 0, 0]]))
    with pytest.raises(DatasetMismatchError, match="holes"):
        read_prompts(ids, np.array([[1, 0, 1, 1], [1, 1, 1, 1]]))
    with pytest.raises(DatasetMismatchError, match="both sides"):
        read_prompts(ids, np.array([[0, 1, 1, 1], [1, 1, 1, 0]]))


class _FixedWindow:
    """A runner whose input_ids holds exactly 8 tokens: it predicts token (last + 1) mod 50."""

    def __init__(self) -> None:
        self.inputs = [TensorSpec("input_ids", ("batch", 8), "int64")]
        self.outputs = [TensorSpec("logits", ("batch", 8, 50), "float32")]

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        ids = feeds["input_ids"]
        assert ids.shape[1] == 8
        logits = np.zeros((*ids.shape, 50), dtype=np.float32)
        np.put_along_axis(logits, ((ids + 1) % 50)[..., None], 1.0, axis=-1)
        return {"logits": logits}


def test_a_fixed_context_is_filled_to_its_length_and_enforced(tmp_path: Path) -> None:
    out = generate(_FixedWindow(), [np.array([3, 4]), np.array([10])], GenerationConfig(new_tokens=5))
    assert [t.tolist() for t in out.tokens] == [[5, 6, 7, 8, 9], [11, 12, 13, 14, 15]]
    with pytest.raises(DatasetMismatchError, match="holds 8 tokens"):
        generate(_FixedWindow(), [np.arange(5)], GenerationConfig(new_tokens=4))


def test_a_model_that_is_not_a_decoder_is_refused() -> None:
    runner = _FixedWindow()
    with pytest.raises(OutputMismatchError, match="input named 'input_ids'"):
        decoder_layout([TensorSpec("pixels", (1, 3), "float32")], runner.outputs)
    with pytest.raises(OutputMismatchError, match="cannot fill"):
        decoder_layout([*runner.inputs, TensorSpec("token_type_ids", (1, 8), "int64")], runner.outputs)
    with pytest.raises(OutputMismatchError, match="next-token logits"):
        decoder_layout(runner.inputs, [TensorSpec("pooled", ("batch", 50), "float32")])


def test_the_generation_block_decodes_with_the_tokenizer_and_scores_the_texts(
    lm: dict[str, Any], tmp_path: Path
) -> None:
    """Golden: the cached export; compressed: a 4-bit copy exported without cache. Prompts left-padded in one
    array with their mask, references from the corpus; texts decoded by the tokenizer.json must equal the torch
    loops' tokens mapped to characters, and the scores sacrebleu's on those strings."""
    import sacrebleu
    from tokenizers import Tokenizer

    from worker.engine.tasks.generation.tokenizer import TextDecoder
    from worker.engine.tasks.lm_generation import generation_request, run_generation

    chars, prompts = lm["chars"], lm["prompts"]
    small = quantized(lm["model"], 3)
    compressed = export(small, tmp_path / "q.onnx", cache=False)
    width = max(len(p) for p in prompts)
    ids = np.zeros((len(prompts), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :], mask[i, width - len(p) :] = p, 1
    text = corpus()
    references = np.array([text[i * 500 + len(p) : i * 500 + len(p) + NEW] for i, p in enumerate(prompts)])
    arrays = {"input_ids": ids, "attention_mask": mask, "references": references}
    decoder = TextDecoder(Tokenizer.from_str(char_tokenizer(chars)), "tokenizer.json")
    golden_runner, compressed_runner = load_onnx(lm["cached"], 1), load_onnx(compressed, 1)
    request = generation_request(
        {"generate_tokens": NEW}, arrays, golden_runner, compressed_runner, decoder, 4
    )
    assert request is not None and request.padding == "left"
    block, rows = run_generation(request, golden_runner, compressed_runner)

    golden = ["".join(chars[t] for t in reference_greedy(lm["model"], p, NEW)) for p in prompts]
    damaged = ["".join(chars[t] for t in reference_greedy(small, p, NEW)) for p in prompts]
    assert [s["golden"] for s in block["samples"]] == golden
    assert [s["compressed"] for s in block["samples"]] == damaged
    assert [s["prompt"] for s in block["samples"]] == ["".join(chars[t] for t in p) for p in prompts]
    assert block["exact_match_rate"] == pytest.approx(
        np.mean([g == d for g, d in zip(golden, damaged, strict=True)])
    )
    assert block["exact_match_rate"] < 1  # 3 bits changed some continuation
    assert block["bleu_vs_golden"] == pytest.approx(sacrebleu.corpus_bleu(damaged, [golden]).score)
    refs = references.tolist()
    assert block["chrf_golden_vs_reference"] == pytest.approx(sacrebleu.corpus_chrf(golden, [refs]).score)
    assert block["kv_cache_golden"] and not block["kv_cache_compressed"]
    assert block["decoded_with"].startswith("tokenizer.json") and block["padding"] == "left"
    assert set(rows) >= {
        "exact_match",
        "first_divergence",
        "bleu_vs_golden",
        "bleu_golden",
        "bleu_compressed",
    }
    assert block["ms_per_token_golden"] > 0 and block["tokens_golden"] == NEW * len(prompts)


def test_a_generation_request_refuses_what_cannot_generate(lm: dict[str, Any]) -> None:
    from worker.engine.tasks.generation.tokenizer import TextDecoder
    from worker.engine.tasks.lm_generation import generation_request

    runner = load_onnx(lm["cached"], 1)
    ids = np.ones((3, 4), dtype=np.int64)
    mask = np.ones_like(ids)
    mask[1] = 0
    with pytest.raises(DatasetMismatchError, match="prompt 1 is empty"):
        generation_request(
            {"generate_tokens": 2},
            {"input_ids": ids, "attention_mask": mask},
            runner,
            runner,
            TextDecoder(),
            2,
        )
    assert (
        generation_request({"generate_tokens": 0}, {"input_ids": ids}, runner, runner, TextDecoder(), 2)
        is None
    )
    # another prompt array takes its own mask (right padding here), not the input_ids' attention_mask
    own = np.tril(np.ones((3, 4), dtype=np.int64))
    data = {"input_ids": ids, "attention_mask": mask, "q": ids, "q_mask": own}
    request = generation_request(
        {"generate_tokens": 2, "prompt_ids": "q"}, data, runner, runner, TextDecoder(), 2
    )
    assert request is not None and request.padding == "right"
    assert [len(p) for p in request.prompts] == [1, 2, 3]
    from tokenizers import Tokenizer

    other = TextDecoder(Tokenizer.from_str(char_tokenizer([*lm["chars"], "\u00e9"])), "tokenizer.json")
    with pytest.raises(OutputMismatchError, match=f"has {len(lm['chars']) + 1} tokens but the golden model"):
        generation_request({"generate_tokens": 2}, {"input_ids": ids}, runner, runner, other, 2)
    window = _FixedWindow()
    with pytest.raises(OutputMismatchError, match="compressed model cannot generate"):
        generation_request({"generate_tokens": 2}, {"input_ids": ids}, runner, _NoLogits(), TextDecoder(), 2)
    with pytest.raises(DatasetMismatchError, match="holds 8 tokens"):
        generation_request({"generate_tokens": 5}, {"input_ids": ids}, window, window, TextDecoder(), 2)


class _NoLogits(_FixedWindow):
    def __init__(self) -> None:
        super().__init__()
        self.outputs = [TensorSpec("pooled", ("batch", 50), "float32")]


def test_a_model_that_fails_mid_generation_says_which_prompts_and_lengths(lm: dict[str, Any]) -> None:
    """The tiny decoder learnt 96 positions; a 90-token prompt + 12 new tokens runs past its table, which only
    the runtime finds out: the error names the model, the prompts and the length reached."""
    from worker.engine.errors import EngineError
    from worker.engine.tasks.generation.tokenizer import TextDecoder
    from worker.engine.tasks.lm_generation import generation_request, run_generation

    text = corpus()
    ids = np.array([[lm["chars"].index(c) for c in text[:90]]], dtype=np.int64)
    runner = load_onnx(lm["cached"], 1)
    request = generation_request(
        {"generate_tokens": NEW}, {"input_ids": ids}, runner, runner, TextDecoder(), 2
    )
    assert request is not None
    with pytest.raises(EngineError, match=r"golden model \(prompts 0 to 0, up to 102 tokens"):
        run_generation(request, runner, runner)
