"""Every integer path parameter is bounded, as the query parameters are (issue 32): an index past any
database's integer (2**63 here) is a 422 naming the parameter, not a 500 from the database driver."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient


def _integer_path_parameters(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                types = {schema.get("type")} | {s.get("type") for s in schema.get("anyOf", [])}
                if parameter["in"] == "path" and "integer" in types:
                    found.append((f"{method.upper()} {path}", parameter["name"], schema))
    return found


def test_every_integer_path_parameter_has_a_maximum_and_a_minimum(client: TestClient) -> None:
    parameters = _integer_path_parameters(client.get("/openapi.json").json())
    assert len(parameters) >= 7  # the walk sees them: sweep points, samples, thumbnails, robustness pictures
    unbounded = [
        (op, name) for op, name, schema in parameters if "maximum" not in schema or "minimum" not in schema
    ]
    assert unbounded == []
    too_big = [(op, name) for op, name, schema in parameters if schema["maximum"] > 2**31 - 1]
    assert too_big == []  # fits a 32-bit integer column on every database


@pytest.mark.parametrize("suffix", ["", "/export"])
@pytest.mark.parametrize("index", ["9223372036854775808", "2147483648", "-1"])
def test_a_sweep_point_index_out_of_range_is_a_422(client: TestClient, suffix: str, index: str) -> None:
    response = client.get(f"/api/v1/jobs/{uuid.uuid4()}/sweep/points/{index}{suffix}")
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "invalid_request"
    assert response.json()["detail"].startswith("index:")


def test_an_index_in_range_reaches_the_route(client: TestClient) -> None:
    job_id = uuid.uuid4()
    response = client.get(f"/api/v1/jobs/{job_id}/sweep/points/2147483647")
    assert response.status_code == 404, response.text
