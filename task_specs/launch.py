"""Launch-time checks of a task's mapping: its options, the golden model's declared outputs, the dataset's
annotation arrays. Each check returns problems in words; an empty list means "launch it".

Shapes here include the batch axis first, as the model inspection and the dataset description store them; a
dimension that is not a fixed integer (a symbolic name, None) is not checked. A model whose outputs are
unknown (not inspected yet) has its outputs checked by the adapter at the job's first batch instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from task_specs.generation import GENERATION_OPTIONS, generation_problems
from task_specs.text import TEXT_KINDS, TEXT_OPTIONS, text_arrays, text_problems, with_text_defaults

TASK_OPTIONS: dict[str, tuple[str, ...]] = {
    "segmentation": ("output", "ignore_index", "boundary_tolerance"),
    "ctc": ("output", "vocabulary", "blank", "word_delimiter"),
    "language_model": ("output", "input_ids", "top_k", *GENERATION_OPTIONS, *TEXT_OPTIONS),
    "signal": ("output", "sample_rate"),
    "detection": (
        "format",
        "boxes_output",
        "scores_output",
        "labels_output",
        "count_output",
        "head_output",
        "box_format",
        "score_threshold",
        "iou_threshold",
        "image_size",
    ),
}
"""Every task with options, and the option names it reads (a task not listed takes none)."""

SIGNAL_SAMPLE_RATES = (3000, 768000)
"""The sample rates the signal task's WAVs may have: what an HTML audio element plays (Web Audio's range)."""
MASKS = "masks"
TRANSCRIPTS = "transcripts"

Dim = int | str | None


@dataclass(frozen=True)
class Declared:
    """A named tensor as stored: the golden model's output (from its inspection) or a dataset array."""

    name: str
    shape: tuple[Dim, ...]
    dtype: str = ""


def _fixed(dim: Dim) -> int | None:
    return dim if isinstance(dim, int) and not isinstance(dim, bool) and dim >= 0 else None


def _integer(dtype: str) -> bool:
    return dtype.lstrip("<>|=").startswith(("int", "uint", "i", "u"))


def _floating(dtype: str) -> bool:
    return dtype.lstrip("<>|=").startswith(("float", "f", "bfloat"))


def _segmentation_output(output: Declared) -> bool:
    """Logits (N, C, H, W), or label maps (N, H, W) of class indices (an integer type, or not declared)."""
    rank = len(output.shape)
    return rank == 4 or (rank == 3 and not _floating(output.dtype))


def _ctc_output(output: Declared) -> bool:
    """Frame logits (N, T, V) of a float type (or not declared)."""
    return len(output.shape) == 3 and not _integer(output.dtype)


def _fmt(shape: Sequence[Dim]) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape) + ")"


