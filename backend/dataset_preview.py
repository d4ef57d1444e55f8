"""A look at a few samples of a stored dataset: per-array statistics, labels and small PNG thumbnails.

Plain functions over the stored file, no HTTP or SQL; they run in the API process (numpy and Pillow only,
never torch). A preview reads only the samples it shows:

- an ``.npz``: only the requested rows of each array (the npz reader's ``rows``, dataset_readers/npz/rows.py:
  stored members memory-mapped, compressed ones streamed forward in bounded chunks);
- an image zip decodes only the requested members (sample order = sorted member names, as in
  ``dataset_readers.image_zip.describe``), refusing images over the pixel limit that uploads are checked against
  (KNEEBOARD_IMAGE_MAX_PIXELS) before decoding them; a JPEG thumbnail decodes at a reduced scale, and
  statistics of 8-bit images come from Pillow's histograms (no copy of the pixels).
"""

from __future__ import annotations

import io
import math
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from backend.archive_limits import archive_limits
from backend.array_png import (
    THUMBNAIL_MAX_SIDE,
    array_thumbnail,
    fit_side,
    image_layout,
    not_image_message,
    numeric,
    png_bytes,
)
from backend.errors import Conflict, InvalidRequest, InvalidUpload, NotFound
from dataset_readers.archives import UNREADABLE_ZIP_ERRORS, describe_zip_error
from dataset_readers.errors import DatasetFormatError, NoSuchSample, SampleTooLarge
from dataset_readers.image_zip.describe import describe_image_zip, too_many_pixels
from dataset_readers.interface import LABELS, SampleRows
from dataset_readers.npz.reader import NpzReader

IMAGE_ARRAY = "image"
"""Name of the decoded picture in the preview of an image-zip sample."""


@dataclass(frozen=True)
class ArrayStats:
    """One array of one sample: its shape without the sample axis, and statistics of its finite values."""

    shape: tuple[int, ...]
    dtype: str
    min: float | None
    max: float | None
    mean: float | None
    nonfinite: int
    image: bool


@dataclass(frozen=True)
class SamplePreview:
    index: int
    label: int | None
    arrays: dict[str, ArrayStats]
    image: bool
    name: str | None = None  # the member of an image zip
    image_array: str | None = None  # the npz array a thumbnail shows
    error: str | None = None  # why this sample could not be read (the others still are)
    text: dict[str, str] | None = None  # a text dataset's strings (backend/text_preview.py)


@dataclass(frozen=True)
class SamplePage:
    total: int
    items: list[SamplePreview] = field(default_factory=list)


# --- statistics and image-likeness -------------------------------------------------------------------


def array_stats(sample: np.ndarray) -> ArrayStats:
    """min / max / mean of the finite values (float64), and how many values are NaN or infinite."""
    shape = tuple(int(s) for s in sample.shape)
    dtype = sample.dtype
    image = image_layout(shape, dtype) is not None
    if not numeric(dtype) or sample.size == 0:
        return ArrayStats(shape, dtype.name, None, None, None, 0, image)
    values = np.asarray(sample, dtype=np.float64).ravel()
    finite = np.isfinite(values)
    nonfinite = int(values.size - np.count_nonzero(finite))
    if nonfinite:
        values = values[finite]
    if values.size == 0:
        return ArrayStats(shape, dtype.name, None, None, None, nonfinite, image)
    mean = float(values.mean())
    return ArrayStats(
        shape,
        dtype.name,
        float(values.min()),
        float(values.max()),
        mean if math.isfinite(mean) else None,  # a sum of huge finite values can overflow
        nonfinite,
        image,
    )


def _check_indices(indices: Sequence[int], total: int) -> None:
    for i in indices:
        if not 0 <= i < total:
            raise NotFound(f"no sample {i}: the dataset has {total} samples (0 to {total - 1})")


@contextmanager
def _readable(what: str) -> Iterator[None]:
    try:
        yield
    except UNREADABLE_ZIP_ERRORS as exc:
        raise Conflict(f"the stored {what} cannot be read ({describe_zip_error(exc)})") from exc


def _npz_rows(path: Path, indices: Sequence[int] | slice) -> SampleRows:
    """The npz reader's rows, its refusals in the API's words: a damaged file is a Conflict, a sample
    beyond the end NotFound, one too large to preview an InvalidRequest."""
    try:
        return NpzReader().rows(path, indices)
    except NoSuchSample as exc:
        raise NotFound(exc.message) from exc
    except SampleTooLarge as exc:
        raise InvalidRequest(exc.message) from exc
    except DatasetFormatError as exc:
        raise Conflict(exc.message) from exc


