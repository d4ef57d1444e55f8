"""Uploads over the real API and Postgres: good files are stored once, bad ones get a 4xx that says what to
do and leave no file and no row behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from backend.db.models import Artifact, Dataset, Job, Model
from backend.db.session import session_factory
from backend.settings import Settings
from tests.support import files


def _stored_files(settings: Settings) -> list[Path]:
    root = Path(settings.resolved_artifact_uri.removeprefix("file://"))
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def _counts(settings: Settings) -> dict[str, int]:
    with session_factory(settings.resolved_database_url)() as s:
        return {
            t.__name__: s.execute(select(func.count()).select_from(t)).scalar_one()
            for t in (Artifact, Model, Dataset, Job)
        }


def _upload_model(
    client: TestClient, project: dict[str, Any], filename: str, data: bytes, **form: str
) -> Any:
    return client.post(
        f"/api/v1/projects/{project['id']}/models", files={"file": (filename, data)}, data=form
    )


def test_model_upload_is_stored_once_and_queues_an_inspection(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    data = files.minimal_onnx_bytes()
    shapes = '{"x": [1, 4]}'
    first = _upload_model(client, project, "identity.onnx", data)
    other_shapes = _upload_model(client, project, "again.onnx", data, name="same bytes", input_shapes=shapes)
    assert first.status_code == 201, first.text
    assert other_shapes.status_code == 201, other_shapes.text
    a, b = first.json(), other_shapes.json()
    assert a["format"] == "onnx" and a["status"] == "inspecting" and a["duplicate_of"] is None
    assert a["artifact_sha256"] == b["artifact_sha256"] and a["id"] != b["id"]
    assert len(_stored_files(settings)) == 1
    assert _counts(settings) == {"Artifact": 1, "Model": 2, "Dataset": 0, "Job": 2}
    jobs = client.get("/api/v1/jobs", params={"project_id": project["id"], "kind": "inspect"}).json()
    assert jobs["total"] == 2 and {j["status"] for j in jobs["items"]} == {"queued"}


def test_the_same_model_file_again_answers_with_the_existing_model(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    data = files.minimal_onnx_bytes()
    first = _upload_model(client, project, "identity.onnx", data).json()
    again = _upload_model(client, project, "renamed.onnx", data, name="another name")
    assert again.status_code == 200, again.text  # not 201: nothing was created
    body = again.json()
    assert body["id"] == body["duplicate_of"] == first["id"] and body["name"] == first["name"]
    assert _counts(settings) == {"Artifact": 1, "Model": 1, "Dataset": 0, "Job": 1}
    # An invalid model is no answer: the same bytes again make a new model (e.g. a retry once fixed).
    with session_factory(settings.resolved_database_url)() as s:
        s.get_one(Model, first["id"]).status = "invalid"
        s.commit()
    retried = _upload_model(client, project, "identity.onnx", data)
    assert retried.status_code == 201 and retried.json()["id"] != first["id"], retried.text


def test_the_same_dataset_file_again_answers_with_the_existing_dataset(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    url = f"/api/v1/projects/{project['id']}/datasets"
    data = files.digits_like_npz(12)
    first = client.post(url, files={"file": ("digits.npz", data)})
    again = client.post(url, files={"file": ("copy.npz", data)}, data={"name": "copy"})
    other = client.post(url, files={"file": ("fewer.npz", files.digits_like_npz(10))})
    assert first.status_code == 201 and other.status_code == 201, (first.text, other.text)
    assert again.status_code == 200, again.text
    assert again.json()["duplicate_of"] == again.json()["id"] == first.json()["id"]
    assert first.json()["duplicate_of"] is None
    assert _counts(settings)["Dataset"] == 2 and len(_stored_files(settings)) == 2


ONNX_ZIP = files.zip_bytes({"model/model.onnx": files.minimal_onnx_bytes(), "model/weights.bin": b"\0" * 64})
BAD_MODELS = [
    ("empty.onnx", b"", "empty (0 bytes)"),
    ("notes.onnx", b"these are my notes about the model, not a model\n" * 20, "not a valid ONNX model"),
    ("bytes.onnx", bytes([0x0C]) * 64, "not a valid ONNX model: its contents are not an ONNX model. Check"),
    ("model.pkl", files.pickle_bytes(), "never unpickles"),
    ("model.pt", files.pickle_bytes(), "never unpickles"),
    ("model.pt", files.torch_save_like_zip(), "torch.save() pickle"),
    ("model.pt2", b"PK\x03\x04 truncated zip", "not a complete one"),
    ("model.bin", b"\x01\x02\x03", "unsupported model file"),
    # A damaged zip fails in zipfile only when a member is read, in a different way each: once a 500.
    *[
        (f"zipped-{how}.zip", files.damaged_zip(ONNX_ZIP, how), "cannot be read as a zip archive")
        for how in ("crc", "method", "encrypted", "version")
    ],
]


@pytest.mark.parametrize(
    ("filename", "data", "message"), BAD_MODELS, ids=[b[0] + "-" + b[2][:12] for b in BAD_MODELS]
)
def test_bad_model_files_are_refused_and_leave_nothing(
    client: TestClient, project: dict[str, Any], settings: Settings, filename: str, data: bytes, message: str
) -> None:
    response = _upload_model(client, project, filename, data)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "invalid_upload" and message in body["detail"]
    assert "wire type" not in body["detail"]  # plain words, not protobuf's (the detail goes to the log)
    assert _stored_files(settings) == []
    assert _counts(settings) == {"Artifact": 0, "Model": 0, "Dataset": 0, "Job": 0}


def test_truncated_onnx_is_refused(client: TestClient, project: dict[str, Any], settings: Settings) -> None:
    data = files.minimal_onnx_bytes()
    response = _upload_model(client, project, "cut.onnx", data[: len(data) // 2])
    assert response.status_code == 422
    assert "truncated" in response.json()["detail"] or "not a complete ONNX" in response.json()["detail"]
    assert _stored_files(settings) == [] and _counts(settings)["Model"] == 0


def test_pickle_refusal_says_how_to_export(client: TestClient, project: dict[str, Any]) -> None:
    detail = _upload_model(client, project, "model.pt", files.torch_save_like_zip()).json()["detail"]
    assert "torch.export.save" in detail and "torch.jit.save" in detail and "torch.onnx.export" in detail


def test_upload_over_the_limit_is_refused(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    big = b"\0" * (settings.max_upload_bytes + 1024 * 1024)
    response = _upload_model(client, project, "huge.onnx", big)
    assert response.status_code == 413
    assert "KNEEBOARD_MAX_UPLOAD_BYTES" in response.json()["detail"]
    assert _stored_files(settings) == [] and _counts(settings)["Model"] == 0


def test_declared_size_over_the_limit_is_refused_before_reading(
    client: TestClient, project: dict[str, Any]
) -> None:
    response = client.post(
        f"/api/v1/projects/{project['id']}/models",
        content=b"x" * 10,
        headers={"content-length": str(10 * 1024**3), "content-type": "multipart/form-data; boundary=x"},
    )
    assert response.status_code == 413
    assert client.get("/api/v1/health").json()["status"] == "ok"


def test_dataset_upload_reports_samples_shapes_and_labels(
    client: TestClient, project: dict[str, Any]
) -> None:
    response = client.post(
        f"/api/v1/projects/{project['id']}/datasets",
        files={"file": ("digits.npz", files.digits_like_npz(12))},
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["n_samples"] == 12 and body["has_labels"] is True
    assert body["arrays"] == {
        "input": {"shape": [12, 1, 8, 8], "dtype": "float32"},
        "labels": {"shape": [12], "dtype": "int64"},
    }
    listed = client.get(f"/api/v1/projects/{project['id']}/datasets").json()
    assert [d["id"] for d in listed] == [body["id"]]


def _npy_header_only(shape: tuple[int, ...]) -> bytes:
    """A .npy header that claims `shape` float32, and no data: a few bytes that describe gigabytes."""
    import io

    from numpy.lib import format as npy_format

    buf = io.BytesIO()
    npy_format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return buf.getvalue()


BAD_DATASETS = [
    ("empty.npz", b"", "empty (0 bytes)"),
    (
        "unequal.npz",
        files.npz_bytes(
            input=__import__("numpy").zeros((5, 3), "float32"), labels=__import__("numpy").arange(4)
        ),
        "unequal lengths (input: 5, labels: 4)",
    ),
    ("text.npz", b"just text", "not a .npz file"),
    *[
        (f"damaged-{how}.npz", files.damaged_zip(files.digits_like_npz(4), how), "not a .npz file")
        for how in ("crc", "method", "encrypted", "version")
    ],
    ("data.csv", b"a,b\n1,2\n", "unsupported dataset file"),
    (
        "objects.npz",
        files.npz_bytes(x=__import__("numpy").array([{"a": 1}, None], dtype=object)),
        "dtype object",
    ),
    (
        "forged-header.npz",
        files.zip_bytes({"input.npy": _npy_header_only((10**9, 4))}),
        "claims shape (1000000000, 4) (16000000000 bytes) but holds 0 bytes",
    ),
    (
        "floatlabels.npz",
        files.npz_bytes(
            input=__import__("numpy").zeros((3, 2), "float32"), labels=__import__("numpy").zeros(3)
        ),
        "'labels' must be a 1-D integer array",
    ),
]


@pytest.mark.parametrize(("filename", "data", "message"), BAD_DATASETS, ids=[b[0] for b in BAD_DATASETS])
def test_bad_datasets_are_refused_and_leave_nothing(
    client: TestClient, project: dict[str, Any], settings: Settings, filename: str, data: bytes, message: str
) -> None:
    response = client.post(f"/api/v1/projects/{project['id']}/datasets", files={"file": (filename, data)})
    assert response.status_code == 422, response.text
    assert message in response.json()["detail"]
    assert _stored_files(settings) == []
    assert _counts(settings) == {"Artifact": 0, "Model": 0, "Dataset": 0, "Job": 0}


def test_unknown_project_is_404_and_stores_nothing(client: TestClient, settings: Settings) -> None:
    missing = "00000000-0000-0000-0000-000000000000"
    response = client.post(
        f"/api/v1/projects/{missing}/models", files={"file": ("m.onnx", files.minimal_onnx_bytes())}
    )
    assert response.status_code == 404 and "no project" in response.json()["detail"]
    assert _stored_files(settings) == []


def test_deleting_the_last_reference_removes_the_file(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    data = files.minimal_onnx_bytes()
    a = _upload_model(client, project, "a.onnx", data).json()
    b = _upload_model(client, project, "b.onnx", data, input_shapes='{"x": [2, 4]}').json()
    assert client.delete(f"/api/v1/models/{a['id']}").status_code == 204
    assert len(_stored_files(settings)) == 1, "still referenced by the second model"
    assert client.delete(f"/api/v1/models/{b['id']}").status_code == 204
    assert _stored_files(settings) == [] and _counts(settings)["Artifact"] == 0
    assert client.get(f"/api/v1/models/{a['id']}").status_code == 404


def test_onnx_zip_with_external_data_is_accepted(client: TestClient, project: dict[str, Any]) -> None:
    data = files.zip_bytes({"model/model.onnx": files.minimal_onnx_bytes(), "model/weights.bin": b"\0" * 64})
    response = _upload_model(client, project, "model.zip", data)
    assert response.status_code == 201, response.text
    assert response.json()["format"] == "onnx_zip"


# Hostile archives (path traversal, links, zip bombs, too many members): tests/backend/test_archive_limits.py


def test_upload_without_a_file_field_says_how_to_send_it(client: TestClient, project: dict[str, Any]) -> None:
    response = client.post(
        f"/api/v1/projects/{project['id']}/models", data={"name": "x"}, files={"other": ("a", b"1")}
    )
    assert response.status_code == 422 and "field 'file'" in response.json()["detail"]
    raw = client.post(f"/api/v1/projects/{project['id']}/models", content=b"raw bytes")
    assert raw.status_code == 422 and "multipart/form-data" in raw.json()["detail"]


def test_malformed_multipart_is_refused(
    client: TestClient, project: dict[str, Any], settings: Settings
) -> None:
    response = client.post(
        f"/api/v1/projects/{project['id']}/models",
        content=b"--xyz\r\nno headers end here",
        headers={"content-type": "multipart/form-data; boundary=xyz"},
    )
    assert response.status_code == 422
    assert _stored_files(settings) == [] and _counts(settings)["Model"] == 0


def test_upload_form_fields_and_openapi_schema(client: TestClient, project: dict[str, Any]) -> None:
    response = _upload_model(
        client,
        project,
        "m.onnx",
        files.minimal_onnx_bytes(),
        name="  named  ",
        input_shapes='{"input": [2, 4]}',
    )
    assert response.status_code == 201, response.text
    assert response.json()["name"] == "named" and response.json()["declared_input_shapes"] == {
        "input": [2, 4]
    }
    bad = _upload_model(client, project, "m.onnx", files.minimal_onnx_bytes(), input_shapes="[1, 2")
    assert bad.status_code == 422 and "input_shapes" in bad.json()["detail"]
    spec = client.get("/openapi.json").json()
    body = spec["paths"]["/api/v1/projects/{project_id}/models"]["post"]["requestBody"]["content"]
    assert set(body["multipart/form-data"]["schema"]["properties"]) == {"file", "name", "input_shapes"}
