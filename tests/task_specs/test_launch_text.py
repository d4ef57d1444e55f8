"""Launch checks of text datasets (issue 31), as pure functions: the arrays a job will tokenize a JSONL into
are checked by the language-model rules, and what the text needs (a tokenizer, a context) is said in words."""

from __future__ import annotations

from task_specs import Declared, launch_problems

LOGITS = [Declared("logits", ("batch", "sequence", 17), "float32")]
FIXED = [Declared("logits", ("batch", 12, 17), "float32")]
JSONL = {"prompt": Declared("prompt", (5,), "str"), "reference": Declared("reference", (5,), "str")}
CORPUS = {"text": Declared("text", (1,), "str")}


def _problems(
    kind: str, arrays: dict[str, Declared], outputs: list[Declared] = LOGITS, **options: object
) -> list[str]:
    return launch_problems(
        "language_model", options, outputs, arrays, tokenizer_size=17, dataset_kind=kind, has_tokenizer=True
    )


def test_a_jsonl_with_a_tokenizer_launches_and_generates_from_its_prompts() -> None:
    assert _problems("prompts_jsonl", JSONL) == []
    assert _problems("prompts_jsonl", JSONL, generate_tokens=4, context_tokens=8) == []
    assert _problems("text_corpus", CORPUS, outputs=FIXED) == []  # windows of the fixed length
    assert _problems("text_corpus", CORPUS, context_tokens=32) == []


def test_what_a_text_dataset_cannot_do_is_said() -> None:
    no_tokenizer = launch_problems(
        "language_model", {}, LOGITS, JSONL, dataset_kind="prompts_jsonl", has_tokenizer=False
    )
    assert any("the golden model has no tokenizer.json" in p for p in no_tokenizer)
    assert (
        launch_problems("language_model", {}, LOGITS, JSONL, dataset_kind="prompts_jsonl") == []
    )  # not known
    other = launch_problems("auto", {}, LOGITS, JSONL, dataset_kind="prompts_jsonl", has_tokenizer=True)
    assert other == [
        "a text dataset (prompts_jsonl) is tokenized for task 'language_model' only; task 'auto' reads arrays: "
        "upload them as an .npz"
    ]
    assert "leaves no room" in " ".join(_problems("prompts_jsonl", JSONL, generate_tokens=12, outputs=FIXED))
    assert "fixed at 12" in " ".join(_problems("prompts_jsonl", JSONL, context_tokens=20, outputs=FIXED))
    assert "'context_tokens'" in " ".join(_problems("text_corpus", CORPUS))
    assert "must be a whole number >= 2" in " ".join(_problems("prompts_jsonl", JSONL, context_tokens=1))
    assert "must be 'model'" in " ".join(_problems("prompts_jsonl", JSONL, tokenizer="none"))
    wrong = launch_problems(
        "language_model",
        {},
        LOGITS,
        JSONL,
        tokenizer_size=20,
        dataset_kind="prompts_jsonl",
        has_tokenizer=True,
    )
    assert wrong == [
        "the golden model's tokenizer.json has 20 tokens but output 'logits' scores 17: the text would be fed "
        "as ids of another vocabulary"
    ]
    npz = {"input_ids": Declared("input_ids", (5, 9), "int64")}
    assert launch_problems("language_model", {"context_tokens": 8}, LOGITS, npz, dataset_kind="npz") == [
        "task option 'context_tokens' applies to text datasets (.jsonl, .txt) only"
    ]
