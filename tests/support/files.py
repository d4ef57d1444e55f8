"""Small files for upload tests, made without torch (the API side of the tests stays light)."""

from __future__ import annotations

import io
import zipfile

import numpy as np


def npz_bytes(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def digits_like_npz(n: int = 8) -> bytes:
    rng = np.random.default_rng(0)
    return npz_bytes(input=rng.random((n, 1, 8, 8), dtype=np.float32), labels=rng.integers(0, 10, n))


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def minimal_onnx_bytes(doc_string: str = "") -> bytes:
    """A tiny valid ONNX model (Identity), built with the onnx package; another `doc_string` gives other bytes
    (a re-upload of the same bytes into a project answers with the existing model)."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph([helper.make_node("Identity", ["input"], ["output"])], "identity", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], doc_string=doc_string)
    return bytes(model.SerializeToString())


def pickle_bytes() -> bytes:
    import pickle

    return pickle.dumps({"weights": [1.0, 2.0]}, protocol=4)


def torch_save_like_zip() -> bytes:
    """The layout torch.save() writes for a module or state_dict: a zip around data.pkl."""
    return zip_bytes(
        {"m/data.pkl": pickle_bytes(), "m/byteorder": b"little", "m/version": b"3", "m/data/0": b"\0" * 16}
    )


def damaged_zip(data: bytes, how: str) -> bytes:
    """A copy of a zip archive damaged the way a corrupt or hostile upload is, in its first member:
    'crc' (a byte of its data changed), 'method' (a compression method zipfile does not know),
    'encrypted' (the encryption flag set), 'version' (needs a newer zip version than zipfile reads)."""
    out = bytearray(data)
    central = out.index(b"PK\x01\x02")  # the first central directory entry
    local = int.from_bytes(out[central + 42 : central + 46], "little")
    if how == "crc":
        name_len = int.from_bytes(out[local + 26 : local + 28], "little")
        extra_len = int.from_bytes(out[local + 28 : local + 30], "little")
        out[local + 30 + name_len + extra_len] ^= 0xFF
    elif how == "method":
        out[central + 10 : central + 12] = out[local + 8 : local + 10] = (99).to_bytes(2, "little")
    elif how == "encrypted":
        out[central + 8] |= 1
        out[local + 6] |= 1
    elif how == "version":
        out[central + 6 : central + 8] = (99).to_bytes(2, "little")
    else:
        raise ValueError(how)
    return bytes(out)
