"""A JSON body nested deeper than the parser goes is refused with a 422 that says so (issue 32), not one that
calls it invalid UTF-8; a body that really is not UTF-8 still says that."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

DEPTH = 100_000


@pytest.mark.parametrize(
    "body",
    ["[" * DEPTH + "]" * DEPTH, '{"name": ' + '{"a": ' * DEPTH + "1" + "}" * DEPTH + "}"],
    ids=["arrays", "objects"],
)
def test_a_deeply_nested_body_is_refused_as_nested_too_deeply(client: TestClient, body: str) -> None:
    response = client.post("/api/v1/projects", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert response.json() == {
        "error": "invalid_request",
        "detail": "the request body is JSON nested too deeply (no operation takes more than a few levels)",
    }
    assert client.get("/api/v1/health").status_code == 200


def test_a_body_that_is_not_utf8_is_still_called_that(client: TestClient) -> None:
    response = client.post(
        "/api/v1/projects", content=b'{"name": "\xff\xfe"}', headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["detail"] == "the request body is not valid UTF-8 JSON"