def read_npz_rows(path: Path, indices: Sequence[int]) -> tuple[int, dict[str, list[np.ndarray]]]:
    """The number of samples and, for every array of the .npz, the rows at `indices` (in that order).
    Reads the array headers and those rows only."""
    found = _npz_rows(path, indices)
    return found.total, found.rows


def _npz_label(rows: dict[str, list[np.ndarray]], k: int) -> int | None:
    labels = rows.get(LABELS)
    if labels is None or labels[k].ndim != 0 or labels[k].dtype.kind not in "iu":
        return None
    return int(labels[k])


def preview_npz(path: Path, offset: int, limit: int) -> SamplePage:
    found = _npz_rows(path, slice(offset, offset + limit))
    total, indices, rows = found.total, found.indices, found.rows
    items = []
    for k, index in enumerate(indices):
        arrays = {name: array_stats(values[k]) for name, values in rows.items() if name != LABELS}
        image_array = next((name for name, stats in arrays.items() if stats.image), None)
        items.append(
            SamplePreview(
                index=index,
                label=_npz_label(rows, k),
                arrays=arrays,
                image=image_array is not None,
                image_array=image_array,
            )
        )
    return SamplePage(total=total, items=items)


def npz_thumbnail(
    path: Path, index: int, array: str | None = None, max_side: int = THUMBNAIL_MAX_SIDE
) -> bytes:
    """A PNG of sample `index` of `array` (default: the first image-like array)."""
    _, rows = read_npz_rows(path, [index])
    candidates = {name: values[0] for name, values in rows.items() if name != LABELS}
    if array is not None:
        if array not in candidates:
            raise InvalidRequest(f"the dataset has no array {array!r}; it has {sorted(candidates)}")
        sample = candidates[array]
        if image_layout(sample.shape, sample.dtype) is None:
            raise Conflict(not_image_message(array, sample.shape))
        return array_thumbnail(sample, max_side)
    for sample in candidates.values():
        if image_layout(sample.shape, sample.dtype) is not None:
            return array_thumbnail(sample, max_side)
    described = "; ".join(not_image_message(n, s.shape) for n, s in candidates.items())
    raise Conflict(f"sample {index} has no image to draw: {described}")


# --- image zips ---------------------------------------------------------------------------------------


@contextmanager
def _open_member_image(zf: zipfile.ZipFile, member: str, max_pixels: int | None) -> Iterator[Any]:
    """The member as a Pillow image (header read, pixels not yet decoded), refused over max_pixels (the
    limit uploads are checked against; default Pillow's MAX_IMAGE_PIXELS) before anything is decoded."""
    from PIL import Image

    limit = max_pixels if max_pixels is not None else Image.MAX_IMAGE_PIXELS
    with zf.open(member) as raw:
        data = io.BytesIO(raw.read())
    try:
        image = Image.open(data)
    except Image.DecompressionBombError as exc:
        raise Conflict(f"image {member!r} is too large to decode safely ({exc})") from exc
    except Exception as exc:  # Pillow reports a damaged file in many ways
        raise Conflict(f"image {member!r} is not a readable image: {exc}") from exc
    with image:
        refusal = too_many_pixels(member, image.width, image.height, limit) if limit is not None else None
        if refusal:
            raise Conflict(refusal)
        yield image


EIGHT_BIT_MODES = ("L", "LA", "RGB", "RGBA")
WIDE_MODES = ("I", "I;16", "I;16B", "I;16L", "F")


def _displayable(image: Any) -> Any:
    """The decoded image in a mode PNG and numpy both understand (L, LA, RGB or RGBA). Not a copy when it
    is one already: a 25-megapixel RGB image takes 100 MB in Pillow (4 bytes a pixel), a copy as much again."""
    if image.mode in EIGHT_BIT_MODES:
        return image
    if image.mode == "1":
        return image.convert("L")
    if image.mode == "P":
        return image.convert("RGBA" if "transparency" in image.info else "RGB")
    if image.mode in WIDE_MODES:
        pixels = np.asarray(image, dtype=np.float64)
        lo, hi = float(pixels.min()), float(pixels.max())
        scaled = np.zeros(pixels.shape, np.uint8) if hi <= lo else (pixels - lo) / (hi - lo) * 255.0
        from PIL import Image

        return Image.fromarray(np.round(scaled).astype(np.uint8), mode="L")
    return image.convert("RGB")


def _histogram_stats(image: Any) -> ArrayStats:
    """min / max / mean of every value of an 8-bit image from its per-band histograms (exact, and no copy of
    the pixels: numpy's float64 copy of a 25-megapixel RGBA image would take 800 MB)."""
    bands = len(image.getbands())
    counts = np.asarray(image.histogram(), dtype=np.int64).reshape(bands, 256).sum(axis=0)
    present = np.flatnonzero(counts)
    total = int(counts.sum())
    shape = (image.height, image.width) if bands == 1 else (image.height, image.width, bands)
    if total == 0:
        return ArrayStats(shape, "uint8", None, None, None, 0, True)
    mean = int((counts * np.arange(256, dtype=np.int64)).sum()) / total
    return ArrayStats(shape, "uint8", float(present[0]), float(present[-1]), mean, 0, True)


