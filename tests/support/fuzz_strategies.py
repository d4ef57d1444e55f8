"""Hypothesis strategies for the API fuzz's requests: text that has broken APIs before, JSON values,
form fields that hold JSON (valid, nearly, or not at all), labels.csv files, input dims and preprocessing
recipes; a job body aimed past the first checks at seeded rows, and an upload body with a file name the
API dispatches on and a valid, mutated or odd file."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st
from schemathesis.transport.serialization import Binary

from tests.support import files
from tests.support.fuzz_files import ODD_FILES, image_zip, mutated, onnx_zip
from tests.support.fuzz_seed import Seeded

UPLOAD_FIELD = "file"
# A key the body hook adds to an upload body: the file name to send the file part under (popped before sending).
FILENAME_KEY = "x-fuzz-filename"
MODEL_FILENAMES = ["model.onnx", "model.ONNX", "model.zip", "model.pt2", "model.pt", "model.pkl", "model", ""]
DATASET_FILENAMES = ["data.npz", "images.zip", "data.NPZ", "data.csv", "data", ""]


# Text that has broken APIs before: NUL (Postgres text cannot hold it), lengths at and past column limits,
# right-to-left overrides, SQL and path fragments, percent escapes, astral characters.
HOSTILE_TEXTS = [
    "\x00",
    "a\x00b",
    "x" * 200,
    "x" * 201,
    "x" * 501,
    "y" * 20_000,
    "\u202eevil",
    "' OR 1=1 --",
    "../../etc/passwd",
    "%00%ff",
    "\U0001f600" * 120,
    " ",
    "",
]
HOSTILE_TEXT = st.sampled_from(HOSTILE_TEXTS)


def _text(max_size: int) -> st.SearchStrategy[str]:
    return st.text(max_size=max_size) | HOSTILE_TEXT


def _finite_floats() -> st.SearchStrategy[float]:
    """NaN and infinity are not JSON: the client refuses to send them (bodies with NaN literals are tested in
    test_api_edge_cases.py)."""
    return st.floats(allow_nan=False, allow_infinity=False)


def _json_values() -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | _finite_floats() | _text(20)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    )


def _form_json(near: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[str]:
    """A form field that holds JSON: valid or nearly, arbitrary, or not JSON at all."""
    return (
        near.map(json.dumps)
        | _json_values().map(json.dumps)
        | st.text(max_size=40)
        | st.integers(1, 5000).map(lambda depth: "[" * depth + "]" * depth)
    )


def _labels_csv() -> st.SearchStrategy[str]:
    """A labels.csv for the two images of _image_zip: right, nearly, or anything."""
    row = st.tuples(st.sampled_from(["a.png", "b.png", "imgs/a.png", "c.png", ""]), _text(12) | st.integers())
    rows = st.lists(row.map(lambda r: f"{r[0]},{r[1]}"), max_size=4)
    header = st.sampled_from(["filename,label", "label,filename", "filename", ""])
    return st.tuples(header, rows).map(lambda t: "\n".join([t[0], *t[1]]) + "\n") | st.text(max_size=200)


def _input_dims() -> st.SearchStrategy[Any]:
    return (
        st.lists(st.integers(-2, 2**64) | st.booleans() | st.floats() | _text(3), max_size=5) | _json_values()
    )


def _preprocessing_changes() -> dict[str, st.SearchStrategy[Any]]:
    return {
        "size": st.lists(st.integers(-5, 10_000), min_size=0, max_size=3) | _json_values(),
        "mode": st.sampled_from(["RGB", "L", "CMYK"]) | _json_values(),
        "scale": st.floats() | _json_values(),
        "mean": st.lists(st.floats(), max_size=4) | _json_values(),
        "std": st.lists(st.floats(), max_size=4) | _json_values(),
        "layout": st.sampled_from(["NCHW", "NHWC", "CHW"]),
        "input_name": _text(300),
        "surprise": _json_values(),
    }


@st.composite
def _near(
    draw: st.DrawFn, valid: dict[str, Any], changes: dict[str, st.SearchStrategy[Any]]
) -> dict[str, Any]:
    """A valid document with up to two of its fields set to the values drawn from ``changes``."""
    names = draw(st.lists(st.sampled_from(sorted(changes)), max_size=2, unique=True))
    return {**valid, **{name: draw(changes[name]) for name in names}}


def job_body(generated: dict[str, Any], seeded: Seeded) -> st.SearchStrategy[dict[str, Any]]:
    """The generated body, or one aimed past the first checks: a seeded project, the fidelity kind and valid
    parameters (seeded models and datasets) with up to two of them changed to something hostile."""
    models = st.sampled_from(seeded.ids("model_id", "POST"))
    datasets = st.sampled_from(seeded.ids("dataset_id", "POST"))
    other_ids = st.sampled_from([i for ids in seeded.by_param.values() for i in ids]) | st.uuids().map(str)
    valid = st.fixed_dictionaries(
        {"golden_model_id": models, "compressed_model_id": models, "dataset_id": datasets}
    )
    changes = {
        "golden_model_id": other_ids | _json_values(),
        "compressed_model_id": other_ids | _json_values(),
        "dataset_id": other_ids | _json_values(),
        "batch_size": st.integers(-(2**40), 2**40) | _json_values(),
        "top_k": st.integers(-5, 5000) | _json_values(),
        "threshold_kl": _finite_floats() | _json_values(),
        "task": st.sampled_from(["auto", "classification", "embedding", "regression", "poetry"]),
        "outputs_are_probabilities": _json_values(),
        "threads": st.integers(-1, 1000) | _json_values(),
        "layer_profile": _json_values(),
        "layer_profile_samples": st.integers(-1, 2**33) | _json_values(),
        "layer_name_map": st.dictionaries(_text(10), _text(10)) | _json_values(),
        "model_id": other_ids,
        "surprise": _json_values(),
    }
    aimed = st.fixed_dictionaries(
        {
            "project_id": st.sampled_from(seeded.ids("project_id", "POST")),
            "kind": st.just("fidelity"),
            "params": valid.flatmap(lambda params: _near(params, changes)),
        }
    )
    odd_kind = aimed.flatmap(
        lambda body: st.sampled_from(["inspect", "FIDELITY", ""]).map(lambda kind: {**body, "kind": kind})
    )
    return st.one_of(aimed, st.just(generated), odd_kind)  # aimed first: Hypothesis's default branch


def _as_bytes(value: Any) -> bytes:
    """The generated file part: bytes, schemathesis's Binary wrapper, or (negative cases) any JSON value."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, Binary):
        return value.data
    return (value if isinstance(value, str) else json.dumps(value)).encode("utf-8", "surrogatepass")


