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

Sample inspector (`sample_views`): the first SIGNAL_VIEWS_MAX samples' golden and compressed outputs (and the
clean reference) as float32 waveforms (`worker.engine.tasks.view_encoding`), with their per-sample scores; the
API encodes them as WAV at the job's `sample_rate` for playback.

task_options: `output` (default: the first output with a time axis, (T,) or (C, T) per sample), `sample_rate`
(Hz, default 16000: what the inspector plays the waveforms at; 3000–768000, the rates browsers play). Unknown
keys are refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from task_specs import TASK_OPTIONS
from task_specs.launch import SIGNAL_SAMPLE_RATES
from worker.engine.errors import DatasetMismatchError, OutputMismatchError
from worker.engine.tasks.interface import TaskContext
from worker.engine.tasks.view_encoding import ViewBudget, waveform_b64

OPTION_KEYS = TASK_OPTIONS["signal"]  # one list for the launch check (task_specs) and the adapter
CLEAN_KEY = "clean"
"""Dataset array of clean reference signals, shaped like the output, for the signal task."""
DEFAULT_SAMPLE_RATE = 16000
SAMPLE_RATES = SIGNAL_SAMPLE_RATES  # what an HTML audio element plays, so the WAV the API encodes plays
SIGNAL_VIEWS_MAX = 16
"""Samples whose waveforms the inspector can play. Measured: one second at 16 kHz, mono, is 64 kB of float32,
85.3 kB in base64; golden, compressed and clean 256 kB a sample, 4.1 MB for 16; longer clips stop at
VIEW_BYTES_MAX (a 10 s clip: 2.6 MB a sample, so 4 samples)."""


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
        self.sample_rate = DEFAULT_SAMPLE_RATE
        self.kept: list[dict[str, Any]] = []
        self.budget = ViewBudget(SIGNAL_VIEWS_MAX)

    def start(self, context: TaskContext) -> None:
        unknown = sorted(set(context.options) - set(OPTION_KEYS))
        if unknown:
            raise OutputMismatchError(
                f"task 'signal' has no option {', '.join(map(repr, unknown))}; its options are {', '.join(OPTION_KEYS)}"
            )
        rate = context.options.get("sample_rate", DEFAULT_SAMPLE_RATE)
        low, high = SAMPLE_RATES
        if isinstance(rate, bool) or not isinstance(rate, int) or not low <= rate <= high:
            raise OutputMismatchError(
                f"task option 'sample_rate' must be an integer number of Hz from {low} to {high}, got {rate!r}"
            )
        self.sample_rate = rate
        if not context.sample_views:
            self.budget = ViewBudget(0)
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
        clean = None
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
        self._keep(g, c, clean, rows)
        return rows

    def _keep(
        self, g: np.ndarray, c: np.ndarray, clean: np.ndarray | None, rows: Mapping[str, np.ndarray]
    ) -> None:
        for i in range(len(g)):
            if not self.budget.room():
                return
            waves = {"golden": g[i], "compressed": c[i], "clean": None if clean is None else clean[i]}
            # the task and rate in each entry: the API reads one entry by JSON path, not the whole document
            view: dict[str, Any] = {
                "task": self.name,
                "shape": list(g.shape[1:]),
                "sample_rate": self.sample_rate,
                "nonfinite": {},
            }
            for role, wave in waves.items():
                view[role], bad = (None, 0) if wave is None else waveform_b64(wave)
                view["nonfinite"][role] = bad
            # per-sample scores in dB; an infinite one (identical outputs) is stored as None
            view |= {k: float(v[i]) if np.isfinite(v[i]) else None for k, v in rows.items()}
            self.budget.take(sum(len(view[r] or "") for r in waves))
            self.kept.append(view)

    def sample_views(self) -> dict[str, Any]:
        """The kept samples' waveforms (base64 float32) and scores, with the rate the inspector plays them at."""
        return {
            "task": self.name,
            "n_samples": len(self.kept),
            "sample_rate": self.sample_rate,
            "samples": list(self.kept),
        }

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