def _sample_stats(zf: zipfile.ZipFile, member: str, max_pixels: int | None) -> ArrayStats:
    with _open_member_image(zf, member, max_pixels) as image:
        try:
            image.load()
            if image.mode in WIDE_MODES:
                return replace(array_stats(np.asarray(image)), image=True)
            return _histogram_stats(_displayable(image))
        except Exception as exc:
            raise Conflict(f"image {member!r} could not be decoded: {exc}") from exc


def _image_zip_listing(path: Path) -> tuple[list[str], list[int] | None]:
    """Sample order and labels, the archive held to this process's limits; a refusal is the upload
    check's own (InvalidUpload, as when the file was uploaded)."""
    with _readable("zip of images"):
        try:
            description = describe_image_zip(
                str(path), path.stat().st_size, archive_limits(), verify_images=False
            )
        except DatasetFormatError as exc:
            raise InvalidUpload(exc.message) from exc
    return description.images, description.labels


def preview_image_zip(path: Path, offset: int, limit: int, max_pixels: int | None = None) -> SamplePage:
    images, labels = _image_zip_listing(path)
    indices = list(range(offset, min(offset + limit, len(images))))
    items = []
    with _readable("zip of images"), zipfile.ZipFile(path) as zf:
        for index in indices:
            label = None if labels is None else labels[index]
            try:
                stats = _sample_stats(zf, images[index], max_pixels)
            except Conflict as exc:  # one bad image (too large, undecodable) does not hide the others
                items.append(
                    SamplePreview(index, label, {}, image=False, name=images[index], error=exc.message)
                )
                continue
            items.append(SamplePreview(index, label, {IMAGE_ARRAY: stats}, image=True, name=images[index]))
    return SamplePage(total=len(images), items=items)


def image_zip_thumbnail(
    path: Path, index: int, max_side: int = THUMBNAIL_MAX_SIDE, max_pixels: int | None = None
) -> bytes:
    images, _ = _image_zip_listing(path)
    _check_indices([index], len(images))
    member = images[index]
    with (
        _readable("zip of images"),
        zipfile.ZipFile(path) as zf,
        _open_member_image(zf, member, max_pixels) as image,
    ):
        try:
            # JPEG: decode at 1/2, 1/4 or 1/8 scale (a 9000x9000 photo as 1125x1125); other formats decode
            # whole (their size is bounded by max_pixels) and are reduced in place by thumbnail().
            image.draft(image.mode if image.mode in EIGHT_BIT_MODES else "RGB", (max_side, max_side))
            image.load()  # before _fit: an image not yet loaded is "readonly", and _fit would copy it
            return png_bytes(fit_side(_displayable(image), max_side))
        except Conflict:
            raise
        except Exception as exc:
            raise Conflict(f"image {member!r} could not be decoded: {exc}") from exc


# --- by dataset kind ----------------------------------------------------------------------------------


def preview_samples(
    path: Path, kind: str, offset: int, limit: int, max_pixels: int | None = None
) -> SamplePage:
    """Samples offset .. offset+limit-1 (fewer at the end) of a stored dataset of this kind; images over
    max_pixels are listed with the reason instead of being decoded."""
    if kind == "npz":
        return preview_npz(path, offset, limit)
    if kind == "image_zip":
        return preview_image_zip(path, offset, limit, max_pixels)
    from backend.text_preview import TEXT_PREVIEW_KINDS, preview_text  # it imports this module

    if kind in TEXT_PREVIEW_KINDS:
        return preview_text(path, kind, offset, limit)
    raise Conflict(f"datasets of kind {kind!r} have no preview")


def sample_thumbnail(
    path: Path,
    kind: str,
    index: int,
    array: str | None = None,
    max_side: int = THUMBNAIL_MAX_SIDE,
    max_pixels: int | None = None,
) -> bytes:
    """A PNG (longest side at most max_side) of one sample; Conflict when it is not an image."""
    if kind == "npz":
        return npz_thumbnail(path, index, array, max_side)
    if kind == "image_zip":
        if array is not None and array != IMAGE_ARRAY:
            raise InvalidRequest(f"a zip of images has one array per sample, {IMAGE_ARRAY!r}, not {array!r}")
        return image_zip_thumbnail(path, index, max_side, max_pixels)
    raise Conflict(f"datasets of kind {kind!r} have no thumbnails")
