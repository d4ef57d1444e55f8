"""The language-model task (issue 31, next-token fidelity): a causal LM's logits (N, T, V) compared over the
whole vocabulary at every position, teacher-forced on the dataset's own token ids.

Per position t of a sequence (a position counts when the attention mask keeps it; no mask: all of them), with
P the golden model's next-token distribution and Q the compressed one's (softmax over V, in float64):
- KL(P‖Q), KL(Q‖P) and JS in nats, top-1 next-token agreement, and the overlap of the two top-k sets;
- the negative log-likelihood each model gives the token that actually follows (t < T − 1, the next position
  kept too), whence each model's perplexity exp(mean NLL) and their differences (`nll_delta`, `ppl_delta`:
  compressed − golden, lower is better).
Means are over tokens (every kept position of every sequence weighs the same), and `kl_by_position` is the
mean KL at each position index, so a team sees whether the divergence grows along the context.

Memory: one sequence at a time (T × V float64 per model), never the batch or the dataset's logits (V is
32 k–150 k for real vocabularies); per position only running sums are kept.

Per-sample values: `kl_mean`, `top1_agreement`, `nll_golden`, `nll_compressed` of each sequence.

With a dataset array `reference_mask` (N, T) (a text dataset with references has one), the NLL counts only
the tokens it marks: the perplexity of the reference continuations given their prompts, not of the prompts;
the divergences still cover every kept position.

task_options: `output` (default: the first output shaped (T, V)), `input_ids` (the dataset array of token ids
(N, T) the logits predict from; default "input_ids"), `top_k` (default 5), and the generation options
(`generate_tokens`... listed in task_specs/generation.py; read by the fidelity job's generation step, which puts
its block under this one as `generation`). Unknown keys are refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from task_specs import TASK_OPTIONS
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.metrics import distributions
from worker.engine.tasks.interface import TaskContext
from worker.engine.tasks.lm_generation import HOISTED

OPTION_KEYS = TASK_OPTIONS["language_model"]  # one list for the launch check (task_specs) and the adapter
MASK_KEY = "attention_mask"
REFERENCE_MASK = "reference_mask"
"""Optional dataset array (N, T): non-zero where the token is a reference continuation's. With it, NLL and
perplexity score those tokens only (the definition: perplexity of the reference text), not the prompt's;
a text dataset with references carries it (worker/engine/tasks/generation/text_dataset.py)."""


def _option(options: Mapping[str, Any], key: str, default: Any) -> Any:
    return options.get(key, default)


class _Sums:
    """Token-weighted running sums."""

    def __init__(self, positions: int) -> None:
        self.n_tokens = 0
        self.kl = self.kl_reverse = self.js = self.top1 = self.overlap = 0.0
        self.n_next = 0
        self.nll_golden = self.nll_compressed = 0.0
        self.kl_at = np.zeros(positions)
        self.tokens_at = np.zeros(positions, dtype=np.int64)


class LanguageModelTask:
    """Next-token fidelity of a causal LM (see the module docstring)."""

    name = "language_model"

    def __init__(self) -> None:
        self.primary_output = ""
        self.ids: Any = None
        self.mask: Any = None
        self.reference: Any = None
        self.top_k = 5
        self.sums = _Sums(0)

    def start(self, context: TaskContext) -> None:
        options = context.options
        unknown = sorted(set(options) - set(OPTION_KEYS))
        if unknown:
            raise OutputMismatchError(
                f"task 'language_model' has no option {', '.join(map(repr, unknown))}; "
                f"its options are {', '.join(OPTION_KEYS)}"
            )
        top_k = _option(options, "top_k", 5)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise OutputMismatchError(f"task option 'top_k' must be an integer >= 1, got {top_k!r}")
        self.primary_output = self._choose_output(context)
        positions, vocabulary = context.output_shapes[self.primary_output]
        self.top_k = min(top_k, vocabulary)
        key = str(_option(options, "input_ids", "input_ids"))
        ids = context.dataset.get(key)
        if ids is None:
            raise DatasetMismatchError(
                f"task 'language_model' reads the token ids from the dataset array {key!r}, which it lacks "
                f"(arrays: {', '.join(sorted(context.dataset))})"
            )
        if (
            tuple(np.shape(ids)) != (context.n_samples, positions)
            or np.asarray(ids[:1]).dtype.kind not in "iu"
        ):
            raise DatasetMismatchError(
                f"'{key}' is {tuple(np.shape(ids))} {np.asarray(ids[:1]).dtype}; the output "
                f"'{self.primary_output}' needs integer token ids ({context.n_samples}, {positions})"
            )
        self.ids = ids
        mask = context.dataset.get(MASK_KEY)
        self.mask = mask if mask is not None and tuple(np.shape(mask)) == tuple(np.shape(ids)) else None
        reference = context.dataset.get(REFERENCE_MASK)
        if reference is not None and tuple(np.shape(reference)) != tuple(np.shape(ids)):
            raise DatasetMismatchError(
                f"dataset array '{REFERENCE_MASK}' is {tuple(np.shape(reference))}; it marks the reference tokens "
                f"of '{key}' {tuple(np.shape(ids))}, one flag a token"
            )
        self.reference = reference
        self.sums = _Sums(positions)

    def _choose_output(self, context: TaskContext) -> str:
        wanted = context.options.get("output")
        fits = {name: shape for name, shape in context.output_shapes.items() if len(shape) == 2}
        if wanted is not None:
            if wanted not in context.output_shapes:
                raise OutputMismatchError(
                    f"task 'language_model': the model has no output {wanted!r} "
                    f"(outputs: {', '.join(context.output_shapes)})"
                )
            if wanted not in fits:
                raise OutputMismatchError(
                    f"task 'language_model': output {wanted!r} has per-sample shape "
                    f"{context.output_shapes[str(wanted)]}; it needs logits (T, V)"
                )
            return str(wanted)
        if not fits:
            raise OutputMismatchError("task 'language_model' found no output of logits (N, T, V)")
        return next(iter(fits))

    def update(
        self, golden: Mapping[str, Any], compressed: Mapping[str, Any], start: int, stop: int
    ) -> Mapping[str, Any]:
        g_all, c_all = golden[self.primary_output], compressed[self.primary_output]
        ids = np.asarray(self.ids[start:stop])
        keep = np.ones(ids.shape, dtype=bool) if self.mask is None else np.asarray(self.mask[start:stop]) != 0
        scored = keep if self.reference is None else keep & (np.asarray(self.reference[start:stop]) != 0)
        rows: dict[str, list[float]] = {
            "kl_mean": [],
            "top1_agreement": [],
            "nll_golden": [],
            "nll_compressed": [],
        }
        for i in range(stop - start):
            for key, value in self._sequence(
                np.asarray(g_all[i]), np.asarray(c_all[i]), ids[i], keep[i], scored[i]
            ).items():
                rows[key].append(value)
        return {key: np.asarray(values, dtype=np.float64) for key, values in rows.items()}

    def _sequence(
        self, g: np.ndarray, c: np.ndarray, ids: np.ndarray, keep: np.ndarray, scored: np.ndarray
    ) -> dict[str, float]:
        """One sequence's sums; `scored`: the kept tokens whose NLL counts (all kept ones, or the reference's)."""
        s = self.sums
        lp, lq = distributions.log_softmax(g, axis=-1), distributions.log_softmax(c, axis=-1)
        kl = distributions.kl(lp, lq)
        n = int(keep.sum())
        top1 = lp.argmax(-1) == lq.argmax(-1)
        k = self.top_k
        top_p = np.argpartition(-lp, k - 1, axis=-1)[:, :k]
        top_q = np.argpartition(-lq, k - 1, axis=-1)[:, :k]
        overlap = np.array([len(np.intersect1d(a, b)) / k for a, b in zip(top_p, top_q, strict=True)])
        s.n_tokens += n
        s.kl += float(kl[keep].sum())
        s.kl_reverse += float(distributions.reverse_kl(lp, lq)[keep].sum())
        s.js += float(distributions.js(lp, lq)[keep].sum())
        s.top1 += float(top1[keep].sum())
        s.overlap += float(overlap[keep].sum())
        s.kl_at += np.where(keep, kl, 0.0)
        s.tokens_at += keep
        follows = keep[:-1] & scored[1:]  # position t predicts the scored token at t + 1
        targets = ids[1:]
        nll_g = -lp[:-1][np.arange(len(targets)), targets][follows]
        nll_c = -lq[:-1][np.arange(len(targets)), targets][follows]
        s.n_next += int(follows.sum())
        s.nll_golden += float(nll_g.sum())
        s.nll_compressed += float(nll_c.sum())
        nan = float("nan")
        return {
            "kl_mean": float(kl[keep].mean()) if n else nan,
            "top1_agreement": float(top1[keep].mean()) if n else nan,
            "nll_golden": float(nll_g.mean()) if nll_g.size else nan,
            "nll_compressed": float(nll_c.mean()) if nll_c.size else nan,
        }

    def to_dict(self) -> dict[str, Any]:
        s = self.sums

        def mean(total: float, count: int) -> float | None:
            return total / count if count else None

        nll_g, nll_c = mean(s.nll_golden, s.n_next), mean(s.nll_compressed, s.n_next)
        ppl_g = math.exp(nll_g) if nll_g is not None else None
        ppl_c = math.exp(nll_c) if nll_c is not None else None
        return {
            "name": self.name,
            "n_tokens": s.n_tokens,
            "n_next_tokens": s.n_next,
            "nll_reference_only": self.reference is not None,
            "top_k": self.top_k,
            "kl_mean": mean(s.kl, s.n_tokens),
            "kl_reverse_mean": mean(s.kl_reverse, s.n_tokens),
            "js_mean": mean(s.js, s.n_tokens),
            "top1_agreement": mean(s.top1, s.n_tokens),
            "topk_overlap": mean(s.overlap, s.n_tokens),
            "nll_golden": nll_g,
            "nll_compressed": nll_c,
            "nll_delta": None if nll_g is None or nll_c is None else nll_c - nll_g,
            "ppl_golden": ppl_g,
            "ppl_compressed": ppl_c,
            "ppl_delta": None if ppl_g is None or ppl_c is None else ppl_c - ppl_g,
            "kl_by_position": [
                float(total / count) if count else None
                for total, count in zip(s.kl_at, s.tokens_at, strict=True)
            ],
            # generated text: filled in by the fidelity job's generation step (worker/engine/tasks/lm_generation)
            # when the job sets generate_tokens; null otherwise
            "generation": None,
            **{name: None for name in HOISTED.values()},
        }
