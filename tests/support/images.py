"""Image archives for dataset tests, from the photos scikit-learn ships (no download)."""

from __future__ import annotations

import io
import zipfile

import numpy as np


def png_bytes(pixels: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def sample_photo_zip(labels_csv: str | None = "filename,label\nchina.png,3\nflower.png,7\n") -> bytes:
    """scikit-learn's two bundled photos (china, flower), as PNGs in a zip with an optional labels.csv."""
    from sklearn.datasets import load_sample_images

    photos = load_sample_images()
    names = [name.rsplit("/", 1)[-1].replace(".jpg", ".png") for name in photos.filenames]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, image in zip(names, photos.images, strict=True):
            zf.writestr(f"photos/{name}", png_bytes(image))
        if labels_csv is not None:
            zf.writestr("photos/labels.csv", labels_csv)
    return buf.getvalue()