def _int_option(options: Mapping[str, Any], key: str, low: int) -> list[str]:
    if key not in options:
        return []
    value = options[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < low:
        return [f"task option {key!r} must be an integer >= {low}, got {value!r}"]
    return []


def _output(
    task: str,
    options: Mapping[str, Any],
    outputs: Sequence[Declared] | None,
    fits: Callable[[Declared], bool],
    what: str,
) -> tuple[Declared | None, list[str]]:
    """The output the task reads (named by the `output` option, or the first of a fitting rank); nothing
    to say when the outputs are not known yet."""
    if outputs is None:
        return None, []
    names = ", ".join(f"'{o.name}' {_fmt(o.shape)}" for o in outputs)
    wanted = options.get("output")
    if wanted is not None:
        chosen = next((o for o in outputs if o.name == wanted), None)
        if chosen is None:
            return None, [f"task {task!r}: the golden model has no output {wanted!r} (its outputs: {names})"]
        if not fits(chosen):
            return None, [
                f"task {task!r}: output {wanted!r} is {_fmt(chosen.shape)} {chosen.dtype}; it needs {what}"
            ]
        return chosen, []
    fitting = next((o for o in outputs if fits(o)), None)
    if fitting is None:
        return None, [f"task {task!r} needs an output shaped {what}; the golden model's outputs: {names}"]
    return fitting, []


def _segmentation(
    options: Mapping[str, Any], outputs: Sequence[Declared] | None, arrays: Mapping[str, Declared]
) -> list[str]:
    problems = _int_option(options, "ignore_index", 0) + _int_option(options, "boundary_tolerance", 0)
    output, found = _output(
        "segmentation",
        options,
        outputs,
        _segmentation_output,
        "(N, C, H, W) logits or (N, H, W) integer label maps",
    )
    problems += found
    masks = arrays.get(MASKS)
    if masks is None:
        return problems
    if len(masks.shape) != 3:
        return [
            *problems,
            f"dataset array '{MASKS}' is {_fmt(masks.shape)}; it needs (N, H, W) class indices",
        ]
    if masks.dtype and not _integer(masks.dtype):
        problems.append(f"dataset array '{MASKS}' holds {masks.dtype}; it needs integer class indices")
    if output is not None:
        want, have = output.shape[-2:], masks.shape[-2:]
        known = all(_fixed(a) is not None and _fixed(b) is not None for a, b in zip(want, have, strict=True))
        if known and tuple(want) != tuple(have):
            problems.append(
                f"dataset array '{MASKS}' has masks of {have[0]} x {have[1]}; output '{output.name}' "
                f"gives {want[0]} x {want[1]}"
            )
    return problems


def _ctc(
    options: Mapping[str, Any], outputs: Sequence[Declared] | None, arrays: Mapping[str, Declared]
) -> list[str]:
    problems = _int_option(options, "blank", 0)
    vocabulary = options.get("vocabulary")
    if not isinstance(vocabulary, list) or not vocabulary or not all(isinstance(t, str) for t in vocabulary):
        problems.append("task 'ctc' needs the option 'vocabulary': the token strings, index = token id")
        vocabulary = None
    output, found = _output("ctc", options, outputs, _ctc_output, "(N, T, V) float frame logits")
    problems += found
    if output is not None and vocabulary is not None:
        size = _fixed(output.shape[-1])
        if size is not None and size != len(vocabulary):
            problems.append(
                f"task 'ctc': output '{output.name}' scores {size} tokens but the vocabulary lists "
                f"{len(vocabulary)}"
            )
        blank = options.get("blank", 0)
        if isinstance(blank, int) and not isinstance(blank, bool) and blank >= len(vocabulary):
            problems.append(f"task 'ctc': blank {blank} is not a token id (0 to {len(vocabulary) - 1})")
    transcripts = arrays.get(TRANSCRIPTS)
    if transcripts is not None:
        if len(transcripts.shape) != 1:
            problems.append(
                f"dataset array '{TRANSCRIPTS}' is {_fmt(transcripts.shape)}; it needs one string per sample"
            )
        elif transcripts.dtype and not transcripts.dtype.lstrip("<>|=").startswith(
            ("U", "S", "str", "bytes")
        ):
            problems.append(
                f"dataset array '{TRANSCRIPTS}' holds {transcripts.dtype}; it needs strings (numpy.array(texts))"
            )
    return problems


Check = Callable[[Mapping[str, Any], Sequence[Declared] | None, Mapping[str, Declared]], list[str]]


def _language_model(
    options: Mapping[str, Any], outputs: Sequence[Declared] | None, arrays: Mapping[str, Declared]
) -> list[str]:
    problems = _int_option(options, "top_k", 1)
    output, found = _output("language_model", options, outputs, _ctc_output, "(N, T, V) float logits")
    problems += found
    key = str(options.get("input_ids", "input_ids"))
    ids = arrays.get(key)
    if ids is None:
        names = ", ".join(sorted(arrays)) or "none"
        return [
            *problems,
            f"task 'language_model' reads token ids from a dataset array {key!r} (arrays: {names})",
        ]
    if len(ids.shape) != 2 or (ids.dtype and not _integer(ids.dtype)):
        return [
            *problems,
            f"dataset array {key!r} is {_fmt(ids.shape)} {ids.dtype}; it needs integer ids (N, T)",
        ]
    if output is not None:
        want, have = _fixed(output.shape[1]), _fixed(ids.shape[1])
        if want is not None and have is not None and want != have:
            problems.append(
                f"dataset array {key!r} has {have} tokens a row; output '{output.name}' gives {want}"
            )
    return problems


def _signal_output(output: Declared) -> bool:
    """Waveforms or feature tracks: (N, T) or (N, C, T), float (or not declared)."""
    return len(output.shape) in (2, 3) and not _integer(output.dtype)


def _signal(
    options: Mapping[str, Any], outputs: Sequence[Declared] | None, arrays: Mapping[str, Declared]
) -> list[str]:
    output, problems = _output(
        "signal", options, outputs, _signal_output, "(N, T) or (N, C, T) float signals"
    )
    rate = options.get("sample_rate", 16000)
    low, high = SIGNAL_SAMPLE_RATES
    if isinstance(rate, bool) or not isinstance(rate, int) or not low <= rate <= high:
        problems.append(
            f"task option 'sample_rate' must be an integer number of Hz from {low} to {high} (the rates a "
            f"browser plays), got {rate!r}"
        )
    clean = arrays.get("clean")
    if clean is not None and output is not None:
        want, have = output.shape[1:], clean.shape[1:]
        known = len(want) == len(have) and all(_fixed(a) is not None for a in want)
        if len(want) != len(have) or (known and tuple(want) != tuple(have)):
            problems.append(
                f"dataset array 'clean' holds {_fmt(have)} a sample; output '{output.name}' gives {_fmt(want)}"
            )
    return problems


_DETECTION_OUTPUTS = ("boxes_output", "scores_output", "labels_output", "count_output", "head_output")


def _detection(
    options: Mapping[str, Any], outputs: Sequence[Declared] | None, arrays: Mapping[str, Declared]
) -> list[str]:
    problems = []
    if options.get("format") not in (None, "post_nms", "yolo"):
        problems.append(f"task 'detection': format must be 'post_nms' or 'yolo', got {options['format']!r}")
    if options.get("box_format") not in (None, "xyxy", "xywh"):
        problems.append(
            f"task 'detection': box_format must be 'xyxy' or 'xywh', got {options['box_format']!r}"
        )
    if outputs is not None:
        names = {o.name for o in outputs}
        listed = ", ".join(f"'{o.name}' {_fmt(o.shape)}" for o in outputs)
        for key in _DETECTION_OUTPUTS:
            wanted = options.get(key)
            if wanted is not None and wanted not in names:
                problems.append(
                    f"task 'detection': {key} {wanted!r} is not an output of the golden model ({listed})"
                )
    boxes, labels = arrays.get("gt_boxes"), arrays.get("gt_labels")
    if (boxes is None) != (labels is None):
        problems.append(
            "task 'detection': the dataset needs both gt_boxes (N, M, 4) and gt_labels (N, M), or neither"
        )
    elif boxes is not None and labels is not None:
        if len(boxes.shape) != 3 or _fixed(boxes.shape[2]) != 4:
            problems.append(f"dataset array 'gt_boxes' is {_fmt(boxes.shape)}; it needs (N, M, 4) boxes")
        elif tuple(labels.shape) != tuple(boxes.shape[:2]):
            problems.append(
                f"dataset array 'gt_labels' is {_fmt(labels.shape)}; it needs {_fmt(boxes.shape[:2])}, one per box"
            )
    return problems


_CHECKS: dict[str, Check] = {
    "segmentation": _segmentation,
    "ctc": _ctc,
    "language_model": _language_model,
    "detection": _detection,
    "signal": _signal,
}


def launch_problems(
    task: str,
    options: Mapping[str, Any],
    outputs: Sequence[Declared] | None,
    arrays: Mapping[str, Declared],
    *,
    tokenizer_size: int | None = None,
    dataset_kind: str | None = None,
    has_tokenizer: bool | None = None,
) -> list[str]:
    """What is wrong with running `task` with `options` on a golden model with these declared `outputs`
    (None: not known yet) and a dataset with these `arrays`; [] when nothing is. `tokenizer_size`: the
    vocabulary of the tokenizer.json the golden model carries (None: none, or not known); `has_tokenizer`:
    whether it carries one (None: not known). A dataset of a text kind (`dataset_kind`) is checked as the
    arrays a job tokenizes it into (task_specs.text)."""
    known = TASK_OPTIONS.get(task, ())
    unknown = sorted(set(options) - set(known))
    if unknown:
        takes = f"its options are {', '.join(known)}" if known else "it takes no options"
        return [f"task {task!r} has no option {', '.join(map(repr, unknown))}; {takes}"]
    logits, _ = (
        _output(task, options, outputs, _ctc_output, "(N, T, V) float logits")
        if task == "language_model"
        else (None, [])
    )
    text = text_problems(task, dataset_kind, options, logits, has_tokenizer, tokenizer_size)
    if dataset_kind in TEXT_KINDS:
        if task != "language_model":
            return text
        made = text_arrays(dataset_kind, arrays)
        arrays = {name: Declared(name, shape, dtype) for name, (shape, dtype) in made.items()}
        options = with_text_defaults(options)
    check = _CHECKS.get(task)
    problems = text + ([] if check is None else check(options, outputs, arrays))
    if task == "language_model":
        output, _ = _output("language_model", options, outputs, _ctc_output, "(N, T, V) float logits")
        problems += generation_problems(options, output, arrays, tokenizer_size)
    return problems
