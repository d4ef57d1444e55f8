"""The image-zip reader behind the DatasetReader interface: the upload check (``describe``) and the
decoded input array for the jobs (``arrays``), with the detection boxes of a COCO annotations.json. It has no ``rows``: a preview shows the images themselves,
not the model's input, and reads them by name (backend/dataset_preview.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dataset_readers.archives import ArchiveLimits
from dataset_readers.image_zip import decode
from dataset_readers.image_zip.coco import GT_BOXES, GT_LABELS, coco_arrays
from dataset_readers.image_zip.describe import describe_image_zip
from dataset_readers.interface import LABELS, ArrayInfo, DatasetDescription, ImageRecipe, ReadOptions


def _recipe(options: ReadOptions) -> ImageRecipe:
    if options.recipe is None:  # a caller's mistake, not the user's: the API always parses one
        raise TypeError("reading a zip of images needs ReadOptions.recipe (how images become the input)")
    return options.recipe


class ImageZipReader:
    """Images ordered by member name, each decoded, resized and normalised into one float32 array."""

    kind = "image_zip"

    def describe(self, path: Path, limits: ArchiveLimits, options: ReadOptions) -> DatasetDescription:
        """Checks every image's header (over `options.max_pixels` refused); the arrays are the ones the
        recipe will make."""
        recipe = _recipe(options)
        listing = describe_image_zip(str(path), path.stat().st_size, limits, max_pixels=options.max_pixels)
        n = len(listing.images)
        arrays = {recipe.input_name: ArrayInfo(tuple(recipe.array_shape(n)), "float32")}
        if listing.labels is not None:
            arrays[LABELS] = ArrayInfo((n,), "int64")
        if listing.coco is not None:
            m = listing.coco.max_boxes
            arrays[GT_BOXES] = ArrayInfo((n, m, 4), "float32")
            arrays[GT_LABELS] = ArrayInfo((n, m), "int64")
        return DatasetDescription(n_samples=n, arrays=arrays)

    def arrays(
        self, path: Path, limits: ArchiveLimits, options: ReadOptions, limit: int | None = None
    ) -> dict[str, np.ndarray]:
        """Decoded into memory, only the first `limit` images: 50,000 training images at 224 x 224 RGB
        would be 30 GB of float32, so a calibration set read whole would not fit."""
        recipe = _recipe(options)
        listing = describe_image_zip(str(path), path.stat().st_size, limits, verify_images=False)
        arrays = {
            recipe.input_name: decode.images_to_array(
                path,
                listing.images[:limit],
                recipe.size,
                recipe.mode,
                recipe.scale,
                recipe.mean,
                recipe.std,
                recipe.layout,
            )
        }
        if listing.labels is not None:
            arrays[LABELS] = np.asarray(listing.labels[:limit], dtype=np.int64)
        if listing.coco is not None:
            arrays.update(coco_arrays(listing.coco, recipe.size, limit))
        return arrays
