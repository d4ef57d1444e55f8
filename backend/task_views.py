"""The sample inspector's stored views (worker/engine/tasks/view_encoding.py) turned into what the page shows:
label maps as palette PNGs over the input picture, an image output's three pictures, and a signal's waveforms
as a plot outline and as WAV files. numpy, Pillow and the standard library's `wave` only (no runtime).
"""

from __future__ import annotations

import base64
import io
import itertools
import wave
from typing import Any

import numpy as np
from PIL import Image

WAVEFORM_POINTS = 400
"""Columns of the waveform outline sent for the plot (min and max of each): a few kB whatever the length."""
PCM_MAX = 32767
SIGNAL_ROLES = ("golden", "compressed", "clean")


def data_url(b64: str, media: str = "image/png") -> str:
    return f"data:{media};base64,{b64}"


def _png_b64(image: Any) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def decode_png(b64: str) -> np.ndarray:
    with Image.open(io.BytesIO(base64.b64decode(b64))) as image:
        return np.array(image)


def palette() -> np.ndarray:
    """The PASCAL VOC colour map (256 x RGB): class 0 black, then well-separated hues; what most segmentation
    tools draw with, so a team sees the colours it knows."""
    colours = np.zeros((256, 3), dtype=np.uint8)
    for k in range(256):
        c, r, g, b = k, 0, 0, 0
        for j in range(8):
            r |= ((c >> 0) & 1) << (7 - j)
            g |= ((c >> 1) & 1) << (7 - j)
            b |= ((c >> 2) & 1) << (7 - j)
            c >>= 3
        colours[k] = (r, g, b)
    return colours


_PALETTE = palette()


def _hex(k: int) -> str:
    return "#" + "".join(f"{int(v):02x}" for v in _PALETTE[min(k, 255)])


def _palette_image(indices: np.ndarray) -> Any:
    height, width = indices.shape
    return Image.frombytes("P", (width, height), np.ascontiguousarray(indices).tobytes())


def _label_png(labels: np.ndarray, transparent: int | None) -> str:
    """A palette PNG whose pixel values are the class ids (ids above 255 drawn as 255)."""
    image = _palette_image(np.clip(labels, 0, 255).astype(np.uint8))
    image.putpalette(_PALETTE.ravel().tolist())
    if transparent is not None and 0 <= transparent <= 255:
        image.info["transparency"] = transparent
    return data_url(_png_b64(image))


def segmentation_view(entry: dict[str, Any]) -> dict[str, Any]:
    """Palette PNGs of both models' label maps and the truth (ignore_index transparent), a PNG marking the
    pixels where the two models disagree (opaque magenta there, transparent elsewhere), and the classes seen
    with their colours and pixel counts."""
    ignore = entry.get("ignore_index")
    maps = {r: decode_png(entry[r]) for r in ("golden", "compressed", "truth") if entry.get(r) is not None}
    g, c = maps["golden"].astype(np.int64), maps["compressed"].astype(np.int64)
    differ = g != c
    marks = _palette_image(differ.astype(np.uint8))
    marks.putpalette([0, 0, 0, 255, 0, 255] + [0, 0, 0] * 254)
    marks.info["transparency"] = 0
    seen = set(np.unique(g).tolist()) | set(np.unique(c).tolist())
    truth = maps.get("truth")
    if truth is not None:
        seen |= set(np.unique(truth[truth != ignore]).tolist())
    classes = [
        {
            "label": int(k),
            "colour": _hex(int(k)),
            "golden_pixels": int((g == k).sum()),
            "compressed_pixels": int((c == k).sum()),
            "truth_pixels": None if truth is None else int((truth == k).sum()),
        }
        for k in sorted(seen)
    ]
    return {
        "image_size": entry.get("image_size") or [int(g.shape[0]), int(g.shape[1])],
        "ignore_index": ignore,
        "golden": _label_png(g, None),
        "compressed": _label_png(c, None),
        "truth": None if truth is None else _label_png(truth.astype(np.int64), ignore),
        "disagreement": data_url(_png_b64(marks)),
        "classes": classes,
        "classes_clipped": any(int(m.max(initial=0)) > 255 for m in maps.values()),
        "n_pixels": int(g.size),
        "disagreeing_pixels": int(differ.sum()),
        "iou_vs_golden": entry.get("iou_vs_golden"),
        "pixel_agreement": entry.get("pixel_agreement"),
    }


