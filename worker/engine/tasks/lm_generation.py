"""Generated text, the language-model task's second half (issue 31): both models continue the dataset's prompts
(`worker.engine.tasks.generation`), and the continuations are compared (`worker.engine.tasks.text_metrics`).

The fidelity job asks for it with the task option `generate_tokens` > 0 (the other options are in
`task_specs.generation`). `generation_request` reads and checks everything it needs from the options, the
dataset and both models before any model runs, so a bad prompt or a model that cannot generate stops the job
at its start with the reason; `run_generation` then generates and scores. The block goes under the task block
as `generation`, with a few numbers hoisted to the task block's top level (`gen_*`) where budgets, sweeps and
`kneeboard check` read task metrics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from task_specs.generation import REFERENCES
from worker.engine.errors import DatasetMismatchError, EngineError, OutputMismatchError
from worker.engine.tasks.generation import Generated, GenerationConfig, decoder_layout, generate, read_prompts
from worker.engine.tasks.generation.plain import check_context
from worker.engine.tasks.generation.prompts import Padding
from worker.engine.tasks.generation.similarity import Embedder, semantic_similarity
from worker.engine.tasks.generation.tokenizer import TextDecoder
from worker.engine.tasks.text_metrics import compare_generations
from worker.engine.types import Runner

SAMPLES_KEPT = 16
"""The first samples whose prompt and two generated texts the block keeps (per-sample values are numbers)."""
MASK_KEY = "attention_mask"
HOISTED = {
    "exact_match_rate": "gen_exact_match_rate",
    "bleu_vs_golden": "gen_bleu_vs_golden",
    "chrf_vs_golden": "gen_chrf_vs_golden",
    "rouge_l_vs_golden": "gen_rouge_l_vs_golden",
    "bleu_drop": "gen_bleu_drop",
    "semantic_similarity": "gen_semantic_similarity",
    "semantic_drop": "gen_semantic_drop",
}
"""Generation numbers copied to the task block's top level (the name there)."""
SEMANTIC_KEYS = (
    "similarity_model",
    "semantic_similarity",
    "semantic_similarity_min",
    "semantic_n_empty",
    "semantic_golden_vs_reference",
    "semantic_compressed_vs_reference",
    "semantic_drop",
)
"""The block's semantic-similarity numbers (`generation.similarity`), None without an embedding model."""


@dataclass
class GenerationRequest:
    config: GenerationConfig
    prompts: list[np.ndarray]
    padding: Padding
    prompt_array: str
    references: list[str] | None
    decoder: TextDecoder
    logits: str | None
    similarity: Embedder | None = None
    """The embedding model of the task option `similarity_model_id`, loaded by the job (None: no semantic
    similarity)."""


def _prompt_mask(arrays: Mapping[str, Any], key: str, shape: tuple[int, ...]) -> np.ndarray | None:
    """`attention_mask` for the `input_ids` prompts, `<key>_mask` for another array; None without one (the
    prompts are then unpadded). A mask of another shape is refused."""
    name = MASK_KEY if key == "input_ids" else f"{key}_mask"
    mask = arrays.get(name)
    if mask is None:
        return None
    if tuple(np.shape(mask)) != shape:
        raise DatasetMismatchError(
            f"dataset array {name!r} is {np.shape(mask)}; the prompts {key!r} are {shape}"
        )
    return np.asarray(mask)


def _check_vocabulary(decoder: TextDecoder, runner: Runner, logits: str, role: str) -> None:
    """The tokenizer must have one token per logit (the launch check sees only inspected models)."""
    if decoder.tokenizer is None:
        return
    size = decoder.tokenizer.get_vocab_size(with_added_tokens=True)
    shape = next(spec.shape for spec in runner.outputs if spec.name == logits)
    scores = shape[-1] if shape else None
    if isinstance(scores, int) and not isinstance(scores, bool) and scores != size:
        raise OutputMismatchError(
            f"the tokenizer.json has {size} tokens but the {role} model's output {logits!r} scores {scores}: it "
            "would decode the generated ids into the wrong text"
        )


def generation_request(
    options: Mapping[str, Any],
    arrays: Mapping[str, Any],
    golden: Runner,
    compressed: Runner,
    decoder: TextDecoder,
    batch_size: int,
) -> GenerationRequest | None:
    """None when the options generate nothing; else the prompts and settings, checked against both models.
    Raises DatasetMismatchError / OutputMismatchError saying what does not fit."""
    new_tokens = int(options.get("generate_tokens", 0) or 0)
    if new_tokens <= 0:
        return None
    key = str(options.get("prompt_ids", options.get("input_ids", "input_ids")))
    if key not in arrays:
        raise DatasetMismatchError(f"generation reads prompts from a dataset array {key!r}, which it lacks")
    ids = np.asarray(arrays[key])
    prompts, padding = read_prompts(ids, _prompt_mask(arrays, key, ids.shape))
    eos = options.get("eos_token_id")
    try:
        config = GenerationConfig(
            new_tokens=new_tokens,
            sampling=options.get("sampling", "greedy"),
            seed=int(options.get("seed", 0)),
            eos_token_id=None if eos is None else int(eos),
            batch_size=batch_size,
        )
    except ValueError as exc:
        raise OutputMismatchError(f"task 'language_model': {exc}") from exc
    logits = options.get("output")
    for role, runner in (("golden", golden), ("compressed", compressed)):
        try:
            layout = decoder_layout(runner.inputs, runner.outputs, logits)
        except OutputMismatchError as exc:
            raise OutputMismatchError(f"the {role} model cannot generate: {exc}") from exc
        check_context(layout, prompts, new_tokens)
        _check_vocabulary(decoder, runner, layout.logits, role)
    reference_key = str(options.get("references") or REFERENCES)
    references = None
    if reference_key in arrays:
        texts = np.asarray(arrays[reference_key])
        if texts.shape != (len(prompts),) or texts.dtype.kind not in "US":
            raise DatasetMismatchError(
                f"dataset array {reference_key!r} is {texts.shape} {texts.dtype}; references are one string per "
                "sample"
            )
        references = [str(t) for t in texts.tolist()]
    return GenerationRequest(config, prompts, padding, key, references, decoder, logits)


