"""Sample images for the pretrained image models: scikit-learn's two bundled photos (china.jpg, flower.jpg), four square crops of each,
resized to 224 x 224, each also mirrored: 16 images.
Normalised as the TensorFlow Lite models expect, (pixel - 127) / 128, or with ImageNet's mean and std.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

IMAGE_SIZE = 224
LITE_MEAN = 127.0
"""EfficientNet-Lite input scaling of the TensorFlow reference code: (pixel - 127) / 128."""
LITE_STD = 128.0
IMAGENET_MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
IMAGENET_STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)

Normalisation = Literal["lite", "imagenet"]


@dataclass(frozen=True)
class SampleImages:
    """images: (N, 3, 224, 224) float32, normalised; pixels: the same as (N, 224, 224, 3) uint8 RGB;
    names: "china/center", "china/center/mirrored"...; photo: the source photo of each image."""

    images: np.ndarray
    pixels: np.ndarray
    names: tuple[str, ...]
    photo: tuple[str, ...]

    def indices(self, photo: str) -> np.ndarray:
        return np.flatnonzero(np.asarray(self.photo) == photo)


def _square_crops(height: int, width: int) -> dict[str, tuple[int, int, int, int]]:
    """Boxes (left, top, right, bottom): the full-height square at the centre, left and right, and a
    tighter centred square of 3/4 of the height."""
    side, tight = height, (3 * height) // 4
    return {
        "center": ((width - side) // 2, 0, (width + side) // 2, side),
        "left": (0, 0, side, side),
        "right": (width - side, 0, width, side),
        "tight": ((width - tight) // 2, (height - tight) // 2, (width + tight) // 2, (height + tight) // 2),
    }


def normalise(pixels: np.ndarray, normalisation: Normalisation = "lite") -> np.ndarray:
    """uint8 RGB (N, H, W, 3) -> float32 (N, 3, H, W) scaled for the network."""
    if normalisation == "lite":
        mean, std = np.full(3, LITE_MEAN, np.float32), np.full(3, LITE_STD, np.float32)
    elif normalisation == "imagenet":
        mean, std = np.asarray(IMAGENET_MEAN, np.float32), np.asarray(IMAGENET_STD, np.float32)
    else:
        raise ValueError(f"unknown normalisation {normalisation!r}")
    x = (pixels.astype(np.float32) - mean) / std
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2), dtype=np.float32)


def sample_images(size: int = IMAGE_SIZE, normalisation: Normalisation = "lite") -> SampleImages:
    """scikit-learn's china.jpg and flower.jpg: 4 square crops each, resized (bicubic), plus mirror
    images: 16 images in all."""
    from PIL import Image
    from sklearn.datasets import load_sample_images

    photos = load_sample_images()
    pixels: list[np.ndarray] = []
    names: list[str] = []
    sources: list[str] = []
    for filename, photo in zip(photos.filenames, photos.images, strict=True):
        stem = Path(filename).stem
        image = Image.fromarray(photo)
        for crop, box in _square_crops(photo.shape[0], photo.shape[1]).items():
            resized = np.asarray(image.crop(box).resize((size, size), Image.Resampling.BICUBIC))
            for mirrored in (False, True):
                pixels.append(resized[:, ::-1] if mirrored else resized)
                names.append(f"{stem}/{crop}" + ("/mirrored" if mirrored else ""))
                sources.append(stem)
    stacked = np.ascontiguousarray(np.stack(pixels), dtype=np.uint8)
    return SampleImages(normalise(stacked, normalisation), stacked, tuple(names), tuple(sources))