def image_view(entry: dict[str, Any]) -> dict[str, Any]:
    """The three stored PNGs as data URLs, and the picture's size from the PNG header."""
    with Image.open(io.BytesIO(base64.b64decode(entry["golden"]))) as first:
        width, height = first.size
    pictures = {k: data_url(entry[k]) for k in ("golden", "compressed", "difference")}
    return {**entry, **pictures, "image_size": [height, width]}


def waveforms(entry: dict[str, Any]) -> dict[str, np.ndarray]:
    """The stored waveforms as float64 (C, T) arrays (a (T,) sample is one channel)."""
    shape = [int(d) for d in entry["shape"]]
    out = {}
    for role in SIGNAL_ROLES:
        if entry.get(role) is not None:
            x = np.frombuffer(base64.b64decode(entry[role]), dtype="<f4").astype(np.float64).reshape(shape)
            out[role] = x.reshape(1, -1) if x.ndim == 1 else x
    return out


def wav_gain(waves: dict[str, np.ndarray]) -> float:
    """One gain for the sample's waveforms: 1 when they all lie in [-1, 1], else 1 / their largest |value|,
    so they play at their relative loudness without clipping."""
    peak = max(float(np.abs(w).max(initial=0.0)) for w in waves.values())
    return 1.0 / peak if peak > 1.0 else 1.0


def wav_bytes(waves: dict[str, np.ndarray], which: str, sample_rate: int) -> bytes:
    """A 16-bit PCM WAV of one waveform at `wav_gain`: values clipped to [-1, 1], then rounded to
    ±32767 (a stored NaN is already 0, an inf the float32 maximum: see view_encoding)."""
    x = np.clip(waves[which] * wav_gain(waves), -1.0, 1.0)
    pcm = np.rint(x * PCM_MAX).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(pcm.shape[0])
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes(np.ascontiguousarray(pcm.T).tobytes())  # frames interleave the channels
    return buffer.getvalue()


def outline(x: np.ndarray, points: int = WAVEFORM_POINTS) -> list[list[float]]:
    """[min, max] of each of `points` equal stretches of the channel-averaged waveform (fewer for a short
    one): the plot's outline, exact to the stored values."""
    mono = x.mean(axis=0)
    edges = np.linspace(0, len(mono), min(points, len(mono)) + 1).astype(int)
    return [[float(mono[a:b].min()), float(mono[a:b].max())] for a, b in itertools.pairwise(edges)]


def signal_view(entry: dict[str, Any], sample_rate: int, audio_url: str) -> dict[str, Any]:
    """Per role its WAV's URL (`audio_url` + role) and outline; the gain the WAVs are played at."""
    waves = waveforms(entry)
    frames = int(entry["shape"][-1])
    return {
        "sample_rate": sample_rate,
        "shape": entry["shape"],
        "duration_s": frames / sample_rate,
        "gain": wav_gain(waves),
        "audio": {r: (f"{audio_url}/{r}" if r in waves else None) for r in SIGNAL_ROLES},
        "outline": {r: (outline(waves[r]) if r in waves else None) for r in SIGNAL_ROLES},
        "nonfinite": entry.get("nonfinite", {}),
        **{k: entry.get(k) for k in _SIGNAL_SCORES},
    }


_SIGNAL_SCORES = ("snr_db_vs_golden", "si_sdr_db_vs_golden", "si_sdr_db_golden", "si_sdr_db_compressed")
