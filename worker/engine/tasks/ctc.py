"""The speech (CTC) task (issue 30, "task-level truth"): per-frame token logits (N, T, V) decoded greedily to
transcripts and scored by word and character error rates instead of tensor divergence.

Decoding (greedy, best path): per frame the arg-max token; runs of the same token collapse to one, then
blanks are dropped; the tokens' strings are joined and the word delimiter becomes a space (runs of spaces
collapse, ends are stripped). Text is compared as decoded: no case folding or punctuation removal, so the
reference transcripts must be written in the vocabulary's alphabet and case.

Scores (jiwer, its default transforms: words split on whitespace; CER over characters, spaces included):
- label-free, always: the compressed transcripts against the golden model's taken as the references
  (`wer_vs_golden`, `cer_vs_golden`, `exact_match_vs_golden`);
- with a dataset array `transcripts` (N,) of strings (a fixed-width unicode array, dtype '<U..', which the
  .npz upload accepts and the worker memory-maps; bytes 'S..' are read as UTF-8): both models against
  them, and the deltas compressed − golden (`wer_delta`, `cer_delta`; lower is better).
Every rate is a fraction (0.01 = one point). Dataset rates are jiwer's corpus rates: (S + D + I) / (H + S + D)
over all utterances, summed from the per-utterance counts (jiwer's rule for no reference word at all: the
insertions).

Per-sample values: `wer_vs_golden`, `cer_vs_golden` and, with transcripts, `wer_golden`, `wer_compressed`
(jiwer's per-utterance rates).

task_options: `output` (default: the first output shaped (T, V)), `vocabulary` (required: V token strings,
index = token id), `blank` (default 0), `word_delimiter` (default "|" when the vocabulary has it, else " ").
Unknown keys are refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from task_specs import TASK_OPTIONS
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.tasks.interface import SAMPLE_VIEWS_MAX, TaskContext

TRANSCRIPTS_KEY = "transcripts"
"""Dataset array of reference transcripts (N,) for the CTC task."""

OPTION_KEYS = TASK_OPTIONS["ctc"]  # one list for the launch check (task_specs) and the adapter
_COUNTS = ("substitutions", "deletions", "insertions", "hits")


def greedy_decode(ids: np.ndarray, blank: int) -> list[list[int]]:
    """Best-path CTC decoding of arg-max token ids (B, T): repeats collapsed, then blanks dropped."""
    previous = np.concatenate([np.full((len(ids), 1), -1, dtype=ids.dtype), ids[:, :-1]], axis=1)
    keep = (ids != previous) & (ids != blank)
    return [row[mask].tolist() for row, mask in zip(ids, keep, strict=True)]


def to_text(tokens: Sequence[int], vocabulary: Sequence[str], word_delimiter: str) -> str:
    """Token ids to text: the tokens' strings joined, the delimiter made a space, spaces normalised."""
    text = "".join(vocabulary[t] for t in tokens)
    if word_delimiter:
        text = text.replace(word_delimiter, " ")
    return " ".join(text.split())


