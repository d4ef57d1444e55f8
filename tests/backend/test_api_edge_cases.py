"""Hostile input that the API fuzz (test_api_fuzz.py) turned up, one regression test each. Every one of these
was a 500, an accepted request that stored something broken, or a response the spec did not describe.
Damaged zip archives are covered where the other bad uploads are (test_uploads.py, test_image_datasets.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, field_validator

from backend.api.errors import install_error_handlers
from backend.settings import Settings
from tests.support import files

MISSING = "00000000-0000-0000-0000-000000000000"
BOUNDARY = "kneeboard-test-boundary"


def _stored_files(settings: Settings) -> list[Path]:
    root = Path(settings.resolved_artifact_uri.removeprefix("file://"))
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def _multipart(parts: list[tuple[str, str | None, bytes]], close: bool = True) -> bytes:
    """A multipart/form-data body built by hand (clients refuse to send some of these)."""
    body = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"' + (
            f'; filename="{filename}"' if filename is not None else ""
        )
        body += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"
    return body + (f"--{BOUNDARY}--\r\n".encode() if close else b"")


def _post_multipart(client: TestClient, url: str, body: bytes, boundary: str = BOUNDARY) -> Any:
    return client.post(
        url, content=body, headers={"content-type": f"multipart/form-data; boundary={boundary}"}
    )


def _post_json(client: TestClient, url: str, text: str | bytes) -> Any:
    """Raw JSON text: Python's json module writes NaN and Infinity, which are not JSON."""
    return client.post(url, content=text, headers={"content-type": "application/json"})


@pytest.fixture
def fidelity_inputs(client: TestClient, project: dict[str, Any]) -> dict[str, str]:
    pid = project["id"]
    onnx = files.minimal_onnx_bytes()
    model = client.post(f"/api/v1/projects/{pid}/models", files={"file": ("g.onnx", onnx)}).json()
    npz = files.npz_bytes(input=np.zeros((4, 4), "float32"))
    dataset = client.post(f"/api/v1/projects/{pid}/datasets", files={"file": ("d.npz", npz)}).json()
    return {"golden_model_id": model["id"], "compressed_model_id": model["id"], "dataset_id": dataset["id"]}


class _EchoBody(BaseModel):
    x: int
    word: str

    @field_validator("word")
    @classmethod
    def _no_spam(cls, value: str) -> str:
        if value == "spam":
            raise ValueError("no spam")
        return value


def _echo(body: _EchoBody) -> None:
    return None


# --- the error shape and the spec ---------------------------------------------------------------------------


