"""The signal task (issue 30, item 5): outputs that are waveforms or feature tracks (enhancement, separation,
vocoders, codecs), scored by SNR and SI-SDR instead of tensor divergence.

Per sample, over its last axis (time) and averaged over any channels before it, with torchmetrics'
`signal_noise_ratio` and `scale_invariant_signal_distortion_ratio` (zero-mean, as the SI-SDR paper defines it):
- label-free, always: the compressed output against the golden one (`snr_db_vs_golden`, `si_sdr_db_vs_golden`);
- with a dataset array `clean` of the output's shape (the clean reference): both models against it and the
  drops golden − compressed in dB (`snr_drop_db`, `si_sdr_drop_db`; lower is better).
A sample whose two outputs are identical has an infinite SNR: it is counted in `n_identical` and left out of
the means (as the image task does with PSNR). Per-sample values: `snr_db_vs_golden`, `si_sdr_db_vs_golden`
and, with `clean`, `si_sdr_db_golden`, `si_sdr_db_compressed`.

task_options: `output` (default: the first output with a time axis, (T,) or (C, T) per sample). Unknown keys
are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from task_specs import TASK_OPTIONS
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.tasks.interface import TaskContext

OPTION_KEYS = TASK_OPTIONS["signal"]  # one list for the launch check (task_specs) and the adapter
CLEAN_KEY = "clean"
"""Dataset array of clean reference signals, shaped like the output, for the signal task."""


def snr_si_sdr(estimate: np.ndarray, reference: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample SNR and SI-SDR in dB of `estimate` against `reference`, both (N, ..., T): torchmetrics over
    the last axis in float64, averaged over the channels between."""
    import torch
    from torchmetrics.functional.audio import scale_invariant_signal_distortion_ratio, signal_noise_ratio

    e = torch.from_numpy(np.ascontiguousarray(estimate, dtype=np.float64))
    r = torch.from_numpy(np.ascontiguousarray(reference, dtype=np.float64))
    same = (e == r).reshape(e.shape[0], -1).all(dim=1).numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        snr = signal_noise_ratio(e, r).reshape(e.shape[0], -1).mean(dim=1).numpy()
        si_sdr = (
            scale_invariant_signal_distortion_ratio(e, r, zero_mean=True).reshape(e.shape[0], -1).mean(dim=1)
        )
    return np.where(same, np.inf, snr), np.where(same, np.inf, si_sdr.numpy())


def _mean(values: list[np.ndarray]) -> tuple[float | None, int]:
    joined = np.concatenate(values) if values else np.zeros(0)
    finite = joined[np.isfinite(joined)]
    return (float(finite.mean()) if finite.size else None), int(np.isinf(joined).sum())


class SignalTask:
    """SNR and SI-SDR of signal outputs (see the module docstring)."""

    name = "signal"

    def __init__(self) -> None:
        self.primary_output = ""
        self.clean: Any = None
        self.vs_golden: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
        self.golden_vs_clean: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
        self.compressed_vs_clean: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])

    def start(self, context: TaskContext) -> None:
        unknown = sorted(set(context.options) - set(OPTION_KEYS))
        if unknown:
            raise OutputMismatchError(
                f"task 'signal' has no option {', '.join(map(repr, unknown))}; its options are {', '.join(OPTION_KEYS)}"
            )
        wanted = context.options.get("output")
        shapes = context.output_shapes
        fits = [name for name, shape in shapes.items() if len(shape) in (1, 2) and shape[-1] >= 2]
        if wanted is not None:
            if wanted not in shapes:
                raise OutputMismatchError(
                    f"task 'signal': the model has no output {wanted!r} (outputs: {', '.join(shapes)})"
                )
            if wanted not in fits:
                raise OutputMismatchError(
                    f"task 'signal': output {wanted!r} has per-sample shape {shapes[str(wanted)]}; it needs (T,) or (C, T)"
                )
            self.primary_output = str(wanted)
        elif fits:
            self.primary_output = fits[0]
        else:
            raise OutputMismatchError(
                "task 'signal' found no output with a time axis ((T,) or (C, T) per sample)"
            )
        clean = context.dataset.get(CLEAN_KEY)
        if clean is not None:
            want = (context.n_samples, *shapes[self.primary_output])
            if tuple(np.shape(clean)) != want:
                raise DatasetMismatchError(
                    f"'{CLEAN_KEY}' has shape {tuple(np.shape(clean))}; the output '{self.primary_output}' needs {want}"
                )
            self.clean = clean

    def update(
        self, golden: Mapping[str, Any], compressed: Mapping[str, Any], start: int, stop: int
    ) -> Mapping[str, Any]:
        g = np.asarray(golden[self.primary_output], dtype=np.float64)
        c = np.asarray(compressed[self.primary_output], dtype=np.float64)
        snr, si_sdr = snr_si_sdr(c, g)
        self.vs_golden[0].append(snr)
        self.vs_golden[1].append(si_sdr)
        rows: dict[str, np.ndarray] = {"snr_db_vs_golden": snr, "si_sdr_db_vs_golden": si_sdr}
        if self.clean is not None:
            clean = np.asarray(self.clean[start:stop], dtype=np.float64)
            for into, estimate, key in (
                (self.golden_vs_clean, g, "si_sdr_db_golden"),
                (self.compressed_vs_clean, c, "si_sdr_db_compressed"),
            ):
                s, d = snr_si_sdr(estimate, clean)
                into[0].append(s)
                into[1].append(d)
                rows[key] = d
        return rows

    def to_dict(self) -> dict[str, Any]:
        snr, identical = _mean(self.vs_golden[0])
        si_sdr, _ = _mean(self.vs_golden[1])
        block: dict[str, Any] = {
            "name": self.name,
            "output": self.primary_output,
            "snr_db_vs_golden": snr,
            "si_sdr_db_vs_golden": si_sdr,
            "n_identical": identical,
            "against_clean": None,
            "snr_drop_db": None,
            "si_sdr_drop_db": None,
        }
        if self.golden_vs_clean[0]:
            scores = {
                role: {"snr_db": _mean(pair[0])[0], "si_sdr_db": _mean(pair[1])[0]}
                for role, pair in (("golden", self.golden_vs_clean), ("compressed", self.compressed_vs_clean))
            }

            def drop(key: str) -> float | None:
                g, c = scores["golden"][key], scores["compressed"][key]
                return None if g is None or c is None else g - c

            block["against_clean"] = scores
            block["snr_drop_db"] = drop("snr_db")
            block["si_sdr_drop_db"] = drop("si_sdr_db")
        return block