def upload_body(generated: dict[str, Any], models: bool) -> st.SearchStrategy[dict[str, Any]]:
    """The generated upload under an odd name, a valid file (as is, cut short, with bytes flipped) under a
    name that fits it, or an odd file under any name; with or without a name and a JSON field that is valid,
    a near miss, or not JSON at all."""
    generated_file = _as_bytes(generated[UPLOAD_FIELD])
    names = MODEL_FILENAMES if models else DATASET_FILENAMES
    if models:
        fitting = [("golden.onnx", files.minimal_onnx_bytes()), ("zipped.zip", onnx_zip())]
    else:
        fitting = [("d.npz", files.digits_like_npz(4)), ("imgs.zip", image_zip()), ("i.zip", image_zip(None))]
    named_file = st.one_of(  # a fitting file first: Hypothesis's default branch
        st.sampled_from(fitting),
        st.sampled_from(fitting).flatmap(lambda f: st.tuples(st.just(f[0]), mutated([f[1]]))),
        st.tuples(st.sampled_from(names) | _text(600), st.just(generated_file)),
        st.tuples(st.sampled_from(names), st.sampled_from(ODD_FILES)),
        *([] if models else [_labels_csv().map(lambda text: ("labels.zip", image_zip(labels=text)))]),
    )
    if models:
        extra = {
            "input_shapes": _form_json(_near({"input": [2, 4]}, {"input": _input_dims(), "x": _input_dims()}))
        }
    else:
        recipe = {"size": [8, 8], "mode": "L"}
        extra = {"preprocessing": _form_json(_near(recipe, _preprocessing_changes()))}
    fields = st.fixed_dictionaries({}, optional={"name": _text(300), **extra})
    return st.tuples(named_file, fields).map(
        lambda t: {**generated, FILENAME_KEY: t[0][0], UPLOAD_FIELD: t[0][1], **t[1]}
    )