def test_every_operation_documents_its_errors_in_the_error_shape(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert "HTTPValidationError" not in json.dumps(spec), (
        "422s are {error, detail, fields}, not FastAPI's shape"
    )
    for path, methods in spec["paths"].items():
        if not path.startswith("/api/v1/"):
            continue
        public = path in ("/api/v1/health", "/api/v1/auth/login")
        for method, operation in methods.items():
            error = operation["responses"]["422"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorOut"}, f"{method} {path}"
            # Every signed-in route documents the 401 and names its security schemes.
            assert public or "401" in operation["responses"], f"{method} {path}"
            assert public or {"token", "session"} <= {k for s in operation["security"] for k in s}
    responses = spec["paths"]["/api/v1/projects/{project_id}"]["get"]["responses"]
    assert set(responses) == {"200", "401", "404", "422"}
    upload = spec["paths"]["/api/v1/projects/{project_id}/models"]["post"]["responses"]
    assert {"404", "413", "422", "503"} <= set(upload)


def test_validation_errors_never_echo_the_input() -> None:
    """The 422 handler used to return pydantic's errors as they are: with the offending input (NaN or
    infinity cannot be written as JSON: a 500) and a ValueError object in ctx (not serialisable: a 500)."""

    app = FastAPI()
    install_error_handlers(app)
    app.post("/echo")(_echo)

    with TestClient(app) as c:
        response = _post_json(c, "/echo", '{"x": NaN, "word": "spam"}')
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "invalid_request"
    assert "x: " in body["detail"] and "word: Value error, no spam" in body["detail"]
    assert all("input" not in field for field in body["fields"])
    word = next(f for f in body["fields"] if f["loc"] == ["body", "word"])
    assert word == {
        "type": "value_error",
        "loc": ["body", "word"],
        "msg": "Value error, no spam",
        "ctx": {"error": "no spam"},
    }


def test_out_of_range_query_names_the_field_and_the_range(client: TestClient) -> None:
    response = client.get("/api/v1/jobs", params={"limit": 501})
    assert response.status_code == 422
    body = response.json()
    assert body["detail"] == "limit: Input should be less than or equal to 500"
    assert body["fields"] == [
        {"type": "less_than_equal", "loc": ["query", "limit"], "msg": body["detail"][7:], "ctx": {"le": 500}}
    ]


def test_framework_errors_use_the_error_shape_and_405_lists_every_method(client: TestClient) -> None:
    unknown = client.get("/api/v1/no-such-thing")
    assert unknown.status_code == 404 and unknown.json() == {"error": "not_found", "detail": "Not Found"}
    # GET and POST /projects are two routes; Starlette's 405 named only the first one's methods.
    wrong = client.delete("/api/v1/projects")
    assert wrong.status_code == 405 and wrong.json()["error"] == "method_not_allowed"
    assert wrong.headers["allow"] == "GET, POST"
    assert client.put(f"/api/v1/models/{MISSING}").headers["allow"] == "DELETE, GET, PATCH"
    not_utf8 = _post_json(client, "/api/v1/projects", b'{"name": "\xff"}')
    # FastAPI's bare 400 for bytes that are not text is mapped to the same 422 as a body that is not JSON
    assert not_utf8.status_code == 422 and not_utf8.json()["error"] == "invalid_request"
    malformed = _post_json(client, "/api/v1/projects", '{"name": ')
    assert malformed.status_code == 422
    assert malformed.json()["detail"] == "body: not valid JSON at character 9 (Expecting value)"


# --- what Postgres cannot store: NUL characters and non-finite numbers ----------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [({"name": "a\x00b"}, "name"), ({"name": "ok", "description": "\x00"}, "description")],
)
def test_nul_in_a_json_body_is_a_422_naming_the_field(
    client: TestClient, body: dict[str, str], field: str
) -> None:
    response = client.post("/api/v1/projects", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["detail"] == f"{field}: must not contain NUL (\\x00) characters"
    assert client.get("/api/v1/projects").json() == []


def test_nul_in_a_query_parameter_is_a_422_naming_it(client: TestClient) -> None:
    response = client.get("/api/v1/jobs", params={"kind": "fidelity\x00"})
    assert response.status_code == 422
    assert response.json()["detail"] == "kind: must not contain NUL (\\x00) characters"
    samples = client.get(f"/api/v1/jobs/{MISSING}/fidelity/samples", params={"output": "\x00"})
    assert samples.status_code == 422 and samples.json()["detail"].startswith("output: must not contain NUL")


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "NaN", "1e999"])
def test_non_finite_numbers_in_job_params_are_a_422(
    client: TestClient, project: dict[str, Any], fidelity_inputs: dict[str, str], number: str
) -> None:
    """threshold_kl has only a lower bound, so Infinity passed validation and Postgres's json refused it."""
    params = json.dumps(fidelity_inputs)[:-1] + f', "threshold_kl": {number}}}'
    body = f'{{"project_id": "{project["id"]}", "kind": "fidelity", "params": {params}}}'
    response = _post_json(client, "/api/v1/jobs", body)
    assert response.status_code == 422, response.text
    assert response.json()["detail"].startswith("params.threshold_kl: ")
    assert "is not a finite number" in response.json()["detail"]
    assert client.get("/api/v1/jobs", params={"kind": "fidelity"}).json()["total"] == 0


def test_nul_in_upload_name_and_filename_is_refused(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    url = f"/api/v1/projects/{project['id']}/models"
    onnx = files.minimal_onnx_bytes()
    named = client.post(url, files={"file": ("m.onnx", onnx)}, data={"name": "a\x00b"})
    assert (
        named.status_code == 422 and named.json()["detail"] == "name must not contain NUL (\\x00) characters"
    )
    raw = _post_multipart(client, url, _multipart([("file", "m\x00.onnx", onnx)]))
    assert raw.status_code == 422 and "the file name contains a NUL" in raw.json()["detail"]
    assert _stored_files(settings) == []


def test_long_file_names_are_refused_or_cut_to_the_name_limit(
    client: TestClient, project: dict[str, Any]
) -> None:
    url = f"/api/v1/projects/{project['id']}/datasets"
    npz = files.digits_like_npz(2)
    too_long = client.post(url, files={"file": ("d" * 600 + ".npz", npz)})
    assert too_long.status_code == 422 and "at most 255 characters" in too_long.json()["detail"]
    # Without a name, the file name is the display name, which holds 200 characters.
    long_name = "d" * 240 + ".npz"
    accepted = client.post(url, files={"file": (long_name, npz)})
    assert accepted.status_code == 201, accepted.text
    assert accepted.json()["filename"] == long_name and accepted.json()["name"] == long_name[:200]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("[" * 30_000 + "]" * 30_000, "input_shapes is nested too deeply"),
        ('{"input": [true, 4]}', "input_shapes['input'][0]: Input should be a valid integer"),
        ('{"input": [2.0, 4]}', "input_shapes['input'][0]: Input should be a valid integer"),
        ('{"input": [0, 4]}', "input_shapes['input'][0]: Input should be greater than or equal to 1"),
        ('{"input": [1e999]}', "input_shapes.input.0: inf is not a finite number"),
        ('{"input": [NaN]}', "NaN is not JSON"),
        (f'{{"input": [{2**64}]}}', "input_shapes['input'][0]: Input should be less than or equal to"),
        ('{"in\\u0000put": [1]}', "input_shapes: a key must not contain NUL"),
        ("[1, 2]", "Input should be a valid dictionary"),
        ("{not json", "input_shapes must be JSON like"),
    ],
)
def test_bad_input_shapes_are_a_422_naming_the_field(
    client: TestClient, project: dict[str, Any], settings: Settings, raw: str, message: str
) -> None:
    response = client.post(
        f"/api/v1/projects/{project['id']}/models",
        files={"file": ("m.onnx", files.minimal_onnx_bytes())},
        data={"input_shapes": raw},
    )
    assert response.status_code == 422, response.text
    assert message in response.json()["detail"]
    assert _stored_files(settings) == []


