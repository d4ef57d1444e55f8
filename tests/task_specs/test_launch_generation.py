"""Launch checks of the language-model task's generation options (issue 31): every wrong option or dataset is
named in words at launch, and a right mapping passes (so the checks are not vacuous)."""

from __future__ import annotations

from typing import Any

import pytest

from task_specs import Declared, launch_problems

LOGITS = [Declared("logits", ("batch", "sequence", 68), "float32")]
FIXED = [Declared("logits", ("batch", 32, 68), "float32")]
ARRAYS = {
    "input_ids": Declared("input_ids", (20, 32), "<i8"),
    "attention_mask": Declared("attention_mask", (20, 32), "<i8"),
    "references": Declared("references", (20,), "<U40"),
}


def _problems(options: dict[str, Any], outputs: list[Declared] | None = LOGITS, **kwargs: Any) -> list[str]:
    return launch_problems("language_model", options, outputs, kwargs.pop("arrays", ARRAYS), **kwargs)


def test_a_right_generation_mapping_passes() -> None:
    assert _problems({"generate_tokens": 16}) == []
    assert (
        _problems(
            {"generate_tokens": 8, "sampling": "seeded", "seed": 3, "eos_token_id": 0}, tokenizer_size=68
        )
        == []
    )
    assert _problems({"generate_tokens": 0}) == []  # off: nothing to check
    assert (
        _problems({"generate_tokens": 16, "tokenizer": "none"}, tokenizer_size=50) == []
    )  # not decoded with it


@pytest.mark.parametrize("value", [-1, 2.5, "8", True])
def test_generate_tokens_must_be_a_non_negative_whole_number(value: object) -> None:
    (problem,) = _problems({"generate_tokens": value})
    assert "'generate_tokens' must be a whole number >= 0" in problem and repr(value) in problem


def test_bad_settings_are_named() -> None:
    assert "'greedy' or 'seeded'" in _problems({"generate_tokens": 4, "sampling": "beam"})[0]
    assert "'model'" in _problems({"generate_tokens": 4, "tokenizer": "gpt2"})[0]
    assert "ids are 0 to 67" in _problems({"generate_tokens": 4, "eos_token_id": 68})[0]
    assert "'seed' must be a whole number >= 0" in _problems({"generate_tokens": 4, "seed": -2})[0]


def test_a_tokenizer_of_another_vocabulary_is_refused() -> None:
    (problem,) = _problems({"generate_tokens": 4}, tokenizer_size=50257)
    assert "tokenizer.json has 50257 tokens but output 'logits' scores 68" in problem


def test_prompts_longer_than_a_fixed_context_are_refused() -> None:
    wide = ARRAYS | {"prompts": Declared("prompts", (20, 40), "<i8")}
    (problem,) = _problems({"generate_tokens": 4, "prompt_ids": "prompts"}, FIXED, arrays=wide)
    assert "hold up to 40 tokens but the model's context is fixed at 32" in problem
    (problem,) = _problems({"generate_tokens": 32}, FIXED)
    assert "leaves no room for a prompt" in problem
    assert _problems({"generate_tokens": 32}) == []  # a context that is not fixed is not known at launch


def test_a_model_without_logits_and_empty_or_missing_prompts_are_refused() -> None:
    pooled = [Declared("pooled", ("batch", 384), "float32")]
    assert any("needs an output shaped (N, T, V)" in p for p in _problems({"generate_tokens": 4}, pooled))
    empty = ARRAYS | {"prompts": Declared("prompts", (20, 0), "<i8")}
    (problem,) = _problems({"generate_tokens": 4, "prompt_ids": "prompts"}, arrays=empty)
    assert "empty prompts" in problem
    (problem,) = _problems({"generate_tokens": 4, "prompt_ids": "questions"})
    assert "array 'questions', which it lacks" in problem
    texts = ARRAYS | {"prompts": Declared("prompts", (20,), "<U30")}
    (problem,) = _problems({"generate_tokens": 4, "prompt_ids": "prompts"}, arrays=texts)
    assert "prompts are integer token ids (N, T)" in problem
    numbers = ARRAYS | {"references": Declared("references", (20, 5), "<i8")}
    (problem,) = _problems({"generate_tokens": 4}, arrays=numbers)
    assert "one string per sample" in problem