def _generate_all(
    runner: Runner, request: GenerationRequest, done: Callable[[int], None], role: str
) -> tuple[Generated, list[np.ndarray]]:
    """Generate in chunks (progress after each); the loops' own counts and times summed."""
    chunk = max(request.config.batch_size, 16)
    tokens: list[np.ndarray] = []
    total = Generated([], [], False)
    for start in range(0, len(request.prompts), chunk):
        part = request.prompts[start : start + chunk]
        try:
            out = generate(
                runner,
                part,
                request.config,
                logits=request.logits,
                sample_indices=range(start, start + len(part)),
            )
        except EngineError as exc:  # e.g. positions past what the model was exported for
            longest = max(len(p) for p in part) + request.config.new_tokens
            raise type(exc)(
                f"generating text with the {role} model (prompts {start} to {start + len(part) - 1}, up to "
                f"{longest} tokens with the new ones): {exc}"
            ) from exc
        tokens += out.tokens
        total.stopped_at_eos += out.stopped_at_eos
        total.cached, total.model_calls = out.cached, total.model_calls + out.model_calls
        total.seconds += out.seconds
        total.notes = sorted(set(total.notes) | set(out.notes))
        done(len(part))
    total.tokens = tokens
    return total, tokens


def run_generation(
    request: GenerationRequest,
    golden: Runner,
    compressed: Runner,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The generation block and per-sample values (exact_match, first_divergence, bleu_vs_golden,
    rouge_l_vs_golden; bleu_golden and bleu_compressed with references; semantic_similarity, and
    semantic_golden / semantic_compressed with references, when the request has an embedding model).
    Progress counts prompts of both models: (done, 2 N)."""
    n = len(request.prompts)
    progress = [0]

    def done(count: int) -> None:
        progress[0] += count
        if on_progress is not None:
            on_progress(progress[0], 2 * n)

    g_run, g_tokens = _generate_all(golden, request, done, "golden")
    c_run, c_tokens = _generate_all(compressed, request, done, "compressed")
    decode = request.decoder
    g_texts, c_texts = [decode(t) for t in g_tokens], [decode(t) for t in c_tokens]
    block, per_sample = compare_generations(
        [t.tolist() for t in g_tokens],
        [t.tolist() for t in c_tokens],
        g_texts,
        c_texts,
        request.config.new_tokens,
        request.references,
    )

    def per_token_ms(run: Generated, tokens: list[np.ndarray]) -> float | None:
        count = sum(len(t) for t in tokens)
        return 1000.0 * run.seconds / count if count else None

    semantic: dict[str, Any] = dict.fromkeys(SEMANTIC_KEYS)
    if request.similarity is not None:
        semantic, semantic_values = semantic_similarity(
            request.similarity, g_texts, c_texts, request.references
        )
        per_sample.update(semantic_values)
    block.update(semantic)
    divergence = per_sample["first_divergence"]
    block.update(
        {
            "sampling": request.config.sampling,
            "seed": request.config.seed if request.config.sampling == "seeded" else None,
            "eos_token_id": request.config.eos_token_id,
            "prompt_array": request.prompt_array,
            "padding": request.padding,
            "decoded_with": decode.decoded_with,
            "kv_cache_golden": g_run.cached,
            "kv_cache_compressed": c_run.cached,
            "tokens_golden": sum(len(t) for t in g_tokens),
            "tokens_compressed": sum(len(t) for t in c_tokens),
            "ms_per_token_golden": per_token_ms(g_run, g_tokens),
            "ms_per_token_compressed": per_token_ms(c_run, c_tokens),
            "stopped_at_eos_golden": int(sum(g_run.stopped_at_eos)),
            "stopped_at_eos_compressed": int(sum(c_run.stopped_at_eos)),
            "samples": [
                {
                    "index": i,
                    "prompt": decode(request.prompts[i]),
                    "golden": g_texts[i],
                    "compressed": c_texts[i],
                    "first_divergence": None if np.isnan(divergence[i]) else int(divergence[i]),
                }
                for i in range(min(n, SAMPLES_KEPT))
            ],
            "notes": sorted(set(g_run.notes) | set(c_run.notes)),
        }
    )
    return block, per_sample


def hoisted(block: Mapping[str, Any]) -> dict[str, Any]:
    """The generation numbers the task block carries at its top level (`HOISTED`)."""
    return {top: block.get(key) for key, top in HOISTED.items()}
