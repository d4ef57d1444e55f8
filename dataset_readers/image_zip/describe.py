"""Check an uploaded zip of images (and its optional labels CSV and COCO annotations.json) without decoding
the images.

The upload check, in the API: reads the zip directory, the CSV and each image's header (Pillow opens
lazily), so a corrupt image, a label for a missing file or a path outside the archive is refused at upload,
with the file named. Without verifying the images it is also the listing that previews and jobs read the
sample order and labels from. Decoding, resizing and normalising happen in the worker (``decode``).
"""

from __future__ import annotations

import csv
import io
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath

from dataset_readers.archives import (
    UNREADABLE_ZIP_ERRORS,
    ArchiveLimits,
    check_archive,
    describe_zip_error,
    unreadable_zip,
)
from dataset_readers.errors import DatasetFormatError
from dataset_readers.image_zip.coco import COCO_JSON, CocoBoxes, read_coco

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")
LABELS_CSV = "labels.csv"
# Labels are stored as 32-bit integers (sample_divergences.label).
LABEL_MIN, LABEL_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True)
class ImageZipDescription:
    images: list[str]  # member names, sorted: the sample order
    labels: list[int] | None
    coco: CocoBoxes | None = None  # detection boxes from an annotations.json (image_zip/coco.py)


def _read_labels(zf: zipfile.ZipFile, member: str, images: list[str]) -> list[int]:
    text = zf.read(member).decode("utf-8-sig", errors="replace")
    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error as exc:  # e.g. a field over csv's size limit
        raise DatasetFormatError(f"{member} is not a readable CSV file ({exc})") from exc
    if not rows or not {"filename", "label"} <= set(rows[0]):
        raise DatasetFormatError(f"{member} must have a header 'filename,label' and one row per image")
    by_name: dict[str, int] = {}
    for line, row in enumerate(rows, start=2):
        filename, label = row.get("filename"), row.get("label")
        if filename is None or label is None:
            raise DatasetFormatError(f"{member}, line {line}: needs two values, filename and label")
        try:
            value = int(label)
        except ValueError as exc:
            raise DatasetFormatError(f"{member}: label {label!r} of {filename!r} is not an integer") from exc
        if not LABEL_MIN <= value <= LABEL_MAX:
            raise DatasetFormatError(
                f"{member}: label {value} of {filename!r} is out of range; a label is a class index "
                f"between {LABEL_MIN} and {LABEL_MAX}"
            )
        by_name[filename.strip()] = value
    labels = []
    for image in images:
        key = image if image in by_name else PurePosixPath(image).name
        if key not in by_name:
            raise DatasetFormatError(f"{member} has no label for image {image!r}; label every image or none")
        labels.append(by_name[key])
    return labels


def too_many_pixels(name: str, width: int, height: int, max_pixels: int) -> str | None:
    """Why an image of this size is refused, or None. The same limit holds at upload and before every
    decode of a preview (backend/dataset_preview.py), so an accepted dataset can always be previewed."""
    if width * height <= max_pixels:
        return None
    return (
        f"image {name!r} is {width}x{height} = {width * height:,} pixels, over the limit of {max_pixels:,} "
        "pixels (KNEEBOARD_IMAGE_MAX_PIXELS); resize it, or raise the limit"
    )


def _check_image_headers(zf: zipfile.ZipFile, images: list[str], max_pixels: int) -> None:
    from PIL import Image

    for name in images:
        with zf.open(name) as f:
            try:
                with Image.open(f) as img:  # reads the header only: the size, not the pixels
                    refusal = too_many_pixels(name, img.width, img.height, max_pixels)
                    if refusal:
                        raise DatasetFormatError(refusal)
                    img.verify()
            except DatasetFormatError:
                raise
            except Image.DecompressionBombError as exc:
                raise DatasetFormatError(
                    f"image {name!r} in the zip is too large to decode safely ({exc}); resize it first"
                ) from exc
            except Exception as exc:
                # Pillow's decoders report a damaged file in many ways (OSError, SyntaxError, ValueError,
                # struct.error, IndexError, EOFError, the zip member's own CRC error…): all mean "unreadable".
                raise DatasetFormatError(f"image {name!r} in the zip is not a readable image: {exc}") from exc


def _pillow_limit() -> int:
    from PIL import Image

    return int(Image.MAX_IMAGE_PIXELS or 2**62)


def describe_image_zip(
    path: str,
    compressed_size: int,
    limits: ArchiveLimits,
    verify_images: bool = True,
    max_pixels: int | None = None,
) -> ImageZipDescription:
    """Sorted image names and labels; refuses unsafe, bomb-like or unreadable archives (the rules of
    dataset_readers.archives.check_archive, at `limits`) and, when verifying the images, any image over
    `max_pixels` (default: Pillow's MAX_IMAGE_PIXELS)."""
    try:
        zf = zipfile.ZipFile(path)
    except UNREADABLE_ZIP_ERRORS as exc:
        raise DatasetFormatError(
            f"not a zip archive ({describe_zip_error(exc)}): zip a folder of images (and labels.csv)"
        ) from exc
    with zf, unreadable_zip("the zip of images", "zip the folder of images again and upload it again"):
        check_archive(zf, "the zip of images", compressed_size, limits)
        infos = zf.infolist()
        files = [
            i.filename for i in infos if not i.is_dir() and not PurePosixPath(i.filename).name.startswith(".")
        ]
        images = sorted(f for f in files if f.lower().endswith(IMAGE_SUFFIXES) and "__MACOSX" not in f)
        if not images:
            raise DatasetFormatError(f"the zip holds no images ({', '.join(IMAGE_SUFFIXES)})")
        csvs = [f for f in files if PurePosixPath(f).name == LABELS_CSV]
        labels = _read_labels(zf, csvs[0], images) if csvs else None
        jsons = [f for f in files if PurePosixPath(f).name == COCO_JSON]
        coco = read_coco(zf, jsons[0], images) if jsons else None
        if verify_images:
            _check_image_headers(zf, images, max_pixels or _pillow_limit())
    return ImageZipDescription(images=images, labels=labels, coco=coco)
