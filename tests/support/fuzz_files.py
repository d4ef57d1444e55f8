"""Files the API fuzz uploads: a zipped ONNX model and an image zip (with a labels.csv, or one given),
odd files that a model or dataset upload must refuse with a 4xx (empty, pickles, torch.save-like and
hostile zips, npz files with no input, an empty one, a scalar, ragged arrays or float labels), and valid
files cut short, with bytes flipped or bytes appended."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests.support import files
from tests.support.images import png_bytes


def onnx_zip() -> bytes:
    return files.zip_bytes({"model/model.onnx": files.minimal_onnx_bytes(), "model/weights.bin": b"\0" * 16})


def image_zip(labels: str | None = "filename,label\na.png,1\nb.png,2\n") -> bytes:
    members = {
        "imgs/a.png": png_bytes(np.full((3, 4, 3), 200, dtype="uint8")),
        "imgs/b.png": png_bytes(np.zeros((2, 5), dtype="uint8")),
    }
    if labels is not None:
        members["imgs/labels.csv"] = labels.encode()
    return files.zip_bytes(members)


ODD_FILES = [
    b"",
    files.pickle_bytes(),
    files.torch_save_like_zip(),
    files.zip_bytes({}),
    files.zip_bytes({"../escape.onnx": files.minimal_onnx_bytes()}),
    files.zip_bytes({"a.onnx": b"x", "b.onnx": b"y"}),
    files.zip_bytes({"x.npy": b"\x93NUMPY garbage"}),
    files.zip_bytes({"labels.csv": b"filename,label\nzz.png,notanint\n", "zz.png": b"not a png"}),
    files.npz_bytes(labels=np.arange(3)),
    files.npz_bytes(input=np.zeros((0, 2), "float32")),
    files.npz_bytes(input=np.float32(1.0)),
    files.npz_bytes(input=np.zeros((2, 2)), other=np.zeros((3, 2))),
    files.npz_bytes(input=np.zeros((2, 2)), labels=np.zeros((2,), "float32")),
]


@st.composite
def mutated(draw: st.DrawFn, valid: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(valid)))
    how = draw(st.sampled_from(["truncate", "flip", "append", "as_is"]))
    if how == "truncate":
        return bytes(data[: draw(st.integers(0, max(len(data) - 1, 0)))])
    if how == "flip" and data:
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
    elif how == "append":
        data += draw(st.binary(min_size=1, max_size=64))
    return bytes(data)