class _ErrorCounts:
    """jiwer's edit counts summed over utterances, for words and characters."""

    def __init__(self) -> None:
        self.words = dict.fromkeys(_COUNTS, 0)
        self.chars = dict.fromkeys(_COUNTS, 0)
        self.n_utterances = 0
        self.n_exact = 0

    def add(self, references: Sequence[str], hypotheses: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Fold in a batch; returns its per-utterance WER and CER."""
        import jiwer

        wer, cer = np.zeros(len(references)), np.zeros(len(references))
        for i, (ref, hyp) in enumerate(zip(references, hypotheses, strict=True)):
            words = jiwer.process_words(ref, hyp)
            chars = jiwer.process_characters(ref, hyp)
            for key in _COUNTS:
                self.words[key] += int(getattr(words, key))
                self.chars[key] += int(getattr(chars, key))
            wer[i], cer[i] = words.wer, chars.cer
            self.n_exact += int(" ".join(ref.split()) == " ".join(hyp.split()))
        self.n_utterances += len(references)
        return wer, cer

    @staticmethod
    def _rate(counts: dict[str, int]) -> float:
        errors = counts["substitutions"] + counts["deletions"] + counts["insertions"]
        n_reference = counts["hits"] + counts["substitutions"] + counts["deletions"]
        return errors / n_reference if n_reference else float(counts["insertions"])

    def to_dict(self) -> dict[str, Any]:
        w, c = self.words, self.chars
        return {
            "wer": self._rate(w) if self.n_utterances else None,
            "cer": self._rate(c) if self.n_utterances else None,
            **w,
            "n_reference_words": w["hits"] + w["substitutions"] + w["deletions"],
            "char_substitutions": c["substitutions"],
            "char_deletions": c["deletions"],
            "char_insertions": c["insertions"],
            "n_reference_chars": c["hits"] + c["substitutions"] + c["deletions"],
            "exact_match": self.n_exact / self.n_utterances if self.n_utterances else None,
            "n_utterances": self.n_utterances,
        }


def _text_array(raw: Any, n: int) -> Any:
    dtype = np.asarray(raw[:1]).dtype
    if tuple(np.shape(raw)) != (n,):
        raise DatasetMismatchError(
            f"'{TRANSCRIPTS_KEY}' has shape {tuple(np.shape(raw))}; it needs one transcript per sample, ({n},)"
        )
    if dtype.kind not in "US":
        raise DatasetMismatchError(
            f"'{TRANSCRIPTS_KEY}' must hold strings (a unicode array, e.g. numpy.array(texts) of dtype '<U..'), "
            f"not {dtype}"
        )
    return raw


def _texts(raw: Any) -> list[str]:
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in np.asarray(raw).tolist()]


class CtcTask:
    """Decodes and scores CTC outputs (see the module docstring)."""

    name = "ctc"

    def __init__(self) -> None:
        self.primary_output = ""
        self.vocabulary: list[str] = []
        self.blank = 0
        self.word_delimiter = " "
        self.transcripts: Any = None
        self.vs_golden = _ErrorCounts()
        self.golden_vs_refs = _ErrorCounts()
        self.compressed_vs_refs = _ErrorCounts()
        self.kept: list[dict[str, str | None]] = []

    def start(self, context: TaskContext) -> None:
        options = context.options
        unknown = sorted(set(options) - set(OPTION_KEYS))
        if unknown:
            raise OutputMismatchError(
                f"task 'ctc' has no option {', '.join(map(repr, unknown))}; its options are {', '.join(OPTION_KEYS)}"
            )
        self.primary_output = self._choose_output(context)
        size = context.output_shapes[self.primary_output][1]
        vocabulary = options.get("vocabulary")
        if not isinstance(vocabulary, list) or not all(isinstance(t, str) for t in vocabulary):
            raise OutputMismatchError(
                "task 'ctc' needs task option 'vocabulary': the list of token strings, index = token id"
            )
        if len(vocabulary) != size:
            raise OutputMismatchError(
                f"the vocabulary has {len(vocabulary)} tokens but output '{self.primary_output}' scores {size} "
                f"tokens per frame; give one string per token id (0 to {size - 1}), blank included"
            )
        self.vocabulary = list(vocabulary)
        blank = options.get("blank", 0)
        if isinstance(blank, bool) or not isinstance(blank, int) or not 0 <= blank < size:
            raise OutputMismatchError(
                f"task option 'blank' must be a token id from 0 to {size - 1}, got {blank!r}"
            )
        self.blank = blank
        delimiter = options.get("word_delimiter", "|" if "|" in self.vocabulary else " ")
        if not isinstance(delimiter, str):
            raise OutputMismatchError(f"task option 'word_delimiter' must be a string, got {delimiter!r}")
        self.word_delimiter = delimiter
        raw = context.dataset.get(TRANSCRIPTS_KEY)
        if raw is not None:
            self.transcripts = _text_array(raw, context.n_samples)

    def _choose_output(self, context: TaskContext) -> str:
        wanted = context.options.get("output")
        fits = {k: len(s) == 2 and s[1] >= 2 for k, s in context.output_shapes.items()}
        if wanted is not None:
            if wanted not in context.output_shapes:
                raise OutputMismatchError(
                    f"task 'ctc': no output {wanted!r} (outputs: {', '.join(context.output_shapes)})"
                )
            if not fits[str(wanted)]:
                raise OutputMismatchError(
                    f"task 'ctc': output {wanted!r} has per-sample shape {context.output_shapes[str(wanted)]}, "
                    "not frame logits (T, V)"
                )
            return str(wanted)
        for name, ok in fits.items():
            if ok:
                return name
        shapes = ", ".join(f"'{k}': {s}" for k, s in context.output_shapes.items())
        raise OutputMismatchError(f"task 'ctc' found no output of frame logits (T, V) ({shapes})")

    def decode(self, logits: Any) -> list[str]:
        ids = np.asarray(logits).argmax(axis=-1)
        return [to_text(t, self.vocabulary, self.word_delimiter) for t in greedy_decode(ids, self.blank)]

    def update(
        self, golden: Mapping[str, Any], compressed: Mapping[str, Any], start: int, stop: int
    ) -> Mapping[str, Any]:
        g = self.decode(golden[self.primary_output])
        c = self.decode(compressed[self.primary_output])
        wer, cer = self.vs_golden.add(g, c)
        values = {"wer_vs_golden": wer, "cer_vs_golden": cer}
        refs = _texts(self.transcripts[start:stop]) if self.transcripts is not None else None
        room = max(0, SAMPLE_VIEWS_MAX - len(self.kept))
        for i in range(min(room, len(g))):
            self.kept.append(
                {"golden": g[i], "compressed": c[i], "reference": None if refs is None else refs[i]}
            )
        if refs is not None:
            values["wer_golden"] = self.golden_vs_refs.add(refs, g)[0]
            values["wer_compressed"] = self.compressed_vs_refs.add(refs, c)[0]
        return values

    def sample_views(self) -> dict[str, Any]:
        """The kept utterances' transcripts: both models' and the reference (None without transcripts)."""
        return {"task": self.name, "n_samples": len(self.kept), "samples": list(self.kept)}

    def to_dict(self) -> dict[str, Any]:
        vs_golden = self.vs_golden.to_dict()
        against: dict[str, Any] | None = None
        deltas: dict[str, float | None] = {"wer_delta": None, "cer_delta": None}
        if self.transcripts is not None:
            g, c = self.golden_vs_refs.to_dict(), self.compressed_vs_refs.to_dict()
            deltas = {"wer_delta": c["wer"] - g["wer"], "cer_delta": c["cer"] - g["cer"]}
            against = {"golden": g, "compressed": c, **deltas}
        return {
            "name": self.name,
            "output": self.primary_output,
            "vocabulary_size": len(self.vocabulary),
            "blank": self.blank,
            "word_delimiter": self.word_delimiter,
            "wer_vs_golden": vs_golden["wer"],
            "cer_vs_golden": vs_golden["cer"],
            "exact_match_vs_golden": vs_golden["exact_match"],
            "against_golden": vs_golden,
            "against_transcripts": against,
            **deltas,
        }
