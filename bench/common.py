"""Timing helpers (best-of-N wall time, ratios against a baseline measured in the same run) and the real
photos the benches run 224-px models on."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np


def best_of(fn: Callable[[], object], repeats: int = 5) -> float:
    """The fastest of `repeats` runs, in seconds (the least disturbed by a noisy machine)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


@contextmanager
def onnxruntime_run_time() -> Iterator[list[float]]:
    """Seconds spent inside onnxruntime's `run` and `run_with_iobinding` (every session) while the block
    runs, in the one-element list it yields: the floor under any code that is not onnxruntime itself."""
    from onnxruntime.capi.onnxruntime_inference_collection import Session

    spent = [0.0]
    originals = {name: getattr(Session, name) for name in ("run", "run_with_iobinding")}

    def timed(original: Callable[..., object]) -> Callable[..., object]:
        def run(*args: object, **kwargs: object) -> object:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start

        return run

    for name, original in originals.items():
        setattr(Session, name, timed(original))
    try:
        yield spent
    finally:
        for name, original in originals.items():
            setattr(Session, name, original)


def report(name: str, seconds: float, baseline_name: str, baseline_seconds: float) -> None:
    print(f"{name:<46} {seconds * 1000:10.1f} ms   {seconds / baseline_seconds:6.2f}x {baseline_name}")


def photo_crops(n: int, size: int, seed: int = 0) -> np.ndarray:
    """`n` square crops of scikit-learn's two sample photos (random position and scale, some mirrored),
    resized to `size` and scaled as EfficientNet-Lite expects."""
    from PIL import Image
    from sklearn.datasets import load_sample_images

    from tests.support.sample_images import normalise

    rng = np.random.default_rng(seed)
    photos = [Image.fromarray(p) for p in load_sample_images().images]
    crops = []
    for i in range(n):
        photo = photos[i % len(photos)]
        side = int(rng.integers(min(photo.size) // 3, min(photo.size)))
        x, y = int(rng.integers(0, photo.size[0] - side)), int(rng.integers(0, photo.size[1] - side))
        pixels = np.asarray(
            photo.crop((x, y, x + side, y + side)).resize((size, size), Image.Resampling.BICUBIC)
        )
        crops.append(pixels[:, ::-1] if rng.random() < 0.5 else pixels)
    return normalise(np.ascontiguousarray(np.stack(crops), dtype=np.uint8))


def peak_rss_mib() -> float:
    """This process's peak resident memory (VmHWM) in MiB. Not ru_maxrss: Linux keeps ru_maxrss across
    execve, so a spawned child would report its parent's peak (bench_sensitivity's 500-layer line read 2522
    MiB, the bench process's own peak after the EfficientNet scans, for a scan that peaks at 616)."""
    status = Path("/proc/self/status").read_text().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
