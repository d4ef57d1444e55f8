"""Fidelity budgets through the API on Postgres: created, read, updated and deleted, and refused
input refused.

The fidelity summaries are real: the engine's compare_models on small numpy models, stored the way the
worker stores them; the budgets' limits are set from KL divergence and top-1 agreement computed here with
numpy, independently of the engine (tests/support/budget_jobs.py)."""

from __future__ import annotations

import uuid

from fastapi.testclient import TestClient

from tests.support.budget_jobs import create_budget, renamed


def test_budgets_crud_and_refused_input(client: TestClient, project: dict[str, str]) -> None:
    url = f"/api/v1/projects/{project['id']}/budgets"
    rules = [{"metric": "kl_mean", "bound": "max", "value": 0.01}]
    made = create_budget(client, project["id"], name="release", rules=rules)
    assert made["scope"] == "all" and made["rules"] == rules
    duplicate = client.post(url, json={"name": "release", "rules": rules})
    assert duplicate.status_code == 409 and "already exists" in duplicate.json()["detail"]
    for bad, says in (
        ({"name": "x", "rules": []}, "rules"),
        ({"name": "x", "rules": [{"metric": "kl mean", "bound": "max", "value": 1}]}, "metric"),
        ({"name": "x", "rules": [{"metric": "kl_mean", "bound": "below", "value": 1}]}, "bound"),
        ({"name": "x", "rules": [{"metric": "kl_mean", "bound": "max", "value": "NaN"}]}, "finite"),
        ({"name": "x", "scope": "tag", "rules": rules}, "needs a tag"),
        ({"name": "x", "scope": "all", "scope_value": "int8", "rules": rules}, "must be empty"),
    ):
        response = client.post(url, json=bad)
        assert response.status_code == 422, (bad, response.text)
        assert says in response.json()["detail"], response.json()["detail"]
    changed = client.put(
        f"{url}/{made['id']}",
        json={"name": "int8 family", "scope": "family", "scope_value": "resnet-", "rules": rules},
    )
    assert changed.status_code == 200 and changed.json()["scope_value"] == "resnet-", changed.text
    assert [b["name"] for b in client.get(url).json()] == ["int8 family"]
    other = create_budget(client, project["id"], name="other", rules=rules)
    clash = client.put(f"{url}/{other['id']}", json={"name": "int8 family", "rules": rules})
    assert clash.status_code == 409 and client.get(f"{url}").json()[1]["name"] == "other"
    assert client.delete(f"{url}/{other['id']}").status_code == 204
    elsewhere = client.post("/api/v1/projects", json={"name": f"p-{uuid.uuid4().hex[:6]}"}).json()
    wrong_project = client.put(
        f"/api/v1/projects/{elsewhere['id']}/budgets/{made['id']}", json=renamed(rules)
    )
    assert wrong_project.status_code == 404 and "no budget" in wrong_project.json()["detail"]
    assert client.delete(f"{url}/{made['id']}").status_code == 204
    assert client.delete(f"{url}/{made['id']}").status_code == 404
    assert client.get(url).json() == []