def test_good_input_shapes_are_kept(client: TestClient, project: dict[str, Any]) -> None:
    response = client.post(
        f"/api/v1/projects/{project['id']}/models",
        files={"file": ("m.onnx", files.minimal_onnx_bytes())},
        data={"input_shapes": '{"input": [2, 4]}'},
    )
    assert response.status_code == 201, response.text
    assert response.json()["declared_input_shapes"] == {"input": [2, 4]}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"scale": 1e999}', "preprocessing.scale: inf is not a finite number"),
        ('{"mean": [NaN]}', "NaN is not JSON"),
        ('{"size": [8, 8], "input_name": "x\\u0000"}', "preprocessing.input_name: must not contain NUL"),
        ("[" * 30_000 + "]" * 30_000, "preprocessing is nested too deeply"),
    ],
)
def test_recipes_json_cannot_hold_are_refused(
    client: TestClient, project: dict[str, Any], raw: str, message: str
) -> None:
    png = files.zip_bytes({"a.png": _png()})
    response = client.post(
        f"/api/v1/projects/{project['id']}/datasets",
        files={"file": ("imgs.zip", png)},
        data={"preprocessing": raw},
    )
    assert response.status_code == 422, response.text
    assert message in response.json()["detail"]


def _png() -> bytes:
    from tests.support.images import png_bytes

    return png_bytes(np.zeros((3, 3, 3), dtype="uint8"))


def test_npz_with_a_negative_dimension_is_refused(client: TestClient, project: dict[str, Any]) -> None:
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (-4, 2), }"
    header += b" " * (64 - (10 + len(header) + 1) % 64) + b"\n"
    npy = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header
    response = client.post(
        f"/api/v1/projects/{project['id']}/datasets",
        files={"file": ("neg.npz", files.zip_bytes({"input.npy": npy}))},
    )
    assert response.status_code == 422 and "negative dimension" in response.json()["detail"]


# --- the multipart framing itself --------------------------------------------------------------------------


def test_a_body_without_its_closing_boundary_stores_nothing(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    """python-multipart's finalize() does not check for the end: a cut-short upload used to be stored."""
    url = f"/api/v1/projects/{project['id']}/models"
    response = _post_multipart(
        client, url, _multipart([("file", "m.onnx", files.minimal_onnx_bytes())], close=False)
    )
    assert response.status_code == 422 and "cut short" in response.json()["detail"]
    assert _stored_files(settings) == [] and client.get(url).json() == []


def test_a_boundary_the_parser_refuses_is_a_422(client: TestClient, project: dict[str, Any]) -> None:
    body = _multipart([("file", "m.onnx", files.minimal_onnx_bytes())])
    response = _post_multipart(client, f"/api/v1/projects/{project['id']}/models", body, boundary="b" * 300)
    assert response.status_code == 422 and "multipart body is malformed" in response.json()["detail"]


WHOLE_UPLOAD = _multipart([("name", None, b"digits"), ("file", "d.npz", files.digits_like_npz(2))])
BEFORE_CLOSING = len(WHOLE_UPLOAD) - len(f"--{BOUNDARY}--\r\n")


@settings(
    max_examples=40, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
@given(
    keep=st.integers(
        0, BEFORE_CLOSING
    ),  # cut anywhere before the closing boundary (Hypothesis tries the end)
    garbage=st.binary(max_size=200),
    boundary=st.sampled_from([BOUNDARY, "x", "a" * 70]),
)
@example(keep=BEFORE_CLOSING, garbage=b"", boundary=BOUNDARY)  # every byte of the file, no closing boundary
def test_any_cut_or_garbage_multipart_body_is_a_4xx(
    client: TestClient, project: dict[str, Any], settings: Settings, keep: int, garbage: bytes, boundary: str
) -> None:
    url = f"/api/v1/projects/{project['id']}/datasets"
    cut_short = WHOLE_UPLOAD[:keep]
    for body in (cut_short, garbage, cut_short + garbage):
        response = _post_multipart(client, url, body, boundary)
        assert 400 <= response.status_code < 500, response.text
        assert set(response.json()) >= {"error", "detail"}
    assert client.get(url).json() == [] and _stored_files(settings) == []
