"""Check an uploaded zip of images (and its optional labels CSV) without decoding the images.

Runs in the API: reads the zip directory, the CSV and each image's header (Pillow opens lazily), so a
corrupt image, a label for a missing file or a path outside the archive is refused at upload, with the
file named. Decoding, resizing and normalising happen in the worker (worker/engine/images.py).
"""

from __future__ import annotations

import csv
import io
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath

from backend.errors import InvalidUpload

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")
LABELS_CSV = "labels.csv"
MAX_FILES = 200_000
MAX_EXPANSION = 100  # uncompressed bytes per compressed byte, beyond which an archive is a bomb


@dataclass(frozen=True)
class ImageZipDescription:
    images: list[str]  # member names, sorted: the sample order
    labels: list[int] | None


def _is_unsafe(info: zipfile.ZipInfo) -> bool:
    path = PurePosixPath(info.filename)
    is_symlink = (info.external_attr >> 16) & 0o170000 == 0o120000
    return path.is_absolute() or ".." in path.parts or is_symlink


def _read_labels(zf: zipfile.ZipFile, member: str, images: list[str]) -> list[int]:
    text = zf.read(member).decode("utf-8-sig", errors="replace")
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows or not {"filename", "label"} <= set(rows[0]):
        raise InvalidUpload(f"{member} must have a header 'filename,label' and one row per image")
    by_name: dict[str, int] = {}
    for row in rows:
        try:
            by_name[row["filename"].strip()] = int(row["label"])
        except ValueError as exc:
            raise InvalidUpload(
                f"{member}: label {row['label']!r} of {row['filename']!r} is not an integer"
            ) from exc
    labels = []
    for image in images:
        key = image if image in by_name else PurePosixPath(image).name
        if key not in by_name:
            raise InvalidUpload(f"{member} has no label for image {image!r}; label every image or none")
        labels.append(by_name[key])
    return labels


def _check_image_headers(zf: zipfile.ZipFile, images: list[str]) -> None:
    from PIL import Image, UnidentifiedImageError

    for name in images:
        with zf.open(name) as f:
            try:
                with Image.open(f) as img:
                    img.verify()
            except (UnidentifiedImageError, OSError, SyntaxError) as exc:
                raise InvalidUpload(f"image {name!r} in the zip is not a readable image: {exc}") from exc


def describe_image_zip(path: str, compressed_size: int, verify_images: bool = True) -> ImageZipDescription:
    """Sorted image names and labels; refuses unsafe, bomb-like or unreadable archives."""
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise InvalidUpload(f"not a zip archive ({exc}): zip a folder of images (and labels.csv)") from exc
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_FILES:
            raise InvalidUpload(f"the zip holds {len(infos)} files; at most {MAX_FILES} are accepted")
        unsafe = [i.filename for i in infos if _is_unsafe(i)]
        if unsafe:
            raise InvalidUpload(
                f"zip members {unsafe[:3]} point outside the archive or are links; refusing them"
            )
        total = sum(i.file_size for i in infos)
        if total > MAX_EXPANSION * max(compressed_size, 1) and total > 100 * 1024**2:
            raise InvalidUpload(
                f"the zip expands to {total} bytes from {compressed_size}: refusing a zip bomb"
            )
        files = [
            i.filename for i in infos if not i.is_dir() and not PurePosixPath(i.filename).name.startswith(".")
        ]
        images = sorted(f for f in files if f.lower().endswith(IMAGE_SUFFIXES) and "__MACOSX" not in f)
        if not images:
            raise InvalidUpload(f"the zip holds no images ({', '.join(IMAGE_SUFFIXES)})")
        csvs = [f for f in files if PurePosixPath(f).name == LABELS_CSV]
        labels = _read_labels(zf, csvs[0], images) if csvs else None
        if verify_images:
            _check_image_headers(zf, images)
    return ImageZipDescription(images=images, labels=labels)
